"""Jobs released after day 0 (a jobs file's start_after_days; trial s51 H4: every job of a year was
available on day 0): S_j >= r_j in the portfolio's exact and slotted models and in the fleet's, the
deadline still counted from day 0; the optima against enumeration with releases, and the answer
where a job cannot fit between its release and its deadline."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from support import SOLVERS
from test_fleet_inventory import brute_force as fleet_brute_force
from test_portfolio import ECONOMICS, candidate_table, random_job
from test_portfolio_bruteforce import WEIGHTS, instance, serial_schedule

from planner.errors import Constraint, InfeasiblePlan
from planner.search.fleet import Holding, size_fleet
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import TcoAssumptions
from planner.search.portfolio import solve_portfolio
from planner.search.slots import list_schedule

DAY = 86400.0


def brute_force(jobs, inventory, rates, weights, horizon_s, after=None):
    """Least objective over every row per job and every order, each job from its release (None: no
    schedule fits). Rows that cannot end by the deadline from the release are none of the job's.
    ``after``: job index -> its predecessors' (P): only the orders that place them first, each job
    from their ends too."""
    w_C, w_T = weights
    F = {g: rates[g].held_usd_per_gpu_hour for g in inventory}
    v = {g: rates[g].busy_usd_per_gpu_hour for g in inventory}
    per_job, c_ref, t_ref, finish = [], 0.0, [], []
    for job in jobs:
        t = job.table
        finish.append(min(x for x in (job.deadline_s, horizon_s, math.inf) if x is not None))
        rows = [r for r in range(len(t)) if t.fits_memory[r] and t.num_gpus[r] <= inventory.get(t.gpu_id[r], 0)]
        rows = [r for r in rows if job.release_s + t.time_to_train_s[r] <= finish[-1]]
        if not rows:
            return None
        per_job.append(rows)
        c_ref += min((F[t.gpu_id[r]] + v[t.gpu_id[r]]) * t.num_gpus[r] * t.time_to_train_s[r] / 3600 for r in rows)
        t_ref.append(min(t.time_to_train_s[r] for r in rows))
    held_per_s = sum(count * F[g] for g, count in inventory.items()) / 3600
    release = [job.release_s for job in jobs]
    best = None
    for rows in itertools.product(*per_job):
        gpu = [job.table.gpu_id[r] for job, r in zip(jobs, rows, strict=True)]
        n = [job.table.num_gpus[r] for job, r in zip(jobs, rows, strict=True)]
        T = [job.table.time_to_train_s[r] for job, r in zip(jobs, rows, strict=True)]
        busy = sum(v[g] * k * d / 3600 for g, k, d in zip(gpu, n, T, strict=True))
        for order in itertools.permutations(range(len(jobs))):
            if after and any(order.index(i) > order.index(j) for j, before in after.items() for i in before):
                continue
            start = serial_schedule(order, gpu, n, T, inventory, release, after)
            end = [s + d for s, d in zip(start, T, strict=True)]
            if any(e > f * (1 + 1e-12) for e, f in zip(end, finish, strict=True)):
                continue
            value = w_C * (held_per_s * max(end) + busy) / c_ref + w_T * sum(
                e / r for e, r in zip(end, t_ref, strict=True)
            )
            best = value if best is None else min(best, value)
    return best


def released(jobs: list[JobCandidates], rng: np.random.Generator) -> list[JobCandidates]:
    """Half the jobs released on a day in [0.5, 6] (quarter days); deadlines unchanged, from day 0."""
    return [
        replace(job, release_s=float(np.round(rng.uniform(0.5, 6) * 4) / 4) * DAY) if rng.random() < 0.5 else job
        for job in jobs
    ]


@pytest.mark.parametrize("seed", range(12))
def test_a_portfolio_with_releases_equals_enumeration(seed: int) -> None:
    jobs, inventory, rates, horizon_s = instance(seed)
    jobs = released(jobs, np.random.default_rng(5200 + seed))
    for k, (objective, weights) in enumerate(WEIGHTS.items()):
        expected = brute_force(jobs, inventory, rates, weights, horizon_s)
        options = dict(rates=rates, cost_weight=0.4, horizon_s=horizon_s, solver=SOLVERS[(seed + k) % len(SOLVERS)])
        if expected is None:
            with pytest.raises(InfeasiblePlan):
                solve_portfolio(jobs, inventory, objective, **options)
            continue
        solution = solve_portfolio(jobs, inventory, objective, **options)
        assert solution.exact and solution.objective_value == pytest.approx(expected, rel=1e-6), objective
        check_released(jobs, inventory, solution, horizon_s)
        try:  # the slotted approximation (many jobs), compacted: valid, never better
            slotted = solve_portfolio(jobs, inventory, objective, exact=False, num_slots=6, **options)
        except InfeasiblePlan:
            assert horizon_s is not None or any(j.deadline_s for j in jobs)  # slots round durations up
            continue
        assert slotted.objective_value >= expected * (1 - 1e-6)
        check_released(jobs, inventory, slotted, horizon_s)


def check_released(jobs, inventory, solution, horizon_s) -> None:
    """No type over its inventory at any start, every job from its release and by its deadline."""
    a = solution.assignments
    for x in a:
        job = next(job for job in jobs if job.name == x.job)
        running = [y for y in a if y.gpu_id == x.gpu_id and y.start_s <= x.start_s < y.end_s]
        assert sum(y.num_gpus for y in running) <= inventory[x.gpu_id]
        assert x.start_s >= job.release_s * (1 - 1e-12)
        assert x.end_s <= min(t for t in (job.deadline_s, horizon_s, math.inf) if t is not None) * (1 + 1e-9)


def test_the_seeded_releases_bind() -> None:
    """The releases above move some optimum (else the test would pass without them)."""
    moved = 0
    for seed in range(12):
        jobs, inventory, rates, horizon_s = instance(seed)
        late = released(jobs, np.random.default_rng(5200 + seed))
        at_zero = brute_force(jobs, inventory, rates, WEIGHTS["cost"], horizon_s)
        moved += at_zero != brute_force(late, inventory, rates, WEIGHTS["cost"], horizon_s)
    assert moved >= 4


def released_options(job, inventory, horizon_s, num_slots):
    """(row, start slot, end, slots held) for every way the job runs alone from its release: in the
    slot that holds the release at the release, in a later one at its start."""
    table, out, slot_s = job.table, [], horizon_s / num_slots
    finish = min(t for t in (job.deadline_s, horizon_s) if t is not None)
    for row in range(len(table)):
        if not (table.fits_memory[row] and table.divisible[row] and table.batch_ok[row]):
            continue
        for slot in range(num_slots):
            if (slot + 1) * slot_s <= job.release_s:
                continue
            start = max(slot * slot_s, job.release_s)
            end = start + table.time_to_train_s[row]
            if end <= finish * (1 + 1e-12):
                out.append(
                    (
                        row,
                        slot,
                        end,
                        max(1, math.ceil((start - slot * slot_s + table.time_to_train_s[row]) / slot_s - 1e-9)),
                    )
                )
    return out


@pytest.mark.parametrize("seed", range(8))
def test_a_fleet_with_releases_equals_enumeration(seed: int) -> None:
    rng = np.random.default_rng(5300 + seed)
    jobs = released([random_job(rng, f"job{j}", int(rng.integers(3, 6))) for j in range(2)], rng)
    jobs = [replace(j, deadline_s=None) if j.deadline_s and j.deadline_s <= j.release_s else j for j in jobs]
    tco = TcoAssumptions(hosting_usd_per_gpu_month=float(rng.choice([0.0, 150.0])))
    horizon_days, num_slots = float(rng.choice([30.0, 90.0])), 3
    max_purchase = {"a100": 6, "h100": 6}
    args = (jobs, ECONOMICS, {}, tco, horizon_days, num_slots, max_purchase)
    mixed = fleet_brute_force(*args, options_of=released_options)
    if mixed is None:  # a job that cannot end by its deadline from its release
        with pytest.raises(InfeasiblePlan, match="start_after_days"):
            size_fleet(jobs, ECONOMICS, horizon_days, tco, num_slots=num_slots, max_purchase=max_purchase)
        return
    solution = size_fleet(jobs, ECONOMICS, horizon_days, tco, num_slots=num_slots, max_purchase=max_purchase)
    assert solution.mixed.total_cost_usd == pytest.approx(mixed, rel=1e-9)
    buy_only = fleet_brute_force(*args, rent=False, options_of=released_options)
    assert solution.buy_only is not None and solution.buy_only.total_cost_usd == pytest.approx(buy_only, rel=1e-9)
    for plan in (solution.mixed, solution.rent_only, solution.buy_only):
        for a in plan.assignments:
            job = next(j for j in jobs if j.name == a.job)
            assert a.start_s >= job.release_s * (1 - 1e-12)
            if a.holding is Holding.RENTED:
                assert a.start_s == job.release_s  # rented at once, on its release


def test_the_seeded_fleets_have_releases_and_answers() -> None:
    """Of the fleet seeds above, most release a job after day 0 and have an answer."""
    answered = 0
    for seed in range(8):
        rng = np.random.default_rng(5300 + seed)
        jobs = released([random_job(rng, f"job{j}", int(rng.integers(3, 6))) for j in range(2)], rng)
        jobs = [replace(j, deadline_s=None) if j.deadline_s and j.deadline_s <= j.release_s else j for j in jobs]
        tco = TcoAssumptions(hosting_usd_per_gpu_month=float(rng.choice([0.0, 150.0])))  # the draws above, in turn
        horizon_days = float(rng.choice([30.0, 90.0]))
        args = (jobs, ECONOMICS, {}, tco, horizon_days, 3, {"a100": 6, "h100": 6})
        answered += any(j.release_s for j in jobs) and fleet_brute_force(*args, options_of=released_options) is not None
    assert answered >= 4


def test_list_schedule_waits_for_a_release() -> None:
    # two 4-GPU jobs on 4 GPUs: the second, released on day 3, starts on day 5 after the first
    assert list_schedule([0, 1], ["h100"] * 2, [4, 4], [5.0, 2.0], {"h100": 4}, [0.0, 3.0]) == [0.0, 5.0]
    # on 8 GPUs it starts at its release, not at 0
    assert list_schedule([0, 1], ["h100"] * 2, [4, 4], [5.0, 2.0], {"h100": 8}, [0.0, 3.0]) == [0.0, 3.0]


def test_a_job_that_cannot_fit_between_its_release_and_deadline_is_named_with_both() -> None:
    table = candidate_table("late", ["h100"], [4], [5 * DAY], [1920.0], [True])
    job = JobCandidates("late", table, deadline_s=20 * DAY, release_s=17 * DAY)
    with pytest.raises(InfeasiblePlan) as caught:
        solve_portfolio([job], {"h100": 4})
    answer = caught.value
    assert answer.constraint is Constraint.DEADLINE and answer.job == "late"
    assert "it starts on day 17 at the earliest (start_after_days) and must end by day 20" in answer.detail
    assert "deadline_days, from day 0): 3.0 days" in answer.detail
    assert answer.fix == "set deadline_days to 22 or more, or start_after_days to 15 or less"
    with pytest.raises(InfeasiblePlan, match="start_after_days"):
        size_fleet([job], ECONOMICS, 30)
    with pytest.raises(InfeasiblePlan, match=r"released on day 25 \(start_after_days\), not before its deadline_days"):
        solve_portfolio([replace(job, release_s=25 * DAY)], {"h100": 4})
    with pytest.raises(ValueError, match="release_s"):
        replace(job, release_s=-1.0)
