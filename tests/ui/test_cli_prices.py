"""``trainplan plan --price-kind reserved-1y|reserved-3y`` end to end (issue 28 item 4): a GPU with
such an offer plans at its median; one without refuses in one line with exit code 2."""

import io
import json
import math
import re
import statistics
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.catalog.prices import offers_of
from ui.cli import main

CATALOG = load_catalog()


def trainplan(*args: str) -> tuple[int, str, str]:
    """``trainplan ARGS`` through ``ui.cli.main`` in this process: exit code, stdout, stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(list(args))
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.mark.parametrize("kind", ["reserved-1y", "reserved-3y"])
def test_plan_rents_at_the_reserved_median_by_whole_nodes(kind: str) -> None:
    code, out, err = trainplan(
        "plan", "--model", "gpt3-125m", "--tokens", "1e9", "--gpus", "h100-sxm=16", "--price-kind", kind, "--json"
    )
    assert code == 0, err
    plan = json.loads(out)["plan"]
    offers = offers_of(CATALOG.gpu("h100-sxm"), kind)
    price = statistics.median(o.usd_per_gpu_hour for o in offers)
    unit = min(o.gpus_per_offer for o in offers)
    billed = math.ceil(plan["num_gpus"] / unit) * unit
    assert plan["gpu"] == "h100-sxm"
    # trial s42 H2: a reserved term is billed whole, whatever the job's hours
    years = {"reserved-1y": 1, "reserved-3y": 3}[kind]
    assert plan["time_to_train_h"] < 24 and plan["term"] == {"term_h": years * 8766.0, "filled": 0.0}
    assert plan["cost_usd"] == pytest.approx(years * 8766.0 * billed * price, rel=1e-4)


def test_plan_rents_the_h200_at_its_three_year_median() -> None:
    """The H200 has 3-year offers now: Google Cloud a3-ultragpu-8g CUD 37.208421 / 8 and Azure
    ND96isr H200 v5 RI 42.221918 / 8; it plans at their median, by whole 8-GPU nodes."""
    args = "plan --model gpt3-125m --tokens 1e9 --gpus h200-sxm=4 --price-kind reserved-3y --json"
    code, out, err = trainplan(*args.split())
    assert code == 0, err
    plan = json.loads(out)["plan"]
    price = (37.208421 / 8 + 42.221918 / 8) / 2
    assert plan["gpu"] == "h200-sxm" and plan["num_gpus"] <= 8
    assert plan["cost_usd"] == pytest.approx(3 * 8766.0 * 8 * price, rel=1e-4)  # the whole 3-year term


def test_a_cost_billed_for_whole_nodes_says_so(tmp_path) -> None:
    """Review s26: 4 H200 on 8-GPU-node offers pay for 8, which the cost line, the term warning
    ("4 h200-sxm for the term") and the app card did not say."""
    from planner.plan import Plan
    from ui.i18n import Labels
    from ui.plan_card import price_text

    args = ["estimate", "--model", "gpt3-125m", "--gpu", "h200-sxm", "--num-gpus", "4", "--tokens", "1e10"]
    code, out, err = trainplan(*args, "--price-kind", "reserved-3y")
    assert code == 0, err
    assert re.search(r"\(median of reserved-3y offers: [^)]*\), billed for 8 GPUs \(whole 8-GPU nodes\)", out)
    assert "3-year terms: 8 h200-sxm for the term cost $" in err
    data = json.loads(trainplan(*args, "--price-kind", "reserved-3y", "--json")[1])
    assert data["billed_gpus"] == 8 and data["num_gpus"] == 4
    assert "billed for" not in trainplan(*args)[1]  # the catalog's price is per GPU
    # review s27: 9 GPUs run on 3 nodes of 3 (even_node_count), each a whole 8-GPU node: 24, not 16
    nine = [*args[:6], "9", *args[7:], "--price-kind", "reserved-3y"]
    assert (
        "on 9 x h200-sxm (3 nodes on ib-ndr-400, its default network; 3 of each node's 8 GPUs in use)"
        in (said := trainplan(*nine)[1])
        and "billed for 24 GPUs" in said
    )
    assert trainplan(*args, "--price-kind", "reserved-3y", "--out", str(tmp_path / "p.json"))[0] == 0
    plan = Plan.load(tmp_path / "p.json")
    assert plan.rent_unit_gpus == 8 and plan.billed_gpus == 8
    for lang, words in (("en", "Billed for 8 GPUs: whole 8-GPU nodes."), ("zh", "按 8 块 GPU 计费")):
        assert words in (price_text(Labels(lang), plan, bought=False) or "")


def test_plan_refuses_a_gpu_without_a_three_year_offer_in_one_line() -> None:
    code, out, err = trainplan(
        "plan", "--model", "gpt3-125m", "--tokens", "1e9", "--gpus", "b200=8", "--price-kind", "reserved-3y"
    )
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("trainplan: error: no reserved-3y price for b200 in hw_catalog/prices (it has ")
    assert "(--price, or [rent_usd_per_gpu_hour] in a jobs file)" in err  # trial s27: --price alone


def test_estimate_warns_that_a_reserved_term_outlasts_the_job() -> None:
    # A 1e10-token job on 8 H100 runs about two days; the 1-year term bills 365.
    args = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8", "--tokens", "1e10"]
    code, _, err = trainplan(*args, "--price-kind", "reserved-1y")
    assert code == 0
    assert "warning: reserved-1y bills whole 1-year terms: 8 h100-sxm for the term cost $" in err
    assert "days (0.5% of it); the cost counts the whole term, as if no other work used the rest" in err
    code, _, err = trainplan(*args, "--price-kind", "on-demand")
    assert code == 0 and "term" not in err


def test_every_cost_says_its_price_and_where_that_price_comes_from(tmp_path) -> None:
    """Trial s26: no cost printed its $/GPU-hour, the catalog did not mark estimated prices, and the
    estimate's JSON had neither the price nor the stack. The basis follows the price: the GPU file's
    median or its ESTIMATE, a price kind's offers, the user's --price; a re-estimate keeps it."""
    from planner.api import restack
    from planner.catalog.prices import PriceBasis
    from planner.model.stacks import Stack
    from planner.plan import Plan

    base = ["estimate", "--model", "gpt3-125m", "--gpu", "h800", "--num-gpus", "8", "--tokens", "1e9"]
    assert CATALOG.gpu("h800").price_basis == PriceBasis.ESTIMATE
    assert CATALOG.gpu("h100-sxm").price_basis == PriceBasis.CATALOG
    from planner.catalog.prices import file_price_basis

    # review s26: a user's GPU file quoting a vendor read as "median of on-demand offers"
    assert file_price_basis("vendor quote, 2026-11") == PriceBasis.FILE
    code, out, err = trainplan(*base)
    assert code == 0, err
    assert "at $5.07/GPU-h (an estimate, not a median of listed on-demand offers)" in out
    code, out, _ = trainplan(*base, "--json")
    facts = json.loads(out)
    assert facts["price_per_gpu_hour_usd"] == pytest.approx(5.07) and facts["price_basis"] == "estimate"
    assert facts["stack"] == "trainplan" and facts["emittable"] is True
    code, out, _ = trainplan(*base, "--price", "2.5", "--stack", "torchtitan", "--json")
    facts = json.loads(out)
    assert (facts["price_basis"], facts["stack"], facts["emittable"]) == ("user", "torchtitan", False)
    h100 = ["--gpu", "h100-sxm", "--price-kind", "spot"]
    code, out, _ = trainplan(*base, *h100)
    assert "(median of spot offers: " in out  # and the offers: how many, their dates (buyer trial s50 M8)
    # trial s30: each preemption waits for capacity, said in the goodput line and JSON
    assert "spot preemptions, each waiting 80.0 minutes for capacity" in out
    goodput = json.loads(trainplan(*base, *h100, "--json")[1])["goodput"]
    assert goodput["spot_preemptions"] > 0 and goodput["capacity_wait_s"] == 4800
    assert "spot preemptions" not in trainplan(*base, "--gpu", "h100-sxm")[1]
    code, out, _ = trainplan("plan", "--model", "gpt3-125m", "--tokens", "1e9", "--gpus", "h800=8", "--json")
    assert json.loads(out)["price_basis"] == "estimate" and json.loads(out)["stack"] == "trainplan"
    code, out, _ = trainplan("catalog")
    assert "* price: an estimate" in out and "5.07*" in out
    plan_file = tmp_path / "plan.json"
    assert trainplan(*base, "--out", str(plan_file))[0] == 0
    again = restack(Plan.load(plan_file), Stack.TORCHTITAN)
    assert again.price_basis == PriceBasis.ESTIMATE and again.price_per_gpu_hour_usd == pytest.approx(5.07)


def test_models_lists_every_preset_in_name_order() -> None:
    """Trial s26: the presets were listed only inside an unknown-model error, and not in name order."""
    from planner.catalog.models import get_preset, list_presets

    names = list_presets()
    assert names == sorted(names) and names.index("mistral-7b") < names.index("mistral-7b-v0.1")
    code, out, err = trainplan("models", "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["name"] for r in rows] == names
    v3 = next(r for r in rows if r["name"] == "deepseek-v3")
    assert v3["params_b"] == pytest.approx(get_preset("deepseek-v3").num_params() / 1e9)
    assert v3["active_params_b"] < v3["params_b"] and v3["experts"] == 256
    assert next(r for r in rows if r["name"] == "llama3-8b")["active_params_b"] is None
    code, out, _ = trainplan("models")
    assert code == 0 and "llama3-8b" in out and "config.json" in out
    # the active count's convention is said, and gpt-oss's card figure is the count less the embedding
    assert "counts the input embedding" in out and "5.13B" in out
    # trial s49 L5: tiny's 3.2M parameters read "0.00" B
    tiny = next(line for line in out.splitlines() if "│ tiny " in line)
    assert f"{get_preset('tiny').num_params() / 1e9:.2g}" in tiny and "0.00 " not in tiny


def test_models_shows_the_presets_and_config_files_named() -> None:
    """Trial s35: the help said a config.json path works too, and `models PATH` was refused; a
    config's sizes were to be read from `estimate --json`."""
    config = str(Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "qwen3_moe.json")
    code, out, err = trainplan("models", "--json", config, "llama3-8b")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["name"] for r in rows] == ["qwen3_moe", "llama3-8b"] and rows[0]["experts"] == 128
    code, _, err = trainplan("models", "no-such-model")
    assert code == 2 and err.count("\n") == 1 and "neither a model preset nor an existing config path" in err
    oss = get_preset("gpt-oss-120b")
    assert (oss.num_active_params() - oss.vocab_size * oss.hidden_size) / 1e9 == pytest.approx(5.13, abs=0.005)


