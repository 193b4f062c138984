"""A portfolio's rented types under a reserved price kind (:class:`ReservedPools`): each is a pool
of q_g GPUs reserved for every hour of the whole terms covering the span the portfolio plans over,
as a fleet reserves them (planner/search/reserved.py ``ReservedPrices``, the one term rule), not
rented by the job-hour at a rate only a term buys (session 44). Used by planner/search/portfolio.py;
the model is in docs/ilp.md "Many jobs"."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from planner.search.fleet import implied_rent_usd_per_gpu_hour
from planner.search.job_candidates import JobCandidates
from planner.search.portfolio_rows import PortfolioRows
from planner.search.reserved import ReservedPrices
from planner.search.solver import new_variable
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

__all__ = ["ReservedGpus", "ReservedPools", "ReservedType", "peak_in_use", "reserved_answer", "reserved_rates"]


@dataclass(frozen=True)
class ReservedType:
    """One rented type reserved: r(g) of docs/ilp.md."""

    gpu_id: str
    usd_per_gpu_hour: float  # the reserved rate
    usd_per_gpu: float  # F_r: one GPU reserved for every billed hour of the terms (``ReservedPrices.fixed_usd``)
    unit: int  # u_r: the GPUs the provider reserves together
    cap: int  # the jobs file's count for the type: the most GPUs reserved

    @property
    def most(self) -> int:
        """The most GPUs reservable: whole units within the cap."""
        return self.unit * (self.cap // self.unit)

    def gpus(self, peak: float) -> int:
        """q_g for ``peak`` GPUs in use at once: whole units."""
        return self.unit * math.ceil(peak / self.unit - 1e-9)


@dataclass(frozen=True)
class ReservedGpus:
    """The GPUs a portfolio reserves of one type, and what their terms bill."""

    gpu_id: str
    num_gpus: int  # q_g
    usd_per_gpu_hour: float
    kind: str  # the reserved price kind, e.g. reserved-1y
    term_years: int
    terms: int  # whole terms billed
    usd_per_gpu: float  # F_r: one reserved GPU's bill over the terms
    used_usd: float  # the jobs' GPU-hours on them at the rate: the share of the bill they use

    @property
    def cost_usd(self) -> float:
        """q_g F_r: every hour of the terms, busy or idle."""
        return self.num_gpus * self.usd_per_gpu

    @property
    def idle_usd(self) -> float:
        """The terms' hours no job uses (past the last job's end included)."""
        return self.cost_usd - self.used_usd


@dataclass(frozen=True, eq=False)
class ReservedPools:
    """The reserved types of a portfolio and the span their terms cover: the horizon where the jobs
    file gives one (every job ends by it), else ``slotted_span_s`` (twice the jobs' fastest rows run
    one after another: a serial schedule fits it). Jobs on a reserved type end within the terms."""

    prices: ReservedPrices
    types: Mapping[str, ReservedType]
    span_h: float

    @classmethod
    def of(
        cls, prices: ReservedPrices, rates: Mapping[str, float], caps: Mapping[str, int], span_s: float
    ) -> ReservedPools:
        """``rates``: each reserved type's rate (the given one, else its rent); ``caps``: its count."""
        span_h = span_s / SECONDS_PER_HOUR
        types = {
            g: ReservedType(g, usd, prices.fixed_usd(usd, span_h), max(prices.unit.get(g, 1), 1), caps[g])
            for g, usd in rates.items()
        }
        return cls(prices, types, span_h)

    @property
    def most(self) -> dict[str, int]:
        """Each type's most GPUs reservable (``ReservedType.most``): its inventory in the model."""
        return {g: r.most for g, r in self.types.items()}

    def bounds(
        self, inventory: Mapping[str, int], finish_by: Sequence[float | None]
    ) -> tuple[dict[str, int], list[float | None]]:
        """The inventory with each reserved type at its ``most`` (whole units: no schedule holds
        more than q_r may), and every job's latest end within the days the terms cover: the terms
        are the span the portfolio plans over."""
        covered = self.covered_days * SECONDS_PER_DAY
        return {**inventory, **self.most}, [covered if d is None else min(d, covered) for d in finish_by]

    @property
    def terms(self) -> int:
        return self.prices.terms(self.span_h)

    @property
    def covered_days(self) -> float:
        """The days the whole terms cover from the portfolio's start."""
        return self.terms * self.prices.term.term_h * SECONDS_PER_HOUR / SECONDS_PER_DAY

    def reference_cost(self, gpu: np.ndarray, gpu_hours: np.ndarray, cost: np.ndarray) -> np.ndarray:
        """Rows' costs for C_ref: on a reserved type its GPU-hours at F_r spread over the span, what
        they cost where no reserved GPU idles in it (as the held types' F_g n_c T_c is where none
        idles before M), else ``cost``."""
        per_hour = {g: r.usd_per_gpu / self.span_h if self.span_h > 0 else 0.0 for g, r in self.types.items()}
        reserved = np.array([per_hour.get(g, np.nan) for g in gpu], dtype=float)
        return np.where(np.isnan(reserved), cost, reserved * gpu_hours)

    def counts(self, problem: pulp.LpProblem) -> dict[str, pulp.LpVariable]:
        """m_g: the units of each type reserved, integer within the cap (q_g = u_r m_g)."""
        return {
            g: new_variable(problem, f"m_{i}", 0, r.most // r.unit, pulp.LpInteger)
            for i, (g, r) in enumerate(sorted(self.types.items()))
        }

    def sizes(self, m: Mapping[str, pulp.LpVariable]) -> dict[str, pulp.LpAffineExpression]:
        """q_g = u_r m_g."""
        return {g: self.types[g].unit * var for g, var in m.items()}

    def cost(self, m: Mapping[str, pulp.LpVariable]) -> pulp.LpAffineExpression:
        """sum_g F_r q_g."""
        return pulp.LpAffineExpression((var, self.types[g].unit * self.types[g].usd_per_gpu) for g, var in m.items())

    def solved_sizes(self, m: Mapping[str, pulp.LpVariable]) -> dict[str, int]:
        """q_g as solved."""
        return {g: self.types[g].unit * round(var.varValue or 0) for g, var in m.items()}

    def peak_cost(self, peak: Mapping[str, float]) -> float:
        """sum_g F_r q_g with each q_g the whole units ``peak`` needs."""
        return float(sum(r.usd_per_gpu * r.gpus(peak.get(g, 0.0)) for g, r in self.types.items()))

    def answer(self, peak: Mapping[str, float], used_usd: Mapping[str, float]) -> tuple[ReservedGpus, ...]:
        """Each type's reserved GPUs for its most in use at once (``peak``) and the jobs' share; a
        type no job runs on reserves none and is left out."""
        term = self.prices.term
        return tuple(
            ReservedGpus(
                g,
                r.gpus(peak.get(g, 0.0)),
                r.usd_per_gpu_hour,
                self.prices.kind,
                term.years,
                self.terms,
                r.usd_per_gpu,
                used_usd.get(g, 0.0),
            )
            for g, r in sorted(self.types.items())
            if r.gpus(peak.get(g, 0.0)) > 0
        )


def peak_in_use(gpus: Sequence[str], counts: Sequence[int], start: Sequence[float], end: Sequence[float]) -> dict:
    """Each type's most GPUs in use at once over a schedule (at some job's start every job running
    then holds its GPUs)."""
    out: dict[str, float] = {}
    s, e = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    for j, g in enumerate(gpus):
        mine = np.array([h == g for h in gpus])
        running = mine & (s <= s[j]) & (s[j] < e)
        running[j] = True  # a job of no length still holds its GPUs as it starts
        out[g] = max(out.get(g, 0.0), float(np.sum(np.asarray(counts)[running])))
    return out


def reserved_rates(
    jobs: Sequence[JobCandidates],
    inventory: Mapping[str, int],
    rented: frozenset[str],
    reserved: ReservedPrices | None,
) -> dict[str, float]:
    """Each rented type's reserved rate under ``reserved``: the given one, else the rent its rows
    imply (as the fleet prices a type with no rate, ``size_fleet``); none without a reserved kind."""
    if reserved is None:
        return {}
    rate = {}
    for g in sorted(rented & set(inventory)):
        usd = reserved.usd_per_gpu_hour.get(g, implied_rent_usd_per_gpu_hour(g, jobs))
        rate[g] = usd if math.isfinite(usd) else 0.0  # no job runs on it
    return rate


def reserved_answer(
    pools: ReservedPools | None, options: PortfolioRows, chosen: list[int], start: list[float], end: list[float]
) -> tuple[ReservedGpus, ...]:
    """The GPUs each reserved type's jobs hold at most at once in the schedule, and their share."""
    if pools is None:
        return ()
    gpus = [str(options.gpu[i]) for i in chosen]
    peak = peak_in_use(gpus, [int(options.n[i]) for i in chosen], start, end)
    used: dict[str, float] = {}
    for g, i in zip(gpus, chosen, strict=True):
        used[g] = used.get(g, 0.0) + float(options.job_cost[i])
    return pools.answer(peak, used)
