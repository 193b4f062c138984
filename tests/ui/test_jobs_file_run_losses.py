"""A jobs file's run-loss keys (plan's --failure-rate-x ... --startup-minutes): per job or for every
job, bounded as the flags are, carried into each job's request so portfolio and fleet schedule on
them, and said where the jobs' days are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ui.cli import main

# evaluation and start-up at 0, so an input stall alone lengthens the run (start-up is fixed time)
NO_EVAL = "eval_pct = 0\nstartup_minutes = 0\n"
JOB = '[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 1e11\n'
INVENTORY = "[inventory]\nh100-sxm = 64\n"


def _portfolio(tmp_path: Path, capsys, text: str) -> dict:
    path = tmp_path / "jobs.toml"
    path.write_text(text)
    assert main(["portfolio", str(path), "--json"]) == 0, capsys.readouterr().err
    (job,) = json.loads(capsys.readouterr().out)["assignments"]
    return job


def test_a_jobs_data_stall_makes_its_portfolio_days_5_percent_longer(tmp_path, capsys):
    base = _portfolio(tmp_path, capsys, NO_EVAL + INVENTORY + JOB)
    stalled = _portfolio(tmp_path, capsys, NO_EVAL + INVENTORY + JOB + "data_stall_pct = 5\n")
    assert stalled["layout"] == base["layout"] and stalled["num_gpus"] == base["num_gpus"]
    assert stalled["days"] == pytest.approx(1.05 * base["days"], rel=1e-6)
    assert stalled["run_losses"] == {
        "failure_rate_x": None,
        "checkpoint_write_gb_per_s": None,
        "restart_minutes": None,
        "data_stall_pct": 5.0,
        "eval_pct": 0.0,
        "startup_minutes": 0.0,
    }
    # file-wide: every job's, and a job's own key replaces the file's
    everyone = _portfolio(tmp_path, capsys, "data_stall_pct = 5\n" + NO_EVAL + INVENTORY + JOB)
    assert everyone["days"] == stalled["days"]
    own = _portfolio(tmp_path, capsys, "data_stall_pct = 5\n" + NO_EVAL + INVENTORY + JOB + "data_stall_pct = 0\n")
    assert own["days"] == base["days"] and own["run_losses"]["data_stall_pct"] == 0


def test_portfolio_text_says_which_jobs_days_rest_on_your_figures(tmp_path, capsys):
    other = JOB.replace('"a"', '"b"')
    path = tmp_path / "jobs.toml"
    path.write_text(INVENTORY + JOB + "failure_rate_x = 2\ndata_stall_pct = 5\n" + other)
    assert main(["portfolio", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "a's days on your figures: failure rate 2x, input stalls 5%" in out
    assert "b's days" not in out
    path.write_text("checkpoint_write_gb_per_s = 20\n" + INVENTORY + JOB + other)
    assert main(["portfolio", str(path)]) == 0
    assert "every job's days on your figures: checkpoint write 20 GB/s" in capsys.readouterr().out


def test_fleet_schedules_each_job_on_its_figures_and_says_so(tmp_path, capsys):
    path = tmp_path / "fleet.toml"
    text = 'horizon_days = 365\nbuy = ["h100-sxm"]\nfailure_rate_x = 0\n' + NO_EVAL + JOB + "data_stall_pct = 5\n"
    path.write_text(text + JOB.replace('"a"', '"b"'))
    assert main(["fleet", str(path), "--json"]) == 0
    jobs = {a["job"]: a for a in json.loads(capsys.readouterr().out)["mixed"]["assignments"]}
    assert jobs["a"]["run_losses"]["data_stall_pct"] == 5 and jobs["b"]["run_losses"]["data_stall_pct"] is None
    assert jobs["a"]["run_losses"]["failure_rate_x"] == jobs["b"]["run_losses"]["failure_rate_x"] == 0
    assert jobs["a"]["num_gpus"] == jobs["b"]["num_gpus"]
    assert jobs["a"]["days"] == pytest.approx(1.05 * jobs["b"]["days"], rel=1e-6)
    assert main(["fleet", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    (a_line,) = [line for line in lines if line.startswith("  a: ")]
    (b_line,) = [line for line in lines if line.startswith("  b: ")]
    assert a_line.endswith("; on your figures: no failures, input stalls 5%, evaluation 0%, start-up 0 min")
    assert b_line.endswith("; on your figures: no failures, evaluation 0%, start-up 0 min")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("data_stall_pct = 1001", "data_stall_pct: Input should be less than or equal to 1000"),
        ("checkpoint_write_gb_per_s = 0", "checkpoint_write_gb_per_s: Input should be greater than 0"),
        ("failure_rate_x = nan", "failure_rate_x: Input should be a finite number"),
        ("failure_rate_x = 101", "failure_rate_x: Input should be less than or equal to 100"),
        ("restart_minutes = -1", "restart_minutes: Input should be greater than or equal to 0"),
        ("startup_minutes = 1441", "startup_minutes: Input should be less than or equal to 1440"),
        ("eval_pct = true", "eval_pct: Input should be a valid number"),
        ('eval_pct = "1"', "eval_pct: Input should be a valid number"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_job_and_key(tmp_path, capsys, line, message):
    path = tmp_path / "jobs.toml"
    path.write_text(INVENTORY + JOB + line + "\n")
    assert main(["portfolio", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"job 'a' (the 1st [[jobs]]): {message}" in err, err
    path.write_text(line + "\n" + INVENTORY + JOB)  # file-wide: the key alone
    assert main(["fleet", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: {message}" in err, err


@pytest.mark.parametrize("key", ["data_stall_percent", "failure-rate-x", "checkpoint_write_gbps"])
def test_a_key_the_file_does_not_know_is_still_refused(tmp_path, capsys, key):
    path = tmp_path / "jobs.toml"
    for text in (INVENTORY + JOB + f"{key} = 5\n", f"{key} = 5\n" + INVENTORY + JOB):
        path.write_text(text)
        assert main(["portfolio", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{key}: Extra inputs are not permitted; allowed: " in err, err


@pytest.mark.parametrize(
    ("command", "head"),
    [("portfolio", INVENTORY), ("fleet", 'horizon_days = 30\nbuy = ["h100-sxm"]\n')],
)
def test_an_infeasible_answer_says_the_figures_its_days_rest_on(tmp_path, capsys, command, head):
    """Trial s48: portfolio's and fleet's answer of a job too late for its deadline did not say the
    run-loss figures its days were timed with, where plan's --json carries them."""
    late = JOB.replace("1e11", "1e13") + "deadline_days = 0.5\ndata_stall_pct = 5\n"
    path = tmp_path / "jobs.toml"
    path.write_text(head + late)
    assert main([command, str(path)]) == 0
    out = capsys.readouterr().out
    assert "no feasible plan - deadline" in out and "a's days on your figures: input stalls 5%" in out, out
    assert main([command, str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["feasible"] is False and data["run_losses"]["a"]["data_stall_pct"] == 5.0
    path.write_text(head + late.replace("data_stall_pct = 5\n", ""))  # none set: nothing said, nulls
    assert main([command, str(path)]) == 0
    assert "on your figures" not in capsys.readouterr().out
    assert main([command, str(path), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["run_losses"]["a"].values()) == {None}


def test_a_found_portfolio_and_fleet_carry_each_jobs_figures_at_the_top(tmp_path, capsys):
    """The key an infeasible answer fills is there when one is found (one shape, trial s26)."""
    for command, head in (("portfolio", INVENTORY), ("fleet", 'horizon_days = 30\nbuy = ["h100-sxm"]\n')):
        path = tmp_path / "jobs.toml"
        path.write_text(head + JOB + "data_stall_pct = 5\n")
        assert main([command, str(path), "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["feasible"] and data["run_losses"]["a"]["data_stall_pct"] == 5.0, command
