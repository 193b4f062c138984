"""Rent vs buy (:func:`size_fleet`): how many GPUs of each type to own (and, under a reserved price
kind, to reserve) for a set of jobs over a horizon, a time-indexed ILP over the slots of
planner/search/slots.py; the model and its assumptions are in the docstrings below and in
docs/ilp.md. Its answer's types are in planner/search/fleet_plan.py, reserving in reserved.py.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

import numpy as np

from planner.errors import Constraint, InfeasiblePlan
from planner.search.fleet_model import FleetModel, HeldPool, owned_pool, reserved_pool
from planner.search.fleet_plan import (
    FleetAssignment,
    FleetPlan,
    FleetSolution,
    Holding,
)
from planner.search.ilp import ScoredTable, pareto_mask
from planner.search.job_candidates import JobCandidates, days_field, job_finish_s, job_rows
from planner.search.late_band import LateOnRentRows
from planner.search.ownership import (
    GpuBreakEven,
    GpuEconomics,
    OwnedGpus,
    TcoAssumptions,
    break_even,
    running_break_even,
)
from planner.search.precedence import chain_ends, chained, predecessors
from planner.search.reserved import OwnedVsReserved, ReservedPrices
from planner.search.slots import (
    SlotOptions,
    concat_options,
    expand_starts,
    jobs_infeasible,
    respecting,
    slot_length_s,
    subset_options,
)
from planner.search.ties import fastest_near_cheapest
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

__all__ = [
    "FleetAssignment",
    "FleetPlan",
    "FleetSolution",
    "Holding",
    "ReservedPrices",
    "implied_rent_usd_per_gpu_hour",
    "size_fleet",
]


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
    reserved: ReservedPrices | None = None,
    held_only: frozenset[str] = frozenset(),
    owned: Mapping[str, OwnedGpus] | None = None,
    unrented: frozenset[str] = frozenset(),
) -> FleetSolution:
    r"""How many GPUs of each type to buy, and which jobs to rent for, at least total cost: the
    time-indexed ILP of ``FleetModel`` (its notation: b_g, y_o, z_j, F_g, v_g, R_j), solved three
    times: mixed (as written), buy only (z = 0) and rent only (b = 0).

    Under a ``reserved`` price kind there is no hourly rent at its rate (z = 0): each type g a job
    can run on is a held type r(g) too, reserved q_r = w_r m_r GPUs at a time (m_r in Z, w_r its
    rent unit) at F_r = rate_g x the hours of the whole terms covering H (``ReservedPrices.fixed_usd``)
    and v_r = 0 (the cloud pays the power); its options are time-indexed as the owned ones, with
    sum_r F_r q_r in the objective and (2) for r with q_r in place of b_g. Then rent only is
    reserve only (b = 0). Budgets are ignored: they bound rent, which is what this trades off.

    ``held_only``: types to buy that no offer of the jobs' price kind rents and no rate is given for:
    never rented nor reserved (a job on them alone has z_j = 0), and no break-even against a rent
    they do not have (review s44 M5, s45 M1: one such type refused the whole fleet).

    ``owned``: the GPUs already owned, I_g per type (trial s51 H1: they were ignored): a held pool
    beside the bought one, (2) reading I_g + b_g, their price sunk and their running cost F0_g I_g
    (``running_break_even``) in every total; b_g is what is bought in addition, and the option that
    buys nothing holds them too. ``unrented``: types never rented nor reserved (owned ones the jobs
    file does not rent), as ``held_only``'s but with no word of an offer.
    """
    horizon_s = horizon_days * SECONDS_PER_DAY
    _check_fleet(jobs, horizon_s, num_slots)
    horizon_h = horizon_s / SECONDS_PER_HOUR
    rates = _break_evens(jobs, economics, tco, horizon_h, held_only)
    limits, owned = dict(max_purchase or {}), dict(owned or {})
    no_rent = held_only | unrented
    slotting = (horizon_s, num_slots)
    held = _most_held(economics, limits, owned)
    jobs, rent_rows, options, reserving = _job_options(jobs, held, slotting, prune, reserved is not None, no_rent)
    running = [running_break_even(g, gpus, tco, horizon_h) for g, gpus in sorted(owned.items())]
    bought = owned_pool(options, rates, economics, limits, ({g: o.count for g, o in owned.items()}, running))
    pools = [[bought]]
    if reserved is not None and reserving is not None:
        reserving_pools = _reserved_pools(reserving, reserved, economics, jobs, horizon_h, no_rent)
        pools = [[bought, pool] for pool in reserving_pools]
    price = {gpu: econ.purchase_usd for gpu, econ in economics.items()}
    models = [FleetModel(jobs, held_pools, rent_rows, num_slots, price, horizon_s) for held_pools in pools]
    return _solve_options(models, rates, reserved, horizon_days, (solver, time_limit_s), held_only)


def _check_fleet(jobs: Sequence[JobCandidates], horizon_s: float, num_slots: int) -> None:
    """No jobs, a bad horizon or a bad slot count is refused before any work."""
    if not jobs:
        raise ValueError("jobs: expected at least one job")
    slot_length_s(horizon_s, num_slots)


def _break_evens(
    jobs: Sequence[JobCandidates],
    economics: Mapping[str, GpuEconomics],
    tco: TcoAssumptions,
    horizon_h: float,
    held_only: frozenset[str],
) -> list[GpuBreakEven]:
    """Each type's F_g and v_g and its break-even against its rent (none for a ``held_only`` type)."""
    return [
        break_even(gpu, econ, tco, horizon_h, math.nan if gpu in held_only else _rent_rate(gpu, econ, jobs))
        for gpu, econ in sorted(economics.items())
    ]


