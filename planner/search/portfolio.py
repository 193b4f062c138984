"""Several jobs on one GPU inventory (:func:`solve_portfolio`) and rent vs buy (:func:`size_fleet`).

Both are time-indexed ILPs over a horizon cut into equal slots; the models and their
assumptions are written out in the docstrings below and in docs/ilp.md. Each job's scored
:class:`~planner.search.ilp.CandidateTable` is filtered and pruned first (a row is dropped when
another row of the same GPU type is no dearer, no slower and uses no more GPUs), so the
ILPs only see the few rows that can matter.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from planner.errors import Constraint, InfeasiblePlan
from planner.search.diagnosis import diagnose
from planner.search.ilp import (
    CandidateTable,
    Objective,
    check_rows,
    chosen_index,
    nearest_batch,
    new_binaries,
    new_variable,
    objective_weights,
    pareto_mask,
    positive_reference,
    run_solver,
)
from planner.units import HOURS_PER_YEAR, MONTHS_PER_YEAR, SECONDS_PER_DAY, SECONDS_PER_HOUR

__all__ = [
    "FleetAssignment",
    "FleetPlan",
    "FleetSolution",
    "GpuBreakEven",
    "GpuEconomics",
    "JobAssignment",
    "JobCandidates",
    "PortfolioSolution",
    "TcoAssumptions",
    "ownership_usd",
    "size_fleet",
    "solve_portfolio",
]


@dataclass(frozen=True)
class JobCandidates:
    """One job's scored candidates and its own limits (times from the start of the horizon)."""

    name: str
    table: CandidateTable
    deadline_s: float | None = None
    budget_usd: float | None = None  # on the job's rent cost; size_fleet ignores it
    # The requested global batch (tokens; needs table.extra["batch_tokens"]): of the rows feasible
    # on their own, only those of the achievable batch nearest it are offered, as in solve_single.
    batch_target: int | None = None


@dataclass(frozen=True, eq=False)
class _Options:
    """Every (job, row, start slot) a model may pick, one entry per array index."""

    job: np.ndarray
    row: np.ndarray
    gpu: np.ndarray
    num_gpus: np.ndarray
    cost_usd: np.ndarray
    start_slot: np.ndarray
    busy_slots: np.ndarray  # slots occupied from start_slot on (duration rounded up)
    start_s: np.ndarray
    end_s: np.ndarray


def _slot_s(horizon_s: float | None, num_slots: int) -> float | None:
    if num_slots < 1:
        raise ValueError(f"num_slots: expected >= 1, got {num_slots}")
    if horizon_s is not None and not (math.isfinite(horizon_s) and horizon_s > 0):
        raise ValueError(f"horizon: expected a positive duration, got {horizon_s!r}")
    if num_slots > 1 and horizon_s is None:
        raise ValueError("num_slots > 1 needs a horizon to cut into slots")
    return None if horizon_s is None else horizon_s / num_slots


def _finish_by(job: JobCandidates, horizon_s: float | None) -> float | None:
    limits = [t for t in (job.deadline_s, horizon_s) if t is not None]
    return min(limits) if limits else None


def _job_rows(
    job: JobCandidates,
    inventory: Mapping[str, int] | None,
    finish_by: float | None,
    budget_usd: float | None,
    prune_cost: np.ndarray | None,
) -> np.ndarray:
    """Rows of one job that are feasible on their own, at the batch nearest its target, minus
    dominated ones (if pruning)."""
    checks = check_rows(job.table, deadline_s=finish_by, budget_usd=budget_usd, inventory=inventory)
    rows = np.flatnonzero(checks.feasible())
    if len(rows) == 0:
        reason = diagnose(job.table, checks)
        detail = f"job {job.name!r}: {reason.detail}"
        if reason.constraint is Constraint.DEADLINE and finish_by != job.deadline_s:
            detail += " (the horizon ends before the deadline)"
        raise InfeasiblePlan(
            reason.constraint, detail, reason.fix, required=reason.required, available=reason.available
        )
    if job.batch_target is not None:
        rows = rows[nearest_batch(job.table.extra["batch_tokens"][rows], job.batch_target)]
    if prune_cost is None:
        return rows
    table = job.table
    return rows[
        pareto_mask(table.gpu_id[rows], prune_cost[rows], table.time_to_train_s[rows], size=table.num_gpus[rows])
    ]


