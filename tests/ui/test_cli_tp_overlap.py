"""--tp-comm-overlap/--no-tp-comm-overlap on plan and estimate: the JSON, the summary line explain
prints, the one-line refusal off megatron-core (heldout51 H1: FlagPerf's plain Megatron-Core jobs)."""

from __future__ import annotations

import json

import pytest

from planner.plan import Plan
from ui.cli import main

# FlagPerf's Llama3-8B TP2 job on 2 x 8 H100 (data/validation/fresh_runs.csv F09)
FLAGPERF_8B = ["--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "16", "--stack", "megatron-core"]
FLAGPERF_8B += ["--tp", "2", "--micro-batch", "1", "--seq-len", "8192", "--global-batch-tokens", "4194304"]
PLAN = ["plan", "--model", "llama3-8b", "--tokens", "1e10", "--gpus", "h100-sxm", "--seq-len", "4096"]


def _json(capsys, *args: str) -> dict:
    assert main([*args, "--json", "--no-calibration"]) == 0
    return json.loads(capsys.readouterr().out)


def test_estimate_says_the_choice_in_json_and_is_slower_off(capsys):
    on = _json(capsys, "estimate", *FLAGPERF_8B)
    off = _json(capsys, "estimate", *FLAGPERF_8B, "--no-tp-comm-overlap")
    assert on["tp_comm_overlap"] is True and off["tp_comm_overlap"] is False
    assert off["throughput"]["tokens_per_s"] < on["throughput"]["tokens_per_s"]
    assert on["uncertainty"]["validated"] and not off["uncertainty"]["validated"]
    assert "tp_overlap_off" in off["uncertainty"]["regime_features"]
    assert _json(capsys, "estimate", *FLAGPERF_8B, "--tp-comm-overlap") == on  # the default, said


def test_plan_searches_without_it_and_says_so_in_json(capsys):
    args = [*PLAN, "--stack", "megatron-core"]
    assert _json(capsys, *args, "--no-tp-comm-overlap")["tp_comm_overlap"] is False
    assert _json(capsys, *args)["tp_comm_overlap"] is True
    # review52 L3: no such flag under trainplan's stack, whose DTensor TP hides none of its traffic
    assert _json(capsys, *PLAN)["tp_comm_overlap"] is None


def test_the_summary_and_explain_name_it_from_the_plan_file(capsys, tmp_path):
    out = tmp_path / "plan.json"
    args = ["estimate", *FLAGPERF_8B, "--no-tp-comm-overlap", "--no-calibration", "--out", str(out)]
    assert main(args) == 0
    assert "no TP comm overlap" in capsys.readouterr().out
    assert Plan.load(out).tp_comm_overlap is False
    assert main(["explain", str(out), "--no-calibration"]) == 0
    said = capsys.readouterr().out
    assert "no TP comm overlap" in said and "TP comm overlap off (--no-tp-comm-overlap)" in said
    assert main(["estimate", *FLAGPERF_8B, "--no-calibration"]) == 0
    assert "no TP comm overlap" not in capsys.readouterr().out
    # review51 L2: at tp 1 the switch changes nothing, and the line says so
    tp1 = [a if a != "2" or FLAGPERF_8B[i - 1] != "--tp" else "1" for i, a in enumerate(FLAGPERF_8B)]
    assert main(["estimate", *tp1, "--no-tp-comm-overlap", "--no-calibration"]) == 0
    assert "no TP comm overlap (no TP traffic at tp 1)" in capsys.readouterr().out


@pytest.mark.parametrize("stack", ["trainplan", "megatron-lm"])
def test_off_is_refused_off_megatron_core_in_one_line(capsys, stack):
    estimate = ["estimate", *FLAGPERF_8B[:6], "--tp", "2", "--seq-len", "4096"]
    for command in (estimate, PLAN):
        assert main([*command, "--stack", stack, "--no-tp-comm-overlap"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--stack megatron-core" in err and f"(not {stack}" in err
