"""The portfolio objective's one rule (planner/search/portfolio_objective.py): the models build their
objective from it and an answer is scored by it, so a row weighs the same in the ILP and the read-back."""

from __future__ import annotations

import numpy as np
import pulp
import pytest

from planner.search.portfolio_objective import PortfolioWeights
from planner.search.solver import new_variable

WEIGHTS = PortfolioWeights(
    w_C=2.0, w_T=3.0, C_ref=4.0, T_ref=np.array([2.0, 5.0]), F={"a100": 1.5, "h100": 0.0}, inventory={"a100": 2}
)


def test_a_rows_term_is_its_busy_cost_and_its_jobs_end_at_their_weights() -> None:
    # w_C / C_ref = 0.5 a dollar; w_T / T_ref,j a day of job j's end
    terms = WEIGHTS.row_terms(np.array([10.0, 8.0]), np.array([6.0, 10.0]), np.array([0, 1]))
    assert terms == pytest.approx([0.5 * 10 + 3 * 6 / 2, 0.5 * 8 + 3 * 10 / 5])
    # held: 24 h x 2 GPUs x $1.5 a day, at 0.5 a dollar; the reserved terms at 0.5 a dollar
    assert WEIGHTS.objective(4.0, 100.0, float(terms.sum())) == pytest.approx(36 * 4 + 50 + 14 + 10)


def test_the_models_expressions_weigh_a_row_as_the_read_back_does() -> None:
    problem = pulp.LpProblem("one_row", pulp.LpMinimize)
    y, start, makespan = (new_variable(problem, name) for name in ("y", "S", "M"))
    y.varValue, start.varValue, makespan.varValue = 1.0, 1.5, 7.5  # the row picked, starting at 1.5 days
    busy_usd, end_days = 8.0 * y, start + 6.0 * y  # job 1's row: $8 busy, 6 days
    expression = WEIGHTS.objective(makespan, 20.0, WEIGHTS.row_terms(busy_usd, end_days, 1))
    read_back = WEIGHTS.objective(7.5, 20.0, float(WEIGHTS.row_terms(np.array([8.0]), np.array([7.5]), [1])[0]))
    assert pulp.value(expression) == pytest.approx(read_back) == pytest.approx(36 * 7.5 + 10 + 4 + 3 * 7.5 / 5)
