"""Pick one training configuration from a scored candidate table with a small ILP.

The analytic model scores every candidate (GPU type, count, layout, micro-batch, ...) and
hands over a :class:`ScoredTable` (planner/search/table.py, re-exported here). This module
filters it, prunes dominated rows (estimate first, solve second), solves the single-job ILP of
:func:`solve_single` with
PuLP (HiGHS when ``highspy`` is importable, CBC otherwise) and, when nothing is
feasible, raises the :class:`~planner.errors.InfeasiblePlan` that :mod:`planner.search.diagnosis`
builds (which constraint binds and how to fix it; :class:`RowChecks` is re-exported here).
The maths is in the docstring of :func:`solve_single` and in docs/ilp.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pandas as pd
import pulp

from planner.frontier import anchor_survivors
from planner.search.alternatives import best_rows, twin_key
from planner.search.diagnosis import RowChecks, Unplanned, binding_per_type, diagnose
from planner.search.solver import new_binaries, run_solver
from planner.search.table import ScoredTable
from planner.search.ties import (
    NEAR_TIE_FRACTION,
    fastest_near_cheapest,
    first_of_tie,
    nearest_batch,
    settle_near_tie,
    tie_order,
)

__all__ = [
    "Objective",
    "RowChecks",
    "ScoredTable",
    "SingleSolution",
    "check_rows",
    "nearest_batch",
    "objective_weights",
    "pareto_mask",
    "solve_single",
]

# A secondary objective weight: among equally good rows, prefer the faster (cost objective)
# or the cheaper (time objective) one. Small enough not to change the primary optimum.
TIE_BREAK_WEIGHT = 1e-6


class Objective(StrEnum):
    COST = "cost"  # minimise C (tie-break on T)
    TIME = "time"  # minimise T (tie-break on C)
    MIX = "mix"  # minimise w*C/C_ref + (1-w)*T/T_ref


def objective_weights(objective: Objective | str, cost_weight: float = 0.5) -> tuple[float, float]:
    """(weight on C/C_ref, weight on T/T_ref); both > 0 so that the optimum is Pareto-optimal."""
    try:
        objective = Objective(objective)
    except ValueError:
        raise ValueError(f"objective: expected one of cost, time, mix; got {objective!r}") from None
    if objective is Objective.COST:
        return 1.0, TIE_BREAK_WEIGHT
    if objective is Objective.TIME:
        return TIE_BREAK_WEIGHT, 1.0
    if not 0.0 <= cost_weight <= 1.0:
        raise ValueError(f"cost_weight: expected a value in [0, 1], got {cost_weight}")
    return max(cost_weight, TIE_BREAK_WEIGHT), max(1.0 - cost_weight, TIE_BREAK_WEIGHT)


def positive_reference(values: np.ndarray) -> float:
    """Normaliser for one term of the objective: the best value, or 1 when that is not positive."""
    best = float(np.min(values))
    return best if best > 0 else 1.0


def check_rows(
    table: ScoredTable,
    *,
    deadline_s: float | None = None,
    budget_usd: float | None = None,
    inventory: Mapping[str, int] | None = None,
    count_caps: Mapping[str, int] | None = None,
    batch_target: int | None = None,
) -> RowChecks:
    """Evaluate every per-row constraint of the single-job model, vectorised.

    ``inventory`` maps GPU type -> GPUs available; types not in it are not allowed; ``None``
    means no limit. ``count_caps`` names the types whose ``inventory`` entry is a GPU-count cap
    (max_gpus) rather than GPUs on hand, for the diagnosis' wording; ``batch_target`` the batch the
    search keeps rows at (``nearest_batch``), for the diagnosis' budget answer. Raises ValueError on bad limits or on a row that passes the memory,
    divisibility and batch filters but has a non-finite time or cost.
    """
    if len(table) == 0:
        raise ValueError("ScoredTable: no rows to choose from")
    _check_limit("deadline_s", deadline_s)
    _check_limit("budget_usd", budget_usd)
    if inventory is None:
        inventory_per_row = np.full(len(table), np.inf)
    else:
        gpu_codes, gpu_types = pd.factorize(table.gpu_id)  # strings: only where an inventory needs them
        for gpu, count in inventory.items():
            if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
                raise ValueError(f"inventory[{gpu!r}]: expected a GPU count >= 0, got {count!r}")
        per_type = np.array([inventory.get(gpu, 0) for gpu in gpu_types], dtype=np.float64)
        inventory_per_row = per_type[gpu_codes]
    # at the risk quantile, never under the model's own figure (table.limit_figure)
    time_s, cost_usd = table.limit_figures()
    checks = RowChecks(
        # A dominated row fits, but its twin passes every check it passes, at no more time or
        # cost: dropping it here changes no choice and no diagnosis.
        memory=table.fits_memory & ~table.dominated,
        divisibility=table.divisible,
        batch=table.batch_ok,
        gpu_type=inventory_per_row > 0,
        inventory=table.num_gpus <= inventory_per_row,
        deadline=time_s <= deadline_s if deadline_s is not None else np.ones(len(table), bool),
        budget=cost_usd <= budget_usd if budget_usd is not None else np.ones(len(table), bool),
        inventory_limits=dict(inventory) if inventory is not None else None,
        deadline_s=deadline_s,
        budget_usd=budget_usd,
        time_s=time_s,
        cost_usd=cost_usd,
        count_caps=dict(count_caps or {}),
        batch_target=batch_target,
        untimed=table.dominated,
    )
    _check_scored(table, checks.memory & checks.divisibility & checks.batch)
    return checks


def _check_limit(name: str, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}: expected a positive number, got {value!r}")


def _check_scored(table: ScoredTable, plausible: np.ndarray) -> None:
    for name in ("time_to_train_s", "cost_usd"):
        bad = plausible & ~(np.isfinite(getattr(table, name)) & (getattr(table, name) >= 0))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"ScoredTable.{name}: row {row}{f' ({table.label[row]})' if table.label[row] else ''} passes the "
                f"memory, divisibility and batch checks but has value "
                f"{getattr(table, name)[row]!r}"
            )
    bad = plausible & (table.num_gpus < 1)
    if bad.any():
        raise ValueError(f"ScoredTable.num_gpus: row {int(np.flatnonzero(bad)[0])} has < 1 GPU")


def pareto_mask(
    group: np.ndarray,
    cost: np.ndarray,
    time: np.ndarray,
    size: np.ndarray | None = None,
    cells: np.ndarray | None = None,
) -> np.ndarray:
    """Rows that no other row of the same group dominates (lower-or-equal in every key).

    Keys are (cost, time), plus ``size`` (GPU count) when given, which the shared-inventory
    models need: a cheaper, faster plan that takes more GPUs may not fit. Of exact
    duplicates the lowest index is kept. ``cells`` (without ``size``; ints, e.g. the GPU count)
    splits each group further: the rows their cell's fastest row dominates are dropped before
    the sort, which then sorts a few rows per cell (the same mask, issue 28).
    """
    group_codes = pd.factorize(group)[0]
    if size is None:
        if cells is None:
            return _pareto_2d(group_codes, cost, time)
        key = group_codes.astype(np.int64) * (int(np.max(cells, initial=0)) + 1) + cells
        rows = np.flatnonzero(anchor_survivors(pd.factorize(key)[0], cost, time))
        keep = np.zeros(len(group_codes), dtype=bool)
        keep[rows] = _pareto_2d(group_codes[rows], cost[rows], time[rows])
        return keep
    size_codes = pd.factorize(size)[0]
    keep = _pareto_2d(group_codes * (int(size_codes.max(initial=0)) + 1) + size_codes, cost, time)
    # Survivors can now only be dominated by a row of the same group with strictly fewer GPUs.
    survivors = np.flatnonzero(keep)
    for code in np.unique(group_codes[survivors]):
        rows = survivors[group_codes[survivors] == code]
        keep[rows[_dominated_by_smaller(cost[rows], time[rows], size[rows])]] = False
    return keep


def _pareto_2d(group_codes: np.ndarray, cost: np.ndarray, time: np.ndarray) -> np.ndarray:
    # Sorted by (group, cost, time), a row survives iff it is strictly faster than every
    # row before it in its group: those are all at most as expensive.
    num_rows = len(group_codes)
    order = np.lexsort((time, cost, group_codes))
    sorted_groups, sorted_time = group_codes[order], time[order]
    starts: np.ndarray | list[int] = (
        np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]]) if num_rows else []
    )
    keep_sorted = np.zeros(num_rows, dtype=bool)
    # strict=False: with no rows, starts is empty and the ends are [0]
    for start, end in zip(starts, [*starts[1:], num_rows], strict=False):  # one pass per group
        fastest_so_far = np.minimum.accumulate(sorted_time[start:end])
        keep_sorted[start] = True
        keep_sorted[start + 1 : end] = sorted_time[start + 1 : end] < fastest_so_far[:-1]
    keep = np.zeros(num_rows, dtype=bool)
    keep[order] = keep_sorted
    return keep


def _dominated_by_smaller(cost: np.ndarray, time: np.ndarray, size: np.ndarray, chunk: int = 2048) -> np.ndarray:
    dominated = np.zeros(len(cost), dtype=bool)
    for start in range(0, len(cost), chunk):  # chunked so the pairwise matrix stays small
        rows = slice(start, start + chunk)
        dominated[rows] = (
            (cost[None, :] <= cost[rows, None])
            & (time[None, :] <= time[rows, None])
            & (size[None, :] < size[rows, None])
        ).any(axis=1)
    return dominated


def chosen_index(variables: list[pulp.LpVariable]) -> int:
    return int(np.argmax([v.varValue or 0.0 for v in variables]))


@dataclass(frozen=True)
class SingleSolution:
    """The chosen row and how it was found; row indices refer to the ORIGINAL table."""

    row: int
    objective: Objective
    objective_value: float  # w_C*C/C_ref + w_T*T/T_ref at the optimum
    cost_usd: float
    time_to_train_s: float
    alternatives: tuple[int, ...]  # the next-best feasible rows, best first
    solver: str
    num_rows: int  # rows in the table
    num_feasible: int  # rows that pass every constraint
    num_pruned: int  # feasible rows dropped as dominated before the ILP
    num_variables: int  # binaries in the ILP
    cost_ref_usd: float
    time_ref_s: float
    # ``per_gpu``: the best feasible row of each other GPU type, best first (which GPU: trial s26),
    # and what rules out each type with no feasible row (trial s27)
    best_per_gpu: tuple[int, ...] = ()
    unplanned_gpus: tuple[Unplanned, ...] = ()


def _near_tie_solve(
    table: ScoredTable,
    kept: np.ndarray,
    measures: tuple[np.ndarray, np.ndarray, float, float],
    optimum: float,
    limits: _Limits,
    run: tuple[str, float | None],
) -> tuple[list[pulp.LpVariable], str]:
    """The second solve of ``solve_single``: minimise S / S_ref (+ the tie-break weight on P) under
    (4)-(7) and (8), sum_c P_c x_c <= (1 + eps) P*; ``measures``: (P, S, P_ref, S_ref); ``run``:
    (solver, time limit). Returns its variables and the solver's name."""
    P, S, P_ref, S_ref = measures
    problem, x = _single_job_problem(table, kept, S[kept] / S_ref + TIE_BREAK_WEIGHT * P[kept] / P_ref, limits)
    # In units of P_ref: the solver's absolute tolerances then hold for a job of any size (a
    # one-token budget has optima of ~1e-9 USD).
    scaled = (P[kept] / P_ref).tolist()
    problem += pulp.LpAffineExpression(zip(x, scaled, strict=True)) <= optimum / P_ref * (1 + NEAR_TIE_FRACTION)
    optimal, solver_name = run_solver(problem, *run)  # (8)
    assert optimal, "the first solve's optimum satisfies (8)"
    return x, solver_name