def test_models_titles_a_users_file_and_gives_ties_windows_and_mtp() -> None:
    """Trial s52 (L3): `models FILE` was titled "Model presets", and nothing in `models` showed a
    tied head, the windowed layers or deepseek-v3's 11.61 B MTP modules."""
    config = str(Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "gemma3_text.json")
    code, out, err = trainplan("models", config, "deepseek-v3")
    assert code == 0, err
    assert out.splitlines()[0].strip() == "Models as --model reads them" and "Model presets" not in out
    assert "deepseek-v3: its MTP modules hold 11.61 B more (not in params B, not trained)" in out
    code, out, _ = trainplan("models", "--json", config, "deepseek-v3")
    gemma, v3 = json.loads(out)
    assert (gemma["tied_embeddings"], gemma["windowed_layers"], gemma["window_tokens"]) == (True, 22, 512)
    assert gemma["mtp_params_b"] is None and v3["windowed_layers"] is None and not v3["tied_embeddings"]
    assert v3["mtp_params_b"] == pytest.approx(get_preset("deepseek-v3").param_counts().mtp / 1e9)


def test_a_re_estimate_keeps_the_plans_price_and_the_target_stacks_modules(tmp_path) -> None:
    """Review s26: explain --stack megatron-core of a hf-trainer plan was refused ("drop --impl hf",
    a flag explain lacks), a compiled plan likewise; restack passed a spot price on as the user's
    (per GPU, no spot interruptions) and replan dropped the price altogether."""
    from planner.api import replan, restack
    from planner.catalog.prices import PriceBasis
    from planner.model.stacks import Stack
    from planner.plan import Plan

    base = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8", "--tokens", "1e9"]
    hf, compiled = tmp_path / "hf.json", tmp_path / "compiled.json"
    assert trainplan(*base, "--stack", "hf-trainer", "--out", str(hf))[0] == 0
    assert trainplan(*base, "--compile", "--out", str(compiled))[0] == 0
    for path in (hf, compiled):
        code, out, err = trainplan("explain", str(path), "--stack", "megatron-core", "--json")
        assert code == 0, err
        assert json.loads(out)["stack"] == "megatron-core"
    spot = tmp_path / "spot.json"
    assert trainplan(*base, "--price-kind", "spot", "--out", str(spot))[0] == 0
    p = Plan.load(spot)
    again = restack(p, Stack.TORCHTITAN)
    assert again.price_basis == PriceBasis.SPOT and again.price_per_gpu_hour_usd == p.price_per_gpu_hour_usd
    assert again.estimate.goodput.goodput_fraction == pytest.approx(p.estimate.goodput.goodput_fraction, rel=0.02)
    quoted = tmp_path / "quoted.json"
    assert trainplan(*base, "--price", "1.5", "--out", str(quoted))[0] == 0
    replanned = replan(Plan.load(quoted), 1.2)
    assert (replanned.price_per_gpu_hour_usd, replanned.price_basis) == (1.5, PriceBasis.USER)
    assert replan(p, 1.2).price_basis == PriceBasis.SPOT


