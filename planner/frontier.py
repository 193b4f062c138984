"""Reading the cost/time trade-off: the near tie beside the chosen plan, and the frontier's knee.

Pure functions of cost and time columns (arrays over candidate rows), so the API, the CLI and
the app read the trade-off the same way.

* **Near tie**: the optimum of one objective can sit next to a plan that is far better on the
  other for almost nothing ("cheapest": 4 x B200 in 19.5 days for $12,719, while 8 x B200 take
  9.8 days for $27 more). Among the feasible rows at most ``tolerance`` worse on the objective,
  the one best on the other axis is the near tie when it gains at least ``min_gain`` x.
* **Over the budget**: a budget can hold the search to a plan many times slower than one that
  costs a little more (trial s29b: 449 days within $50M; 120 days for 10 % over it, unsaid). Of the
  rows at most ``OVER_BUDGET_STRETCH`` over the budget and at least ``OVER_BUDGET_MIN_SPEEDUP`` x
  faster than the fastest plan within it, the knee of their front is offered (past it each
  halving of time costs a growing share of the budget), and the fastest too where it is faster
  still.
* **Knee**: the Pareto-front point farthest from the chord joining the front's two ends, in
  log-log space (a scale-free form of the "Kneedle" rule, Satopaa et al. 2011): past it, each
  halving of time costs a growing multiple. Beside the chosen plan it is offered only as a trade:
  it must gain on one axis at least the factor it loses on the other (cost x time no worse than the
  chosen plan's). A tiny job's front can bend where +624 % cost buys 1.3x the speed; that is a
  shape, not advice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.search.ties import NEAR_TIE_FRACTION

__all__ = [
    "NEAR_TIE_MIN_GAIN",
    "NEAR_TIE_TOLERANCE",
    "OVER_BUDGET_MIN_SPEEDUP",
    "OVER_BUDGET_STRETCH",
    "Knee",
    "NearTie",
    "OverBudget",
    "knee",
    "knee_versus",
    "near_tie",
    "over_budget",
    "pareto_rows",
]

NEAR_TIE_TOLERANCE = 0.10  # at most 10 % worse on the objective (cost or time) than the optimum
NEAR_TIE_MIN_GAIN = 1.25  # and at least 1.25 x better on the other axis: less is not worth a word
# A budget is a figure a buyer can move, by a little, for much: plans up to 20 % over it are read,
# one at least 1.5 x faster is worth the line (the near tie's gain is for 10 %, not a budget).
OVER_BUDGET_STRETCH = 0.20
OVER_BUDGET_MIN_SPEEDUP = 1.5


@dataclass(frozen=True)
class NearTie:
    """A row almost as good as the chosen one on the objective and much better on the other axis.

    objective "cost": the row costs ``extra_fraction`` more and is ``gain`` x faster;
    objective "time": it takes ``extra_fraction`` longer and is ``gain`` x cheaper.
    """

    row: int
    objective: str
    extra_fraction: float
    gain: float


def near_tie(
    cost_usd: np.ndarray,
    time_s: np.ndarray,
    rows: np.ndarray,
    chosen: int,
    objective: str,
    *,
    tolerance: float = NEAR_TIE_TOLERANCE,
    min_gain: float = NEAR_TIE_MIN_GAIN,
) -> NearTie | None:
    """The near tie among ``rows`` (feasible row indices) for the ``chosen`` row; None when there is none
    or the objective is a mix (its optimum already weighs both axes)."""
    if objective not in ("cost", "time") or len(rows) == 0:
        return None
    main, other = (cost_usd, time_s) if objective == "cost" else (time_s, cost_usd)
    rows = np.asarray(rows)
    close = rows[main[rows] <= main[chosen] * (1 + tolerance)]
    best = int(close[np.argmin(other[close])]) if len(close) else chosen
    if best == chosen or not other[best] > 0:
        return None
    gain = float(other[chosen] / other[best])
    if gain < min_gain:
        return None
    return NearTie(row=best, objective=objective, extra_fraction=float(main[best] / main[chosen] - 1), gain=gain)


@dataclass(frozen=True)
class OverBudget:
    """A row a little over the budget: ``over_fraction`` over the budget, ``extra_cost_fraction``
    over the chosen row's cost, ``speedup`` x faster than the fastest row within the budget (the
    chosen one under the time objective; review s30: against a cheapest choice the line credited
    the whole front's speedup to going over)."""

    row: int
    over_fraction: float
    extra_cost_fraction: float
    speedup: float


