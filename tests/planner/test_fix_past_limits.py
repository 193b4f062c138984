"""A deadline or budget fix past what the inputs take names none (buyer trial s48 L1: "allow
1,368,891 days", a value --deadline-days refuses past MAX_DAYS): it says no deadline or budget
within the limit fits."""

from __future__ import annotations

import numpy as np
import pytest

from planner.api import PlanRequest, plan
from planner.catalog.models import get_preset
from planner.errors import Constraint, InfeasiblePlan
from planner.limits import MAX_BUDGET_USD, MAX_DAYS
from planner.search.diagnosis import PAST_BUDGET_LIMIT_WORDS, PAST_DEADLINE_LIMIT_WORDS, allow_deadline_words
from planner.search.ilp import ScoredTable, solve_single
from planner.units import SECONDS_PER_DAY


def test_a_deadline_past_a_century_is_not_offered():
    request = PlanRequest(
        model=get_preset("llama3-8b"), training_tokens=1e18, deadline_days=365, gpus={"h100-sxm": None}, top_k=0
    )
    with pytest.raises(InfeasiblePlan) as caught:
        plan(request)
    answer = caught.value
    assert answer.constraint is Constraint.DEADLINE and answer.required > MAX_DAYS * SECONDS_PER_DAY
    assert answer.fix.startswith(PAST_DEADLINE_LIMIT_WORDS) and "allow" not in answer.fix


def test_allow_words_stop_at_the_limit():
    assert allow_deadline_words(MAX_DAYS * SECONDS_PER_DAY) == f"allow {MAX_DAYS:,} days"
    assert allow_deadline_words(MAX_DAYS * SECONDS_PER_DAY * 1.01) == PAST_DEADLINE_LIMIT_WORDS


def _table(cost_usd: list[float], days: list[float]) -> ScoredTable:
    n = len(cost_usd)
    return ScoredTable(
        gpu_id=np.array(["h100-sxm"] * n, dtype=object),
        num_gpus=np.arange(1, n + 1) * 8,
        fits_memory=np.ones(n, dtype=bool),
        memory_need_gib=np.zeros(n),
        capacity_gib=np.full(n, 80.0),
        time_to_train_s=np.array(days) * SECONDS_PER_DAY,
        cost_usd=np.array(cost_usd),
        batch_ok=np.ones(n, dtype=bool),
        divisible=np.ones(n, dtype=bool),
        label=np.array([""] * n, dtype=object),
    )


def test_a_budget_past_the_limit_is_not_offered():
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(_table([2 * MAX_BUDGET_USD], [10.0]), objective="cost", budget_usd=1e6)
    assert caught.value.constraint is Constraint.BUDGET and caught.value.fix == PAST_BUDGET_LIMIT_WORDS


def test_a_budget_answer_offers_no_deadline_past_the_limit():
    # row 0 meets the deadline over budget; row 1 is within the budget but takes two centuries
    table = _table([2e6, 1e6], [10.0, 2 * MAX_DAYS])
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(table, objective="cost", budget_usd=1.5e6, deadline_s=20 * SECONDS_PER_DAY)
    answer = caught.value
    assert answer.constraint is Constraint.BUDGET and "extend the deadline" not in answer.fix
    assert answer.within_budget_seconds is None
    # within the limit it is offered
    table = _table([2e6, 1e6], [10.0, 300.0])
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(table, objective="cost", budget_usd=1.5e6, deadline_s=20 * SECONDS_PER_DAY)
    assert "or extend the deadline to 300 days" in caught.value.fix


def test_no_jobs_file_field_is_set_past_what_it_takes():
    """A portfolio job's fix named "set deadline_days and horizon_days to 23379574.1 or more",
    which the jobs file refuses past MAX_DAYS."""
    from planner.search.job_candidates import JobCandidates
    from planner.search.portfolio import solve_portfolio

    day = SECONDS_PER_DAY
    table = _table([1e5], [2.0 * MAX_DAYS])
    job = JobCandidates("a", table, deadline_s=30 * day, horizon_s=90 * day)
    with pytest.raises(InfeasiblePlan) as caught:
        solve_portfolio([job], {"h100-sxm": 8}, horizon_s=90 * day)
    assert caught.value.fix == PAST_DEADLINE_LIMIT_WORDS
    assert f"{2 * MAX_DAYS:,}.0 days" in caught.value.detail  # the figure as printed, not a field's
