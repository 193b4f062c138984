"""A fleet that starts from GPUs already owned (trial s51 H1: fleet ignored [inventory] and bought
for jobs the owned GPUs ran): they are a held pool beside the bought one, their price sunk and their
running cost counted; the ILP against enumeration of purchase counts over the owned pool."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from support import SOLVERS
from test_portfolio import ECONOMICS, GPUS, candidate_table, job_options, random_job, two_big_jobs

from planner.search.fleet import Holding, size_fleet
from planner.search.fleet_plan import FleetOption
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import GpuEconomics, OwnedGpus, TcoAssumptions, break_even, running_break_even

DAY = 86400.0


def owned_gpus(counts: dict[str, int]) -> dict[str, OwnedGpus]:
    """The test's owned GPUs at the wall power of its economics."""
    power = {"a100": 400.0, "h100": 700.0}
    return {g: OwnedGpus(n, power[g]) for g, n in counts.items()}


def rent_way(job: JobCandidates, horizon_s: float, num_slots: int, unrented: set[str], options_of=job_options):
    """The job's rented row as plan's cost objective picks it (the fastest within 1 % of the cheapest),
    on the types it may rent; None where it may rent none. ``options_of``: a job's ways to run alone."""
    ways = [o for o in options_of(job, None, horizon_s, num_slots) if job.table.gpu_id[o[0]] not in unrented]
    ways = [o for o in ways if o[1] == min(w[1] for w in ways)]  # its first start: every row that ends in time
    if not ways:
        return None
    cheapest = min(job.table.cost_usd[o[0]] for o in ways)
    near = [o for o in ways if job.table.cost_usd[o[0]] <= cheapest * 1.01]
    row = min(near, key=lambda o: (job.table.time_to_train_s[o[0]], job.table.cost_usd[o[0]]))[0]
    return (row, 0, 0.0, 0, False)


def brute_force(
    jobs,
    economics,
    owned,
    tco,
    horizon_days,
    num_slots,
    max_purchase,
    rent=True,
    buy=True,
    unrented=(),
    options_of=None,
    keep=None,
    rent_ways=None,
):
    """Least total over explicit purchase counts b_g and every way to run each job: owned (on a type
    owned or to buy, held on I_g + b_g) or rented; every total holds the owned GPUs' running cost.
    ``options_of``: a job's ways to run alone, (row, slot, end, slots held) (default: from day 0);
    ``keep``: which ways of every job together may run (default: all); ``rent_ways``: each job's
    rented way (default: ``rent_way``'s)."""
    options_of = options_of or job_options
    horizon_s, hours = horizon_days * DAY, horizon_days * 24
    rates = {g: break_even(g, e, tco, hours, e.rent_usd_per_gpu_hour) for g, e in economics.items()}
    running = {g: running_break_even(g, o, tco, hours) for g, o in owned.items()}
    busy_rate = {g: b.owned_usd_per_busy_hour for g, b in {**running, **rates}.items()}
    sunk = sum(running[g].owned_fixed_usd * o.count for g, o in owned.items())
    per_job = []
    for j, job in enumerate(jobs):
        held = [(*o, True) for o in options_of(job, None, horizon_s, num_slots) if job.table.gpu_id[o[0]] in busy_rate]
        way = rent_way(job, horizon_s, num_slots, set(unrented), options_of) if rent_ways is None else rent_ways[j]
        way = way if rent else None
        per_job.append(held + ([way] if way is not None else []))
    best = None
    buyable = {g: (range(max_purchase[g] + 1) if buy else [0]) for g in economics}
    for combo in itertools.product(*per_job):
        if keep is not None and not keep(combo):
            continue
        usage = {str(g): np.zeros(2 * num_slots) for g in GPUS}
        cost = sunk
        for job, (row, slot, _, held, is_held) in zip(jobs, combo, strict=True):
            gpu, n, t = job.table.gpu_id[row], job.table.num_gpus[row], job.table.time_to_train_s[row]
            if is_held:
                usage[gpu][slot : slot + held] += n
                cost += busy_rate[gpu] * n * t / 3600
            else:
                cost += job.table.cost_usd[row]
        peak = {g: used.max() for g, used in usage.items()}
        for bought in itertools.product(*buyable.values()):
            added = dict(zip(buyable, bought, strict=True))
            if all(peak[g] <= (owned[g].count if g in owned else 0) + added.get(g, 0) for g in peak):
                total = cost + sum(rates[g].owned_fixed_usd * b for g, b in added.items())
                best = total if best is None else min(best, total)
    return best


