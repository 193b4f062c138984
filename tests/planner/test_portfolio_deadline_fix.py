"""A portfolio job's deadline fix names every jobs-file key that ends before its fastest plan, in
days printed as every duration is (buyer trial s45: horizon 90, deadline 30, a plan of 233.804 days:
"set deadline_days to 233.804 or more", and following it the horizon refused the file)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.errors import InfeasiblePlan
from planner.search.ilp import ScoredTable
from planner.search.job_candidates import JobCandidates, days_field
from planner.search.portfolio import solve_portfolio

DAY = 86400.0
FASTEST_DAYS = 233.804


def _job(deadline_days: float | None, horizon_days: float | None) -> JobCandidates:
    table = ScoredTable(
        gpu_id=np.array(["h100"], dtype=object),
        num_gpus=[8],
        fits_memory=[True],
        memory_need_gib=[60.0],
        capacity_gib=[80.0],
        time_to_train_s=[FASTEST_DAYS * DAY],
        cost_usd=[1e5],
        batch_ok=[True],
        divisible=[True],
        label=["8 x h100"],
    )
    deadline = None if deadline_days is None else deadline_days * DAY
    horizon = None if horizon_days is None else horizon_days * DAY
    return JobCandidates("a", table, deadline_s=deadline, horizon_s=horizon)


def _fix(deadline_days: float | None, horizon_days: float | None) -> str:
    horizon = None if horizon_days is None else horizon_days * DAY
    with pytest.raises(InfeasiblePlan) as caught:
        solve_portfolio([_job(deadline_days, horizon_days)], {"h100": 8}, horizon_s=horizon)
    return caught.value.fix


def test_a_deadline_fix_past_the_horizon_names_both_keys():
    assert _fix(30, 90) == "set deadline_days and horizon_days to 233.9 or more"
    assert _fix(100, 90) == "set deadline_days and horizon_days to 233.9 or more"  # the horizon ends first
    assert _fix(30, 300) == "set deadline_days to 233.9 or more"
    assert _fix(30, None) == "set deadline_days to 233.9 or more"
    assert _fix(300, 90) == "allow 234 days (the horizon: horizon_days)"


def test_the_days_are_one_decimal_rounded_up_but_under_a_day():
    assert days_field(FASTEST_DAYS * DAY) == "233.9" and days_field(35 * DAY) == "35"
    assert days_field(0.0123 * DAY) == "0.013"
