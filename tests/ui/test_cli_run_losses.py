"""The run-loss flags on the CLI (--failure-rate-x, --checkpoint-write-gb-per-s, --restart-minutes,
--data-stall-pct, --eval-pct, --startup-minutes): one-line refusals, the JSON and the goodput line
say which figures are the user's, --help names each default, explain re-estimates with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ui.cli import main

EST = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "64", "--tokens", "1e12"]
PLAN = ["plan", "--model", "llama3.2-1b", "--tokens", "5e10", "--gpus", "h100-sxm=64", "--top", "0"]


def _json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "flag, value, says",
    [
        ("--failure-rate-x", "-1", ">= 0 and <= 100 (got -1)"),
        ("--failure-rate-x", "nan", "got nan"),
        ("--checkpoint-write-gb-per-s", "0", "> 0 and <= 10,000 (got 0)"),
        ("--restart-minutes", "1e9", "<= 1,440"),
        ("--data-stall-pct", "-5", ">= 0 and <= 1,000 (got -5)"),
        ("--eval-pct", "inf", "got inf"),
        ("--startup-minutes", "-1", ">= 0"),
    ],
)
def test_out_of_range_figures_are_one_line_errors(capsys, flag, value, says):
    for command in (EST, PLAN):
        assert main([*command, flag, value]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith(f"trainplan: error: {flag} must be") and says in err


def test_json_records_the_user_s_figures_and_the_goodput_they_give(capsys):
    base = _json(capsys, *EST)
    mine = _json(capsys, *EST, "--data-stall-pct", "5", "--checkpoint-write-gb-per-s", "20", "--failure-rate-x", "2")
    assert base["run_losses"] == dict.fromkeys(base["run_losses"])  # every figure the default
    assert mine["run_losses"]["data_stall_pct"] == 5 and mine["run_losses"]["restart_minutes"] is None
    assert mine["goodput"]["data_stall_fraction"] == 0.05
    assert mine["goodput"]["mttf_h"] == pytest.approx(base["goodput"]["mttf_h"] / 2)
    assert mine["memory"] == base["memory"] and mine["time"] == base["time"]
    planned = _json(capsys, *PLAN, "--restart-minutes", "3")
    assert planned["run_losses"]["restart_minutes"] == 3
    # no plan: the answer still says which figures it rests on
    missed = _json(capsys, *PLAN, "--restart-minutes", "3", "--deadline-days", "0.001")
    assert not missed["feasible"] and missed["run_losses"]["restart_minutes"] == 3


def test_the_goodput_line_says_which_figures_are_the_user_s(capsys):
    assert main([*EST, "--failure-rate-x", "2", "--data-stall-pct", "5"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("goodput")]
    assert line.endswith("; on your figures: failure rate 2x, input stalls 5%") and "input stalls +5.0%" in line
    assert main([*EST, "--failure-rate-x", "0"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("goodput")]
    # the other losses still count where nothing fails (was "goodput 100%" whatever they took)
    assert line.startswith("goodput 99.") and "no failures modelled" in line and line.endswith("no failures")
    assert main(EST) == 0
    assert "on your figures" not in capsys.readouterr().out


def test_explain_keeps_the_plan_s_figures_and_replaces_them_when_told(capsys, tmp_path: Path):
    out = tmp_path / "plan.json"
    assert main([*EST, "--startup-minutes", "30", "--out", str(out)]) == 0
    capsys.readouterr()
    kept = _json(capsys, "explain", str(out))
    assert kept["run_losses"]["startup_minutes"] == 30 and kept["plan"]["goodput"]["startup_s"] == 1800
    told = _json(capsys, "explain", str(out), "--data-stall-pct", "5")
    assert told["run_losses"]["startup_minutes"] == 30 and told["run_losses"]["data_stall_pct"] == 5
    assert told["plan"]["goodput"]["data_stall_fraction"] == 0.05


@pytest.mark.parametrize("command", ["estimate", "plan", "explain"])
def test_help_names_each_default_and_its_source(command):
    import typer

    from ui.cli import app

    helps = {p.opts[0]: p.help for p in typer.main.get_command(app).commands[command].params}  # type: ignore[attr-defined]
    expected = {
        "--failure-rate-x": "default 1: the catalog's, from Llama 3's 54-day log",
        "--checkpoint-write-gb-per-s": "default: 122 MB/s per GPU, Llama 3's 2 TB/s store",
        "--restart-minutes": "default 10: an estimate",
        "--data-stall-pct": "default 0: prefetching loader workers",
        "--eval-pct": "default 0.5: BLOOM 0.7",
        "--startup-minutes": "default 10: an estimate",
    }
    for flag, words in expected.items():
        assert words in helps[flag], flag
