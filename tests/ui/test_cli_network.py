"""``--network``: plan and estimate on a cluster's own scale-out fabric (planner/catalog/networks.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from planner.api import PlanRequest, build_plan, plan, restack
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.catalog.networks import catalog_on_network
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model.estimate import estimate_plan
from planner.model.stacks import STACK_SETTINGS, Stack
from ui.cli import main
from ui.cli_options import NETWORK
from ui.portfolio_file import read_jobs_file

# BLOOM 176B's logged throughput per GPU (data/validation/whole_runs.csv: the tr11 iteration log).
BLOOM_TOKENS_PER_S_PER_GPU = 104.3


def _json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _bloom(tmp_path: Path) -> Path:
    """BLOOM 176B's config.json keys (bigscience/bloom)."""
    config = json.loads((Path(__file__).parents[1] / "data" / "hf_configs" / "bloom.json").read_text())
    config.update(hidden_size=14336, n_head=112, n_layer=70)
    path = tmp_path / "bloom" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    return path


def test_bloom_on_its_own_omni_path_fabric_estimates_within_15_percent(tmp_path, capsys):
    """BLOOM ran on Jean Zay: 4 x 100 Gb/s Omni-Path per 8 A100, a quarter of a DGX A100's fabric per
    GPU. On it, ``--stack megatron-deepspeed`` at the published TP4 x PP12 x DP8 comes within 15 % of
    the logged throughput (-6.1 %); on the catalog's default HDR InfiniBand it is faster (-0.4 % against the log)."""
    args = ["estimate", "--model", str(_bloom(tmp_path)), "--gpu", "a100-80gb-sxm", "--num-gpus", "384"]
    args += ["--tp", "4", "--pp", "12", "--seq-len", "2048", "--micro-batch", "2", "--grad-accum", "128"]
    args += ["--sharding", "zero1", "--ac", "full", "--stack", "megatron-deepspeed"]
    own = _json(capsys, *args, "--network", "opa-4x100-per-8")
    default = _json(capsys, *args)
    tokens = own["throughput"]["tokens_per_s_per_gpu"]
    assert abs(tokens / BLOOM_TOKENS_PER_S_PER_GPU - 1) < 0.15
    assert tokens < default["throughput"]["tokens_per_s_per_gpu"]
    assert own["network"] == "opa-4x100-per-8" and default["network"] is None


def test_an_unknown_network_is_one_line_and_exit_code_2(capsys):
    for command in (
        ["estimate", "--model", "gpt3-125m", "--gpu", "h100-sxm", "--num-gpus", "8", "--network", "infiniband"],
        ["plan", "--model", "gpt3-125m", "--tokens", "1e9", "--gpus", "h100-sxm=8", "--network", "infiniband"],
    ):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "unknown network 'infiniband'" in err and "ib-ndr-400" in err


def test_a_plan_records_its_network_and_keeps_it_through_explain_and_restack(tmp_path, capsys):
    """On 100 GbE the search keeps the data-parallel traffic off the network (70B on 8 H100 nodes: FSDP
    over all 64 GPUs on InfiniBand, tensor and pipeline parallel on Ethernet); the plan file names the
    network, a fresh estimate of it (explain, the trainer's job spec) is scored on it."""
    out = tmp_path / "plan.json"
    args = ["plan", "--model", "llama3-70b", "--tokens", "1e11", "--gpus", "h100-sxm=64", "--objective", "time"]
    slow = _json(capsys, *args, "--network", "eth-100g", "--out", str(out))
    fast = _json(capsys, *args)
    assert slow["network"] == "eth-100g" and fast["network"] is None
    assert fast["plan"]["layout"]["dp_shard"] == 64 and slow["plan"]["layout"]["dp_shard"] < 64
    saved = json.loads(out.read_text())
    assert saved["network"] == "eth-100g"
    assert main(["explain", str(out)]) == 0
    assert "on eth-100g)" in capsys.readouterr().out.splitlines()[0]
    assert _json(capsys, "explain", str(out))["network"] == "eth-100g"


def test_estimate_plan_and_restack_score_on_the_plans_network():
    catalog = load_catalog()
    layout, training = Layout(dp_shard=64), TrainingConfig(seq_len=4096, micro_batch=1)
    model = get_preset("llama3-8b")
    slow = build_plan(model, "h100-sxm", layout, training, num_gpus=64, network="eth-100g")
    fast = build_plan(model, "h100-sxm", layout, training, num_gpus=64)
    assert slow.estimate.time.step_s > fast.estimate.time.step_s
    again = estimate_plan(slow, catalog, STACK_SETTINGS[Stack.TRAINPLAN])
    assert again.time.step_s == pytest.approx(slow.estimate.time.step_s)
    titan = restack(slow, Stack.TORCHTITAN)
    assert titan.network == "eth-100g"
    assert titan.estimate.time.step_s == pytest.approx(
        restack(fast, Stack.TORCHTITAN, catalog=catalog_on_network(catalog, "eth-100g")).estimate.time.step_s
    )


