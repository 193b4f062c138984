"""Near ties in a portfolio: ``plan``'s rule (docs/ilp.md "Ties within 1 %") for each job, after the solve.

``plan``'s cost objective takes, of the plans within NEAR_TIE_FRACTION of the cheapest, the fastest
(its time objective: of those within it of the fastest, the cheapest). The portfolio's objective
weighs the other measure by TIE_BREAK_WEIGHT only, which lies under the solvers' gaps, so a job
that shared nothing was given a plan that ``plan`` would not choose (trial s45 M5: llama3-8b on
4 x mi325x for 45.9 days at $8,591, where the single-job page picks 8 x for 23.0 days at $8,603).

After the solve, each job j in turn (j = 0, 1, ...), every other job's row and the order of starts
kept, is offered each of its rows c whose own measure (its cost ``job_cost``, or its time T_c) is
within NEAR_TIE_FRACTION of its chosen row's. Each is list-scheduled and scored as the answer is
(``score``); those where every job still ends by its D_j (deadline, horizon, reserved terms) are
kept, the inventory and the reserved GPUs held by the list schedule, budgets and memory by the
rows themselves. With P the objective's primary measure of the whole schedule (cost: what the
portfolio pays, ``billed_usd``; time: sum_k E_k / T_ref,k) and S the other, let c0 be the kept row
of least (P, S), and

    tied = {c kept : P(c) <= P(c0) + eps' p_j(c0)}       p_j: the job's own share of P (its cost
                                                          job_cost, or E_j / T_ref,j)

The job takes the row of ``tied`` with the least S (then P). For a job on types nothing else
binds (rented, a count no schedule reaches) P(c) - P(c0) is the job's own difference, so this is
``plan``'s rule exactly; on held or shared GPUs it also moves what the makespan bills (the held
GPUs' idle hours), and the portfolio may spend at most eps' of that job's own cost (time) over the
best kept row to lower S. Each job is moved once, each move within eps' of its own share, so the
answer's P exceeds the solved one's by at most eps' of the sum of the shares, about eps' of P where
the jobs' shares make up P; an exact model's proven optimum may thus be exceeded by up to that, by
design (review s46 L8). Its S is no higher, unless a move lowers P. ``mix`` weighs both measures
already and is left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from planner.search.ilp import Objective
from planner.search.portfolio_rows import PortfolioRows
from planner.search.ties import NEAR_TIE_FRACTION
from planner.units import SECONDS_PER_DAY

if TYPE_CHECKING:
    from planner.search.portfolio import PortfolioSolution

__all__ = ["gap_to_bound", "settle_near_ties"]

# An end this close past its D_j is on it (the model's own times, rounded in days and seconds)
END_RTOL = 1e-9
# Measures this close are equal: a row is not swapped for rounding
MEASURE_RTOL = 1e-12

# Scores, on a capacity per type, (the picked rows: one index into PortfolioRows per job, the jobs'
# order of starts, no reserved pool) list-scheduled as the answer is (portfolio.py ``_read``)
Score = Callable[[Mapping[str, int], tuple[list[int], list[int], dict[str, int]]], "PortfolioSolution"]


def gap_to_bound(solution: PortfolioSolution, bound: float) -> float:
    """The solution's objective above LB, relative to it (0 where a solver's tolerance puts it under)."""
    return max(0.0, (solution.objective_value - bound) / solution.objective_value)


def settle_near_ties(
    solution: PortfolioSolution,
    options: PortfolioRows,
    objective: Objective | str,
    finish_by: Sequence[float | None],
    T_ref: np.ndarray,
    inventory: Mapping[str, int],
    score: Score,
) -> PortfolioSolution:
    """The module docstring's rule over ``solution`` (its rows, ``order`` and reserved GPUs);
    ``finish_by``: each job's D_j in seconds (None: none); ``inventory``: the GPUs of each type the
    list schedule may hold (a reserved type's: those the answer reserves)."""
    objective = Objective(objective)
    if objective is Objective.MIX or not solution.order:
        return solution
    by_cost = objective is Objective.COST
    index_of = {(int(j), int(r)): i for i, (j, r) in enumerate(zip(options.job, options.row, strict=True))}
    picked = [index_of[j, a.row] for j, a in enumerate(solution.assignments)]
    capacity = {**inventory, **{r.gpu_id: r.num_gpus for r in solution.reserved}}
    order = list(solution.order)
    current, changed = score(capacity, (picked, order, {})), False
    own = options.job_cost if by_cost else options.T

    def measures(answer: PortfolioSolution) -> tuple[float, float]:
        time = sum(a.end_s / SECONDS_PER_DAY / T_ref[j] for j, a in enumerate(answer.assignments))
        return (answer.billed_usd, time) if by_cost else (time, answer.billed_usd)

    def share(j: int, i: int, answer: PortfolioSolution) -> float:
        return float(options.job_cost[i]) if by_cost else answer.assignments[j].end_s / SECONDS_PER_DAY / T_ref[j]

    for j in range(len(picked)):
        mine = np.flatnonzero(options.job == j)
        near = mine[own[mine] <= own[picked[j]] * (1 + NEAR_TIE_FRACTION)]
        kept = []
        for i in near:
            if options.n[i] > capacity.get(str(options.gpu[i]), 0):
                continue
            trial = current if i == picked[j] else score(capacity, ([*picked[:j], int(i), *picked[j + 1 :]], order, {}))
            if _in_time(trial, finish_by):
                kept.append((measures(trial), int(i), trial))
        if not kept:  # (the chosen row is always kept: the answer meets every D_j)
            continue
        (P0, _), i0, first = min(kept, key=lambda k: (k[0], k[1]))
        limit = P0 + NEAR_TIE_FRACTION * share(j, i0, first) + MEASURE_RTOL * abs(P0)
        tied = [k for k in kept if k[0][0] <= limit]
        (_, S), i, best = min(tied, key=lambda k: (k[0][1], k[0][0], k[1]))
        held = next((k for k in tied if k[1] == picked[j]), None)
        if held is not None and held[0][1] <= S + MEASURE_RTOL * abs(S):
            continue  # the chosen row is as good on S: kept
        picked[j], current, changed = i, best, True
    if not changed:
        return solution
    return replace(
        current,
        solver=solution.solver,
        exact=solution.exact,
        lanes=solution.lanes,
        lower_bound=solution.lower_bound,
        stopped_gap=None if solution.stopped_gap is None else gap_to_bound(current, solution.lower_bound or 0.0),
    )


def _in_time(answer: PortfolioSolution, finish_by: Sequence[float | None]) -> bool:
    """Every job ends by its D_j (a job the list schedule could not place has a NaN end: not)."""
    return all(
        a.end_s == a.end_s and (d is None or a.end_s <= d * (1 + END_RTOL))
        for a, d in zip(answer.assignments, finish_by, strict=True)
    )
