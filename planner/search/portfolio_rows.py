"""A portfolio's candidate rows (:class:`PortfolioRows`): every job's rows that can run on the
inventory, priced per GPU type (held, rented or reserved); split out of planner/search/portfolio.py,
which schedules them (docs/ilp.md "Many jobs")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from planner.errors import InfeasiblePlan
from planner.search.fleet import implied_rent_usd_per_gpu_hour
from planner.search.ilp import pareto_mask
from planner.search.ownership import HourlyRate
from planner.search.slots import JobCandidates, job_rows, jobs_infeasible
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
    for j, job in enumerate(jobs):
        table = job.table
        try:
            rows = job_rows(job, inventory, finish_by[j], job.budget_usd, None)
        except InfeasiblePlan as exc:  # every job that cannot run alone is named, not the first only
            failed.append((job.name, exc))
            continue
        gpu_hours = table.num_gpus[rows] * table.time_to_train_s[rows] / SECONDS_PER_HOUR
        if prune:
            keep = pareto_mask(table.gpu_id[rows], gpu_hours, table.time_to_train_s[rows], size=table.num_gpus[rows])
            rows, gpu_hours = rows[keep], gpu_hours[keep]
        # A rented row costs its own rent (its job's price, whole-node billing): review s26, one rent
        # averaged over every job's rows of the type billed none of them as its estimate does.
        share = reserved_rate or {}
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


def dot(y: list[pulp.LpVariable], coefficients: np.ndarray, mask: np.ndarray) -> pulp.LpAffineExpression:
    return pulp.LpAffineExpression((y[i], float(coefficients[i])) for i in np.flatnonzero(mask))
