"""Trial s48 M7: a portfolio job that misses its deadline on the inventory names the GPU count past it
that meets it, as plan names it, in the CLI's words, its --json (typed) and the app (both languages);
L3: the line says the quantile its days are judged at."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.app import EN, ZH, request_for, run_app

from planner.model.settings import DEFAULT_SETTINGS
from ui.app_portfolio import solve_jobs
from ui.cli import main
from ui.infeasible_words import infeasible_text
from ui.messages import duration

JOBS = '[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "late"\nmodel = "llama3.2-1b"\ntokens = 3e11\ndeadline_days = 1\n'
INVENTORY = {"a100-80gb-sxm": 2}


def _file(tmp_path: Path) -> str:
    path = tmp_path / "jobs.toml"
    path.write_text(JOBS)
    return str(path)


def test_the_cli_names_the_count_past_the_inventory_and_the_risk(tmp_path, capsys):
    assert main(["portfolio", _file(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    more = data["more_gpus_plan"]
    assert data["feasible"] is False and data["constraint"] == "deadline" and data["more_gpus_help"] is True
    assert more["gpu"] == "h100-sxm" and more["num_gpus"] > 8 and more["seconds"] <= 86400.0
    assert main(["portfolio", _file(tmp_path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert re.search(r"set deadline_days to \d+\.\d or more, or [\d,]+ h100-sxm GPUs, more than the inventory has", out)
    assert f"or {more['num_gpus']:,} h100-sxm GPUs" in out  # as printed (0c75256)
    assert '(each plan judged at p80, the 80% quantile of its band; risk = "p50" judges the median' in out, out


def test_a_feasible_portfolio_carries_the_key_as_null(tmp_path, capsys):
    assert main(["portfolio", _file(tmp_path), "--json"]) == 0
    infeasible = json.loads(capsys.readouterr().out)
    (tmp_path / "jobs.toml").write_text(JOBS.replace("deadline_days = 1\n", ""))
    assert main(["portfolio", str(tmp_path / "jobs.toml"), "--json"]) == 0
    feasible = json.loads(capsys.readouterr().out)
    assert feasible["feasible"] and feasible["more_gpus_plan"] is None and set(feasible) == set(infeasible)


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_apps_answer_names_the_count_in_both_languages(tr):
    request = request_for(deadline_days=0.01, gpus=INVENTORY)
    outcome = solve_jobs(
        {"late": request}, INVENTORY, objective="cost", horizon_days=None, num_slots=1, settings=DEFAULT_SETTINGS
    )
    answer = outcome.infeasible
    assert answer is not None and answer.more_gpus is not None and answer.job == "late"
    more = answer.more_gpus
    text = infeasible_text(tr, answer, request)
    assert f"{more.num_gpus:,} × a100-80gb-sxm" in text and duration(tr, more.seconds / 3600) in text, text
    assert "raise the GPU limit" not in text and "提高 GPU 上限" not in text  # the count, not a vague limit
    at = run_app(lang=tr.lang, portfolio_mode=True, gpus=["a100-80gb-sxm"], inventory=INVENTORY, deadline_days=0.01)
    at.text_input(key="job_name").set_value("late")
    at.button(key="add_job").click().run()
    assert not at.exception
    assert any(f"{more.num_gpus:,} × a100-80gb-sxm" in w.value for w in at.warning), [w.value for w in at.warning]
