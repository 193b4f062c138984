"""The app's chart points over a search's frame (``ScoredSearch.frame``): the best layout per
(GPU type, count), the Pareto front, and the points the search sets aside at --risk p80 / p90.

At p80 / p90 the search plans among the rows whose reserved peak fits at its memory band's high end
(``Risk.judges_memory``; ``solve_at_risk``), and at the model's figure only where none does the job.
The frame's ``may_not_fit`` column is the scored table's (``planner/search/score.py``
``may_not_fit``): these functions read it, they never judge memory a second way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.accuracy import Risk


def best_per_count(frame: pd.DataFrame, objective: str = "cost", risk: Risk | None = None) -> pd.DataFrame:
    """The best layout for each (GPU type, count), judged as the search judges (at the request's
    risk quantile): the scaling and frontier charts' points. At p80 / p90 a layout that surely fits
    comes before one that may not (``solve_at_risk`` chooses among the sure rows where they do the
    job): a count's point may not fit only where all its layouts may not."""
    cost, days = "cost_at_risk_usd", "time_at_risk_days"
    keys = [cost, days] if objective == "cost" else [days, cost]
    order = frame.assign(unsure=unsure_points(frame, risk)).sort_values(["unsure", *keys])
    return order.groupby(["gpu", "num_gpus"], as_index=False).first().drop(columns="unsure")


def unsure_points(frame: pd.DataFrame, risk: Risk | None) -> pd.Series:
    """The points the search sets aside at ``risk`` as ones that may not fit (their reserved peak's
    band passes the GPU's room: ``Risk.judges_memory``); none at p50 (or None), which plans at the
    model's figure."""
    if risk is None or not risk.judges_memory:
        return pd.Series(False, index=frame.index)
    return frame["may_not_fit"].astype(bool)


def judged_points(frame: pd.DataFrame, risk: Risk | None) -> pd.Series:
    """The points the search chooses among at ``risk``: the sure ones where there are any, else
    all, at the model's figure (as ``solve_at_risk`` and ``_job_candidates`` read the table)."""
    sure = ~unsure_points(frame, risk)
    return sure if sure.any() else pd.Series(True, index=frame.index)


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