@pytest.mark.parametrize("seed", range(8))
def test_a_fleet_with_owned_gpus_equals_enumeration(seed: int) -> None:
    """Owned GPUs usable by any job beside the bought ones, b_g what is bought in addition: each of
    the three options is the least total of explicit purchase counts; half the seeds own a type that
    cannot be bought (a100: owned only, rented or not)."""
    rng = np.random.default_rng(5100 + seed)
    jobs = [random_job(rng, f"job{j}", int(rng.integers(3, 6))) for j in range(2)]
    tco = TcoAssumptions(hosting_usd_per_gpu_month=float(rng.choice([0.0, 150.0, 400.0])))
    horizon_days, num_slots = float(rng.choice([30.0, 90.0, 360.0])), 3
    only_owned = seed % 2 == 1
    economics = {"h100": ECONOMICS["h100"]} if only_owned else ECONOMICS
    counts = {"a100": int(rng.integers(1, 4)), "h100": int(rng.integers(0, 3))}
    owned = owned_gpus({g: n for g, n in counts.items() if n})
    unrented = frozenset({"a100"}) if only_owned and seed % 4 == 1 else frozenset()
    max_purchase = {g: 4 for g in economics}
    solution = size_fleet(
        jobs,
        economics,
        horizon_days,
        tco,
        num_slots=num_slots,
        max_purchase=max_purchase,
        owned=owned,
        unrented=unrented,
        solver=SOLVERS[seed % len(SOLVERS)],
    )
    args = (jobs, economics, owned, tco, horizon_days, num_slots, max_purchase)
    mixed = brute_force(*args, unrented=unrented)
    added_nothing = brute_force(*args, buy=False, unrented=unrented)
    owned_and_bought = brute_force(*args, rent=False)
    assert solution.mixed.total_cost_usd == pytest.approx(mixed, rel=1e-9)
    assert solution.rent_only is not None and solution.rent_only.total_cost_usd == pytest.approx(
        added_nothing, rel=1e-9
    )
    assert solution.rent_only.purchased == {}
    if owned_and_bought is None:
        assert solution.buy_only is None
    else:
        assert solution.buy_only is not None
        assert solution.buy_only.total_cost_usd == pytest.approx(owned_and_bought, rel=1e-9)
    for plan in (solution.mixed, solution.rent_only):
        assert all(a.gpu_id not in unrented for a in plan.assignments if a.holding is Holding.RENTED)


def test_owned_gpus_are_sunk_and_run_the_jobs_before_any_purchase() -> None:
    """Two jobs of 8 h100 for 5 and 6 days, 8 h100 owned: nothing is bought, nothing outlaid, and the
    total is the owned GPUs' running cost over the horizon (hosting, idle power: no amortisation of
    their price) plus their busy power. Without them the fleet buys 8 (the cheap TCO of the test
    it copies), so the owned pool is what changed the answer."""
    jobs, horizon_days = two_big_jobs(), 28
    tco = TcoAssumptions(lifetime_years=6, residual_fraction=0.5, hosting_usd_per_gpu_month=100.0)
    assert size_fleet(jobs, ECONOMICS, horizon_days, tco, num_slots=12).mixed.purchased == {"h100": 8}
    owned = owned_gpus({"h100": 8})
    solution = size_fleet(jobs, ECONOMICS, horizon_days, tco, num_slots=12, owned=owned)
    mixed = solution.mixed
    assert mixed.purchased == {} and mixed.purchase_usd == 0 and mixed.ownership_cost_usd == 0
    assert all(a.holding is Holding.OWNED for a in mixed.assignments)
    running = running_break_even("h100", owned["h100"], tco, horizon_days * 24)
    # hosting and idle power only: the price is sunk
    assert running.owned_fixed_usd == pytest.approx(
        100.0 * 12 * horizon_days * 24 / 8766 + 0.2 * 0.7 * 1.25 * 0.1 * horizon_days * 24
    )
    assert mixed.owned == {"h100": 8} and mixed.owned_cost_usd == pytest.approx(8 * running.owned_fixed_usd)
    assert mixed.total_cost_usd == pytest.approx(mixed.owned_cost_usd + mixed.running_cost_usd)
    first, second = sorted(mixed.assignments, key=lambda a: a.start_s)
    assert first.start_s == 0 and second.start_s == first.end_s  # both on the 8 owned, back to back
    assert mixed.owned_busy_fraction(horizon_days) == pytest.approx(8 * 11 / (8 * 28))
    # the option that buys nothing holds them too, and is named for it
    assert solution.rent_only is not None and solution.rent_only.total_cost_usd == pytest.approx(mixed.total_cost_usd)
    names = [solution.option_name(option) for option, _ in solution.options()]
    assert names == ["mixed", "owned + rent", "owned + buy"]


def test_a_fleet_buys_in_addition_to_what_it_owns() -> None:
    """One job of 16 h100 for 4 days, 8 owned: it cannot run on them alone, so buying adds 8 (the
    purchase unit of 1 here), or the job is rented; a job of 8 runs on the owned 8 with none bought."""
    tco = TcoAssumptions(lifetime_years=6, residual_fraction=0.5, hosting_usd_per_gpu_month=0.0)
    big = candidate_table("big", ["h100"], [16], [4 * DAY], [16 * 4 * 24 * 4.0], [True])
    small = candidate_table("small", ["h100"], [8], [4 * DAY], [8 * 4 * 24 * 4.0], [True])
    owned = owned_gpus({"h100": 8})
    solution = size_fleet([JobCandidates("big", big)], ECONOMICS, 12, tco, num_slots=3, owned=owned)
    assert solution.buy_only is not None and solution.buy_only.purchased == {"h100": 8}
    assert solution.rent_only is not None and solution.rent_only.assignments[0].holding is Holding.RENTED
    small_fleet = size_fleet([JobCandidates("small", small)], ECONOMICS, 12, tco, num_slots=3, owned=owned)
    assert small_fleet.buy_only is not None and small_fleet.buy_only.purchased == {}


def test_no_owned_gpus_names_the_options_as_before() -> None:
    solution = size_fleet(two_big_jobs(), ECONOMICS, 28, num_slots=4)
    assert solution.owned == {} and solution.mixed.owned_cost_usd == 0
    assert [solution.option_name(o) for o, _ in solution.options()] == [o.value for o, _ in solution.options()]
    assert solution.option_name(FleetOption.RESERVE_ONLY) == "reserve only"


def test_owned_gpus_are_validated() -> None:
    with pytest.raises(ValueError, match="count"):
        OwnedGpus(0, 700.0)
    assert math.isfinite(running_break_even("h100", OwnedGpus(1, 700.0), TcoAssumptions(), 24.0).owned_fixed_usd)
    assert GpuEconomics(purchase_usd=0.0, wall_power_w=700).purchase_usd == 0
