"""The risk clause names the way the user sets the risk (``RiskSetting``): plan's flag, the jobs
file's key for portfolio and fleet (cleanup s48: portfolio swapped "--risk p50" for the key in its
answer's text, and fleet's infeasible answer had no clause at all)."""

from __future__ import annotations

import pytest

from planner.accuracy import Risk
from planner.api import PlanRequest
from planner.api.fleet import plan_fleet
from planner.api.judged import RiskSetting, judged_at_risk
from planner.catalog.models import get_preset
from planner.errors import Constraint, InfeasiblePlan

CLAUSE = "(each plan judged at p80, the 80% quantile of its band; {setting} judges the median"
FLAG, KEY = "--risk p50", 'risk = "p50"'


def _deadline() -> InfeasiblePlan:
    return InfeasiblePlan(Constraint.DEADLINE, "the fastest plan needs 13.1 days", "set the deadline to 13.1 days")


@pytest.mark.parametrize(
    ("setting", "words", "other"), [(RiskSetting.FLAG, FLAG, KEY), (RiskSetting.JOBS_FILE, KEY, FLAG)]
)
def test_the_clause_names_the_setting_it_is_given(setting, words, other):
    detail = judged_at_risk(_deadline(), Risk.P80, setting).detail
    assert CLAUSE.format(setting=words) in detail and other not in detail, detail


@pytest.mark.parametrize("setting", list(RiskSetting))
def test_no_clause_at_the_median_or_on_memory(setting):
    assert judged_at_risk(_deadline(), Risk.P50, setting).detail == _deadline().detail
    memory = InfeasiblePlan(Constraint.MEMORY, "no layout fits", "use a larger GPU")
    assert judged_at_risk(memory, Risk.P80, setting).detail == memory.detail


def _late(risk: Risk, deadline_days: float = 0.5) -> PlanRequest:
    model = get_preset("llama3.2-1b")
    return PlanRequest(model=model, training_tokens=1e13, deadline_days=deadline_days, risk=risk)


def _fleet_answer(requests: dict[str, PlanRequest]) -> InfeasiblePlan:
    with pytest.raises(InfeasiblePlan) as caught:
        plan_fleet(requests, {"h100-sxm": 30_000.0}, 30.0)
    return caught.value


def test_fleets_infeasible_answer_says_the_risk_in_the_jobs_files_key():
    answer = _fleet_answer({"a": _late(Risk.P80)})
    assert answer.constraint is Constraint.DEADLINE and answer.job == "a"
    assert CLAUSE.format(setting=KEY) in answer.detail and FLAG not in answer.detail, answer.detail
    assert "each plan judged at" not in _fleet_answer({"a": _late(Risk.P50)}).detail


def test_fleet_jobs_at_different_risks_each_say_their_own():
    answer = _fleet_answer({"a": _late(Risk.P80), "b": _late(Risk.P90, 0.25)})
    judged = {name: job.detail for name, job in answer.jobs}
    assert "judged at p80" in judged["a"] and "judged at p90" in judged["b"], judged
    assert answer.detail.count("each plan judged at") == 2
