"""A fleet under a reserved price kind (trial s44): reserved GPUs are held for whole terms, as bought
ones for the horizon, and no job is rented by the hour at the reserved rate; the ILP's optimum
against enumeration, and the totals against the term arithmetic written out."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from support import SOLVERS

from planner.catalog.terms import term_billing
from planner.search.fleet import Holding, ReservedPrices, size_fleet
from planner.search.fleet_plan import FleetOption
from planner.search.ilp import ScoredTable
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import GpuEconomics, TcoAssumptions, break_even
from planner.units import HOURS_PER_YEAR

DAY = 86400.0
GPUS = ("a100", "h100")
ECONOMICS = {
    "a100": GpuEconomics(purchase_usd=12_000, wall_power_w=400, rent_usd_per_gpu_hour=2.0),
    "h100": GpuEconomics(purchase_usd=25_000, wall_power_w=700, rent_usd_per_gpu_hour=4.0),
}
# Reserved rates that make a reserved GPU cost about what a bought one does over a year, so that
# mixed fleets buy one type and reserve the other
RATES = {"a100": 0.45, "h100": 0.8}


def table(name: str, gpu, num_gpus, days) -> ScoredTable:
    rows = len(gpu)
    n, t = np.asarray(num_gpus), np.asarray(days, dtype=float) * DAY
    price = np.array([2.0 if g == "a100" else 4.0 for g in gpu])
    return ScoredTable(
        gpu_id=np.asarray(gpu, dtype=object),
        num_gpus=n,
        fits_memory=np.ones(rows, bool),
        memory_need_gib=np.full(rows, 60.0),
        capacity_gib=np.full(rows, 80.0),
        time_to_train_s=t,
        cost_usd=n * t / 3600 * price,
        batch_ok=np.ones(rows, bool),
        divisible=np.ones(rows, bool),
        label=np.array([f"{name}/{i}" for i in range(rows)]),
    )


def random_jobs(
    rng: np.random.Generator, num_jobs: int, num_rows: int, horizon_days: float, split: bool = False
) -> list[JobCandidates]:
    """Jobs of 20-120 GPU-days on either type (``split``: job j on GPUS[j % 2] alone, so that a
    fleet may buy one type and reserve the other)."""
    jobs = []
    for j in range(num_jobs):
        types = rng.integers(0, 2, num_rows) if not split else np.full(num_rows, j % 2)
        gpu = [GPUS[i] for i in types]
        n = rng.choice([1, 2, 4], num_rows)
        work = rng.uniform(20, 120) * rng.uniform(0.8, 1.5, num_rows) / np.where(np.array(gpu) == "h100", 2.0, 1.0)
        days = np.round(work / n * 2) / 2
        deadline = float(rng.uniform(0.5, 1.0)) * horizon_days * DAY
        jobs.append(JobCandidates(f"job{j}", table(f"job{j}", gpu, n, days), deadline_s=deadline))
    return jobs


def reserved_1y(rates=RATES) -> ReservedPrices:
    term = term_billing("reserved-1y")
    assert term is not None
    return ReservedPrices("reserved-1y", term, rates)


def peak_held(assignments, holding: Holding, gpu: str) -> int:
    """The most GPUs of ``gpu`` the jobs held so hold at once (at some job's start)."""
    mine = [a for a in assignments if a.holding is holding and a.gpu_id == gpu]
    return max((sum(b.num_gpus for b in mine if b.start_s <= a.start_s < b.end_s) for a in mine), default=0)


@pytest.mark.parametrize("seed", range(6))
def test_a_reserved_fleet_bills_bought_and_reserved_gpus_and_busy_power_only(seed: int) -> None:
    rng = np.random.default_rng(440 + seed)
    horizon_days = float(rng.choice([200.0, 365.0, 500.0]))  # 500 days: two 1-year terms
    jobs = random_jobs(rng, 3, 5, horizon_days)
    tco = TcoAssumptions()
    hours = horizon_days * 24
    terms = math.ceil(hours / HOURS_PER_YEAR)
    solution = size_fleet(jobs, ECONOMICS, horizon_days, tco, num_slots=4, reserved=reserved_1y())
    fixed = {g: break_even(g, e, tco, hours, 0.0).owned_fixed_usd for g, e in ECONOMICS.items()}
    busy = {g: break_even(g, e, tco, hours, 0.0).owned_usd_per_busy_hour for g, e in ECONOMICS.items()}
    plans = [solution.mixed, solution.rent_only] + ([solution.buy_only] if solution.buy_only else [])
    for plan in plans:
        assert all(a.holding is not Holding.RENTED for a in plan.assignments) and plan.rent_cost_usd == 0
        # the whole terms its reserved jobs need, at most the horizon's (review s44: a 366-day horizon
        # billed two terms to jobs done in the first)
        need = max((a.end_s for a in plan.assignments if a.holding is Holding.RESERVED), default=0) / 3600
        assert (math.ceil(need / HOURS_PER_YEAR - 1e-9) <= plan.reserved_terms <= terms) if plan.reserved else True
        ownership = sum(fixed[g] * n for g, n in plan.purchased.items())
        reserving = sum(RATES[g] * HOURS_PER_YEAR * plan.reserved_terms * n for g, n in plan.reserved.items())
        power = sum(
            busy[a.gpu_id] * a.num_gpus * (a.end_s - a.start_s) / 3600
            for a in plan.assignments
            if a.holding is Holding.OWNED
        )
        assert all(a.cost_usd == 0 for a in plan.assignments if a.holding is Holding.RESERVED)
        assert plan.ownership_cost_usd == pytest.approx(ownership, rel=1e-12)
        assert plan.reserved_cost_usd == pytest.approx(reserving, rel=1e-12)
        assert plan.total_cost_usd == pytest.approx(ownership + reserving + power, rel=1e-12)
    reserve_only = solution.rent_only
    assert not reserve_only.purchased and reserve_only.ownership_cost_usd == 0
    for gpu in GPUS:  # reserve only holds the most its jobs hold at once, no more
        assert reserve_only.reserved.get(gpu, 0) == peak_held(reserve_only.assignments, Holding.RESERVED, gpu)
    peaks = {g: peak_held(reserve_only.assignments, Holding.RESERVED, g) for g in GPUS}
    billed = HOURS_PER_YEAR * reserve_only.reserved_terms
    assert reserve_only.total_cost_usd == pytest.approx(sum(peaks[g] * RATES[g] * billed for g in GPUS))
    cheapest = min(p.total_cost_usd for p in plans[1:])
    assert solution.mixed.total_cost_usd <= cheapest * (1 + 1e-9)
    assert solution.break_even == () and {c.gpu_id for c in solution.owned_vs_reserved} == set(GPUS)


def test_a_mixed_reserved_fleet_buys_one_type_and_reserves_the_other() -> None:
    """Each job on its own type; a100 reserved is cheaper than bought over the year, h100 bought
    cheaper than reserved: mixed does both and beats both one-way options."""
    jobs = [
        JobCandidates("a", table("a", ["a100"], [8], [300])),
        JobCandidates("h", table("h", ["h100"], [8], [300])),
    ]
    solution = size_fleet(jobs, ECONOMICS, 365, num_slots=2, reserved=reserved_1y({"a100": 0.2, "h100": 4.0}))
    mixed = solution.mixed
    assert mixed.purchased == {"h100": 8} and mixed.reserved == {"a100": 8}
    assert {a.job: a.holding for a in mixed.assignments} == {"a": Holding.RESERVED, "h": Holding.OWNED}
    assert solution.buy_only is not None
    assert mixed.total_cost_usd < min(solution.buy_only.total_cost_usd, solution.rent_only.total_cost_usd)
    (a100, h100) = solution.owned_vs_reserved
    assert a100.buying_cheaper_below == 0.0 and h100.buying_cheaper_below == 1.0
    # the options' names, one rule for the CLI and the app (app50): the one that buys nothing reserves
    named = [(o, p) for o, p in solution.options()]
    assert named == [(FleetOption.MIXED, mixed), (FleetOption.RESERVE_ONLY, solution.rent_only),
                     (FleetOption.BUY_ONLY, solution.buy_only)]  # fmt: skip
    assert [(o.value, o.key, o.json_key) for o, _ in named][1] == ("reserve only", "reserve_only", "rent_only")
    rented = size_fleet(jobs, ECONOMICS, 365, num_slots=2)
    assert [o for o, _ in rented.options()][
        1
    ] is FleetOption.RENT_ONLY and FleetOption.RENT_ONLY.json_key == "rent_only"


@pytest.mark.parametrize("horizon_days", [365.0, 366.0, 500.0, 700.0])
def test_a_reservation_bills_the_terms_its_jobs_need_not_every_term_the_horizon_touches(horizon_days) -> None:
    """Review s44 H1: a 366-day horizon billed two 1-year terms to a job done by day 34 (and flipped a
    fleet to buying at $225k more); the reservation is billed for the one term its job needs. A job
    that needs the second term (due later, too slow for one) pays for both."""
    quick = [JobCandidates("a", table("a", ["a100"], [8], [30]))]
    solution = size_fleet(quick, {}, horizon_days, num_slots=4, reserved=reserved_1y())
    assert solution.rent_only.reserved_terms == 1
    assert solution.rent_only.total_cost_usd == pytest.approx(8 * RATES["a100"] * HOURS_PER_YEAR)
    if horizon_days > 400:
        slow = [JobCandidates("b", table("b", ["a100"], [8], [400]))]
        both = size_fleet(slow, {}, horizon_days, num_slots=4, reserved=reserved_1y())
        assert both.rent_only.reserved_terms == 2
        assert both.rent_only.total_cost_usd == pytest.approx(8 * RATES["a100"] * HOURS_PER_YEAR * 2)


def test_the_reserved_unit_rounds_up_what_is_reserved() -> None:
    jobs = [JobCandidates("a", table("a", ["a100"], [4], [30]))]
    prices = ReservedPrices("reserved-1y", reserved_1y().term, {"a100": 0.2}, {"a100": 8})
    solution = size_fleet(jobs, {}, 365, num_slots=2, reserved=prices)
    assert solution.rent_only.reserved == {"a100": 8} and solution.buy_only is None
    assert solution.rent_only.total_cost_usd == pytest.approx(8 * 0.2 * HOURS_PER_YEAR)
    assert solution.reserved is not None and solution.reserved.unit == {"a100": 8}


def brute_force(jobs, tco, horizon_days, num_slots, allow: set[Holding], buy_only=frozenset()) -> float | None:
    """Least total over every way to hold each job's GPUs: owned (a type that can be bought) or
    reserved (not ``buy_only``), at each start slot it finishes from; the GPUs held are each type's
    peak over the slots (None: some job has no way)."""
    horizon_s, hours = horizon_days * DAY, horizon_days * 24
    slot_s = horizon_s / num_slots
    costs = {g: break_even(g, e, tco, hours, 0.0) for g, e in ECONOMICS.items()}
    reserved_usd = {g: RATES[g] * HOURS_PER_YEAR * math.ceil(hours / HOURS_PER_YEAR) for g in GPUS}
    per_job = []
    for job in jobs:
        t = job.table
        ways = []
        for row, slot, holding in itertools.product(range(len(t)), range(num_slots), allow):
            if holding is Holding.RESERVED and t.gpu_id[row] in buy_only:
                continue
            end = slot * slot_s + t.time_to_train_s[row]
            if end <= min(job.deadline_s or math.inf, horizon_s) * (1 + 1e-12):
                ways.append((row, slot, max(1, math.ceil(t.time_to_train_s[row] / slot_s - 1e-9)), holding))
        per_job.append(ways)
    best = None
    for combo in itertools.product(*per_job):
        usage = {(h, g): np.zeros(2 * num_slots) for h in allow for g in GPUS}
        cost = 0.0
        for job, (row, slot, held, holding) in zip(jobs, combo, strict=True):
            gpu, n = job.table.gpu_id[row], job.table.num_gpus[row]
            usage[holding, gpu][slot : slot + held] += n
            if holding is Holding.OWNED:
                cost += costs[gpu].owned_usd_per_busy_hour * n * job.table.time_to_train_s[row] / 3600
        for (holding, gpu), used in usage.items():
            fixed = costs[gpu].owned_fixed_usd if holding is Holding.OWNED else reserved_usd[gpu]
            cost += fixed * used.max()
        best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(8))
