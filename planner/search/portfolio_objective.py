"""The portfolio's objective (planner/search/portfolio.py ``solve_portfolio``): its weights and
references, and the one rule by which the exact model, the slotted one, its bound, the lanes and the
read-back of an answer weigh a row, the held inventory and the reserved terms; the objective as both
models write it (``model_objective``) and what each reads back once solved (``ModelRead``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from planner.search.ilp import TIE_BREAK_WEIGHT
from planner.search.job_candidates import JobCandidates
from planner.search.portfolio_reserved import ReservedPools
from planner.search.portfolio_rows import PortfolioRows, dot
from planner.units import HOURS_PER_DAY


@dataclass(frozen=True, eq=False)
class PortfolioWeights:
    """The objective's scalars: w_C, w_T, C_ref, T_ref,j (days), and the held types' F_g and inv_g,
    whose 24 sum_g inv_g F_g is what a day of holding the inventory costs."""

    w_C: float
    w_T: float
    C_ref: float
    T_ref: np.ndarray
    F: Mapping[str, float]
    inventory: Mapping[str, int]
    reserved: ReservedPools | None = None

    @property
    def held_per_day(self) -> float:
        return HOURS_PER_DAY * sum(count * self.F.get(g, 0.0) for g, count in self.inventory.items())

    @property
    def usd(self) -> float:
        """w_C / C_ref: what the objective weighs a dollar at."""
        return self.w_C / self.C_ref

    @property
    def held(self) -> float:
        """The weight on M: a day of holding the inventory, as the objective weighs it."""
        return self.usd * self.held_per_day

    def row_terms(self, busy_usd, end_days, job):
        """The objective's per-row term, the one rule of every model and of the read-back: a row's
        busy cost (v_g n_c T_c) and its job's end E_j (days) at their weights. Arrays (one entry a
        row, ``job`` its job's index) or one job's linear expressions in the model's binaries."""
        return self.usd * busy_usd + self.w_T * end_days / self.T_ref[job]

    def objective(self, makespan_days, reserved_usd, rows):
        """The whole objective: the held inventory until M, the reserved terms' cost and the rows'
        terms (summed ``row_terms``); numbers, or the model's expressions."""
        return self.held * makespan_days + self.usd * reserved_usd + rows


@dataclass(frozen=True, eq=False)
class Portfolio:
    """One portfolio as its models read it: the jobs J, their rows R_j (``options``), the objective's
    ``weights``, inv_g (``inventory``) and each job's latest end, seconds (``finish_by``; None: none).
    One record where the exact model, the slotted one, the lanes and the read-back each took these five
    (duplicates D3-D5, D10)."""

    jobs: Sequence[JobCandidates]
    options: PortfolioRows
    weights: PortfolioWeights
    inventory: Mapping[str, int]
    finish_by: Sequence[float | None]


def portfolio_weights(
    options: PortfolioRows,
    num_jobs: int,
    w: tuple[float, float],
    F: Mapping[str, float],
    inventory: Mapping[str, int],
    pools: ReservedPools | None,
) -> PortfolioWeights:
    """The weights ``w`` = (w_C, w_T) with C_ref, the least cost of each job's rows summed (a reserved
    row's at F_r spread over the span), and T_ref,j, each job's fastest row: 1 where either is 0."""
    per_job = [options.job == j for j in range(num_jobs)]
    cost = options.job_cost
    if pools is not None:
        cost = pools.reference_cost(options.gpu, options.n * options.T * HOURS_PER_DAY, cost)
    C_ref = float(sum(np.min(cost[mine]) for mine in per_job))
    T_ref = np.array([np.min(options.T[mine]) for mine in per_job])
    return PortfolioWeights(
        w[0], w[1], C_ref if C_ref > 0 else 1.0, np.where(T_ref > 0, T_ref, 1.0), F, inventory, pools
    )


# What a solved model reads: the option picked per job, the jobs in order of start, and q_g of
# each reserved type
ModelRead = tuple[list[int], list[int], dict[str, int]]


def solved_pool(weights: PortfolioWeights, m: Mapping[str, pulp.LpVariable]) -> dict[str, int]:
    return {} if weights.reserved is None else weights.reserved.solved_sizes(m)


def model_objective(weights: PortfolioWeights, M: pulp.LpVariable, busy, ends, m) -> pulp.LpAffineExpression:
    """The objective (``PortfolioWeights.objective``) of each job's busy cost and end, as expressions,
    scaled by 1/epsilon: the solvers' absolute tolerances (~1e-6) would otherwise swallow the
    tie-break term. ``busy``: the binaries, each one's busy cost and job; ``m``: the reserved units,
    whose terms are a cost as the held GPUs' days are."""
    picked, busy_usd, job = busy
    reserved = 0 if weights.reserved is None else weights.reserved.cost(m)
    rows = pulp.lpSum(weights.row_terms(dot(picked, busy_usd, job == j), e, j) for j, e in enumerate(ends))
    return (1 / TIE_BREAK_WEIGHT) * weights.objective(M, reserved, rows)
