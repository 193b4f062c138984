"""Jobs files as a user writes them (trial s23): plan's keys, plan's warnings, fleet's answer job by job."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ui.cli import main


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "jobs.toml"
    path.write_text(text)
    return str(path)


def test_a_jobs_file_takes_the_batch_keys_plan_takes(tmp_path, capsys):
    """global_batch_tokens = 4e6 (a TOML float) and batch_tolerance / vary_batch, which the batch
    answer's fix names, were refused as not integers / unknown keys."""
    jobs = '[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 1e11\n'
    jobs += "global_batch_tokens = 4e6\nbatch_tolerance = 0.2\nvary_batch = true\n"
    assert main(["portfolio", _file(tmp_path, jobs), "--json"]) == 0
    job = json.loads(capsys.readouterr().out)["assignments"][0]
    # any batch within 20 %: data parallel, not 977 sequences at dp 1
    assert int(re.search(r"dp_shard=(\d+)", job["layout"]).group(1)) >= 32, job["layout"]
    bad = jobs.replace("4e6", "4.5")
    assert main(["portfolio", _file(tmp_path, bad)]) == 2
    assert "global_batch_tokens must be a whole number of tokens" in capsys.readouterr().err


def test_portfolio_says_what_plan_would_warn_of_each_job(tmp_path, capsys):
    jobs = '[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "short"\nmodel = "tiny"\ntokens = 1e9\nseq_len = 8192\n'
    assert main(["portfolio", _file(tmp_path, jobs), "--json"]) == 0
    captured = capsys.readouterr()
    warnings = json.loads(captured.out)["warnings"]
    assert any(w.startswith("short: seq_len 8192 exceeds tiny's") for w in warnings)
    assert any(w.startswith("short: the job trains for") for w in warnings)
    assert all(f"trainplan: warning: {w}" in captured.err for w in warnings)


def test_fleet_names_where_each_job_runs_and_what_it_ignores(tmp_path, capsys):
    jobs = 'horizon_days = 365\nbuy = ["h100-sxm"]\n[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "a"\n'
    jobs += 'model = "llama3-8b"\ntokens = 1e11\nbudget_usd = 1000.0\n'
    assert main(["fleet", _file(tmp_path, jobs)]) == 0
    captured = capsys.readouterr()
    assert "ignores [inventory] and budget_usd (a)" in captured.err
    assert "mixed, job by job:" in captured.out and "  a: " in captured.out
    assert main(["fleet", _file(tmp_path, jobs), "--json"]) == 0
    mixed = json.loads(capsys.readouterr().out)["mixed"]
    (job,) = mixed["assignments"]
    assert job["job"] == "a" and job["num_gpus"] > 0 and job["end_day"] > job["start_day"] >= 0


def test_a_fleet_deadline_past_the_horizon_names_the_horizon(tmp_path, capsys):
    jobs = 'horizon_days = 100\nbuy = ["l4"]\n[[jobs]]\nname = "a"\nmodel = "llama3-70b"\ntokens = 1e12\n'
    assert main(["fleet", _file(tmp_path, jobs + "deadline_days = 30\n")]) == 0
    out = capsys.readouterr().out
    assert "deadline" in out and "and a horizon_days of at least" in out