def test_plan_per_gpu_shows_each_searched_types_best_plan() -> None:
    """Trial s26: "which GPU" got one type's plans only; --per-gpu lists each other type's best
    plan and names the types where no plan meets the request."""
    args = ["plan", "--model", "llama3-8b", "--tokens", "2e11", "--gpus", "h100-sxm,a100-80gb-sxm,rtx-4090"]
    args += ["--deadline-days", "30", "--top", "0", "--per-gpu"]
    code, out, err = trainplan(*args, "--json")
    assert code == 0, err
    data = json.loads(out)
    others = [p["gpu"] for p in data["per_gpu"]]
    assert data["plan"]["gpu"] not in others and len(set(others)) == len(others)
    assert set(others) | set(data["per_gpu_none"]) | {data["plan"]["gpu"]} == {"h100-sxm", "a100-80gb-sxm", "rtx-4090"}
    code, out, _ = trainplan(*args)
    assert "the best plan of each GPU type (--per-gpu)" in out
    code, out, _ = trainplan(*args[:-1], "--json")
    assert json.loads(out)["per_gpu"] is None  # not asked
    # trial s27: each type without a plan says what rules it out, not the list of every constraint
    budget = ["plan", "--model", "llama3-70b", "--tokens", "1e12", "--budget-usd", "2e6", "--deadline-days", "30"]
    budget += ["--gpus", "h100-sxm,a100-80gb-sxm,l4", "--top", "0", "--per-gpu"]
    data = json.loads(trainplan(*budget, "--json")[1])
    assert data["per_gpu_binding"] == {"a100-80gb-sxm": "budget", "l4": "deadline"}
    # ... and, where the deadline does, how long the type's fastest plan takes (trial s47 L4)
    fastest = data["per_gpu_fastest_h"]["l4"]
    assert set(data["per_gpu_fastest_h"]) == {"l4"} and fastest > 30 * 24
    said = (
        f"no plan on a100-80gb-sxm (budget), l4 (deadline: fastest {fastest / 24:,.1f} days at p80) meets the request"
    )
    assert said in trainplan(*budget)[1]


