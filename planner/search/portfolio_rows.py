"""A portfolio's candidate rows (:class:`PortfolioRows`): every job's rows that can run on the
inventory, priced per GPU type (held, rented or reserved); split out of planner/search/portfolio.py,
which schedules them (docs/ilp.md "Many jobs")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pulp

from planner.errors import InfeasiblePlan
from planner.search.fleet import implied_rent_usd_per_gpu_hour
from planner.search.ilp import ScoredTable, pareto_mask
from planner.search.job_candidates import JobCandidates, job_rows
from planner.search.ownership import HourlyRate
from planner.search.slots import jobs_infeasible
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

__all__ = ["PortfolioRows", "candidate_rows", "dot", "hourly"]


@dataclass(frozen=True, eq=False)
class PortfolioRows:
    """Every job's candidate rows, flattened: one entry per (job j, row c)."""

    job: np.ndarray
    row: np.ndarray
    gpu: np.ndarray
    n: np.ndarray
    T: np.ndarray  # days
    v_cost: np.ndarray  # busy cost v_g n_c T_c, USD
    job_cost: np.ndarray  # (F_g + v_g) n_c T_c, USD


def hourly(
    jobs: Sequence[JobCandidates],
    inventory: Mapping[str, int],
    rates: Mapping[str, HourlyRate] | None,
    rented: frozenset[str],
) -> tuple[dict[str, float], dict[str, float]]:
    """F_g and v_g per inventory type, USD per GPU-hour: ``rates``, else its rent held, 0 busy; a
    ``rented`` type 0 and 0 (each of its rows costs its own rent, ``candidate_rows``)."""
    F, v = {}, {}
    for gpu in inventory:
        rate = HourlyRate(0.0) if gpu in rented else (rates or {}).get(gpu)
        if rate is None:
            rent = implied_rent_usd_per_gpu_hour(gpu, jobs)
            rate = HourlyRate(rent if math.isfinite(rent) else 0.0)
        F[gpu], v[gpu] = rate.held_usd_per_gpu_hour, rate.busy_usd_per_gpu_hour
    return F, v


def candidate_rows(
    jobs: Sequence[JobCandidates],
    inventory: Mapping[str, int],
    finish_by: list[float | None],
    F: Mapping[str, float],
    v: Mapping[str, float],
    prune: bool,
    rented: frozenset[str] = frozenset(),
    reserved_rate: Mapping[str, float] | None = None,
) -> PortfolioRows:
    """R_j for every job, priced; pruned to the rows no row of the same type beats on GPU-hours,
    time and GPU count (cost is GPU-hours times a per-type rate, so the optimum survives; on a
    reserved type the dominating row holds fewer GPUs for less time, so it needs no larger pool).
    ``reserved_rate``: the rented types reserved for whole terms (``ReservedPools``) and their rate:
    a row there costs its GPU-hours at it, its share of the term (the term's bill is the pool's)."""
    parts, failed = [], []
    share = reserved_rate or {}
    for j, job in enumerate(jobs):
        table = job.table
        # the budget bounds what the answer reports for the job (trial s51 H2: its rent, on owned GPUs)
        priced = job if job.budget_usd is None else replace(job, table=reported_costs(table, F, v, rented, share))
        try:
            rows = job_rows(priced, inventory, finish_by[j], job.budget_usd, None, PORTFOLIO_BUDGET_WORDS)
        except InfeasiblePlan as exc:  # every job that cannot run alone is named, not the first only
            failed.append((job.name, exc))
            continue
        gpu_hours = table.num_gpus[rows] * table.time_to_train_s[rows] / SECONDS_PER_HOUR
        if prune:
            keep = pareto_mask(table.gpu_id[rows], gpu_hours, table.time_to_train_s[rows], size=table.num_gpus[rows])
            rows, gpu_hours = rows[keep], gpu_hours[keep]
        # A rented row costs its own rent (its job's price, whole-node billing): review s26, one rent
        # averaged over every job's rows of the type billed none of them as its estimate does.
        rent = np.isin(table.gpu_id[rows], list(rented - set(share)))
        busy = np.where(rent, table.cost_usd[rows], np.array([v[g] for g in table.gpu_id[rows]]) * gpu_hours)
        held = np.array([share.get(g, F[g]) for g in table.gpu_id[rows]]) * gpu_hours
        parts.append(
            (
                np.full(len(rows), j),
                rows,
                table.gpu_id[rows],
                table.num_gpus[rows],
                table.time_to_train_s[rows] / SECONDS_PER_DAY,
                busy,
                busy + held,
            )
        )
    if failed:
        raise jobs_infeasible(failed)
    columns = [np.concatenate(column) for column in zip(*parts, strict=True)]
    return PortfolioRows(*columns)


# What a portfolio's budget answer says it bounds (docs/ilp.md "Budgets in a portfolio").
PORTFOLIO_BUDGET_WORDS = (
    "the cost the portfolio reports for it at the job's risk quantile, which a budget bounds: its rent on a"
    " rented type, its GPU-hours at the owned rate on an owned one, at the reserved rate on a reserved one"
)


def reported_costs(
    table: ScoredTable,
    F: Mapping[str, float],
    v: Mapping[str, float],
    rented: frozenset[str],
    share: Mapping[str, float],
) -> ScoredTable:
    """The job's table with each row's cost the one the portfolio reports for it (``candidate_rows``'
    ``job_cost``), which its budget bounds: its rent on a rented type, its GPU-hours at F_g + v_g on a
    held one, at the reserved rate on a reserved one; a type outside the inventory keeps its rent
    (no row of it runs)."""
    held = np.array([g in F and not (g in rented and g not in share) for g in table.gpu_id])
    rate = np.array([share.get(g, F.get(g, 0.0)) + (0.0 if g in share else v.get(g, 0.0)) for g in table.gpu_id])

    def priced(time_s: np.ndarray, rent: np.ndarray) -> np.ndarray:
        return np.where(held, rate * table.num_gpus * time_s / SECONDS_PER_HOUR, rent)

    extra = dict(table.extra)
    if "model_time_s" in extra and "model_cost_usd" in extra:  # the model's own figure, a budget's floor
        extra["model_cost_usd"] = priced(extra["model_time_s"], extra["model_cost_usd"])
    return replace(table, cost_usd=priced(table.time_to_train_s, table.cost_usd), extra=extra)


def dot(y: list[pulp.LpVariable], coefficients: np.ndarray, mask: np.ndarray) -> pulp.LpAffineExpression:
    return pulp.LpAffineExpression((y[i], float(coefficients[i])) for i in np.flatnonzero(mask))
