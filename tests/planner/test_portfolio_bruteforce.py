"""The portfolio ILP against brute force: every row per job and every order, list-scheduled.

For an objective that never falls as a job ends later (cost with owned GPUs held until the
makespan, sum of completion times), some optimal schedule is left-justified, and every
left-justified schedule is the serial list schedule of some order; so the least objective over
all rows and orders is the optimum in continuous time, which solve_portfolio must reach.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from support import SOLVERS
from test_portfolio import candidate_table

from planner.errors import InfeasiblePlan
from planner.search.ilp import TIE_BREAK_WEIGHT
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import HourlyRate
from planner.search.portfolio import solve_portfolio

DAY = 86400.0
GPUS = np.array(["a100", "h100"], dtype=object)
RENT = {"a100": 2.0, "h100": 4.0}


def small_job(rng: np.random.Generator, name: str, num_gpu_types: int) -> JobCandidates:
    """2-4 rows of 1-4 GPUs, 1-10 days; a few do not fit in memory."""
    num_rows = int(rng.integers(2, 5))
    gpu = rng.integers(0, num_gpu_types, num_rows)
    n = rng.choice([1, 2, 3, 4], num_rows)
    time_s = np.round(rng.uniform(1, 10, num_rows) * 4) / 4 * DAY  # quarter days: ties are common
    cost = n * time_s / 3600 * np.array([RENT[str(g)] for g in GPUS[gpu]]) * rng.uniform(0.9, 1.1, num_rows)
    table = candidate_table(name, GPUS[gpu], n, time_s, cost, rng.random(num_rows) < 0.9)
    deadline = float(rng.uniform(6, 20)) * DAY if rng.random() < 0.5 else None
    return JobCandidates(name, table, deadline_s=deadline)


def serial_schedule(order, gpu, n, T, inventory, release=None, after=None) -> list[float]:
    """Each job in turn at the earliest time from its release (``release``: none, day 0 for all) and
    its predecessors' ends (``after``: each job's, placed before it) its n GPUs stay free for T, found
    by sweeping the usage profile of the jobs already placed (written apart from planner's list_schedule)."""
    release = release or [0.0] * len(T)
    start: dict[int, float] = {}
    for j in order:
        placed = [k for k in start if gpu[k] == gpu[j]]
        ready = max([release[j], *(start[i] + T[i] for i in (after or {}).get(j, ()))])
        for t in sorted({ready, *(e for k in placed if (e := start[k] + T[k]) > ready)}):
            events = sorted({t, *(start[k] for k in placed), *(start[k] + T[k] for k in placed)})
            busy = (
                sum(n[k] for k in placed if start[k] <= tau < start[k] + T[k]) for tau in events if t <= tau < t + T[j]
            )
            if all(used + n[j] <= inventory[gpu[j]] for used in busy):
                start[j] = t
                break
    return [start[j] for j in range(len(order))]


def brute_force(jobs, inventory, rates, weights, horizon_s, starts: list | None = None):
    """Least objective over every row per job and every order; None when no schedule fits.
    ``starts``, if given, receives the best schedule's start times."""
    w_C, w_T = weights
    F = {g: rates[g].held_usd_per_gpu_hour for g in inventory}
    v = {g: rates[g].busy_usd_per_gpu_hour for g in inventory}
    per_job, c_ref, t_ref, finish = [], 0.0, [], []
    for job in jobs:
        t = job.table
        rows = [r for r in range(len(t)) if t.fits_memory[r] and t.num_gpus[r] <= inventory.get(t.gpu_id[r], 0)]
        finish.append(min(x for x in (job.deadline_s, horizon_s, math.inf) if x is not None))
        rows = [r for r in rows if t.time_to_train_s[r] <= finish[-1]]
        if not rows:
            return None
        per_job.append(rows)
        hours = {r: t.num_gpus[r] * t.time_to_train_s[r] / 3600 for r in rows}
        c_ref += min((F[t.gpu_id[r]] + v[t.gpu_id[r]]) * hours[r] for r in rows)
        t_ref.append(min(t.time_to_train_s[r] for r in rows))
    held_per_s = sum(count * F[g] for g, count in inventory.items()) / 3600
    best = None
    for rows in itertools.product(*per_job):
        gpu = [job.table.gpu_id[r] for job, r in zip(jobs, rows, strict=True)]
        n = [job.table.num_gpus[r] for job, r in zip(jobs, rows, strict=True)]
        T = [job.table.time_to_train_s[r] for job, r in zip(jobs, rows, strict=True)]
        busy = sum(v[g] * k * d / 3600 for g, k, d in zip(gpu, n, T, strict=True))
        for order in itertools.permutations(range(len(jobs))):
            start = serial_schedule(order, gpu, n, T, inventory)
            end = [s + d for s, d in zip(start, T, strict=True)]
            if any(e > f * (1 + 1e-12) for e, f in zip(end, finish, strict=True)):
                continue
            cost = held_per_s * max(end) + busy
            value = w_C * cost / c_ref + w_T * sum(e / r for e, r in zip(end, t_ref, strict=True))
            if best is None or value < best:
                best = value
                if starts is not None:
                    starts[:] = start
    return best


def instance(seed: int):
    rng = np.random.default_rng(seed)
    num_types = 1 + seed % 2
    jobs = [small_job(rng, f"job{j}", num_types) for j in range(int(rng.integers(2, 5)))]
    inventory = {str(g): int(rng.integers(3, 7)) for g in GPUS[:num_types]}
    rates = {g: HourlyRate(float(rng.uniform(0.5, 2.0)), float(rng.choice([0.0, 0.1, 0.3]))) for g in inventory}
    horizon_s = float(rng.uniform(10, 30)) * DAY if rng.random() < 0.3 else None
    return jobs, inventory, rates, horizon_s


WEIGHTS = {"cost": (1.0, TIE_BREAK_WEIGHT), "time": (TIE_BREAK_WEIGHT, 1.0), "mix": (0.4, 0.6)}


@pytest.mark.parametrize("seed", range(12))
def test_portfolio_optimum_equals_brute_force_over_rows_and_orders(seed: int) -> None:
    jobs, inventory, rates, horizon_s = instance(seed)
    for k, (objective, weights) in enumerate(WEIGHTS.items()):
        expected = brute_force(jobs, inventory, rates, weights, horizon_s)
        options = dict(rates=rates, cost_weight=0.4, horizon_s=horizon_s, solver=SOLVERS[(seed + k) % len(SOLVERS)])
        if expected is None:
            with pytest.raises(InfeasiblePlan):
                solve_portfolio(jobs, inventory, objective, **options)
            continue
        solution = solve_portfolio(jobs, inventory, objective, **options)
        assert solution.exact
        assert solution.objective_value == pytest.approx(expected, rel=1e-6), objective
        check_schedule(jobs, inventory, solution, horizon_s)
        # The slotted approximation (many jobs), compacted: a valid schedule, never better.
        try:
            slotted = solve_portfolio(jobs, inventory, objective, exact=False, num_slots=6, **options)
        except InfeasiblePlan:
            assert horizon_s is not None  # slots round durations up: a tight horizon may be missed
            continue
        assert not slotted.exact and slotted.objective_value >= expected * (1 - 1e-6)
        check_schedule(jobs, inventory, slotted, horizon_s)


def check_schedule(jobs, inventory, solution, horizon_s) -> None:
    """No type over its inventory at any start, every job in time, and none could start earlier
    alone in the gap before it (it starts at 0 or as some job of its type ends)."""
    a = solution.assignments
    for x in a:
        running = [y for y in a if y.gpu_id == x.gpu_id and y.start_s <= x.start_s < y.end_s]
        assert sum(y.num_gpus for y in running) <= inventory[x.gpu_id]
        job = next(job for job in jobs if job.name == x.job)
        assert x.end_s <= min(t for t in (job.deadline_s, horizon_s, math.inf) if t is not None) * (1 + 1e-9)
        assert x.start_s == 0 or any(y.end_s == pytest.approx(x.start_s) for y in a if y.gpu_id == x.gpu_id)
    assert solution.makespan_s == max(x.end_s for x in a)


def test_seeded_cases_cover_infeasible_and_sequenced_cases() -> None:
    """The seeds above are not all easy: some are infeasible, the best schedule of some others
    starts a job after another ends."""
    infeasible = sequenced = 0
    for seed in range(12):
        jobs, inventory, rates, horizon_s = instance(seed)
        starts: list[float] = []
        if brute_force(jobs, inventory, rates, WEIGHTS["cost"], horizon_s, starts) is None:
            infeasible += 1
        sequenced += any(t > 0 for t in starts)
    assert infeasible >= 1 and sequenced >= 3


def test_the_slotted_model_stops_at_its_time_limit_with_a_valid_schedule(monkeypatch) -> None:
    """Review s35: the 18-job bench case spent 51-135 s proving an optimum 0.6 % below its 30 s
    incumbent. Under SLOTTED_TIME_LIMIT_S the incumbent is taken (its gap said), and where even
    that limit ends before any solution it searches on up to SLOTTED_SEARCH_LIMIT_S (here proving
    the optimum: gap None)."""
    import planner.search.slots as slots

    rng = np.random.default_rng(7)
    jobs = [small_job(rng, f"job{j}", 2) for j in range(16)]
    inventory = {"a100": 5, "h100": 5}
    proven = solve_portfolio(jobs, inventory, "cost", exact=False, num_slots=6)
    assert proven.stopped_gap is None  # a small case proves its optimum inside the limit
    # ~0.2 s proves it on this 2-core machine: by 0.02-0.1 s the incumbent is taken, its gap said
    # (the first of those that stops: under load 0.02 s can end before HiGHS holds the warm start);
    # at 1e-6 s none exists yet, and the search goes on to the optimum (gap None)
    gaps = []
    for limit in (0.02, 0.05, 0.1, 1e-6):
        monkeypatch.setattr(slots, "SLOTTED_TIME_LIMIT_S", limit)
        stopped = solve_portfolio(jobs, inventory, "cost", exact=False, num_slots=6)
        check_schedule(jobs, inventory, stopped, None)
        gaps.append(stopped.stopped_gap)
    assert any(gap is not None and gap > 0 for gap in gaps[:3]), gaps
    assert gaps[3] is None


def test_a_stopped_solve_is_worded_with_its_gap() -> None:
    from types import SimpleNamespace

    from ui.render_portfolio import model_words

    assert model_words(SimpleNamespace(exact=True, stopped_gap=None)) == "exact model"
    assert model_words(SimpleNamespace(exact=False, stopped_gap=None)) == "slotted approximation: many jobs"
    words = model_words(SimpleNamespace(exact=False, stopped_gap=0.039))
    assert words.endswith("the solver stopped at its time limit, within 3.9% of a lower bound on every schedule")
    lanes = model_words(SimpleNamespace(exact=False, stopped_gap=0.0103, lanes=True))
    assert (
        lanes == "many jobs: one after another in fixed lanes of GPUs, within 1.0% of a lower bound on every schedule"
    )
