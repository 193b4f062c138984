"""Job dependencies (a jobs file's after; docs/ilp.md "Precedence"): S_j >= E_i for each (i, j) in P
in the portfolio's exact and slotted models and in the fleet's; the optima against enumeration over
the orders that respect P; a chain that cannot end by a job's deadline, named."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from support import SOLVERS
from test_fleet_inventory import brute_force as fleet_brute_force
from test_portfolio import ECONOMICS, candidate_table, random_job
from test_portfolio_bruteforce import WEIGHTS, instance
from test_release import brute_force, check_released, released, released_options

from planner.errors import Constraint, InfeasiblePlan
from planner.search.fleet import Holding, size_fleet
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import TcoAssumptions
from planner.search.portfolio import solve_portfolio
from planner.search.precedence import cycle_of
from planner.search.slots import list_schedule

DAY = 86400.0


def chained(jobs: list[JobCandidates], rng: np.random.Generator) -> list[JobCandidates]:
    """A random P: each job after each earlier one with probability 0.5 (so no cycle)."""
    return [replace(job, after=tuple(o.name for o in jobs[:j] if rng.random() < 0.5)) for j, job in enumerate(jobs)]


def indices(jobs: list[JobCandidates]) -> dict[int, list[int]]:
    index = {job.name: j for j, job in enumerate(jobs)}
    return {j: [index[name] for name in job.after] for j, job in enumerate(jobs)}


def check_after(jobs, inventory, solution, horizon_s) -> None:
    """check_released's checks, and no job before its predecessors end."""
    check_released(jobs, inventory, solution, horizon_s)
    by_name = {a.job: a for a in solution.assignments}
    for job in jobs:
        for name in job.after:
            assert by_name[job.name].start_s >= by_name[name].end_s * (1 - 1e-12), (job.name, name)


@pytest.mark.parametrize("seed", range(10))
def test_a_portfolio_with_after_equals_enumeration(seed: int) -> None:
    jobs, inventory, rates, horizon_s = instance(seed)
    rng = np.random.default_rng(5600 + seed)
    jobs = chained(released(jobs, rng) if seed % 2 else jobs, rng)
    for k, (objective, weights) in enumerate(WEIGHTS.items()):
        expected = brute_force(jobs, inventory, rates, weights, horizon_s, indices(jobs))
        options = dict(rates=rates, cost_weight=0.4, horizon_s=horizon_s, solver=SOLVERS[(seed + k) % len(SOLVERS)])
        if expected is None:
            with pytest.raises(InfeasiblePlan):
                solve_portfolio(jobs, inventory, objective, **options)
            continue
        solution = solve_portfolio(jobs, inventory, objective, **options)
        assert solution.exact and solution.objective_value == pytest.approx(expected, rel=1e-6), objective
        check_after(jobs, inventory, solution, horizon_s)
        try:  # the slotted approximation (many jobs), compacted: valid, never better
            slotted = solve_portfolio(jobs, inventory, objective, exact=False, num_slots=6, **options)
        except InfeasiblePlan:
            assert horizon_s is not None or any(j.deadline_s for j in jobs)  # slots round durations up
            continue
        assert slotted.objective_value >= expected * (1 - 1e-6)
        check_after(jobs, inventory, slotted, horizon_s)


def test_the_seeded_chains_bind() -> None:
    """P above moves some optimum, and leaves some instance with an answer (else the test above could
    pass without it)."""
    moved = answered = 0
    for seed in range(10):
        jobs, inventory, rates, horizon_s = instance(seed)
        rng = np.random.default_rng(5600 + seed)
        jobs = chained(released(jobs, rng) if seed % 2 else jobs, rng)
        free = brute_force(jobs, inventory, rates, WEIGHTS["cost"], horizon_s)
        bound = brute_force(jobs, inventory, rates, WEIGHTS["cost"], horizon_s, indices(jobs))
        moved += free != bound
        answered += bound is not None and any(job.after for job in jobs)
    assert moved >= 4 and answered >= 5


def fleet_chain(seed: int):
    """Two jobs, the second after the first, its deadline (if any) past the first's; a fleet over 3 slots."""
    rng = np.random.default_rng(5700 + seed)
    first, second = (random_job(rng, f"job{j}", int(rng.integers(3, 6))) for j in range(2))
    late = None if rng.random() < 0.3 else (first.deadline_s or 0.0) + float(rng.uniform(6, 20)) * DAY
    second = replace(second, after=(first.name,), deadline_s=late)
    tco = TcoAssumptions(hosting_usd_per_gpu_month=float(rng.choice([0.0, 150.0])))
    return [first, second], tco, float(rng.choice([60.0, 90.0]))