def over_budget(
    cost_usd: np.ndarray, time_s: np.ndarray, rows: np.ndarray, chosen: int, budget_usd: float
) -> tuple[OverBudget, ...]:
    """Among ``rows`` (feasible but for the budget) costing over ``budget_usd``, at most
    ``OVER_BUDGET_STRETCH`` over it and at least ``OVER_BUDGET_MIN_SPEEDUP`` x faster than the
    fastest of ``rows`` within the budget (or ``chosen``): the knee of their front from that plan
    (the cheapest of them where the front has none), then the fastest when it is
    ``NEAR_TIE_MIN_GAIN`` x faster still; none, one or both. Trial s30: the fastest alone (85x for
    19.8 % over) hid 25x for 2.4 %; review s30b: the cheapest alone (1.6x for 0.1 %) hid it too."""
    rows = np.asarray(rows, dtype=int)
    within = np.append(rows[cost_usd[rows] <= budget_usd], chosen)
    anchor = int(within[np.lexsort((cost_usd[within], time_s[within]))[0]])
    over = rows[(cost_usd[rows] > budget_usd) & (cost_usd[rows] <= budget_usd * (1 + OVER_BUDGET_STRETCH))]
    over = over[time_s[anchor] / time_s[over] >= OVER_BUDGET_MIN_SPEEDUP]
    if len(over) == 0:
        return ()
    points = np.append(anchor, over)
    at = knee(cost_usd[points], time_s[points])
    first = int(points[at]) if at is not None and at > 0 else int(over[np.lexsort((time_s[over], cost_usd[over]))[0]])
    fastest = int(over[np.lexsort((cost_usd[over], time_s[over]))[0]])
    picked = [first] + ([fastest] if time_s[first] / time_s[fastest] >= NEAR_TIE_MIN_GAIN else [])

    def offer(row: int) -> OverBudget:
        over_fraction, extra = float(cost_usd[row] / budget_usd - 1), float(cost_usd[row] / cost_usd[chosen] - 1)
        return OverBudget(row, over_fraction, extra, float(time_s[anchor] / time_s[row]))

    return tuple(offer(r) for r in picked)