def solve_single(
    table: ScoredTable,
    objective: Objective | str = Objective.COST,
    *,
    deadline_s: float | None = None,
    budget_usd: float | None = None,
    inventory: Mapping[str, int] | None = None,
    cost_weight: float = 0.5,
    top_k: int = 5,
    solver: str = "auto",
    prune: bool = True,
    time_limit_s: float | None = None,
    batch_target: int | None = None,
    per_gpu: bool = False,
) -> SingleSolution:
    """Choose the best candidate for one job: the model (1)-(7) of ``_single_job_problem`` over the
    rows ``_feasible_rows`` passes (``batch_target``: those at the batch asked for) and
    ``_kept_rows`` keeps (``prune``), with near ties under cost and time (``_chosen_row``'s (8)).
    Raises :class:`InfeasiblePlan` when no row is feasible."""
    if top_k < 0:
        raise ValueError(f"top_k: expected >= 0, got {top_k}")
    w_cost, w_time = objective_weights(objective, cost_weight)
    checks = check_rows(
        table, deadline_s=deadline_s, budget_usd=budget_usd, inventory=inventory, batch_target=batch_target
    )
    feasible = _feasible_rows(table, checks, batch_target)
    C, T = table.cost_usd, table.time_to_train_s
    C_ref, T_ref = positive_reference(C[feasible]), positive_reference(T[feasible])
    score = w_cost * C[feasible] / C_ref + w_time * T[feasible] / T_ref
    kept = _kept_rows(table, feasible, prune)
    objective = Objective(objective)
    limits = _Limits(deadline_s, budget_usd, inventory)
    weights, refs = (w_cost, w_time), (C_ref, T_ref)
    choice = _chosen_row(table, feasible, kept, objective, weights, refs, limits, (solver, time_limit_s))
    row = choice.row
    return SingleSolution(
        row=row,
        objective=objective,
        cost_usd=float(C[row]),
        objective_value=float(w_cost * C[row] / C_ref + w_time * T[row] / T_ref),
        time_to_train_s=float(T[row]),
        alternatives=best_rows(
            feasible,
            score,
            row,
            top_k,
            table.extra.get("choice_group"),
            twin_key(table, feasible, T, C) if top_k else None,
        ),
        best_per_gpu=_best_per_gpu(table, feasible, score, row, objective) if per_gpu else (),
        unplanned_gpus=binding_per_type(table.gpu_id, checks, feasible) if per_gpu else (),
        solver=choice.solver,
        num_rows=len(table),
        num_feasible=len(feasible),
        num_pruned=len(feasible) - len(kept),
        num_variables=choice.num_variables,
        cost_ref_usd=C_ref,
        time_ref_s=T_ref,
    )


