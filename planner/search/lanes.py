"""A lower bound on every schedule of a portfolio, and a schedule of its jobs in fixed lanes of GPUs:
the many-job model's certificate and second incumbent (planner/search/portfolio.py; docs/ilp.md
"Many jobs"). Notation as ``solve_portfolio``'s: job j, its rows c in R_j of GPU type g(c), n_c GPUs
and T_c days, D_j its latest end; a = w_C / C_ref, H the held inventory's cost per day, and

    k_c = a v_g(c) n_c T_c + w_T T_c / T_ref,j           row c's busy and time terms, ended at T_c.

**Bound.** Every schedule (rows c_j, ends E_j <= D_j, at most inv_g GPUs of g busy at once, makespan
M = max_j E_j) costs at least

    LB = min   a H M + sum_c k_c y_c,        y_c in {0, 1},  M >= 0
         s.t.  (1) sum_{c in R_j} y_c = 1                                  every job j
               (2) M >= sum_{c in R_j} T_c y_c                             every job j
               (3) inv_g M >= sum_{c : g(c) = g} n_c T_c y_c                every type g

Proof: its rows and M satisfy (1)-(3) (M >= E_j >= T_{c_j}; type g's GPU-days within [0, M] are
at most inv_g M), its time terms are at E_j >= T_{c_j}, and the reserved pools add a F_r q_r >= 0.
So LB is no more than the exact model's optimum, nor than any schedule the slotted model or the
lanes below return. Tested against brute force over rows and orders (tests/planner).

**Lanes.** Each type's GPUs are split into lanes of fixed width w_l: the whole inventory, or up to
two lanes of each of inv_g / 2, inv_g / 4, ... (``LANE_DEPTH`` halvings); the jobs in a lane run one
after another, each on its fastest row of at most w_l GPUs (T_jl days, k_jl its terms). With
x_jl, u_l in {0, 1}:

    minimise   a H M + sum_{j,l} k_jl x_jl
    subject to sum_l x_jl = 1                                 every job j
               sum_j x_jl <= |J| u_l,   u_l >= u_l'           every lane l (l' its twin after it)
               sum_{l of g} w_l u_l <= inv_g                  every type g
               M >= sum_j T_jl x_jl                           every lane l
               sum_{j : D_j <= d} T_jl x_jl <= d               every lane l, deadline d
               (3) over the lanes' rows

A lane runs its jobs by deadline, then by Smith's rule (T_jl T_ref,j), so each meets its D_j; the
lanes of a type never hold more than inv_g GPUs, so every solution is a schedule, and its list
schedule in the same order ends no job later (docs/ilp.md "Compaction"). It is a family of schedules
the slotted model does not reach without rounding: 18 jobs that scale almost linearly on 256 + 64
GPUs (bench/bench_plan.py) are packed within 1 % of LB, where the slotted optimum is 3.8 % above it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from planner.search.ilp import TIE_BREAK_WEIGHT
from planner.search.solver import new_binaries, new_variable, run_solver

__all__ = ["LANES_GAP", "LANES_TARGET_GAP", "LANE_DEPTH", "Lanes", "RowTerms", "assignment_bound", "lane_schedule"]

# The slotted model's search is cut short where the lanes' schedule is within this fraction of LB
# already (so within it of the best schedule there is, far inside the jobs' time bands).
LANES_GAP = 0.015
# The lanes' MIP stops within this fraction of LB: its objective counts a job's time term at its row's
# time, not at its end in the lane, so the answer's is a little higher (the 18 bench jobs: 1.03 % at
# a MIP's 1.00 %, the time terms at epsilon = 1e-6 over ends up to 100 times a job's least time).
LANES_TARGET_GAP = 0.01
# Lane widths a type's inventory is cut into: inv_g, inv_g / 2, inv_g / 4, inv_g / 8. The bench's 18
# jobs were packed within 1 % of LB in 0.1 s of CPU so; with two halvings more, in 1.5-1.7 s (the
# solver's search grows with the lanes; 2-core machine, 2026-12).
LANE_DEPTH = 4
# Seconds each of the two MIPs below may run: the bound's is the assignment above, ~0.4 s for 18 jobs;
# where it stops, the LP relaxation's value stands in (still a bound). The lanes' MIP had its best
# schedule of the bench's 18 jobs by 2 s (2-core machine, 2026-12).
BOUND_TIME_LIMIT_S = 5.0
LANES_TIME_LIMIT_S = 3.0
# The lanes' cut at LB is loosened by this much: LB is a solver's optimum, within its tolerances.
BOUND_CUT_SLACK = 1e-6


def capped(limit_s: float, caller_s: float | None) -> float:
    """A MIP's own time limit, or the caller's where shorter."""
    return limit_s if caller_s is None else min(limit_s, caller_s)


@dataclass(frozen=True, eq=False)
class RowTerms:
    """Every job's candidate rows, one entry per array index, with the objective's terms."""

    job: np.ndarray
    gpu: np.ndarray
    n: np.ndarray
    T: np.ndarray  # days
    k: np.ndarray  # k_c: the busy and time terms at E_j = T_c
    held: float  # a H: the weight on M
    deadline: np.ndarray  # D_j per job, days (inf: none)
    smith: np.ndarray  # T_ref,j per job: Smith's rule orders a lane by T_c T_ref,j
    inventory: Mapping[str, int]

    @property
    def num_jobs(self) -> int:
        return len(self.deadline)


def _scaled(problem: pulp.LpProblem, terms: RowTerms, y, M, k: np.ndarray) -> pulp.LpAffineExpression:
    """The objective, scaled by 1 / epsilon as the portfolio's (the solvers' absolute tolerances)."""
    scale = 1 / TIE_BREAK_WEIGHT
    objective = scale * terms.held * M + pulp.LpAffineExpression(
        (v, scale * float(c)) for v, c in zip(y, k, strict=True)
    )
    problem += objective
    return objective


def assignment_bound(terms: RowTerms, solver: str, time_limit_s: float | None = None) -> float:
    """LB of the module docstring, in the objective's own units; where the MIP stops at its time
    limit (BOUND_TIME_LIMIT_S, or the caller's where shorter) without its optimum, the LP
    relaxation's value (a weaker bound)."""
    limit = capped(BOUND_TIME_LIMIT_S, time_limit_s)
    for relax in (False, True):
        problem = pulp.LpProblem("portfolio_bound", pulp.LpMinimize)
        y = new_binaries(problem, "y", len(terms.job))
        if relax:
            for var in y:
                var.cat = pulp.LpContinuous
        M = new_variable(problem, "M", 0, None)
        _scaled(problem, terms, y, M, terms.k)
        for j in range(terms.num_jobs):
            mine = np.flatnonzero(terms.job == j)
            problem += pulp.lpSum(y[i] for i in mine) == 1  # (1)
            problem += pulp.LpAffineExpression((y[i], float(terms.T[i])) for i in mine) <= M  # (2)
        _gpu_days(problem, terms, y, M, np.arange(len(terms.job)))  # (3)
        try:
            if run_solver(problem, solver, None if relax else limit)[0]:
                return float(pulp.value(problem.objective)) * TIE_BREAK_WEIGHT
        except RuntimeError:  # stopped at the limit: the relaxation, which always solves
            continue
    return 0.0  # (unreached: the relaxation of a model with a schedule has its optimum)


def _gpu_days(problem: pulp.LpProblem, terms: RowTerms, y, M, rows: np.ndarray) -> None:
    """(3): each type's GPU-days within what its inventory offers by M; ``rows``: y's rows."""
    for g, limit in terms.inventory.items():
        mine = np.flatnonzero(terms.gpu[rows] == g)
        if len(mine):
            days = terms.n[rows] * terms.T[rows]
            problem += limit * M >= pulp.LpAffineExpression((y[i], float(days[i])) for i in mine)


@dataclass(frozen=True)
class Lanes:
    """A lane schedule: each job's row (an index into ``RowTerms``) and the jobs in order of start."""

    rows: tuple[int, ...]
    order: tuple[int, ...]


def lane_widths(inventory: Mapping[str, int]) -> list[tuple[str, int]]:
    """The candidate lanes (type, width): the whole inventory, then two of each halving."""
    lanes = []
    for g, count in inventory.items():
        lanes.append((g, count))
        for depth in range(1, LANE_DEPTH):
            width = count >> depth
            if width >= 1:
                lanes += [(g, width), (g, width)]
    return lanes


def _lane_rows(terms: RowTerms, lanes: list[tuple[str, int]]) -> list[tuple[int, int, int]]:
    """(job, lane, row) for each job and lane with a row of at most the lane's width: its fastest."""
    cells = []
    for lane, (g, width) in enumerate(lanes):
        for j in range(terms.num_jobs):
            rows = np.flatnonzero((terms.job == j) & (terms.gpu == g) & (terms.n <= width))
            if len(rows):
                cells.append((j, lane, int(rows[np.lexsort((terms.k[rows], terms.T[rows]))[0]])))
    return cells


def lane_schedule(
    terms: RowTerms, solver: str, bound: float, gap: float = LANES_TARGET_GAP, time_limit_s: float | None = None
) -> Lanes | None:
    """The lanes' MIP of the module docstring under ``LANES_TIME_LIMIT_S`` (or the caller's limit where
    shorter: review s45 L5, a call ran up to ~8 s past it), stopped where its best is
    within ``gap`` of ``bound`` (LB), or of its own bound: every lane schedule is a schedule, so its
    objective >= LB is a valid cut, which lifts that bound to LB at least. None where it finds no
    schedule by then (or none exists: deadlines no lane meets)."""
    lanes = lane_widths(terms.inventory)
    cells = _lane_rows(terms, lanes)
    job, lane, row = (np.array([cell[i] for cell in cells], dtype=int) for i in range(3))
    problem = pulp.LpProblem("portfolio_lanes", pulp.LpMinimize)
    x = new_binaries(problem, "x", len(cells))
    u = new_binaries(problem, "u", len(lanes))
    M = new_variable(problem, "M", 0, None)
    objective = _scaled(problem, terms, x, M, terms.k[row])
    problem += objective >= (1 - BOUND_CUT_SLACK) * bound / TIE_BREAK_WEIGHT
    for j in range(terms.num_jobs):
        problem += pulp.lpSum(x[i] for i in np.flatnonzero(job == j)) == 1
    for index, (g, width) in enumerate(lanes):
        mine = np.flatnonzero(lane == index)
        problem += pulp.lpSum(x[i] for i in mine) <= terms.num_jobs * u[index]
        if index > 0 and lanes[index - 1] == (g, width):  # twins: the first open before the second
            problem += u[index - 1] >= u[index]
        problem += pulp.LpAffineExpression((x[i], float(terms.T[row[i]])) for i in mine) <= M
        for d in sorted(set(terms.deadline[job[mine]].tolist()) - {np.inf}):
            due = mine[terms.deadline[job[mine]] <= d]
            problem += pulp.LpAffineExpression((x[i], float(terms.T[row[i]])) for i in due) <= d
    for g, limit in terms.inventory.items():
        problem += pulp.lpSum(width * u[i] for i, (h, width) in enumerate(lanes) if h == g) <= limit
    _gpu_days(problem, terms, x, M, row)
    try:
        target = bound / (1 - gap) / TIE_BREAK_WEIGHT
        seconds = capped(LANES_TIME_LIMIT_S, time_limit_s)
        if not run_solver(problem, solver, seconds, accept_incumbent=True, gap_rel=gap, target=target)[0]:
            return None
    except RuntimeError:  # no schedule by the limit
        return None
    chosen = [i for i, var in enumerate(x) if (var.varValue or 0) > 0.5]
    return _in_order(terms, [(int(job[i]), int(lane[i]), int(row[i])) for i in chosen])


def _in_order(terms: RowTerms, cells: Sequence[tuple[int, int, int]]) -> Lanes:
    """Each lane's jobs one after another, by deadline, then Smith's rule; all jobs by their start."""
    rows = [0] * terms.num_jobs
    start: dict[int, float] = {}
    for lane in sorted({c[1] for c in cells}):
        mine = sorted(
            (c for c in cells if c[1] == lane),
            key=lambda c: (terms.deadline[c[0]], terms.T[c[2]] * terms.smith[c[0]], c[0]),
        )
        at = 0.0
        for j, _, r in mine:
            rows[j], start[j] = r, at
            at += float(terms.T[r])
    order = sorted(range(terms.num_jobs), key=lambda j: (start[j], j))
    return Lanes(tuple(rows), tuple(order))
