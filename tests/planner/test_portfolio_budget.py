"""A portfolio job's budget bounds the cost the portfolio reports for it (trial s51 H2: on owned GPUs
it bounded the job's rent, a figure the answer never shows, and a job reported at half its budget was
refused): rent on a rented type, GPU-hours at the owned rate (F_g + v_g) on an owned one, at the
reserved rate on a reserved one."""

from __future__ import annotations

import pytest
from test_portfolio import candidate_table
from test_portfolio_reserved import reserved_1y

from planner.errors import Constraint, InfeasiblePlan
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import HourlyRate
from planner.search.portfolio import solve_portfolio

DAY = 86400.0
RENT = 4 * 5 * 24 * 4.0  # 4 GPUs for 5 days at $4 an hour: $1,920
OWNED = 4 * 5 * 24 * 1.1  # the same GPU-hours at F + v = $1.10 an hour: $528
RESERVED = 4 * 5 * 24 * 2.0  # at a $2.00 reserved rate: $960


def job(budget_usd: float) -> JobCandidates:
    table = candidate_table("j", ["h100"], [4], [5 * DAY], [RENT], [True])
    return JobCandidates("j", table, budget_usd=budget_usd)


def test_a_budget_on_owned_gpus_bounds_the_owned_cost_the_answer_reports() -> None:
    rates = {"h100": HourlyRate(1.0, 0.1)}
    solution = solve_portfolio([job(1000.0)], {"h100": 4}, rates=rates)  # under the rent, over the owned cost
    (a,) = solution.assignments
    assert a.cost_usd == pytest.approx(OWNED)
    with pytest.raises(InfeasiblePlan) as caught:
        solve_portfolio([job(500.0)], {"h100": 4}, rates=rates)
    answer = caught.value
    assert answer.constraint is Constraint.BUDGET and answer.required == pytest.approx(OWNED)
    assert "its GPU-hours at the owned rate on an owned one" in answer.detail


def test_a_budget_on_a_rented_type_still_bounds_its_rent() -> None:
    rented = frozenset({"h100"})
    assert solve_portfolio([job(RENT)], {"h100": 4}, rented=rented).assignments[0].cost_usd == pytest.approx(RENT)
    with pytest.raises(InfeasiblePlan) as caught:
        solve_portfolio([job(1000.0)], {"h100": 4}, rented=rented)
    assert caught.value.constraint is Constraint.BUDGET and caught.value.required == pytest.approx(RENT)


def test_a_budget_on_a_reserved_type_bounds_its_share_at_the_reserved_rate() -> None:
    rented, reserved = frozenset({"h100"}), reserved_1y({"h100": 2.0})
    solution = solve_portfolio([job(1000.0)], {"h100": 4}, rented=rented, reserved=reserved, horizon_s=30 * DAY)
    assert solution.assignments[0].cost_usd == pytest.approx(RESERVED)
    with pytest.raises(InfeasiblePlan) as caught:
        solve_portfolio([job(900.0)], {"h100": 4}, rented=rented, reserved=reserved, horizon_s=30 * DAY)
    assert caught.value.constraint is Constraint.BUDGET and caught.value.required == pytest.approx(RESERVED)
