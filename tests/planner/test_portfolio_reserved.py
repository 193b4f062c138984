"""A portfolio's rented types under a reserved price kind (session 44): reserved for whole terms, a
pool of q GPUs paid every hour of the terms covering the span, not rented by the job-hour at a rate
only a term buys; the totals against the term arithmetic written out, and the ILP's optimum against
enumeration over rows, orders and pool sizes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from support import SOLVERS
from test_portfolio import candidate_table
from test_portfolio_bruteforce import WEIGHTS, serial_schedule

from planner.catalog.terms import term_billing
from planner.errors import InfeasiblePlan
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import HourlyRate
from planner.search.portfolio import solve_portfolio
from planner.search.reserved import ReservedPrices
from planner.units import HOURS_PER_YEAR

DAY = 86400.0


def reserved_1y(rates: dict[str, float], unit: dict[str, int] | None = None) -> ReservedPrices:
    term = term_billing("reserved-1y")
    assert term is not None
    return ReservedPrices("reserved-1y", term, rates, unit or {})


def job(rng: np.random.Generator, name: str, gpus: tuple[str, ...]) -> JobCandidates:
    """2-4 rows of 1-4 GPUs, 1-10 days, on ``gpus``; rent at $2 (a100) or $4 (h100) per GPU-hour."""
    num_rows = int(rng.integers(2, 5))
    gpu = np.array([gpus[i] for i in rng.integers(0, len(gpus), num_rows)], dtype=object)
    n = rng.choice([1, 2, 3, 4], num_rows)
    time_s = np.round(rng.uniform(1, 10, num_rows) * 4) / 4 * DAY
    cost = n * time_s / 3600 * np.where(gpu == "h100", 4.0, 2.0)
    deadline = float(rng.uniform(8, 20)) * DAY if rng.random() < 0.5 else None
    return JobCandidates(
        name, candidate_table(name, gpu, n, time_s, cost, np.ones(num_rows, bool)), deadline_s=deadline
    )


def peak(assignments, gpu: str) -> int:
    """The most GPUs of ``gpu`` in use at once (at some job's start), written apart from planner's."""
    mine = [a for a in assignments if a.gpu_id == gpu]
    return max((sum(b.num_gpus for b in mine if b.start_s <= a.start_s < b.end_s) for a in mine), default=0)


@pytest.mark.parametrize("seed", range(6))
def test_a_reserved_portfolio_bills_held_gpus_the_reserved_terms_and_busy_power(seed: int) -> None:
    """Owned a100 (F $1.1 held, v $0.3 busy) beside h100 rented at reserved-1y ($3.2, unit 2): the
    total billed is the a100 held until the makespan and busy, plus the h100 reserved (the most in
    use at once, whole units) for every hour of one year, and nothing per busy h100 hour."""
    rng = np.random.default_rng(seed)
    jobs = [job(rng, f"job{j}", ("a100", "h100")) for j in range(3)]
    inventory = {"a100": 4, "h100": 8}
    rates = {"a100": HourlyRate(1.1, 0.3)}
    try:
        s = solve_portfolio(
            jobs,
            inventory,
            "cost",
            rates=rates,
            rented=frozenset({"h100"}),
            reserved=reserved_1y({"h100": 3.2}, {"h100": 2}),
            solver=SOLVERS[seed % len(SOLVERS)],
        )
    except InfeasiblePlan:
        pytest.skip("no schedule fits this seed's deadlines")
    hours = {a.job: a.num_gpus * (a.end_s - a.start_s) / 3600 for a in s.assignments}
    on_h100 = [a for a in s.assignments if a.gpu_id == "h100"]
    held = 4 * 1.1 * s.makespan_s / 3600 + sum(0.3 * hours[a.job] for a in s.assignments if a.gpu_id == "a100")
    q = 2 * math.ceil(peak(s.assignments, "h100") / 2)
    assert q <= 8
    assert s.billed_usd == pytest.approx(held + q * 3.2 * HOURS_PER_YEAR * 1)
    for a in on_h100:  # its share of the term: the reserved rate by its hours
        assert a.cost_usd == pytest.approx(3.2 * hours[a.job])
    if on_h100:
        (r,) = s.reserved
        assert (r.gpu_id, r.num_gpus, r.terms, r.term_years, r.kind) == ("h100", q, 1, 1, "reserved-1y")
        assert r.cost_usd == pytest.approx(q * 3.2 * HOURS_PER_YEAR)
        assert r.used_usd == pytest.approx(sum(a.cost_usd for a in on_h100))
    else:
        assert s.reserved == ()


def brute_force(jobs, cap: int, unit: int, rate: float, weights, horizon_s, after=None):
    """Least objective over every row per job, every order and every pool q (whole units up to
    ``cap``) of one reserved type "h100": w_C q F_r / C_ref + w_T sum_j E_j / T_ref,j, F_r = rate x
    the hours of the 1-year terms covering the span (the horizon, else twice the fastest rows run
    one after another, from the latest head), C_ref = sum_j min_c of n_c T_c at F_r spread over the
    span. ``after``: job -> its predecessors, each listed before it (P: only the orders that respect it)."""
    w_C, w_T = weights
    after = after or {}
    rows, finish = [], []
    for j in jobs:
        t = j.table
        finish.append(min(x for x in (j.deadline_s, horizon_s, math.inf) if x is not None))
        rows.append([r for r in range(len(t)) if t.num_gpus[r] <= cap and t.time_to_train_s[r] <= finish[-1]])
        if not rows[-1]:
            return None
    fastest = [min(j.table.time_to_train_s[r] for r in rs) for j, rs in zip(jobs, rows, strict=True)]
    head = [0.0] * len(jobs)
    for j in range(len(jobs)):  # predecessors first
        head[j] = max([0.0, *(head[i] + fastest[i] for i in after.get(j, ()))])
    span_s = horizon_s or 2 * sum(fastest) + max(head)
    terms = max(math.ceil(span_s / 3600 / HOURS_PER_YEAR), 1)
    per_gpu = rate * terms * HOURS_PER_YEAR
    finish = [min(f, terms * HOURS_PER_YEAR * 3600) for f in finish]
    c_ref = sum(min(per_gpu / (span_s / 3600) * j.table.num_gpus[r] * j.table.time_to_train_s[r] / 3600 for r in rs)
                for j, rs in zip(jobs, rows, strict=True))  # fmt: skip
    t_ref = [min(j.table.time_to_train_s[r] for r in rs) for j, rs in zip(jobs, rows, strict=True)]
    best = None
    for picked in itertools.product(*rows):
        n = [j.table.num_gpus[r] for j, r in zip(jobs, picked, strict=True)]
        T = [j.table.time_to_train_s[r] for j, r in zip(jobs, picked, strict=True)]
        for q, order in itertools.product(range(unit, cap + 1, unit), itertools.permutations(range(len(jobs)))):
            if max(n) > q or any(order.index(i) > order.index(j) for j, ps in after.items() for i in ps):
                continue
            start = serial_schedule(order, ["h100"] * len(jobs), n, T, {"h100": q}, after=after)
            end = [s + d for s, d in zip(start, T, strict=True)]
            if any(e > f * (1 + 1e-12) for e, f in zip(end, finish, strict=True)):
                continue
            value = w_C * q * per_gpu / c_ref + w_T * sum(e / r for e, r in zip(end, t_ref, strict=True))
            best = value if best is None else min(best, value)
    return best


@pytest.mark.parametrize("seed", range(8))
def test_the_reserved_pool_optimum_equals_enumeration(seed: int) -> None:
    """2-3 jobs on one reserved type: the exact model's objective is enumeration's, under each
    objective's weights; the slotted model's schedule is valid and never better."""
    rng = np.random.default_rng(100 + seed)
    jobs = [job(rng, f"job{j}", ("h100",)) for j in range(2 + seed % 2)]
    cap, unit = int(rng.integers(4, 8)), 1 + seed % 2
    horizon_s = float(rng.uniform(12, 30)) * DAY if seed % 3 == 0 else None
    prices = reserved_1y({"h100": 3.0}, {"h100": unit})
    for k, (objective, weights) in enumerate(WEIGHTS.items()):
        expected = brute_force(jobs, cap, unit, 3.0, weights, horizon_s)
        options = dict(rented=frozenset({"h100"}), reserved=prices, cost_weight=0.4, horizon_s=horizon_s)
        if expected is None:
            with pytest.raises(InfeasiblePlan):
                solve_portfolio(jobs, {"h100": cap}, objective, **options)
            continue
        s = solve_portfolio(jobs, {"h100": cap}, objective, solver=SOLVERS[(seed + k) % len(SOLVERS)], **options)
        assert s.objective_value == pytest.approx(expected, rel=1e-6), objective
        (r,) = s.reserved
        assert peak(s.assignments, "h100") <= r.num_gpus <= cap and r.num_gpus % unit == 0
        try:
            slotted = solve_portfolio(jobs, {"h100": cap}, objective, exact=False, num_slots=6, **options)
        except InfeasiblePlan:
            continue  # slots round durations up: a tight deadline may be missed
        assert slotted.objective_value >= expected * (1 - 1e-6)
        assert peak(slotted.assignments, "h100") <= slotted.reserved[0].num_gpus <= cap


def test_a_span_past_a_term_reserves_for_two_and_no_kind_reserves_nothing() -> None:
    """A 1.5-year horizon bills two 1-year terms per reserved GPU; without a reserved kind the same
    rented type is rented by its rows' own rent, as before, and nothing is reserved."""
    table = candidate_table("a", np.array(["h100"] * 2, dtype=object), [2, 4], [40 * DAY, 20 * DAY], [0.0, 0.0], [1, 1])
    table.cost_usd[:] = table.num_gpus * table.time_to_train_s / 3600 * 4.0
    jobs = [JobCandidates("a", table), JobCandidates("b", table)]
    horizon = 1.5 * HOURS_PER_YEAR * 3600
    s = solve_portfolio(
        jobs, {"h100": 4}, rented=frozenset({"h100"}), reserved=reserved_1y({"h100": 3.0}), horizon_s=horizon
    )
    (r,) = s.reserved
    assert r.terms == 2 and r.num_gpus == 2  # two 2-GPU rows back to back hold 2: the fewest GPUs
    assert s.billed_usd == pytest.approx(2 * 3.0 * 2 * HOURS_PER_YEAR)
    rent = solve_portfolio(jobs, {"h100": 4}, rented=frozenset({"h100"}), horizon_s=horizon)
    assert rent.reserved == () and rent.billed_usd == pytest.approx(rent.total_cost_usd)
    assert rent.total_cost_usd == pytest.approx(2 * 4 * 20 * 24 * 4.0)  # the 4-GPU rows, faster, same rent