def _expand_starts(
    job_index: int, job: JobCandidates, rows: np.ndarray, num_slots: int, slot_s: float | None, finish_by: float | None
) -> _Options:
    """Each row at each start slot from which it still finishes by ``finish_by``."""
    table = job.table
    T = table.time_to_train_s[rows]
    starts = np.arange(num_slots)
    start_s = starts * (slot_s or 0.0)
    end_s = start_s[None, :] + T[:, None]
    ok = end_s <= (finish_by if finish_by is not None else np.inf) * (1 + 1e-12)
    row_at, slot_at = np.nonzero(ok)
    if slot_s is None:  # one slot and no horizon: every job starts at 0 and holds slot 0
        busy = np.ones(len(row_at), dtype=np.int64)
    else:
        busy = np.maximum(np.ceil(T[row_at] / slot_s - 1e-9), 1).astype(np.int64)
    chosen = rows[row_at]
    return _Options(
        job=np.full(len(chosen), job_index),
        row=chosen,
        gpu=table.gpu_id[chosen],
        num_gpus=table.num_gpus[chosen],
        cost_usd=table.cost_usd[chosen],
        start_slot=starts[slot_at],
        busy_slots=busy,
        start_s=start_s[slot_at],
        end_s=end_s[row_at, slot_at],
    )


def _concat(parts: Sequence[_Options]) -> _Options:
    names = _Options.__dataclass_fields__
    return _Options(**{name: np.concatenate([getattr(p, name) for p in parts]) for name in names})


def _usage_constraints(
    problem: pulp.LpProblem, options: _Options, y: list[pulp.LpVariable], num_slots: int, num_jobs: int, limit_of
) -> None:
    """For each GPU type g and slot t: sum of n_o y_o over options running in t <= limit_of(g)."""
    for gpu in sorted(set(options.gpu.tolist())):
        of_type = options.gpu == gpu
        limit = limit_of(gpu)
        for slot in range(num_slots):
            running = np.flatnonzero(
                of_type & (options.start_slot <= slot) & (slot < options.start_slot + options.busy_slots)
            )
            if len(running) == 0:
                continue
            if isinstance(limit, (int, float)):  # skip slots where even each job's largest fits
                peak = np.zeros(num_jobs)
                np.maximum.at(peak, options.job[running], options.num_gpus[running])
                if peak.sum() <= limit:
                    continue
            used = pulp.LpAffineExpression((y[i], float(options.num_gpus[i])) for i in running)
            problem += used <= limit


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
    slot_s = _slot_s(horizon_s, num_slots)
    parts, score_parts = [], []
    for j, job in enumerate(jobs):
        finish_by = _finish_by(job, horizon_s)
        table = job.table
        rows = _job_rows(job, inventory, finish_by, job.budget_usd, table.cost_usd if prune else None)
        C_ref = positive_reference(table.cost_usd[rows])
        T_ref = positive_reference(table.time_to_train_s[rows])  # pruning keeps both minima
        options = _expand_starts(j, job, rows, num_slots, slot_s, finish_by)
        parts.append(options)
        score_parts.append(w_cost * options.cost_usd / C_ref + w_time * options.end_s / T_ref)
    options, score = _concat(parts), np.concatenate(score_parts)

    problem = pulp.LpProblem("portfolio", pulp.LpMinimize)
    y = new_binaries(problem, "y", len(score))
    problem += pulp.LpAffineExpression(zip(y, score.tolist(), strict=True))
    for j in range(len(jobs)):  # (1)
        problem += pulp.lpSum(y[i] for i in np.flatnonzero(options.job == j)) == 1
    _usage_constraints(problem, options, y, num_slots, len(jobs), lambda g: inventory[g])  # (2)
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


def _picked_options(options: _Options, y: list[pulp.LpVariable], num_jobs: int) -> list[int]:
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


# --- fleet sizing: rent vs buy --------------------------------------------------------------


@dataclass(frozen=True)
class TcoAssumptions:
    """What owning a GPU costs besides its price; defaults are round mid-range figures."""

    lifetime_years: float = 4.0  # straight-line amortisation period
    residual_fraction: float = 0.2  # resale value at end of life, fraction of the price
    pue: float = 1.3  # facility power / IT power (modern colocation)
    electricity_usd_per_kwh: float = 0.10  # industrial rate
    hosting_usd_per_gpu_month: float = 150.0  # rack space, network, ops staff share
    idle_power_fraction: float = 0.2  # draw of an idle GPU, fraction of its TDP

    def __post_init__(self) -> None:
        for name in ("lifetime_years", "pue"):
            if not getattr(self, name) > 0:
                raise ValueError(f"TcoAssumptions.{name}: expected > 0, got {getattr(self, name)}")
        for name in ("residual_fraction", "idle_power_fraction"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"TcoAssumptions.{name}: expected within [0, 1]")
        for name in ("electricity_usd_per_kwh", "hosting_usd_per_gpu_month"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"TcoAssumptions.{name}: expected >= 0")