def _feasible_rows(table: ScoredTable, checks: RowChecks, batch_target: int | None) -> np.ndarray:
    """The rows that pass every check, in tie order (``tie_order``); :class:`InfeasiblePlan` (the
    diagnosis) where none does.

    ``batch_target`` (the requested global batch, tokens; needs ``table.extra["batch_tokens"]``):
    of the feasible rows only those at the batch asked for are kept (``nearest_batch``): the target
    itself where a feasible row meets it, else those within NEAR_BATCH_FRACTION of it, else the
    nearest (docs/ilp.md, "Batch")."""
    feasible = np.flatnonzero(checks.feasible())
    if len(feasible) == 0:
        raise diagnose(table, checks)
    if batch_target is not None:
        feasible = feasible[nearest_batch(table.extra["batch_tokens"][feasible], batch_target)]
    return tie_order(table, feasible)


def _kept_rows(table: ScoredTable, feasible: np.ndarray, prune: bool) -> np.ndarray:
    """The feasible rows that get a variable: with ``prune``, the undominated ones.

    With one job, (5)-(7) bind one x_c at a time, so they are also applied as row filters
    before pruning (Pareto pruning is only sound on rows that satisfy every constraint); the
    model keeps them so that it is the one written here. Dominated rows (per GPU type, the
    (C, T) Pareto front of feasible rows is kept) get no variable: both weights are positive,
    so an optimum is never dominated."""
    if not prune:
        return feasible
    C, T = table.cost_usd, table.time_to_train_s
    # Each GPU type and count's fastest row prunes its rows before the sort (pareto_mask's cells).
    cells = table.num_gpus[feasible]
    return feasible[pareto_mask(table.gpu_codes()[feasible], C[feasible], T[feasible], cells=cells)]