def test_your_own_quote_prices_a_gpu_without_offers_of_the_kind() -> None:
    """Trial s29b: a spot quote for GB200 (no spot offer listed) was refused with 'give each a
    price (--price ...)', the flag given. Now the quote prices it; spot adds its interruptions."""
    assert not offers_of(CATALOG.gpu("gb200"), "spot")
    args = ["--model", "gpt3-125m", "--tokens", "1e9", "--json"]
    code, out, err = trainplan("plan", *args, "--gpus", "gb200=8", "--price-kind", "spot", "--price", "gb200=4")
    assert code == 0, err
    spot = json.loads(out)["plan"]
    assert spot["price_per_gpu_hour_usd"] == 4 and (spot["price_basis"], spot["price_kind"]) == ("user", "spot")
    code, out, err = trainplan("plan", *args, "--gpus", "gb200=8", "--price", "gb200=4")
    assert code == 0, err
    assert spot["time_to_train_h"] > json.loads(out)["plan"]["time_to_train_h"]  # spot's interruptions cost time
    code, out, err = trainplan(
        "estimate", "--model", "gpt3-125m", "--gpu", "gb200", "--num-gpus", "8", "--price-kind", "spot", "--price", "4"
    )
    assert code == 0, err
    code, _, err = trainplan("plan", *args, "--gpus", "gb200=8", "--price-kind", "spot")  # no quote: refused
    assert code == 2 and "no spot price for gb200" in err
    # a whole-catalog search no longer says the quoted type was left out (review s29b)
    from planner.api import PlanRequest
    from planner.api.notices import unpriced_types
    from planner.catalog.models import get_preset

    request = PlanRequest(
        model=get_preset("gpt3-125m"), training_tokens=1e9, price_kind="spot", price_overrides={"gb200": 4.0}
    )
    assert "gb200" not in unpriced_types(request, CATALOG)
    assert "gb200" in unpriced_types(request.model_copy(update={"price_overrides": {}}), CATALOG)