def chain_brute_force(jobs, tco, horizon_days, rent=True):
    """The fleet's enumeration with the second job from its head (the first's fastest row that ends
    in time, which no schedule beats: its options and rent row start there at the earliest) and only
    the ways where it starts once the first ends: a rented one at once (its head, or the first's end)."""
    first, second = jobs
    horizon_s = horizon_days * DAY
    fastest = min(end - 0.0 for _, slot, end, _ in released_options(first, None, horizon_s, 3) if slot == 0)
    headed = [first, replace(second, release_s=fastest)]
    finish = min(t for t in (second.deadline_s, horizon_s) if t is not None)

    def ends(way, job):
        row, _, end, _, held = way
        return end if held else job.release_s + job.table.time_to_train_s[row]

    def keep(combo) -> bool:
        first_end, (row, _, end, _, held) = ends(combo[0], first), combo[1]
        T = second.table.time_to_train_s[row]
        return end - T >= first_end * (1 - 1e-12) if held else max(fastest, first_end) + T <= finish * (1 + 1e-12)

    args = (headed, ECONOMICS, {}, tco, horizon_days, 3, {"a100": 6, "h100": 6})
    return fleet_brute_force(*args, rent=rent, options_of=released_options, keep=keep)


@pytest.mark.parametrize("seed", range(8))
def test_a_fleet_with_after_equals_enumeration(seed: int) -> None:
    jobs, tco, horizon_days = fleet_chain(seed)
    options = dict(num_slots=3, max_purchase={"a100": 6, "h100": 6})
    mixed = chain_brute_force(jobs, tco, horizon_days)
    if mixed is None:  # the chain cannot end by the second job's deadline
        with pytest.raises(InfeasiblePlan):
            size_fleet(jobs, ECONOMICS, horizon_days, tco, **options)
        return
    solution = size_fleet(jobs, ECONOMICS, horizon_days, tco, **options)
    assert solution.mixed.total_cost_usd == pytest.approx(mixed, rel=1e-9)
    buy_only = chain_brute_force(jobs, tco, horizon_days, rent=False)
    assert (solution.buy_only is None) == (buy_only is None)
    if buy_only is not None:
        assert solution.buy_only.total_cost_usd == pytest.approx(buy_only, rel=1e-9)
    for plan in (p for p in (solution.mixed, solution.rent_only, solution.buy_only) if p is not None):
        first, second = plan.assignments
        assert second.start_s >= first.end_s * (1 - 1e-12)
        assert second.end_s <= min(t for t in (jobs[1].deadline_s, horizon_days * DAY) if t) * (1 + 1e-12)
        if second.holding is Holding.RENTED:  # rented at once: when the first ends
            assert second.start_s == pytest.approx(first.end_s)


def test_the_seeded_fleet_chains_answer_and_bind() -> None:
    """Most fleet seeds above have an answer, and P moves some mixed optimum."""
    answered = moved = 0
    for seed in range(8):
        jobs, tco, horizon_days = fleet_chain(seed)
        bound = chain_brute_force(jobs, tco, horizon_days)
        free = [jobs[0], replace(jobs[1], after=())]
        args = (free, ECONOMICS, {}, tco, horizon_days, 3, {"a100": 6, "h100": 6})
        answered += bound is not None
        moved += bound is not None and bound != fleet_brute_force(*args, options_of=released_options)
    assert answered >= 5 and moved >= 2


def test_list_schedule_waits_for_a_predecessor_listed_after_it() -> None:
    # job 1 after job 0, on other GPUs: it starts when job 0 ends, even listed first
    assert list_schedule([1, 0], ["h100", "a100"], [4, 4], [5.0, 2.0], {"h100": 4, "a100": 4}, None, [[], [0]]) == [
        0.0,
        5.0,
    ]


def test_a_chain_past_a_deadline_is_named_in_portfolio_and_fleet() -> None:
    def job(name: str, days: float, **limits) -> JobCandidates:
        return JobCandidates(name, candidate_table(name, ["h100"], [4], [days * DAY], [1920.0], [True]), **limits)

    jobs = [job("ablation", 2), job("pretrain", 8, after=("ablation",)), job("sft", 3, deadline_s=12 * DAY)]
    jobs[2] = replace(jobs[2], after=("pretrain",))
    for solve in (lambda: solve_portfolio(jobs, {"h100": 8}), lambda: size_fleet(jobs, ECONOMICS, 30)):
        with pytest.raises(InfeasiblePlan) as caught:
            solve()
        answer = caught.value
        assert answer.constraint is Constraint.DEADLINE and answer.job == "sft"
        assert answer.detail == (
            "job 'sft': after 'pretrain', which ends on day 10.0 at the earliest (the chain ablation -> pretrain"
            " -> sft); 'sft' needs 3.0 days and must end by day 12 (deadline_days, from day 0)"
        )
        assert answer.fix == "set deadline_days to 13 or more, or drop 'pretrain' from after"
    assert solve_portfolio([*jobs[:2], replace(jobs[2], deadline_s=13 * DAY)], {"h100": 8}).makespan_s == 13 * DAY


def test_cycle_of_names_the_jobs_in_running_order() -> None:
    assert cycle_of({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "c", "b", "a"]
    assert cycle_of({"a": [], "b": ["a"], "c": ["a", "b"]}) is None
    with pytest.raises(ValueError, match="cycle"):
        solve_portfolio(
            [
                JobCandidates(n, candidate_table(n, ["h100"], [4], [DAY], [1.0], [True]), after=(o,))
                for n, o in ("ab", "ba")
            ],
            {"h100": 4},
        )
