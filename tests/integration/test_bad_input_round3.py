"""Issue #29, the input side: hand-edited plans re-validated on read, every user file read through
one capped reader of regular files (planner/limits.py), one set of bounds for the CLI and the jobs
files, and what reaches the terminal stripped of escapes (docs/reliability.md, "Round 3").

In-process (``ui.cli.main``), like tests/integration/test_bad_input_cli.py; each case is one line
on stderr and exit 2.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from support import DATA
from support.cli import assert_one_line, call

EST = ["estimate", "--model", "tiny", "--gpu", "h100-sxm", "--num-gpus", "1", "--micro-batch", "2", "--seq-len", "64"]
PLAN = ["plan", "--model", "tiny", "--tokens", "1e9"]
MACHINE = '[machine]\nhost = "h"\ndevice = "d"\ndriver = "x"\ndate = "2026-01-01"\nsoftware = "s"\n'


def _edited(plan: dict, **changes) -> dict:
    """``plan`` with top-level fields and ``layout`` fields (``layout_tp=2``) changed."""
    edited = json.loads(json.dumps(plan))
    for key, value in changes.items():
        if key.startswith("layout_"):
            edited["layout"][key.removeprefix("layout_")] = value
        else:
            edited[key] = value
    return edited


def _jobs(extra: str = "", job: str = 'name = "a"\nmodel = "tiny"\ntokens = 1e9\n') -> str:
    return f"{extra}\n[[jobs]]\n{job}"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("round3")
    assert call(*EST, "--out", str(root / "estimated.json"))[0] == 0
    plan = json.loads((root / "estimated.json").read_text())
    two = _edited(plan, num_gpus=2, gpus_per_node=2)
    edits = {
        "tp2": _edited(plan, layout_tp=2),
        "deg12": _edited(two, layout_tp=2, layout_pp=3, layout_dp_shard=2),
        "vpp": _edited(plan, num_gpus=10, num_nodes=2, gpus_per_node=5, layout_pp=10, layout_vpp=10),
        "ep-dense": _edited(two, layout_dp_shard=2, layout_ep=2),
        "gpn7": _edited(two, gpus_per_node=7),
        "gpu": _edited(plan, gpu="h900-imaginary"),
        "schema": _edited(plan, schema_version=99),
        "huge": _edited(plan, num_gpus=2**40, gpus_per_node=2**40, layout_dp_shard=2**40),
        "node": _edited(plan, num_gpus=2**20, gpus_per_node=2**20, layout_dp_shard=2**20),
        "escapes": {**plan, "model": {**plan["model"], "name": "\x1b[2J\x1b]0;pwned\x07evil"}},
    }
    for name, content in edits.items():
        (root / f"{name}.json").write_text(json.dumps(content))
    (root / "good.json").write_text(json.dumps(plan))
    (root / "u16.json").write_bytes(json.dumps(plan).encode("utf-16"))
    (root / "dupkey.json").write_text(json.dumps(plan)[:-1] + ', "gpu": "a100-80gb-sxm"}')
    os.mkfifo(root / "fifo")
    mixtral = json.loads((DATA / "hf_configs" / "mixtral.json").read_text())
    wide = {**mixtral, "num_hidden_layers": 10_000, "num_local_experts": 100_000, "num_experts_per_tok": 2}
    (root / "wide-moe.json").write_text(json.dumps(wide))
    jobs = {
        "tokens.toml": _jobs('[inventory]\n"h100-sxm" = 8', 'name = "a"\nmodel = "tiny"\ntokens = 1e300\n'),
        "batch.toml": _jobs(
            '[inventory]\n"h100-sxm" = 8',
            'name = "a"\nmodel = "tiny"\ntokens = 1e9\nglobal_batch_tokens = 100000000000000000\n',
        ),
        "inventory.toml": _jobs('[inventory]\n"h100-sxm" = 9223372036854775807'),
        "horizon.toml": _jobs('horizon_days = 1e100\nbuy = ["h100-sxm"]'),
        "many.toml": '[inventory]\n"h100-sxm" = 8\n'
        + "".join(f'[[jobs]]\nname = "j{i}"\nmodel = "tiny"\ntokens = 1e9\n' for i in range(33)),
    }
    for name, text in jobs.items():
        (root / name).write_text(text)
    job = {"name": "a", "model": "tiny", "tokens": 1e9}
    (root / "true.json").write_text(json.dumps({"inventory": {"h100-sxm": True}, "jobs": [job]}))
    (root / "dup.json").write_text('{"inventory": {"h100-sxm": 8, "h100-sxm": 64}, "jobs": [' + json.dumps(job) + "]}")
    (root / "u16.toml").write_bytes(jobs["tokens.toml"].encode("utf-16"))
    (root / "slow.toml").write_text(MACHINE + "[gpus.h100-sxm]\ngemm_bf16_tflops_achieved = 1e-300\n")
    (root / "esc.toml").write_text(MACHINE + '[gpus.h100-sxm]\n"gemm\\u001b[31m" = 400.0\n')
    return root


# (argv with {d} for the files dir, what the one error line must name)
CASES = {
    # 6: every user file is a regular file of bounded size, read through planner/limits.py
    "--calibration /dev/zero": ([*EST, "--calibration", "/dev/zero"], "/dev/zero: a character device"),
    "--calibration /dev/urandom": ([*EST, "--calibration", "/dev/urandom"], "/dev/urandom: a character device"),
    "--calibration a FIFO": ([*EST, "--calibration", "{d}/fifo"], "fifo: a FIFO, not a calibration file"),
    "calibrate --out /dev/zero": (
        ["calibrate", "--gpu", "h100-sxm", "--device", "cpu", "--out", "/dev/zero"],
        "a character device, not a calibration file",
    ),
    "emit --tokenizer /dev/zero": (
        ["emit", "{d}/good.json", "--out", "{d}/t1", "--tokenizer", "/dev/zero"],
        "a character device, not a tokenizer",
    ),
    "emit --tokenizer a FIFO": (["emit", "{d}/good.json", "--out", "{d}/t2", "--tokenizer", "{d}/fifo"], "a FIFO"),
    "explain a FIFO": (["explain", "{d}/fifo"], "fifo: a FIFO, not a plan file"),
    "emit a FIFO": (["emit", "{d}/fifo", "--out", "{d}/t3"], "fifo: a FIFO, not a plan file"),
    "portfolio a FIFO": (["portfolio", "{d}/fifo"], "fifo: a FIFO, not a jobs file"),
    "--model a FIFO": ([*EST[:2], "{d}/fifo", *EST[3:]], "fifo: a FIFO, not a model config"),
    "explain a directory": (["explain", "{d}"], "a directory, not a plan file"),
    # 17: a hand-edited plan is checked by the rules that made it (Plan.check)
    "tp 2 on 1 GPU": (["explain", "{d}/tp2.json"], "degrees multiply to 2"),
    "tp*pp*dp 12 on 2 GPUs": (["emit", "{d}/deg12.json", "--out", "{d}/j1"], "degrees multiply to 12"),
    "pp*vpp 100 with 4 layers": (["explain", "{d}/vpp.json"], "pp*vpp=100 pipeline stages exceed 6"),
    "ep 2 on a dense model": (["emit", "{d}/ep-dense.json", "--out", "{d}/j2"], "ep=2 needs a mixture-of-experts"),
    "gpus_per_node 7 of 2 GPUs": (["explain", "{d}/gpn7.json"], "gpus_per_node 7 is not num_gpus // num_nodes = 2"),
    "unknown GPU": (["emit", "{d}/gpu.json", "--out", "{d}/j3"], "unknown GPU 'h900-imaginary'"),
    "schema_version 99": (["explain", "{d}/schema.json"], "schema_version 99"),
    "duplicate key in a plan": (["explain", "{d}/dupkey.json"], "duplicate key 'gpu'"),
    # 12: GPUs a node cannot hold
    "estimate --num-gpus 4096 --nodes 1": (
        [*EST[:6], "4096", *EST[7:], "--nodes", "1"],
        "--nodes 1: 4096 GPUs per node, but a hgx-8 node holds 8",
    ),
    "plan of 2**40 GPUs": (["emit", "{d}/huge.json", "--out", "{d}/j4"], "num_gpus: Input should be less than"),
    "plan of 2**20 GPUs in one node": (["explain", "{d}/node.json"], "num_nodes 1: 1048576 GPUs per node"),
    # 18, 23, 25: flags
    "--seq-len 0": ([*EST[:-1], "0"], "--seq-len must be a finite number >= 1"),
    "--gpus h100-sxm=1e20": (
        [*PLAN, "--gpus", "h100-sxm=1e20"],
        "--gpus h100-sxm must be a finite number >= 1 and <= 1,048,576",
    ),
    "--batch-tolerance nan": ([*PLAN, "--batch-tolerance", "nan"], "--batch-tolerance must be a finite number"),
    "--gpus given twice": ([*PLAN, "--gpus", "h100-sxm=8,a100-80gb-sxm,h100-sxm=64"], "'h100-sxm' is given twice"),
    "--deadline-days 1e100": ([*PLAN, "--deadline-days", "1e100"], "--deadline-days must be a finite number > 0"),
    # 19, 7, 13: the jobs files obey the CLI's bounds (planner/limits.py)
    "jobs tokens 1e300": (["portfolio", "{d}/tokens.toml"], "[[jobs]]): tokens: Input should be less than or equal to"),
    "jobs global batch 1e17": (["portfolio", "{d}/batch.toml"], "[[jobs]]): global_batch_tokens"),
    "inventory 2**63-1": (["portfolio", "{d}/inventory.toml"], "inventory.h100-sxm: Input should be less than"),
    "inventory true": (["portfolio", "{d}/true.json"], "inventory.h100-sxm: Input should be a valid integer"),
    "duplicate JSON key": (["portfolio", "{d}/dup.json"], "duplicate key 'h100-sxm'"),
    "fleet horizon_days 1e100": (
        ["fleet", "{d}/horizon.toml"],
        "horizon_days: Input should be less than or equal to 36525",
    ),
    "33 jobs": (["portfolio", "{d}/many.toml"], "33 jobs, more than the 32"),
    # 14: work bounded, not only fields: a config within the reader's limits, on every GPU type
    "10,000 layers x 100,000 experts on every GPU": (
        ["plan", "--model", "{d}/wide-moe.json", "--tokens", "1e12", "--vary-batch"],
        "the search is too broad: ",
    ),
    # 20, 22: a calibration rate of 1e-300, files that are not UTF-8 named
    "calibration rate 1e-300": (
        [*EST, "--calibration", "{d}/slow.toml"],
        "gemm_bf16_tflops_achieved': expected at least",
    ),
    "UTF-16 plan": (["explain", "{d}/u16.json"], "u16.json: not UTF-8 text"),
    "UTF-16 jobs file": (["portfolio", "{d}/u16.toml"], "u16.toml: not UTF-8 text"),
}


@pytest.fixture
def no_hang():
    """A read that waits on a FIFO fails the test instead of hanging it."""

    def expire(*_):
        raise AssertionError("blocked reading a FIFO")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_exit_2(case, files, no_hang):
    argv, needle = CASES[case]
    code, _, err = call(*[arg.format(d=files) for arg in argv])
    assert_one_line(code, err, needle.format(d=files))
    assert not any((files / f"j{i}").exists() for i in range(1, 5))  # emit wrote nothing


def test_a_good_plan_still_reads_and_emits(files, tmp_path):
    assert call("explain", str(files / "good.json"))[0] == 0
    assert call("emit", str(files / "good.json"), "--out", str(tmp_path / "job"))[0] == 0


def test_escapes_from_files_do_not_reach_the_terminal(files):
    """21: a plan's model name and a calibration file's key are printed without their escapes."""
    code, out, err = call("explain", str(files / "escapes.json"))
    assert code == 0, err
    assert "evil" in out and "\x1b" not in out + err and "\x07" not in out + err
    code, _, err = call(*EST, "--calibration", str(files / "esc.toml"))
    assert_one_line(code, err, "gemm[31m")
    assert "\x1b" not in err


def test_the_trainer_reads_user_files_through_the_same_reader(tmp_path, no_hang):
    """6: ``run``'s tokenizer and job file are read like the planner's files (a hand-edited
    job.json may name /dev/zero; a FIFO job.json would block the launcher)."""
    from trainer.corpus import Tokenizer
    from trainer.job_spec import JobSpec

    for path, kind in (("/dev/zero", "a character device"), ("/dev/urandom", "a character device")):
        with pytest.raises(ValueError, match=f"{path}: {kind}, not a tokenizer"):
            Tokenizer(path)
    os.mkfifo(tmp_path / "job.json")
    with pytest.raises(ValueError, match="a FIFO"):
        JobSpec.load(tmp_path)