def _most_held(
    economics: Mapping[str, GpuEconomics], limits: Mapping[str, int], owned: Mapping[str, OwnedGpus]
) -> dict[str, float]:
    """The most GPUs of each type to buy or already owned a job may run on: I_g + max_purchase_g (I_g
    alone for a type not to buy)."""
    most = {g: float(limits.get(g, math.inf)) for g in economics}
    for g, gpus in owned.items():
        most[g] = gpus.count + (most[g] if g in economics else 0)
    return most


def _reserved_pools(
    options: SlotOptions,
    reserved: ReservedPrices,
    economics: Mapping[str, GpuEconomics],
    jobs: Sequence[JobCandidates],
    horizon_h: float,
    held_only: frozenset[str],
) -> list[HeldPool]:
    """The reserved pool for each count k of whole terms the horizon spans: its options those that end
    within k terms, F_r the k terms' bill (the last k: the horizon's, ``ReservedPrices.fixed_usd``).
    Solved apart, the cheapest taken: a reservation is billed for the terms its jobs need, not every
    term the horizon touches (review s44: a 366-day horizon billed two 1-year terms to jobs done by
    day 321, and the answer flipped to buying at $225k more)."""
    spans = [k * reserved.term.term_h for k in range(1, reserved.terms(horizon_h))] + [horizon_h]
    rate = _reserved_rates(options, reserved, economics, jobs, held_only)  # once: each pool's rates are these
    pools = []
    for span_h in spans:
        keep = options.end_s <= span_h * SECONDS_PER_HOUR
        if keep.any() or span_h == spans[-1]:  # the horizon's pool always: empty where every type is held-only
            pools.append(reserved_pool(subset_options(options, keep), reserved, rate, span_h))
    return pools


