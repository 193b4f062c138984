"""Rent vs buy (:func:`size_fleet`): how many GPUs of each type to own for a set of jobs over a
horizon, a time-indexed ILP over the slots of planner/search/slots.py; the model and its
assumptions are in the docstrings below and in docs/ilp.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import pulp

from planner.catalog.prices import Commitment, term_billing
from planner.errors import Constraint, InfeasiblePlan
from planner.plan_accuracy import summed_band
from planner.search.ilp import (
    ScoredTable,
    chosen_index,
    pareto_mask,
)
from planner.search.ownership import (
    GpuBreakEven,
    GpuEconomics,
    TcoAssumptions,
    break_even,
)
from planner.search.slots import (
    JobCandidates,
    SlotOptions,
    concat_options,
    expand_starts,
    job_finish_s,
    job_rows,
    jobs_infeasible,
    list_schedule,
    slot_length_s,
    usage_constraints,
)
from planner.search.solver import new_binaries, new_variable, run_solver
from planner.search.ties import fastest_near_cheapest
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

__all__ = [
    "FleetAssignment",
    "FleetPlan",
    "FleetSolution",
    "implied_rent_usd_per_gpu_hour",
    "size_fleet",
]


@dataclass(frozen=True)
class FleetAssignment:
    job: str
    row: int
    gpu_id: str
    num_gpus: int
    owned: bool
    start_s: float
    end_s: float
    cost_usd: float  # rent for rented jobs, busy power for jobs on owned GPUs
    # The 80 % band of its duration (and so of its cost: rent and busy power go by the hour) as
    # factors of them (``band_factors``; None: no evidence), trial s33: fleet showed no band.
    band: tuple[float, float] | None = None

    def banded(self, value: float) -> tuple[float, float] | None:
        return None if self.band is None else (value * self.band[0], value * self.band[1])


def band_factors(table: ScoredTable, row: int) -> tuple[float, float] | None:
    """A row's 80 % band of time over its time at the search's risk quantile (score.py's columns)."""
    extra = table.extra
    if "band_lo" not in extra:
        return None
    factor, lo, hi = (float(extra[key][row]) for key in ("time_factor", "band_lo", "band_hi"))
    if not (math.isfinite(lo) and math.isfinite(hi) and factor > 0):
        return None
    return lo / factor, hi / factor


@dataclass(frozen=True)
class FleetPlan:
    total_cost_usd: float
    purchased: dict[str, int]  # GPU type -> GPUs bought
    ownership_cost_usd: float  # fixed cost of the purchased GPUs over the horizon
    # what buying them costs up front; the ownership cost is its straight-line share over the horizon
    # to the resale value (trial s27: "$783k" for 64 H100 read as the outlay, $3.07M)
    purchase_usd: float
    running_cost_usd: float  # busy power of owned GPUs
    rent_cost_usd: float
    assignments: tuple[FleetAssignment, ...]

    def total_band(self) -> tuple[float, float] | None:
        """The total with the jobs' costs (rent, or busy power) at their bands' ends, summed
        (``summed_band``), the ownership cost held. The idle draw, inside the ownership cost, would
        shrink a little as busy time grows: not counted. None where a job has no band."""
        jobs = self.assignments
        band = summed_band([a.banded(a.cost_usd) for a in jobs])
        if band is None:
            return None
        held = self.total_cost_usd - sum(a.cost_usd for a in jobs)
        return held + band[0], held + band[1]

    def owned_busy_fraction(self, horizon_days: float) -> float | None:
        """The owned GPUs' busy share of the horizon: their jobs' GPU-days over the GPUs bought x the
        horizon (None: none bought; trial s36: a fleet 81 % busy said only the rate at the file's 70 %)."""
        bought = sum(self.purchased.values())
        if not bought:
            return None
        busy = sum(a.num_gpus * (a.end_s - a.start_s) for a in self.assignments if a.owned) / SECONDS_PER_DAY
        return busy / (bought * horizon_days)


@dataclass(frozen=True)
class FleetSolution:
    mixed: FleetPlan
    rent_only: FleetPlan
    buy_only: FleetPlan | None  # None when some job has no GPU type that can be bought
    break_even: tuple[GpuBreakEven, ...]
    horizon_days: float
    solver: str
    # The owned jobs start at one of num_slots slot boundaries of the horizon: an approximation
    # that more slots refine (trial s36: 24 in place of 12 bought 3-9 % cheaper fleets for 12-25
    # jobs, at 1.2-2.4x the time)
    num_slots: int = 12


def size_fleet(
    jobs: Sequence[JobCandidates],
    economics: Mapping[str, GpuEconomics],
    horizon_days: float,
    tco: TcoAssumptions = TcoAssumptions(),
    *,
    num_slots: int = 12,
    max_purchase: Mapping[str, int] | None = None,
    solver: str = "auto",
    prune: bool = True,
    time_limit_s: float | None = None,
) -> FleetSolution:
    r"""How many GPUs of each type to buy, and which jobs to rent for, at least total cost.

    Over a horizon H cut into S slots, with owned options o = (job j, row c, start slot s)
    of GPU types that can be bought (as in :func:`solve_portfolio`), fixed cost F_g and busy
    cost v_g per GPU-hour from :func:`break_even`, and R_j = the rent of job j's rented row: of
    the rows that finish by min(D_j, H), the fastest within eps = NEAR_TIE_FRACTION of the cheapest,
    as plan's cost objective picks (rented GPUs have no capacity limit, so no other rented row of
    the job is worth more than that eps):

        variables   b_g = u_g k_g, k_g in Z, 0 <= b_g <= max_purchase_g;   y_o, z_j in {0, 1}
        minimise    sum_g F_g b_g + sum_o v_g(o) n_o T_o / 3600 y_o + sum_j R_j z_j
        subject to  (1) sum_{o of job j} y_o + z_j = 1                            for every j
                    (2) sum_{o : g(o) = g, s_o <= t < s_o + L_o} n_o y_o <= b_g    for every g, t

    u_g: the GPUs bought together (``GpuEconomics.purchase_unit``: a server, whose share each
    GPU's price holds). Solved three times: mixed (as written), buy only (z = 0) and rent only (b = 0).
    Budgets are ignored: they bound rent, which is what this trades off.
    """
    if not jobs:
        raise ValueError("jobs: expected at least one job")
    horizon_s = horizon_days * SECONDS_PER_DAY
    slot_s = slot_length_s(horizon_s, num_slots)
    limits = dict(max_purchase or {})
    rates = [
        break_even(gpu, econ, tco, horizon_s / SECONDS_PER_HOUR, _rent_rate(gpu, econ, jobs))
        for gpu, econ in sorted(economics.items())
    ]
    busy_rate = {b.gpu_id: b.owned_usd_per_busy_hour for b in rates}
    rent_rows, parts, failed = [], [], []
    for j, job in enumerate(jobs):
        finish_by, table = job_finish_s(job, horizon_s), job.table
        try:
            rows = _job_rows(job, finish_by, economics, horizon_s)
        except InfeasiblePlan as exc:  # every job that cannot run is named (slots.py jobs_infeasible)
            failed.append((job.name, exc))
            continue
        rent_rows.append(rent_row(table, rows))
        buyable = rows[np.isin(table.gpu_id[rows], list(economics))]
        cap = np.array([limits.get(g, np.inf) for g in table.gpu_id[buyable]], dtype=float)
        buyable = buyable[table.num_gpus[buyable] <= cap]
        if prune:
            gpu_hours = table.num_gpus * table.time_to_train_s
            buyable = buyable[
                pareto_mask(
                    table.gpu_id[buyable],
                    gpu_hours[buyable],
                    table.time_to_train_s[buyable],
                    size=table.num_gpus[buyable],
                )
            ]
        parts.append(expand_starts(j, job, buyable, num_slots, slot_s, finish_by))
    if failed:
        raise jobs_infeasible(failed)
    options = concat_options(parts)
    hours = options.num_gpus * (options.end_s - options.start_s) / SECONDS_PER_HOUR
    owned_cost = np.array([busy_rate[g] for g in options.gpu]) * hours
    model = _FleetModel(
        jobs,
        options,
        owned_cost,
        rent_rows,
        {b.gpu_id: b.owned_fixed_usd for b in rates},
        limits,
        num_slots,
        {gpu: econ.purchase_usd for gpu, econ in economics.items()},
        {gpu: econ.purchase_unit for gpu, econ in economics.items()},
    )
    mixed, solver_name = model.solve(allow_rent=True, solver=solver, time_limit_s=time_limit_s)
    assert mixed is not None, "renting every job is always feasible"
    buy_only, _ = model.solve(allow_rent=False, solver=solver, time_limit_s=time_limit_s)
    return FleetSolution(
        mixed=mixed,
        rent_only=model.plan({}, [None] * len(jobs)),
        buy_only=buy_only,
        break_even=tuple(rates),
        horizon_days=horizon_days,
        solver=solver_name,
        num_slots=num_slots,
    )


def rent_row(table: ScoredTable, rows: np.ndarray) -> int:
    """The row a rented job runs on, as plan's cost objective picks it: of the rows within
    NEAR_TIE_FRACTION of the cheapest, the fastest (trial s27d: the cheapest alone rented a plan
    twice as slow to save 0.7 %, which plan would not choose)."""
    return fastest_near_cheapest(table.cost_usd, table.time_to_train_s, rows)


def _job_rows(
    job: JobCandidates, finish_by: float | None, economics: Mapping[str, GpuEconomics], horizon_s: float
) -> np.ndarray:
    """``job_rows`` without an inventory: the rows the job may be rented or owned on. When none is
    feasible, the answer also says what the search covered: fleet has no inventory and no
    ``--max-gpus``, so the GPU types and the counts its tables were scored up to (the GPU-count cap,
    planner/request.py ``count_limits``) are what a deadline or memory answer is bound by; a
    deadline answer past the horizon names the horizon too (a longer deadline alone would not do)."""
    try:
        return job_rows(job, None, finish_by, None, prune_cost=None)
    except InfeasiblePlan as exc:
        table = job.table
        types = sorted(set(table.gpu_id.tolist()))
        counts = ", ".join(f"{g}<={int(table.num_gpus[table.gpu_id == g].max())}" for g in types)
        scope = "the GPU types to buy" if set(types) <= set(economics) else "the jobs' GPU types"
        past_horizon = exc.constraint is Constraint.DEADLINE and (exc.required or 0.0) > horizon_s
        horizon = f" and a horizon_days of at least {math.ceil((exc.required or 0.0) / SECONDS_PER_DAY)}"
        # the answer's typed figures kept (review s35: a fresh InfeasiblePlan dropped them)
        raise exc.but(
            detail=f"{exc.detail}; searched only {scope}, up to the GPU-count cap ({counts})",
            fix=f"{exc.fix}{horizon if past_horizon else ''}, or buy another GPU type",
        ) from None


def _rent_rate(gpu: str, economics: GpuEconomics, jobs: Sequence[JobCandidates]) -> float:
    if economics.rent_usd_per_gpu_hour is not None:
        return economics.rent_usd_per_gpu_hour
    return implied_rent_usd_per_gpu_hour(gpu, jobs)


def implied_rent_usd_per_gpu_hour(gpu: str, jobs: Sequence[JobCandidates]) -> float:
    """The rent per GPU-hour of type ``gpu`` the jobs' tables imply: sum of cost over sum of
    GPU-hours of their valid rows of that type (NaN when there are none)."""
    cost = gpu_hours = 0.0
    for job in jobs:
        table = job.table
        rows = table.valid() & (table.gpu_id == gpu)
        cost += float(table.cost_usd[rows].sum())
        gpu_hours += float((table.num_gpus[rows] * table.time_to_train_s[rows]).sum()) / SECONDS_PER_HOUR
    return cost / gpu_hours if gpu_hours > 0 else math.nan


@dataclass(frozen=True, eq=False)
class _FleetModel:
    jobs: Sequence[JobCandidates]
    options: SlotOptions
    owned_cost: np.ndarray
    rent_rows: list[int]
    fixed_usd: dict[str, float]
    max_purchase: dict[str, int]
    num_slots: int
    price_usd: dict[str, float]  # each type's purchase price
    unit: dict[str, int]  # each type's GPUs bought together (GpuEconomics.purchase_unit)

    def solve(self, allow_rent: bool, solver: str, time_limit_s: float | None) -> tuple[FleetPlan | None, str]:
        options, num_jobs = self.options, len(self.jobs)
        if not allow_rent and len(set(options.job.tolist())) < num_jobs:
            return None, solver
        problem = pulp.LpProblem("fleet", pulp.LpMinimize)
        y = new_binaries(problem, "y", len(options.job))
        z = new_binaries(problem, "z", num_jobs) if allow_rent else []
        units = {g: self.unit.get(g, 1) for g in sorted(set(options.gpu.tolist()))}
        servers = {g: None if (cap := self.max_purchase.get(g)) is None else cap // u for g, u in units.items()}
        k = {g: new_variable(problem, f"k_{i}", 0, servers[g], pulp.LpInteger) for i, g in enumerate(units)}
        buy = {g: units[g] * k[g] for g in units}  # b_g = u_g k_g: whole servers
        rent = [float(job.table.cost_usd[r]) for job, r in zip(self.jobs, self.rent_rows, strict=True)]
        problem += (
            pulp.LpAffineExpression(zip(y, self.owned_cost.tolist(), strict=True))
            + pulp.LpAffineExpression((k[g], units[g] * self.fixed_usd[g]) for g in units)
            + pulp.LpAffineExpression(zip(z, rent, strict=False))  # z is empty when renting is not allowed
        )
        for j in range(num_jobs):  # (1)
            problem += pulp.lpSum(y[i] for i in np.flatnonzero(options.job == j)) + (z[j] if allow_rent else 0) == 1
        usage_constraints(problem, options, y, self.num_slots, num_jobs, lambda g: buy[g])  # (2)
        optimal, solver_name = run_solver(problem, solver, time_limit_s)
        if not optimal:
            return None, solver_name
        owned: list[int | None] = [None] * num_jobs
        for j in range(num_jobs):
            mine = np.flatnonzero(options.job == j)
            if len(mine) and (y[mine[chosen_index([y[i] for i in mine])]].varValue or 0) > 0.5:
                owned[j] = int(mine[chosen_index([y[i] for i in mine])])
        return self.plan({g: units[g] * round(k[g].varValue or 0) for g in units}, owned), solver_name

    def plan(self, purchased: dict[str, int], owned: list[int | None]) -> FleetPlan:
        """Price a decision: GPUs bought and, per job, its owned option index (None: rented)."""
        assignments = []
        for j, (job, option) in enumerate(zip(self.jobs, owned, strict=True)):
            if option is None:
                row, table = self.rent_rows[j], job.table
                assignments.append(
                    FleetAssignment(
                        job.name,
                        row,
                        str(table.gpu_id[row]),
                        int(table.num_gpus[row]),
                        False,
                        0.0,
                        float(table.time_to_train_s[row]),
                        float(table.cost_usd[row]),
                        band_factors(table, row),
                    )
                )
            else:
                o = self.options
                assignments.append(
                    FleetAssignment(
                        job.name,
                        int(o.row[option]),
                        str(o.gpu[option]),
                        int(o.num_gpus[option]),
                        True,
                        float(o.start_s[option]),
                        float(o.end_s[option]),
                        float(self.owned_cost[option]),
                        band_factors(job.table, int(o.row[option])),
                    )
                )
        assignments = compacted(assignments, purchased)
        ownership = sum(self.fixed_usd[g] * count for g, count in purchased.items())
        running = sum(a.cost_usd for a in assignments if a.owned)
        rent = sum(a.cost_usd for a in assignments if not a.owned)
        return FleetPlan(
            total_cost_usd=ownership + running + rent,
            purchased={g: c for g, c in purchased.items() if c > 0},
            ownership_cost_usd=ownership,
            purchase_usd=sum(self.price_usd[g] * count for g, count in purchased.items()),
            running_cost_usd=running,
            rent_cost_usd=rent,
            assignments=tuple(assignments),
        )


def compacted(assignments: list[FleetAssignment], purchased: Mapping[str, int]) -> list[FleetAssignment]:
    """The owned jobs list-scheduled on the GPUs bought, in the order the slots started them
    (slots.py ``list_schedule``: no job starts later, trial s25: a job waited for its slot with the
    GPUs free); rented jobs start at once. Costs do not move: owned GPUs are paid for the horizon,
    busy hours and rent by the hour."""
    owned = [i for i, a in enumerate(assignments) if a.owned]
    order = sorted(range(len(owned)), key=lambda k: assignments[owned[k]].start_s)
    durations = [assignments[i].end_s - assignments[i].start_s for i in owned]
    starts = list_schedule(
        order, [assignments[i].gpu_id for i in owned], [assignments[i].num_gpus for i in owned], durations, purchased
    )
    out = list(assignments)
    for k, i in enumerate(owned):
        out[i] = replace(assignments[i], start_s=starts[k], end_s=starts[k] + durations[k])
    return out


class HeldJob(Protocol):
    """A job that holds GPUs of one type over a span at a cost (a fleet's or a portfolio's)."""

    @property
    def gpu_id(self) -> str: ...
    @property
    def num_gpus(self) -> int: ...
    @property
    def start_s(self) -> float: ...
    @property
    def end_s(self) -> float: ...
    @property
    def cost_usd(self) -> float: ...


def reserved_commitments(plan: FleetPlan, kind: str | None) -> tuple[Commitment, ...]:
    """A reserved price kind's term for each type ``plan`` rents (``held_commitments``) (trial s36:
    "rent only $1.47M" at reserved-3y, where reserving its 256 A100 for the term costs $11.0M)."""
    return held_commitments([a for a in plan.assignments if not a.owned], kind)


def held_commitments(rented: Sequence[HeldJob], kind: str | None) -> tuple[Commitment, ...]:
    """A reserved price kind's terms for each type the ``rented`` jobs hold (``Commitment``; none for
    other kinds): the most GPUs they hold at once, each billed every hour of the whole terms their
    span takes (``TermBilling.terms``) at the rate their rent implies. Their rent counts their
    hours only: they share the terms (a fleet's and a portfolio's jobs,
    ``request_settings(whole_terms=False)``)."""
    term = term_billing(kind)
    if term is None:
        return ()
    out = []
    for gpu in sorted({a.gpu_id for a in rented}):
        jobs = [a for a in rented if a.gpu_id == gpu]
        gpu_hours = sum(a.num_gpus * (a.end_s - a.start_s) for a in jobs) / SECONDS_PER_HOUR
        rate = sum(a.cost_usd for a in jobs) / gpu_hours if gpu_hours > 0 else 0.0
        # the most held at once: at some job's start every job running then holds its GPUs
        peak = max(sum(b.num_gpus for b in jobs if b.start_s <= a.start_s < b.end_s) for a in jobs)
        span_s = max(a.end_s for a in jobs) - min(a.start_s for a in jobs)
        terms = term.terms(span_s / SECONDS_PER_HOUR)  # review s43: a span past the term holds more than one
        assert kind is not None
        cost = peak * rate * terms * term.term_h
        out.append(Commitment(kind, gpu, peak, term.years, span_s / SECONDS_PER_DAY, cost, terms=terms))
    return tuple(out)
