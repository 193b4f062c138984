"""A deadline and a budget judge each plan at its risk quantile's figure, never under the model's
own (the headline it prints): buyer trial s45, --risk p50 under a $1.90M budget chose a plan whose
headline cost was $1.94M, its band's median $1.90M (planner/search/table.py ``limit_figure``)."""

from __future__ import annotations

import numpy as np

from planner.accuracy import Risk
from planner.api import plan
from planner.catalog.models import get_preset
from planner.errors import Constraint, InfeasiblePlan
from planner.request import PlanRequest
from planner.search.ilp import ScoredTable, check_rows, solve_single


def _table(risk_cost: list[float], own_cost: list[float], risk_days: list[float], own_days: list[float]) -> ScoredTable:
    n = len(risk_cost)
    return ScoredTable(
        gpu_id=np.array(["h100-sxm"] * n, dtype=object),
        num_gpus=np.arange(1, n + 1) * 8,
        fits_memory=np.ones(n, dtype=bool),
        memory_need_gib=np.zeros(n),
        capacity_gib=np.full(n, 80.0),
        time_to_train_s=np.array(risk_days) * 86400.0,
        cost_usd=np.array(risk_cost),
        batch_ok=np.ones(n, dtype=bool),
        divisible=np.ones(n, dtype=bool),
        label=np.array([""] * n, dtype=object),
        extra={"model_time_s": np.array(own_days) * 86400.0, "model_cost_usd": np.array(own_cost)},
    )


def test_a_median_under_the_limits_does_not_pass_a_plan_whose_own_figure_breaks_them():
    # row 0: its median meets both limits, its own figure neither; row 1: both figures meet them
    t = _table([95.0, 99.0], [105.0, 98.0], [9.5, 5.0], [10.5, 4.0])
    checks = check_rows(t, deadline_s=10 * 86400.0, budget_usd=100.0)
    assert checks.budget.tolist() == [False, True] and checks.deadline.tolist() == [False, True]
    assert solve_single(t, objective="cost", deadline_s=10 * 86400.0, budget_usd=100.0).row == 1


def test_the_diagnosis_cites_the_figure_the_limit_judged():
    t = _table([95.0], [105.0], [5.0], [5.0])
    try:
        solve_single(t, objective="cost", budget_usd=100.0)
    except InfeasiblePlan as answer:
        assert answer.constraint is Constraint.BUDGET and answer.required == 105.0
    else:
        raise AssertionError("the own figure breaks the budget")


def test_p50_never_chooses_a_plan_whose_headline_cost_breaks_the_budget():
    request = PlanRequest(
        model=get_preset("llama3-70b"),
        training_tokens=2e12,
        gpus={"gb200": None},
        budget_usd=1.9e6,
        objective="time",
        risk=Risk.P50,
        top_k=0,
    )
    e = plan(request).plan.estimate
    assert e.cost_usd <= 1.9e6 and e.cost_usd_at("p50") <= 1.9e6
