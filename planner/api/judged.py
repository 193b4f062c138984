"""A plan's figures as a limit judges them (at the request's risk, never under the model's own
figure: ``limit_figure``), and the words a deadline or budget diagnosis gains from the risk it was
judged at. Split from planner/api/notices.py, whose warnings read them."""

from __future__ import annotations

import numpy as np

from planner.accuracy import Risk
from planner.errors import Constraint, InfeasiblePlan
from planner.plan import Plan
from planner.search.table import limit_figure


def judged_at_risk(answer: InfeasiblePlan, risk: Risk) -> InfeasiblePlan:
    """A deadline or budget diagnosis says the quantile its times and costs are judged at (the
    plans' tables show the model's median, so '$3.2M > $3.0M' beside plans of $2.9M needs it)."""
    if risk == Risk.P50 or answer.constraint not in (Constraint.DEADLINE, Constraint.BUDGET):
        return answer
    # trial s27: "...; p50: the median)" read as a dangling phrase
    detail = (
        f"{answer.detail} (each plan judged at {risk.value}, the {risk.quantile:.0%} quantile of its band;"
        " --risk p50 judges the median, never under the model's own figure)"
    )
    return answer.but(detail=detail)


def judged_hours(chosen: Plan, risk: Risk | None = None) -> float | None:
    """The plan's time to train as the search judged it (``limit_figure``): at ``risk`` where its
    band gives one, never under the model's own figure (trial s42: 328 days by the model's figure,
    416 at p80, and no word of a year; buyer trial s48 M1: at p50 it said 396.8 days, the median,
    where the search judged the headline's 420.0), else the model's own figure."""
    e = chosen.estimate
    return _judged(None if risk is None else e.time_h_at(risk.value), e.time_to_train_h)


def judged_cost_usd(chosen: Plan, risk: Risk | None = None) -> float | None:
    """The plan's cost as a budget judged it: ``judged_hours``'s rule for its cost."""
    e = chosen.estimate
    return _judged(None if risk is None else e.cost_usd_at(risk.value), e.cost_usd)


def _judged(at_risk: float | None, own: float | None) -> float | None:
    """``limit_figure`` of one plan's figure at a risk and its own; either where the other is absent."""
    if at_risk is None or own is None:
        return own if at_risk is None else at_risk
    return float(limit_figure(np.array(at_risk), np.array(own)))