def test_a_reserved_fleet_equals_enumeration(seed: int) -> None:
    rng = np.random.default_rng(4400 + seed)
    horizon_days, num_slots = float(rng.choice([120.0, 365.0])), 3
    jobs = random_jobs(rng, 2, int(rng.integers(2, 4)), horizon_days, split=seed % 2 == 1)
    tco = TcoAssumptions(hosting_usd_per_gpu_month=float(rng.choice([0.0, 150.0, 400.0])))
    solution = size_fleet(
        jobs,
        ECONOMICS,
        horizon_days,
        tco,
        num_slots=num_slots,
        reserved=reserved_1y(),
        solver=SOLVERS[seed % len(SOLVERS)],
    )
    owned, reserved = Holding.OWNED, Holding.RESERVED
    mixed = brute_force(jobs, tco, horizon_days, num_slots, {owned, reserved})
    buy_only = brute_force(jobs, tco, horizon_days, num_slots, {owned})
    reserve_only = brute_force(jobs, tco, horizon_days, num_slots, {reserved})
    assert solution.mixed.total_cost_usd == pytest.approx(mixed, rel=1e-9)
    assert solution.rent_only.total_cost_usd == pytest.approx(reserve_only, rel=1e-9)
    assert solution.buy_only is not None and solution.buy_only.total_cost_usd == pytest.approx(buy_only, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_a_type_with_no_offer_of_the_reserved_kind_is_bought_or_not_held(seed: int) -> None:
    """Review s44 M5: a type to buy that the kind has no offer for refused the whole fleet. It is now
    bought or not held (``size_fleet``'s ``held_only``): never reserved, never priced as reserved, and
    where a job runs only on it there is no reserve-only fleet."""
    rng = np.random.default_rng(4500 + seed)
    horizon_days, num_slots = 365.0, 3
    jobs = random_jobs(rng, 2, int(rng.integers(2, 4)), horizon_days, split=seed % 2 == 1)
    tco = TcoAssumptions()
    rates = {"a100": RATES["a100"]}
    unlisted = frozenset({"h100"})
    solution = size_fleet(
        jobs, ECONOMICS, horizon_days, tco, num_slots=num_slots, reserved=reserved_1y(rates), held_only=unlisted
    )
    owned, reserved = Holding.OWNED, Holding.RESERVED
    for option in (solution.mixed, solution.rent_only):
        assert option is None or "h100" not in option.reserved
    assert solution.reserved is not None and "h100" not in solution.reserved.usd_per_gpu_hour
    assert [c.gpu_id for c in solution.owned_vs_reserved] == ["a100"] and solution.held_only == unlisted
    mixed = brute_force(jobs, tco, horizon_days, num_slots, {owned, reserved}, unlisted)
    reserve_only = brute_force(jobs, tco, horizon_days, num_slots, {reserved}, unlisted)
    assert solution.mixed.total_cost_usd == pytest.approx(mixed, rel=1e-9)
    if reserve_only is None:  # a job on h100 alone (split jobs)
        assert solution.rent_only is None
    else:
        assert solution.rent_only is not None and solution.rent_only.total_cost_usd == pytest.approx(reserve_only)


def test_a_fleet_reserves_at_its_requests_kind_and_refuses_two_kinds() -> None:
    """The jobs share one reservation per type, so they rent at one kind (plan_fleet's prices): the
    rate is the kind's median offer, or the job's own quote, which is per GPU."""
    from planner.api import PlanRequest
    from planner.api.reserved import reserved_prices
    from planner.catalog.hardware import load_catalog
    from planner.catalog.models import get_preset
    from planner.catalog.prices import catalog_with_price_kind
    from planner.model.settings import DEFAULT_SETTINGS

    catalog = load_catalog()
    job = PlanRequest(model=get_preset("gpt3-125m"), training_tokens=1e9, gpus={"h100-sxm": None})
    reserved = job.model_copy(update={"price_kind": "reserved-1y"})
    assert reserved_prices({"a": job}, catalog, DEFAULT_SETTINGS) is None
    prices = reserved_prices({"a": reserved, "b": reserved}, catalog, DEFAULT_SETTINGS)
    h100 = catalog_with_price_kind(catalog, "reserved-1y").gpu("h100-sxm")
    assert prices is not None and prices.kind == "reserved-1y" and prices.term.years == 1
    assert prices.usd_per_gpu_hour == {"h100-sxm": h100.price_per_gpu_hour_usd}
    assert prices.unit == {"h100-sxm": h100.rent_unit_gpus}
    quoted = reserved.model_copy(update={"price_overrides": {"h100-sxm": 1.5}})
    prices = reserved_prices({"a": quoted}, catalog, DEFAULT_SETTINGS)
    assert prices is not None and (prices.usd_per_gpu_hour, prices.unit) == ({"h100-sxm": 1.5}, {"h100-sxm": 1})
    with pytest.raises(ValueError, match="one price kind"):
        reserved_prices({"a": job, "b": reserved}, catalog, DEFAULT_SETTINGS)
    # review s44 L9: one kind at two term_filled named the kind alone ("got reserved-1y")
    half = reserved.model_copy(update={"term_filled": 0.5})
    with pytest.raises(ValueError, match=r"got reserved-1y, reserved-1y \(term_filled 0.5\)$"):
        reserved_prices({"a": reserved, "b": half}, catalog, DEFAULT_SETTINGS)


def test_owning_against_reserving_in_between_the_ends() -> None:
    """Review s44 M4: only the clamped ends (0 and 1) were tested. One bought GPU costs F_g + u H v,
    one reserved F_r: buying is cheaper below u* = (F_r - F_g) / (H v), and each per busy hour is its
    fixed cost over u H plus (owned) its busy power."""
    from planner.search.reserved import OwnedVsReserved

    c = OwnedVsReserved("a100", 5000.0, 1.0, 9000.0, 9000.0 / HOURS_PER_YEAR, HOURS_PER_YEAR, 1)
    assert c.buying_cheaper_below == pytest.approx(4000.0 / HOURS_PER_YEAR)  # 0.456
    owned, reserved = c.per_busy_hour(0.5)
    assert owned == pytest.approx(5000.0 / (0.5 * HOURS_PER_YEAR) + 1.0)
    assert reserved == pytest.approx(9000.0 / (0.5 * HOURS_PER_YEAR))
    u = c.buying_cheaper_below  # at u* the two cost the same per busy hour
    assert c.per_busy_hour(u)[0] == pytest.approx(c.per_busy_hour(u)[1])
    assert c.per_busy_hour(0.0) == (math.inf, math.inf)


@pytest.mark.parametrize("seed", range(4))
def test_a_type_to_buy_with_no_rent_is_never_rented(seed: int) -> None:
    """Review s45 M1: under spot, a type to buy with no spot offer refused the fleet as under a reserved
    kind. Held-only, it is bought or not held: no job rents it, it has no break-even against a rent it
    lacks, and where a job runs only on it there is no rent-only fleet."""
    rng = np.random.default_rng(4600 + seed)
    horizon_days, num_slots = 365.0, 3
    jobs = random_jobs(rng, 2, int(rng.integers(2, 4)), horizon_days, split=seed % 2 == 1)
    unlisted = frozenset({"h100"})
    solution = size_fleet(jobs, ECONOMICS, horizon_days, TcoAssumptions(), num_slots=num_slots, held_only=unlisted)
    for option in (solution.mixed, solution.rent_only, solution.buy_only):
        rented = [] if option is None else [a for a in option.assignments if a.holding is Holding.RENTED]
        assert all(a.gpu_id != "h100" for a in rented)
    assert [b.gpu_id for b in solution.break_even] == ["a100"]
    on_h100_alone = any(set(j.table.gpu_id.tolist()) == {"h100"} for j in jobs)
    assert (solution.rent_only is None) == on_h100_alone
    free = size_fleet(jobs, ECONOMICS, horizon_days, TcoAssumptions(), num_slots=num_slots)
    assert solution.mixed.total_cost_usd >= free.mixed.total_cost_usd - 1e-6  # a constraint more
