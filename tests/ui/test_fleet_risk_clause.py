"""Fleet's infeasible answer says the quantile its days are judged at, in the jobs file's key, as
portfolio's and plan's answers do (cleanup s48: fleet said "needs 13.1 days" without "p80")."""

from __future__ import annotations

import json

import pytest

from ui.cli import main

FLEET = 'horizon_days = 30\nbuy = ["h100-sxm"]\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\ntokens = 1e13\n'
CLAUSE = '(each plan judged at p80, the 80% quantile of its band; risk = "p50" judges the median'


@pytest.mark.parametrize("as_json", [False, True])
def test_a_late_fleet_job_says_its_days_are_p80(tmp_path, capsys, as_json):
    path = tmp_path / "jobs.toml"
    path.write_text(FLEET + "deadline_days = 0.5\n")
    assert main(["fleet", str(path), *(["--json"] if as_json else [])]) == 0
    out = capsys.readouterr().out
    text = json.loads(out)["reason"] if as_json else " ".join(out.split())
    assert "deadline" in text and CLAUSE in text and "--risk" not in text, text


def test_at_the_median_the_fleet_says_no_clause(tmp_path, capsys):
    path = tmp_path / "jobs.toml"
    path.write_text('risk = "p50"\n' + FLEET + "deadline_days = 0.5\n")
    assert main(["fleet", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no feasible plan - deadline" in out and "each plan judged at" not in out, out