def _job_options(
    jobs: Sequence[JobCandidates],
    held: Mapping[str, float],
    slotting: tuple[float, int],
    prune: bool,
    reserving_kind: bool,
    held_only: frozenset[str],
) -> tuple[list[JobCandidates], list[int | None], SlotOptions, SlotOptions | None]:
    """The jobs, each one's head along P for its release (precedence.py ``chained``), each job's rented
    row (None: it runs only on ``held_only`` types), its owned options (the types to buy or already
    owned, ``held``: within the most of each, I_g + max_purchase_g) and, under a reserved kind, its
    reserved ones (every type but ``held_only``: the types to rent are the jobs' own). ``slotting``:
    the horizon's seconds and slots."""
    horizon_s, num_slots = slotting
    slot_s = slot_length_s(horizon_s, num_slots)
    owned, reserving, failed, feasible = [], [], [], []
    finish = [job_finish_s(job, horizon_s) for job in jobs]
    for job, finish_by in zip(jobs, finish, strict=True):
        try:
            feasible.append(_job_rows(job, finish_by, held, horizon_s))
        except InfeasiblePlan as exc:  # every job that cannot run is named (slots.py jobs_infeasible)
            failed.append((job.name, exc))
    if failed:
        raise jobs_infeasible(failed)
    fastest = [float(np.min(job.table.time_to_train_s[rows])) for job, rows in zip(jobs, feasible, strict=True)]
    released = [job.release_s for job in jobs]
    jobs = chained(jobs, fastest, finish)
    rent_rows = _rent_rows(jobs, released, feasible, (fastest, finish), held_only)
    for j, (job, finish_by) in enumerate(zip(jobs, finish, strict=True)):
        rows = _from_head(job, feasible[j], finish_by)
        rentable = _rentable(job, rows, held_only)
        buyable = rows[np.isin(job.table.gpu_id[rows], list(held))]
        cap = np.array([held[g] for g in job.table.gpu_id[buyable]], dtype=float)
        buyable = buyable[job.table.num_gpus[buyable] <= cap]
        owned.append(expand_starts(j, job, _pruned(job.table, buyable, prune), num_slots, slot_s, finish_by))
        if reserving_kind:
            reserving.append(expand_starts(j, job, _pruned(job.table, rentable, prune), num_slots, slot_s, finish_by))
    return jobs, rent_rows, concat_options(owned), concat_options(reserving) if reserving else None


def _rentable(job: JobCandidates, rows: np.ndarray, held_only: frozenset[str]) -> np.ndarray:
    return rows[~np.isin(job.table.gpu_id[rows], list(held_only))]


def _rent_rows(
    jobs: Sequence[JobCandidates],
    released: Sequence[float],
    feasible: Sequence[np.ndarray],
    limits: tuple[Sequence[float], Sequence[float | None]],
    held_only: frozenset[str],
) -> list[int | None]:
    """Each job's rent row R_j (None: it runs only on ``held_only`` types), in the order of P: of its
    rentable rows that end by its tail (precedence.py ``chain_ends``) from its release and its
    predecessors' rent rows' ends, as plan's cost objective picks; where none does (its fast rows on
    types not rented), of those that end by D_j from its head. So every job rented ends in time
    (review chain52 H1: each rent row was picked from the head alone, a predecessor's slow cheap row
    ended its chain late, and mixed bought 64 GPUs for a half-day job). ``limits``: each job's
    fastest row and D_j (seconds). Without P: the rows from its release, by D_j."""
    fastest, finish = limits
    after = predecessors(jobs)
    tails = chain_ends(jobs, after, fastest, finish)
    rows: list[int | None] = [None] * len(jobs)
    ends = [job.release_s + t for job, t in zip(jobs, fastest, strict=True)]  # a job not rented: its earliest
    for j in respecting(range(len(jobs)), after):
        job, T = jobs[j], jobs[j].table.time_to_train_s
        start = max([released[j], *(ends[i] for i in after[j])])
        rentable = _rentable(job, feasible[j], held_only)
        tail = tails[j]
        fit = rentable if tail is None else rentable[start + T[rentable] <= tail * (1 + 1e-12)]
        if not len(fit):
            start, fit = job.release_s, _rentable(job, _from_head(job, feasible[j], finish[j]), held_only)
        if len(fit):
            rows[j] = rent_row(job.table, fit)
            ends[j] = start + float(T[rows[j]])
    return rows