def test_a_spot_quote_keeps_spots_interruptions_when_rebuilt() -> None:
    """Review s29b: a plan priced with --price-kind spot --price recorded only the user's price, so
    restack and replan timed it without spot's interruptions (gb200 x 8: 1.3605 h spot, 1.3600 h
    not; restacked, both the same)."""
    from planner.api import build_plan, replan, restack
    from planner.catalog.prices import PriceBasis
    from planner.layout import Layout, TrainingConfig
    from planner.model.stacks import Stack

    kw = dict(num_gpus=8, training_tokens=1e9, price=4.0)
    model, layout, training = get_preset("gpt3-125m"), Layout(dp_shard=8), TrainingConfig()
    spot = build_plan(model, "gb200", layout, training, price_kind="spot", **kw)
    quoted = build_plan(model, "gb200", layout, training, **kw)
    assert (spot.price_basis, spot.price_kind) == (PriceBasis.USER, "spot")
    assert spot.estimate.time_to_train_h > quoted.estimate.time_to_train_h
    for rebuild in (lambda p: restack(p, Stack.TORCHTITAN), lambda p: replan(p, 1.2)):
        again, plain = rebuild(spot), rebuild(quoted)
        assert (again.price_per_gpu_hour_usd, again.price_basis, again.price_kind) == (4.0, PriceBasis.USER, "spot")
        assert again.estimate.time_to_train_h > plain.estimate.time_to_train_h


def test_a_type_ruled_out_by_the_batch_is_pointed_to_vary_batch() -> None:
    """Trial s29b: 16e6 tokens ruled a type out (its nearest batch 2^24 is 4.9 % off, another type
    made 15,990,784) beside a warning that the type at 2^24 costs less; the line gave no way out."""
    from types import SimpleNamespace

    from planner.errors import Constraint
    from planner.search.diagnosis import Unplanned
    from ui.render_plan import unplanned_gpus_line

    def result(constraint: Constraint):
        solution = SimpleNamespace(unplanned_gpus=(Unplanned("b200", constraint),))
        return SimpleNamespace(
            plan=SimpleNamespace(gpu="b300"),
            per_gpu=(),
            searched_gpus=("b300", "b200"),
            solution=solution,
            risk=SimpleNamespace(value="p80"),
        )

    assert "--vary-batch" in (unplanned_gpus_line(result(Constraint.BATCH)) or "")
    assert "--vary-batch" not in (unplanned_gpus_line(result(Constraint.DEADLINE)) or "")


def test_estimate_json_names_the_windowed_layers_as_models_does() -> None:
    """Trial s52 left: estimate --json had no window count, which models --json gives."""
    config = str(Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "gemma3_text.json")
    args = ["--gpu", "h100-sxm", "--num-gpus", "8", "--micro-batch", "1", "--seq-len", "4096", "--json"]
    code, out, err = trainplan("estimate", "--model", config, *args)
    assert code == 0, err
    model = json.loads(out)["model"]
    assert (model["windowed_layers"], model["window_tokens"]) == (22, 512)
    code, out, err = trainplan("estimate", "--model", "llama3-8b", *args)
    assert code == 0 and json.loads(out)["model"]["windowed_layers"] is None, err