def anchor_survivors(cells: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The rows a front sorted by (``first``, ``second``, index) may keep, as far as their cell's
    anchor tells (``cells``: codes 0..k-1 that refine the front's groups).

    A row leaves such a front when an earlier row has a ``second`` no larger. The anchor, the row
    of least (``second``, ``first``, index) in the cell, has the least ``second``: it comes before,
    and so removes, every row of its cell except those with a smaller ``first``. Removing them
    changes nothing for the others: whatever they would have removed, the anchor removes.
    Non-finite keys: nothing is removed."""
    if not (np.isfinite(first).all() and np.isfinite(second).all()):
        return np.ones(len(cells), dtype=bool)
    count, index = int(np.max(cells, initial=-1)) + 1, np.arange(len(cells))
    least = np.full(count, np.inf)
    np.minimum.at(least, cells, second)
    rows = np.flatnonzero(second == least[cells])  # the least second of each cell
    anchor_first = np.full(count, np.inf)
    np.minimum.at(anchor_first, cells[rows], first[rows])
    rows = rows[first[rows] == anchor_first[cells[rows]]]  # then the least first
    anchor = np.full(count, len(cells))
    np.minimum.at(anchor, cells[rows], rows)  # then the lowest index
    return (first < anchor_first[cells]) | (index == anchor[cells])


def pareto_rows(cost_usd: np.ndarray, time_s: np.ndarray, cells: np.ndarray | None = None) -> np.ndarray:
    """Positions of the points no other point beats on both cost and time, fastest first
    (``cells``: ints grouping the points, e.g. by GPU type and count, whose cheapest point
    removes the ones it beats before the sort: the same front, issue 28)."""
    cost, time = np.asarray(cost_usd, dtype=float), np.asarray(time_s, dtype=float)
    if cells is not None:
        rows = np.flatnonzero(anchor_survivors(pd.factorize(np.asarray(cells))[0], time, cost))
        return rows[pareto_rows(cost[rows], time[rows])]
    order = np.lexsort((cost, time))  # by time, then cost
    # In that order a point is on the front iff it is cheaper than every point before it.
    ordered = cost[order]
    cheapest_before = np.fmin.accumulate(np.r_[np.inf, ordered[:-1]]) if len(order) else ordered  # NaN: never cheaper
    return order[ordered < cheapest_before].astype(int)


def knee(cost_usd: np.ndarray, time_s: np.ndarray, cells: np.ndarray | None = None) -> int | None:
    """Position of the Pareto front's knee (farthest from the chord of its ends in log-log space);
    None when the front has fewer than three points or is straight (``cells``: ``pareto_rows``')."""
    front = pareto_rows(cost_usd, time_s, cells)
    if len(front) < 3:
        return None
    x = np.log(np.asarray(time_s, dtype=float)[front])
    y = np.log(np.asarray(cost_usd, dtype=float)[front])
    dx, dy = x[-1] - x[0], y[-1] - y[0]
    length = float(np.hypot(dx, dy))
    if length == 0:
        return None
    distance = np.abs(dy * (x - x[0]) - dx * (y - y[0])) / length
    best = int(np.argmax(distance))
    if distance[best] <= 1e-9:
        return None
    # On a flat stretch the farthest point is its slow corner: the fastest front point within
    # KNEE_FLAT_FRACTION of its cost is the knee (buyer trial s45 M2: 16 H100 at +9.7 % cost named
    # beside 32 at +9.9 %, twice as fast; the front is fastest first)
    costs = np.exp(y)
    flat = np.flatnonzero(costs[: best + 1] <= costs[best] * (1.0 + KNEE_FLAT_FRACTION))
    return int(front[flat[0]])


# The knee moves to a faster front point that costs at most this much more: the search's own
# near-tie fraction (1 %).
KNEE_FLAT_FRACTION = NEAR_TIE_FRACTION


@dataclass(frozen=True)
class Knee:
    """The front's knee beside the chosen row: ``extra_cost_fraction`` more cost (negative: less)
    for ``speedup`` x the speed (below 1: slower)."""

    row: int
    extra_cost_fraction: float
    speedup: float


def knee_versus(
    cost_usd: np.ndarray, time_s: np.ndarray, rows: np.ndarray, chosen: int, cells: np.ndarray | None = None
) -> Knee | None:
    """The knee of the front of ``rows`` (feasible row indices) against the ``chosen`` row; None
    when the front has none, the chosen row is the knee, or the knee loses more than it gains
    (its cost x time above the chosen row's: module docstring). ``cells``: ``pareto_rows``'."""
    rows = np.asarray(rows, dtype=int)
    at_cells = None if cells is None else np.asarray(cells)[rows]
    at = knee(np.asarray(cost_usd)[rows], np.asarray(time_s)[rows], at_cells) if len(rows) else None
    if at is None or int(rows[at]) == chosen:
        return None
    row = int(rows[at])
    cost_ratio, speedup = float(cost_usd[row] / cost_usd[chosen]), float(time_s[chosen] / time_s[row])
    if cost_ratio > speedup:  # a worse trade than standing still: more cost than speed, or less saving than delay
        return None
    return Knee(row=row, extra_cost_fraction=cost_ratio - 1, speedup=speedup)
