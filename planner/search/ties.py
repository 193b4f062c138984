"""Ties: rows a buyer cannot tell apart in cost and time, and the order that settles them.

Which of tied rows a solver returns is arbitrary, so the single-job solve (``ilp.solve_single``)
and its side answers (planner/api/side_answers.py) settle them by one order: a listed price before
an estimated one, then a sure fit before one whose memory band may not fit, then one clear of the
fit rule's headroom, then the model's own time before the efficiency ceiling, then ZeRO-1 of
sharding twins (docs/ilp.md, "Exact ties"). The portfolio's pruning keeps the first of a tie within
each GPU type (slots.job_rows); across types, a tie-break weight of 1e-6 lies under the solvers'
relative MIP gap (HiGHS 1e-4), so after the solve each job in turn takes ``plan``'s near-tie rule
with every other job's schedule kept (planner/search/portfolio_ties.py; review s29, app trial s45 M5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from planner.model.candidates import SHARD_FSDP, SHARD_NONE, SHARD_ZERO1, SHARD_ZERO2

# Plans within this fraction of the primary optimum count as tied; the other objective then
# decides (cost: the faster wins; time: the cheaper). Without it "cost" chose 2 x B200 for
# 4.6 days over 8 x B200 for 27.7 h at $4 (0.1 %) more (issue 10).
NEAR_TIE_FRACTION = 0.01


def fastest_near_cheapest(cost: np.ndarray, time: np.ndarray, rows: np.ndarray) -> int:
    """Of ``rows``, those within NEAR_TIE_FRACTION of the cheapest, the fastest (then the cheaper):
    as plan's cost objective picks (trial s27d: the cheapest alone rented a plan twice as slow to
    save 0.7 %; trial s42: a budget's answer named 32 GPUs for 653 days beside 512 for 41)."""
    tied = rows[cost[rows] <= cost[rows].min() * (1 + NEAR_TIE_FRACTION)]
    return int(tied[np.lexsort((cost[tied], time[tied]))[0]])


if TYPE_CHECKING:
    from planner.search.ilp import ScoredTable

# Rows this close in cost and in time are one plan to a buyer (a second in twelve days): a tie.
TIE_RTOL = 1e-6
# Of sharding twins timed alike, the order taken:
# ZeRO-1, the pipelines' own (Megatron's distributed optimizer, DeepSpeed's pipeline engine), then
# more sharding, DDP last, holding every optimizer state (review s29b: by code DDP came first).
SHARDING_TIE_RANK = np.argsort((SHARD_ZERO1, SHARD_ZERO2, SHARD_FSDP, SHARD_NONE))  # code -> rank


def tie_order(table: ScoredTable, rows: np.ndarray) -> np.ndarray:
    """``rows`` in the order that settles ties: a sourced price before an estimated one
    (``price_estimated``), then a plan whose memory band stays within the GPU before one that may
    not fit (``may_not_fit``; trial s41: of six plans held at one ceiling, the one flagged "may not
    fit" was chosen, by its uncapped speed), then one whose band stays out of the fit rule's
    headroom before one that reaches into it (``in_headroom``; trial s43: zero1 at 177.2 of 178.5
    GiB won over its zero2 twin at 164.6), then by the model's own time, before the efficiency
    ceiling (``uncapped_time_s``), then ``SHARDING_TIE_RANK``; each key unused where the table lacks it.
    Rows held at one ceiling tie exactly on time and cost, and the pruning, the alternatives and
    the choice (``first_of_tie``) keep the first of a tie: the one the model rates fastest, not the
    first generated (a layout rated 5 % slower was chosen so); of two GPU types alike in both, the
    one whose price is listed (trial s28c: an H800 priced as the H100 won an exact tie with it);
    of twins alike in all three, ZeRO-1 first (trial s29b: under a pipeline ZeRO-2 times as ZeRO-1,
    and "zero2 pp=4" was chosen under megatron-core, whose distributed optimizer is ZeRO-1)."""
    sharding = table.extra.get("sharding")
    ranked = None if sharding is None else SHARDING_TIE_RANK[np.asarray(sharding)]
    keys = [
        ranked,
        table.extra.get("uncapped_time_s"),
        table.extra.get("in_headroom"),
        table.extra.get("may_not_fit"),
        table.extra.get("price_estimated"),
    ]
    present = [np.asarray(k)[rows] for k in keys if k is not None]
    return rows[np.lexsort(present)] if present else rows