def _from_head(job: JobCandidates, rows: np.ndarray, finish_by: float | None) -> np.ndarray:
    """The rows that end by ``finish_by`` from the job's head (its release where no job precedes it:
    all of ``rows``), so a rented row fits after its chain."""
    if finish_by is None:
        return rows
    return rows[job.release_s + job.table.time_to_train_s[rows] <= finish_by * (1 + 1e-12)]


def _pruned(table: ScoredTable, rows: np.ndarray, prune: bool) -> np.ndarray:
    """A held type's rows less those another row of its type dominates on (GPU-hours, T, n): the
    held cost is proportional to GPU-hours (0 on reserved GPUs) and a dominating row holds fewer GPUs
    for fewer slots."""
    if not prune:
        return rows
    gpu_hours = table.num_gpus * table.time_to_train_s
    return rows[
        pareto_mask(table.gpu_id[rows], gpu_hours[rows], table.time_to_train_s[rows], size=table.num_gpus[rows])
    ]


def _solve_options(
    models: list[FleetModel],
    rates: list[GpuBreakEven],
    reserved: ReservedPrices | None,
    horizon_days: float,
    solving: tuple[str, float | None],
    held_only: frozenset[str],
) -> FleetSolution:
    """The three options: mixed, buy only and the option that buys nothing (rent only: every job's
    rent; reserve only under a reserved kind, which packs the jobs on the GPUs it reserves), each the
    cheapest over ``models`` (one per count of reserved terms, ``_reserved_pools``; the last spans
    the horizon). ``solving``: the solver and its time limit."""
    solver, time_limit_s = solving
    model = models[-1]
    other = Holding.RENTED if reserved is None else Holding.RESERVED
    mixed, solver_name = _cheapest(models, {Holding.OWNED, other}, solver, time_limit_s)
    if mixed is None:  # every job can be rented, reserved or bought: only a chain (after) can leave none
        raise _no_chained_fleet(model)
    buy_only, _ = model.solve({Holding.OWNED}, solver, time_limit_s)
    no_buy: FleetPlan | None
    late: tuple[LateOnRentRows, ...] = ()
    if model.held[0].owned:  # nothing bought: the jobs on the GPUs already owned, or rented (reserved)
        no_buy, _ = _cheapest(models, {Holding.OWNED, other}, solver, time_limit_s, buying=False)
    elif reserved is None:
        no_buy, late = _rent_only(model)
    else:
        no_buy, _ = _cheapest(models, {Holding.RESERVED}, solver, time_limit_s)  # None: a job runs only bought
    return FleetSolution(
        mixed=mixed,
        rent_only=no_buy,
        buy_only=buy_only,
        break_even=tuple(b for b in rates if b.gpu_id not in held_only) if reserved is None else (),
        horizon_days=horizon_days,
        solver=solver_name,
        num_slots=model.num_slots,
        # as priced: every type's rate and unit, the given or the rent (``reserved_pool``)
        reserved=None if reserved is None else _priced(reserved, model.held[-1]),
        owned_vs_reserved=() if reserved is None else _owned_vs_reserved(rates, model.held[-1], horizon_days),
        held_only=held_only,
        owned=dict(model.held[0].owned),
        rent_only_late=late,
    )


def _rent_only(model: FleetModel) -> tuple[FleetPlan | None, tuple[LateOnRentRows, ...]]:
    """Every job on its rent row (None where a job runs only on held_only types), and where a chain
    of them (P) ends a job past its D_j, None and those jobs (``LateOnRentRows``)."""
    if any(r is None for r in model.rent_rows):
        return None, ()
    plan = model.plan({}, [None] * len(model.jobs))
    late = model.late(plan)
    return (None, late) if late else (plan, ())