def test_a_hand_edited_plan_with_an_unknown_network_is_refused(tmp_path, capsys):
    path = tmp_path / "plan.json"
    result = plan(PlanRequest(model=get_preset("gpt3-125m"), training_tokens=1e9, gpus={"h100-sxm": 8}))
    path.write_text(result.plan.model_copy(update={"network": "carrier-pigeon"}).to_json())
    assert main(["explain", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown network 'carrier-pigeon'" in err


def test_a_jobs_file_puts_every_job_on_its_network_and_names_an_unknown_one(tmp_path):
    path = tmp_path / "jobs.toml"
    path.write_text('network = "roce-400g"\n[[jobs]]\nname = "a"\nmodel = "gpt3-125m"\ntokens = 1e9\n')
    (request,) = read_jobs_file(path).requests({"h100-sxm": 8}).values()
    assert request.network == "roce-400g"
    path.write_text('network = "token-ring"\n[[jobs]]\nname = "a"\nmodel = "gpt3-125m"\ntokens = 1e9\n')
    with pytest.raises(ValueError, match=r"^network: unknown network 'token-ring'"):
        read_jobs_file(path).requests({"h100-sxm": 8})


def test_a_network_id_is_matched_case_blind_and_recorded_as_the_catalog_spells_it(capsys):
    args = ["estimate", "--model", "gpt3-125m", "--gpu", "h100-sxm", "--num-gpus", "16", "--network", "RoCE-400G"]
    assert _json(capsys, *args)["network"] == "roce-400g"


def test_the_network_options_examples_are_catalog_ids():
    """--network's help names example ids: each must be one the catalog has."""
    named = re.search(r"e\.g\. ([^)]*)\)", NETWORK.help or "")
    assert named is not None
    ids = [i.strip() for i in named.group(1).split(",")]
    assert len(ids) >= 3 and set(ids) <= set(load_catalog().networks)


def test_blackwell_ultra_can_be_put_on_its_800g_supernics(capsys):
    """Trial s26: B300 / GB300 ship a ConnectX-8 SuperNIC (800 Gb/s) per GPU, and no network could
    say so; the default stays the 400G template (a cluster may cable it at 400G)."""
    xdr = load_catalog().network("ib-xdr-800")
    assert xdr.gbit_per_s_per_gpu == 800
    assert load_catalog().gpu("b300").default_network == "ib-ndr-400"
    args = ["estimate", "--model", "llama3-8b", "--gpu", "b300", "--num-gpus", "64", "--global-batch-tokens", "1e6"]
    default, fast = _json(capsys, *args), _json(capsys, *args, "--network", "ib-xdr-800")
    assert fast["network"] == "ib-xdr-800"
    assert fast["time"]["breakdown_s"]["dp_comm"] < default["time"]["breakdown_s"]["dp_comm"]


def test_the_catalog_shows_a_networks_measured_ring_rate(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["catalog"]) == 0
    out = capsys.readouterr().out
    opa = next(line for line in out.splitlines() if "opa-4x100-per-8" in line)
    assert "40.5" in opa and "one ring's measured busbw, Gb/s" in out
    ndr = next(line for line in out.splitlines() if "ib-ndr-400" in line)
    assert re.search(r"│\s+-\s+│", ndr)
    p5 = next(line for line in out.splitlines() if "efa-p5-3200" in line)
    assert "by message size (16 nodes)" in p5


def test_a_plan_is_told_where_the_networks_curve_was_measured(capsys):
    """review56: efa-p5-3200's all-reduce curve (16 nodes) priced a 128-node plan without a word; the CLI
    and the card (both languages) say which way it likely errs, and say nothing at 16 nodes or on one node."""
    from planner.api import estimate_warnings
    from planner.api.network_notices import curve_elsewhere
    from ui.card_notices import plan_notice_texts
    from ui.i18n import Labels

    layout, training = Layout(sharding=Sharding.NONE), TrainingConfig(seq_len=4096, micro_batch=1)
    model = get_preset("llama3.2-1b")

    def on(gpus: int, network: str | None = "efa-p5-3200"):
        return build_plan(model, "h100-sxm", layout, training, num_gpus=gpus, network=network)

    assert curve_elsewhere(on(8)) is None and curve_elsewhere(on(128)) is None
    assert curve_elsewhere(on(1024, None)) is None
    big, two = on(1024), on(16)
    assert any("measured over 16 nodes" in w and "likely slower" in w for w in estimate_warnings(big, None))
    assert any("over this plan's 2" in w and "likely faster" in w for w in estimate_warnings(two, None))
    english, chinese = (plan_notice_texts(Labels(lang), big) for lang in ("en", "zh"))
    assert any("likely slower than timed here" in t for t in english)
    assert any("16 个节点上实测" in t and "更慢" in t for t in chinese)
    assert main(["estimate", "--model", "llama3.2-1b", "--gpu", "h100-sxm", "--num-gpus", "1024"]) == 0
    assert "curve" not in capsys.readouterr().err