def ownership_usd(purchase_usd: float, tco: TcoAssumptions, hours: float) -> float:
    """The one TCO formula: the fixed cost of owning one GPU for ``hours`` wall-clock hours,

        purchase * (1 - residual) * hours / (lifetime_years * HOURS_PER_YEAR)
        + hosting_per_month * hours / (HOURS_PER_YEAR / 12)

    (straight-line depreciation to the resale value, plus hosting; power is extra). Used by
    :func:`break_even` (fleet sizing) and by the app's amortised price per GPU-hour.
    """
    return purchase_usd * (1 - tco.residual_fraction) * hours / (
        tco.lifetime_years * HOURS_PER_YEAR
    ) + tco.hosting_usd_per_gpu_month * hours / (HOURS_PER_YEAR / MONTHS_PER_YEAR)


@dataclass(frozen=True)
class GpuEconomics:
    """Buying one GPU of a type. Put host power in ``tdp_w`` (wall power / GPUs per server)."""

    purchase_usd: float  # per GPU, with its share of server, network, install
    tdp_w: float
    rent_usd_per_gpu_hour: float | None = None  # None: implied by the jobs' cost_usd columns

    def __post_init__(self) -> None:
        if not (self.purchase_usd >= 0 and self.tdp_w >= 0):
            raise ValueError("GpuEconomics: purchase_usd and tdp_w must be >= 0")


@dataclass(frozen=True)
class GpuBreakEven:
    gpu_id: str
    owned_fixed_usd: float  # one GPU over the horizon: amortisation, hosting, idle power
    owned_usd_per_busy_hour: float  # extra power while it trains
    rent_usd_per_gpu_hour: float
    break_even_utilisation: float  # busy fraction above which buying is cheaper (inf: never)


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


@dataclass(frozen=True)
class FleetPlan:
    total_cost_usd: float
    purchased: dict[str, int]  # GPU type -> GPUs bought
    ownership_cost_usd: float  # fixed cost of the purchased GPUs over the horizon
    running_cost_usd: float  # busy power of owned GPUs
    rent_cost_usd: float
    assignments: tuple[FleetAssignment, ...]


@dataclass(frozen=True)
class FleetSolution:
    mixed: FleetPlan
    rent_only: FleetPlan
    buy_only: FleetPlan | None  # None when some job has no GPU type that can be bought
    break_even: tuple[GpuBreakEven, ...]
    horizon_days: float
    solver: str