@dataclass(frozen=True)
class _Choice:
    row: int  # the table row chosen
    solver: str  # the solver's name
    num_variables: int  # of the last model solved


def _chosen_row(
    table: ScoredTable,
    feasible: np.ndarray,
    kept: np.ndarray,
    objective: Objective,
    weights: tuple[float, float],
    refs: tuple[float, float],
    limits: _Limits,
    run: tuple[str, float | None],
) -> _Choice:
    """The row (1)-(7) of ``_single_job_problem`` choose over ``kept``; ``weights``: (w_C, w_T),
    ``refs``: (C_ref, T_ref), ``run``: (solver, time limit).

    Near ties (objectives cost and time, with P the primary and S the other of C, T): a second
    solve with objective S_c / S_ref (+ the tie-break weight on P) and

                    (8) sum_c P_c x_c <= (1 + eps) P*       (P* = the first solve's optimum)

    keeps a plan within eps = NEAR_TIE_FRACTION of the cheapest (fastest) and takes the fastest
    (cheapest) of those. Of the rows within eps of that choice in both C and T (and within (8)),
    the one least at the band's slow end is taken (``ties.settle_near_tie``)."""
    (w_cost, w_time), (C_ref, T_ref) = weights, refs
    C, T = table.cost_usd, table.time_to_train_s
    kept_score = w_cost * C[kept] / C_ref + w_time * T[kept] / T_ref
    settle_rows = feasible  # the rows a near tie may settle on: within (8)'s window, where it applies
    problem, x = _single_job_problem(table, kept, kept_score, limits)
    optimal, solver_name = run_solver(problem, *run)
    assert optimal, "every variable of the single-job model is a feasible row"
    if objective in (Objective.COST, Objective.TIME):
        P, S, P_ref, S_ref = (C, T, C_ref, T_ref) if objective is Objective.COST else (T, C, T_ref, C_ref)
        optimum = float(P[kept[chosen_index(x)]])
        settle_rows = feasible[P[feasible] <= optimum * (1 + NEAR_TIE_FRACTION)]  # review s38: not 2 eps
        x, solver_name = _near_tie_solve(table, kept, (P, S, P_ref, S_ref), optimum, limits, run)
    row = first_of_tie(table, kept, int(kept[chosen_index(x)]))
    settled = settle_near_tie(table, settle_rows, row, weights, refs, NEAR_TIE_FRACTION)
    row = first_of_tie(table, feasible, settled) if settled != row else row
    return _Choice(row=row, solver=solver_name, num_variables=len(x))