def tied_to(table: ScoredTable, rows: np.ndarray, row: int) -> np.ndarray:
    """Which of ``rows`` lie within ``TIE_RTOL`` of ``row``'s cost and time (``row`` itself too)."""
    C, T = table.cost_usd, table.time_to_train_s
    return np.isclose(C[rows], C[row], rtol=TIE_RTOL, atol=0) & np.isclose(T[rows], T[row], rtol=TIE_RTOL, atol=0)


def first_of_tie(table: ScoredTable, rows: np.ndarray, row: int) -> int:
    """The first of ``rows`` (in ``tie_order``) tied to ``row``: an H800 held at the H100's ceiling
    differs from it by 5e-8 in time, through its failure rate's goodput, and had won."""
    tied = rows[tied_to(table, rows, row)]
    return int(tied[0]) if len(tied) else row


def near_tied(table: ScoredTable, rows: np.ndarray, row: int, eps: float) -> np.ndarray:
    """Which of ``rows`` lie within ``eps`` of ``row`` in both cost and time (one buyer's tie, wider
    than ``tied_to``'s exact one: ``settle_near_tie``, and the median's plan is named only outside it)."""
    C, T = table.cost_usd, table.time_to_train_s
    return (np.abs(C[rows] / C[row] - 1.0) <= eps) & (np.abs(T[rows] / T[row] - 1.0) <= eps)


def settle_near_tie(
    table: ScoredTable, rows: np.ndarray, row: int, weights: tuple[float, float], refs: tuple[float, float], eps: float
) -> int:
    """Of ``rows`` within ``eps`` of ``row`` in both cost and time (at the search's risk quantile),
    the one whose objective (``weights`` on cost and time over ``refs``) is least at the band's slow
    end (the time x ``extra['band_hi']`` over ``extra['time_factor']``, the cost there
    ``extra['cost_hi_usd']``, which a reserved term billed whole keeps flat: review s43; scaled as
    the time where a table lacks it); ``row`` where the table has no band or none is lower there.
    A buyer cannot tell such rows apart at the risk asked, so the one the evidence fears least wins
    (trial s38: --risk p50 chose, on a 0.1 % difference there, a plan dearer at p80 and at p90 than
    the one it listed first)."""
    hi, factor = table.extra.get("band_hi"), table.extra.get("time_factor")
    if hi is None or factor is None:
        return row
    C, T = table.cost_usd, table.time_to_train_s
    C_hi = table.extra.get("cost_hi_usd")
    C_hi = C * hi / factor if C_hi is None else C_hi
    near = rows[near_tied(table, rows, row, eps)]
    slow = weights[0] * C_hi[near] / refs[0] + weights[1] * T[near] * hi[near] / factor[near] / refs[1]
    own = weights[0] * C_hi[row] / refs[0] + weights[1] * T[row] * hi[row] / factor[row] / refs[1]
    best = int(np.argmin(slow)) if len(near) else -1
    return int(near[best]) if best >= 0 and slow[best] < own * (1.0 - TIE_RTOL) else row


# Batches this close to a target no layout meets train alike (the loss moves smoothly with the
# batch: McCandlish et al. 2018, "An Empirical Model of Large-Batch Training"), so among them the
# objective decides. A judgement, not a fit: trial s27 asked 405B for 16e6 tokens (1,953 x 8K
# sequences, 3^2 x 7 x 31) on 4,096 H100, and only data-parallel degrees dividing 1,953 made the
# single nearest batch: 512 GPUs and 2,193 days, where 15,990,784 (-0.06 %) ran on all 4,096.
NEAR_BATCH_FRACTION = 0.01


def nearest_batch(batch_tokens: np.ndarray, target: int) -> np.ndarray:
    """Mask of the entries at the batch asked for: ``target`` itself where an entry meets it; else
    every entry within ``NEAR_BATCH_FRACTION`` of it; else those at the nearest batch (a tie goes
    to the larger)."""
    batch = np.asarray(batch_tokens, dtype=np.int64)
    distance = np.abs(batch - target)
    if (exact := distance == 0).any():
        return exact
    if (near := distance <= NEAR_BATCH_FRACTION * target).any():
        return near
    nearest = distance.min()
    best = int(batch[distance == nearest].max())
    return batch == best