def _no_chained_fleet(model: FleetModel) -> InfeasiblePlan:
    """No option holds every job in time: each chain (P) fits on its jobs' fastest rows, but not on the
    rows a fleet can hold (its rent rows, its GPUs bought up to max_purchase, started in slots)."""
    assert any(job.after for job in model.jobs), "every job can be rented, reserved or bought"
    detail = (
        "the jobs' chains (after) cannot all end by their deadlines on the GPUs this fleet may rent, reserve"
        f" or buy, its owned jobs starting in {model.num_slots} slots"
    )
    fix = "raise deadline_days or horizon_days, raise num_slots, or drop a job from an after"
    return InfeasiblePlan(Constraint.DEADLINE, detail, fix)


def _cheapest(
    models: list[FleetModel],
    holdings: Collection[Holding],
    solver: str,
    time_limit_s: float | None,
    buying: bool = True,
) -> tuple[FleetPlan | None, str]:
    """The least-cost plan of ``holdings`` over the models (None: none can hold every job so;
    ``buying`` False: none that buys GPUs)."""
    solved = [m.solve(holdings, solver, time_limit_s, buying) for m in models]
    plans = [p for p, _ in solved if p is not None]
    best = min(plans, key=lambda p: p.total_cost_usd) if plans else None
    return best, solved[-1][1]


def _priced(reserved: ReservedPrices, pool: HeldPool) -> ReservedPrices:
    assert pool.usd_per_gpu_hour is not None
    return replace(reserved, usd_per_gpu_hour=dict(pool.usd_per_gpu_hour), unit=dict(pool.unit))


def _owned_vs_reserved(rates: list[GpuBreakEven], pool: HeldPool, horizon_days: float) -> tuple[OwnedVsReserved, ...]:
    """One GPU bought against one reserved, for each type that can be both."""
    assert pool.terms is not None and pool.usd_per_gpu_hour is not None
    rate = pool.usd_per_gpu_hour
    hours = horizon_days * SECONDS_PER_DAY / SECONDS_PER_HOUR
    return tuple(
        OwnedVsReserved(
            b.gpu_id,
            b.owned_fixed_usd,
            b.owned_usd_per_busy_hour,
            pool.fixed_usd[b.gpu_id],
            rate[b.gpu_id],
            hours,
            pool.terms,
        )
        for b in rates
        if b.gpu_id in pool.fixed_usd
    )


def rent_row(table: ScoredTable, rows: np.ndarray) -> int:
    """The row a rented job runs on, as plan's cost objective picks it: of the rows within
    NEAR_TIE_FRACTION of the cheapest, the fastest (trial s27d: the cheapest alone rented a plan
    twice as slow to save 0.7 %, which plan would not choose)."""
    return fastest_near_cheapest(table.cost_usd, table.time_to_train_s, rows)


def _job_rows(job: JobCandidates, finish_by: float | None, held: Collection[str], horizon_s: float) -> np.ndarray:
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
        scope = "the GPU types to buy" if set(types) <= set(held) else "the jobs' GPU types"
        past_horizon = exc.constraint is Constraint.DEADLINE and (exc.required or 0.0) > horizon_s
        # the least days a days field needs, as the deadline's own fix (review s46 L9: whole days here)
        horizon = f" and a horizon_days of at least {days_field(exc.required or 0.0)}"
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


def _reserved_rates(
    options: SlotOptions,
    reserved: ReservedPrices,
    economics: Mapping[str, GpuEconomics],
    jobs: Sequence[JobCandidates],
    held_only: frozenset[str],
) -> dict[str, float]:
    """Each type's reserved rate: its given rate, else its rent (the break-even's, or the one the
    jobs' tables imply, read only where none is given); the types to buy are priced too, for the
    owned-vs-reserved comparison."""
    rate = {}
    for g in sorted((set(options.gpu.tolist()) | set(economics)) - held_only):
        usd = reserved.usd_per_gpu_hour.get(g)
        if usd is None:
            usd = _rent_rate(g, economics[g], jobs) if g in economics else implied_rent_usd_per_gpu_hour(g, jobs)
        if math.isfinite(usd):
            rate[g] = usd
    return rate