def _best_per_gpu(
    table: ScoredTable, feasible: np.ndarray, score: np.ndarray, chosen: int, objective: Objective
) -> tuple[int, ...]:
    """Each other GPU type's best row, by the rule that chose ``chosen``: under cost or time, of
    the rows of that type within NEAR_TIE_FRACTION of its own optimum, the best on the other axis
    (constraint (8), ``fastest_near_cheapest`` with the axes the objective's; trial s43: --per-gpu
    listed an H200 plan of 44.7 days where a search of the H200 alone chose 16.8 days for 0.4 % more)."""
    best = best_rows(feasible, score, chosen, len(feasible), table.gpu_codes())
    if objective not in (Objective.COST, Objective.TIME):
        return best
    C, T, codes = table.cost_usd, table.time_to_train_s, table.gpu_codes()
    P, S = (C, T) if objective is Objective.COST else (T, C)
    of_type = (feasible[codes[feasible] == codes[b]] for b in best)
    return tuple(first_of_tie(table, rows, fastest_near_cheapest(P, S, rows)) for rows in of_type)


@dataclass(frozen=True)
class _Limits:
    deadline_s: float | None
    budget_usd: float | None
    inventory: Mapping[str, int] | None


def _single_job_problem(
    table: ScoredTable, kept: np.ndarray, coefficients: np.ndarray, limits: _Limits
) -> tuple[pulp.LpProblem, list[pulp.LpVariable]]:
    r"""The single-job model over the rows ``kept``, minimising ``coefficients . x`` (:func:`solve_single`'s
    objective below, or ``_near_tie_solve``'s).

    Notation: candidates c in C, each with GPU type g(c), GPU count n_c, time-to-train T_c,
    cost C_c and the booleans fits_c (memory), div_c (divisibility), bat_c (batch). Limits:
    deadline D, budget B, inventory inv_g per GPU type (types absent from ``inventory`` have
    inv_g = 0; no ``inventory`` means inv_g = inf). Objective weights (w_C, w_T) from
    :func:`objective_weights`; C_ref, T_ref = the least C and T over feasible rows.

        variables   x_c in {0, 1}      for c in C' = {c : fits_c and div_c and bat_c}   (1-3)
        minimise    sum_c (w_C C_c / C_ref + w_T T_c / T_ref) x_c
        subject to  (4) sum_c x_c = 1
                    (5) sum_c T_c x_c <= D
                    (6) sum_c C_c x_c <= B
                    (7) sum_{c : g(c) = g} n_c x_c <= inv_g     for every GPU type g
    """
    T, C = table.limit_figures()  # the limits' figures, as check_rows judges them
    n = table.num_gpus
    deadline_s, budget_usd, inventory = limits.deadline_s, limits.budget_usd, limits.inventory
    problem = pulp.LpProblem("single_job", pulp.LpMinimize)
    x = new_binaries(problem, "x", len(kept))
    problem += pulp.LpAffineExpression(zip(x, coefficients.tolist(), strict=True))
    problem += pulp.lpSum(x) == 1  # (4)
    if deadline_s is not None:
        problem += pulp.LpAffineExpression(zip(x, T[kept].tolist(), strict=True)) <= deadline_s  # (5)
    if budget_usd is not None:
        problem += pulp.LpAffineExpression(zip(x, C[kept].tolist(), strict=True)) <= budget_usd  # (6)
    for gpu, limit in (inventory or {}).items():  # (7)
        of_type = np.flatnonzero(table.gpu_id[kept] == gpu)
        if len(of_type):
            problem += pulp.LpAffineExpression((x[i], float(n[kept[i]])) for i in of_type) <= limit
    return problem, x
