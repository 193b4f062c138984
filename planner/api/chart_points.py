"""The app's chart points over a search's frame (``ScoredSearch.frame``): the best layout per
(GPU type, count), the Pareto front, and the points the search sets aside at --risk p80 / p90.

At p80 / p90 the search plans among the rows whose reserved peak fits at its memory band's high end
(``Risk.judges_memory``; ``solve_at_risk``), and at the model's figure only where none does the job.
The frame's ``may_not_fit`` column is the scored table's (``planner/search/score.py``
``may_not_fit``): these functions read it, they never judge memory a second way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.accuracy import Risk
from planner.request import PlanRequest
from planner.search.table import limit_figure


def best_per_count(frame: pd.DataFrame, objective: str = "cost", risk: Risk | None = None) -> pd.DataFrame:
    """The best layout for each (GPU type, count), judged as the search judges (at the request's
    risk quantile): the scaling and frontier charts' points. At p80 / p90 a layout that surely fits
    comes before one that may not (``solve_at_risk`` chooses among the sure rows where they do the
    job): a count's point may not fit only where all its layouts may not."""
    cost, days = "cost_at_risk_usd", "time_at_risk_days"
    keys = [cost, days] if objective == "cost" else [days, cost]
    order = frame.assign(unsure=unsure_points(frame, risk)).sort_values(["unsure", *keys])
    return order.groupby(["gpu", "num_gpus"], as_index=False).first().drop(columns="unsure")


def judges_memory(risk: Risk | None) -> bool:
    """Whether a chart judged at ``risk`` sets aside what may not fit (``Risk.judges_memory``; None,
    as p50, plans at the model's figure)."""
    return risk is not None and risk.judges_memory


def unsure_points(frame: pd.DataFrame, risk: Risk | None) -> pd.Series:
    """The points the search sets aside at ``risk`` as ones that may not fit (their reserved peak's
    band passes the GPU's room: ``Risk.judges_memory``); none at p50 (or None), which plans at the
    model's figure."""
    if not judges_memory(risk):
        return pd.Series(False, index=frame.index)
    return frame["may_not_fit"].astype(bool)


def judged_points(frame: pd.DataFrame, risk: Risk | None) -> pd.Series:
    """The points the search chooses among at ``risk``: the sure ones where there are any, else
    all, at the model's figure (as ``solve_at_risk`` and ``_job_candidates`` read the table)."""
    sure = ~unsure_points(frame, risk)
    return sure if sure.any() else pd.Series(True, index=frame.index)


@dataclass(frozen=True)
class Limits:
    """The request's deadline, budget and inventory: what greys a chart's point out and where its
    lines go (ui/figures.py); and its risk: at p80 / p90 which points are marked as ones that may
    not fit (``unsure_points``)."""

    deadline_days: float | None = None
    budget_usd: float | None = None
    inventory: dict[str, int] | None = None  # GPU type -> most GPUs (types without a limit absent)
    risk: Risk | None = None

    @classmethod
    def of(cls, request: PlanRequest) -> Limits:
        """The request's limits (its typed inventories; a type without one is unlimited)."""
        inventory = {g: n for g, n in (request.gpus or {}).items() if n is not None}
        return cls(request.deadline_days, request.budget_usd, inventory, request.risk)

    def feasible(self, points: pd.DataFrame) -> pd.Series:
        ok = pd.Series(True, index=points.index)  # judged as the search judges (ScoredTable.limit_figures)
        if self.deadline_days:
            ok &= (
                limit_figure(points["time_at_risk_days"].to_numpy(), points["time_to_train_days"].to_numpy())
                <= self.deadline_days
            )
        if self.budget_usd:
            ok &= limit_figure(points["cost_at_risk_usd"].to_numpy(), points["cost_usd"].to_numpy()) <= self.budget_usd
        for gpu, most in (self.inventory or {}).items():
            ok &= ~((points["gpu"] == gpu) & (points["num_gpus"] > most))
        return ok


def judging_risk(frame: pd.DataFrame, risk: Risk | None, within_limits: pd.Series) -> Risk | None:
    """The risk the search orders ``frame``'s points by: ``risk`` where some point that surely fits
    meets the request's limits (``within_limits``: its deadline, budget and inventory), else None,
    the model's figure, as ``solve_at_risk`` falls back (review s43: where only a layout that may not
    fit met the deadline, the chart drew the slower sure layout at its count and the chosen plan's
    star stood on no point)."""
    if not judges_memory(risk):
        return risk
    return risk if (~unsure_points(frame, risk) & within_limits).any() else None


def pareto_front(frame: pd.DataFrame, risk: Risk | None = None) -> pd.Series:
    """True for points no other point beats on both cost and time (at the risk quantile), among
    the points the search chooses from at ``risk`` (``judged_points``)."""
    judged = judged_points(frame, risk)
    order = frame[judged].sort_values(["cost_at_risk_usd", "time_at_risk_days"]).index
    best_time, front = np.inf, pd.Series(False, index=frame.index)
    for i in order:
        t = frame.at[i, "time_at_risk_days"]
        if t < best_time:
            front[i], best_time = True, t
    return front
