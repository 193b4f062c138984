"""Several jobs on one GPU inventory (:func:`solve_portfolio`): a time-indexed ILP over a horizon
cut into equal slots (planner/search/slots.py, which also filters and prunes each job's rows);
the model and its assumptions are in the docstring below and in docs/ilp.md. Rent vs buy:
planner/search/fleet.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from planner.errors import Constraint, InfeasiblePlan
from planner.search.ilp import (
    Objective,
    check_rows,
    chosen_index,
    new_binaries,
    objective_weights,
    positive_reference,
    run_solver,
)
from planner.search.slots import (
    JobCandidates,
    SlotOptions,
    concat_options,
    expand_starts,
    job_finish_s,
    job_rows,
    slot_length_s,
    usage_constraints,
)
from planner.units import SECONDS_PER_DAY

__all__ = ["JobAssignment", "PortfolioSolution", "solve_portfolio"]


@dataclass(frozen=True)
class JobAssignment:
    job: str
    row: int  # row in the job's own table
    gpu_id: str
    num_gpus: int
    label: str
    start_s: float
    end_s: float
    cost_usd: float


@dataclass(frozen=True)
class PortfolioSolution:
    assignments: tuple[JobAssignment, ...]
    objective_value: float
    total_cost_usd: float
    makespan_s: float
    solver: str
    num_variables: int
    slot_s: float | None  # None: one slot, all jobs concurrent from time 0


def solve_portfolio(
    jobs: Sequence[JobCandidates],
    inventory: Mapping[str, int],
    objective: Objective | str = Objective.COST,
    *,
    cost_weight: float = 0.5,
    horizon_s: float | None = None,
    num_slots: int = 1,
    solver: str = "auto",
    prune: bool = True,
    time_limit_s: float | None = None,
) -> PortfolioSolution:
    r"""Choose one candidate and a start time for every job, sharing ``inventory``.

    The horizon H is cut into S slots of length dt = H/S (S = 1 and no H: all jobs run
    concurrently from time 0). Options o = (job j, row c, start slot s) exist where the job
    ends in time: e_o = s dt + T_c <= min(D_j, H); it then occupies slots s .. s+L_c-1 with
    L_c = ceil(T_c / dt) (durations rounded up to whole slots: conservative).

        variables   y_o in {0, 1}
        minimise    sum_o (w_C C_c / C_ref,j + w_T e_o / T_ref,j) y_o
        subject to  (1) sum_{o of job j} y_o = 1                                 for every job j
                    (2) sum_{o : g(o) = g, s_o <= t < s_o + L_o} n_o y_o <= inv_g   for every g, t
                    (3) C_c <= B_j, and the memory/divisibility/batch filters, as row filters

    C_ref,j and T_ref,j are job j's least feasible cost and time, so every job weighs the
    same; with the time objective this minimises the sum of normalised completion times.
    Raises :class:`InfeasiblePlan` naming the job when one job cannot run even alone.
    """
    if not jobs:
        raise ValueError("jobs: expected at least one job")
    if len({job.name for job in jobs}) != len(jobs):
        raise ValueError("jobs: job names must be unique")
    w_cost, w_time = objective_weights(objective, cost_weight)
    slot_s = slot_length_s(horizon_s, num_slots)
    parts, score_parts = [], []
    for j, job in enumerate(jobs):
        finish_by = job_finish_s(job, horizon_s)
        table = job.table
        rows = job_rows(job, inventory, finish_by, job.budget_usd, table.cost_usd if prune else None)
        C_ref = positive_reference(table.cost_usd[rows])
        T_ref = positive_reference(table.time_to_train_s[rows])  # pruning keeps both minima
        options = expand_starts(j, job, rows, num_slots, slot_s, finish_by)
        parts.append(options)
        score_parts.append(w_cost * options.cost_usd / C_ref + w_time * options.end_s / T_ref)
    options, score = concat_options(parts), np.concatenate(score_parts)

    problem = pulp.LpProblem("portfolio", pulp.LpMinimize)
    y = new_binaries(problem, "y", len(score))
    problem += pulp.LpAffineExpression(zip(y, score.tolist(), strict=True))
    for j in range(len(jobs)):  # (1)
        problem += pulp.lpSum(y[i] for i in np.flatnonzero(options.job == j)) == 1
    usage_constraints(problem, options, y, num_slots, len(jobs), lambda g: inventory[g])  # (2)
    optimal, solver_name = run_solver(problem, solver, time_limit_s)
    if not optimal:
        raise _shared_inventory_infeasible(jobs, inventory, horizon_s)
    picked = _picked_options(options, y, len(jobs))
    assignments = tuple(
        JobAssignment(
            job=jobs[j].name,
            row=int(options.row[i]),
            gpu_id=str(options.gpu[i]),
            num_gpus=int(options.num_gpus[i]),
            label=str(jobs[j].table.label[options.row[i]]),
            start_s=float(options.start_s[i]),
            end_s=float(options.end_s[i]),
            cost_usd=float(options.cost_usd[i]),
        )
        for j, i in enumerate(picked)
    )
    return PortfolioSolution(
        assignments=assignments,
        objective_value=float(score[picked].sum()),
        total_cost_usd=float(sum(a.cost_usd for a in assignments)),
        makespan_s=max(a.end_s for a in assignments),
        solver=solver_name,
        num_variables=len(y),
        slot_s=slot_s,
    )


def _picked_options(options: SlotOptions, y: list[pulp.LpVariable], num_jobs: int) -> list[int]:
    """Index of the option set to 1 for each job."""
    picked = []
    for j in range(num_jobs):
        mine = np.flatnonzero(options.job == j)
        picked.append(int(mine[chosen_index([y[i] for i in mine])]))
    return picked


def _shared_inventory_infeasible(
    jobs: Sequence[JobCandidates], inventory: Mapping[str, int], horizon_s: float | None
) -> InfeasiblePlan:
    # Each job fits alone, so the GPUs are too few for all of them together. A lower bound
    # on the GPU-time they need tells the user how far off the inventory is.
    need = 0.0
    for job in jobs:
        rows = np.flatnonzero(check_rows(job.table, inventory=inventory).feasible())
        need += float(np.min(job.table.num_gpus[rows] * job.table.time_to_train_s[rows]))
    limits = ", ".join(f"{gpu}<={count}" for gpu, count in inventory.items())
    window = (
        horizon_s
        if horizon_s is not None
        else max((job.deadline_s for job in jobs if job.deadline_s is not None), default=None)
    )
    detail = f"the {len(jobs)} jobs cannot share the inventory ({limits})"
    if window is not None:
        offered = sum(inventory.values()) * window
        detail += (
            f" in time: they need at least {need / SECONDS_PER_DAY:,.0f} GPU-days, the inventory "
            f"offers {offered / SECONDS_PER_DAY:,.0f} GPU-days by {window / SECONDS_PER_DAY:.1f} days"
        )
    return InfeasiblePlan(
        Constraint.INVENTORY,
        detail,
        "add GPUs, lengthen the horizon or the deadlines, or drop a job",
        required=need,
        available=None,
    )