def break_even(
    gpu: str, economics: GpuEconomics, tco: TcoAssumptions, horizon_hours: float, rent_usd_per_gpu_hour: float
) -> GpuBreakEven:
    """Owning one GPU for H hours costs F + u H v at busy fraction u; renting u H hours costs u H r."""
    power_kw_usd = economics.tdp_w / 1000 * tco.pue * tco.electricity_usd_per_kwh
    fixed = (
        ownership_usd(economics.purchase_usd, tco, horizon_hours)
        + tco.idle_power_fraction * power_kw_usd * horizon_hours
    )
    busy = (1 - tco.idle_power_fraction) * power_kw_usd
    margin = rent_usd_per_gpu_hour - busy
    utilisation = fixed / (horizon_hours * margin) if margin > 0 else math.inf
    return GpuBreakEven(gpu, fixed, busy, rent_usd_per_gpu_hour, utilisation)


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
    cost v_g per GPU-hour from :func:`break_even`, and R_j = job j's cheapest rent among
    rows that finish by min(D_j, H) (rented GPUs have no capacity limit, so no other rented
    row of the job can beat it):

        variables   b_g in Z, 0 <= b_g <= max_purchase_g;   y_o, z_j in {0, 1}
        minimise    sum_g F_g b_g + sum_o v_g(o) n_o T_o / 3600 y_o + sum_j R_j z_j
        subject to  (1) sum_{o of job j} y_o + z_j = 1                            for every j
                    (2) sum_{o : g(o) = g, s_o <= t < s_o + L_o} n_o y_o <= b_g    for every g, t

    Solved three times: mixed (as written), buy only (z = 0) and rent only (b = 0).
    Budgets are ignored: they bound rent, which is what this trades off.
    """
    if not jobs:
        raise ValueError("jobs: expected at least one job")
    horizon_s = horizon_days * SECONDS_PER_DAY
    slot_s = _slot_s(horizon_s, num_slots)
    limits = dict(max_purchase or {})
    rates = [
        break_even(gpu, econ, tco, horizon_s / SECONDS_PER_HOUR, _rent_rate(gpu, econ, jobs))
        for gpu, econ in sorted(economics.items())
    ]
    busy_rate = {b.gpu_id: b.owned_usd_per_busy_hour for b in rates}
    rent_rows, parts = [], []
    for j, job in enumerate(jobs):
        finish_by, table = _finish_by(job, horizon_s), job.table
        rows = _job_rows(job, None, finish_by, None, prune_cost=None)
        rent_rows.append(int(rows[np.lexsort((table.time_to_train_s[rows], table.cost_usd[rows]))[0]]))
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
        parts.append(_expand_starts(j, job, buyable, num_slots, slot_s, finish_by))
    options = _concat(parts)
    hours = options.num_gpus * (options.end_s - options.start_s) / SECONDS_PER_HOUR
    owned_cost = np.array([busy_rate[g] for g in options.gpu]) * hours
    model = _FleetModel(
        jobs, options, owned_cost, rent_rows, {b.gpu_id: b.owned_fixed_usd for b in rates}, limits, num_slots
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
    )


def _rent_rate(gpu: str, economics: GpuEconomics, jobs: Sequence[JobCandidates]) -> float:
    if economics.rent_usd_per_gpu_hour is not None:
        return economics.rent_usd_per_gpu_hour
    cost = gpu_hours = 0.0
    for job in jobs:
        table = job.table
        rows = table.fits_memory & table.divisible & table.batch_ok & (table.gpu_id == gpu)
        cost += float(table.cost_usd[rows].sum())
        gpu_hours += float((table.num_gpus[rows] * table.time_to_train_s[rows]).sum()) / SECONDS_PER_HOUR
    return cost / gpu_hours if gpu_hours > 0 else math.nan


@dataclass(frozen=True, eq=False)
class _FleetModel:
    jobs: Sequence[JobCandidates]
    options: _Options
    owned_cost: np.ndarray
    rent_rows: list[int]
    fixed_usd: dict[str, float]
    max_purchase: dict[str, int]
    num_slots: int

    def solve(self, allow_rent: bool, solver: str, time_limit_s: float | None) -> tuple[FleetPlan | None, str]:
        options, num_jobs = self.options, len(self.jobs)
        if not allow_rent and len(set(options.job.tolist())) < num_jobs:
            return None, solver
        problem = pulp.LpProblem("fleet", pulp.LpMinimize)
        y = new_binaries(problem, "y", len(options.job))
        z = new_binaries(problem, "z", num_jobs) if allow_rent else []
        buy = {
            g: new_variable(problem, f"b_{i}", 0, self.max_purchase.get(g), pulp.LpInteger)
            for i, g in enumerate(sorted(set(options.gpu.tolist())))
        }
        rent = [float(job.table.cost_usd[r]) for job, r in zip(self.jobs, self.rent_rows, strict=True)]
        problem += (
            pulp.LpAffineExpression(zip(y, self.owned_cost.tolist(), strict=True))
            + pulp.LpAffineExpression((b, self.fixed_usd[g]) for g, b in buy.items())
            + pulp.LpAffineExpression(zip(z, rent, strict=False))  # z is empty when renting is not allowed
        )
        for j in range(num_jobs):  # (1)
            problem += pulp.lpSum(y[i] for i in np.flatnonzero(options.job == j)) + (z[j] if allow_rent else 0) == 1
        _usage_constraints(problem, options, y, self.num_slots, num_jobs, lambda g: buy[g])  # (2)
        optimal, solver_name = run_solver(problem, solver, time_limit_s)
        if not optimal:
            return None, solver_name
        owned: list[int | None] = [None] * num_jobs
        for j in range(num_jobs):
            mine = np.flatnonzero(options.job == j)
            if len(mine) and (y[mine[chosen_index([y[i] for i in mine])]].varValue or 0) > 0.5:
                owned[j] = int(mine[chosen_index([y[i] for i in mine])])
        return self.plan({g: round(b.varValue or 0) for g, b in buy.items()}, owned), solver_name

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
                    )
                )
        ownership = sum(self.fixed_usd[g] * count for g, count in purchased.items())
        running = sum(a.cost_usd for a in assignments if a.owned)
        rent = sum(a.cost_usd for a in assignments if not a.owned)
        return FleetPlan(
            total_cost_usd=ownership + running + rent,
            purchased={g: c for g, c in purchased.items() if c > 0},
            ownership_cost_usd=ownership,
            running_cost_usd=running,
            rent_cost_usd=rent,
            assignments=tuple(assignments),
        )
