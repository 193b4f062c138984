"""Job dependencies (a jobs file's after; docs/ilp.md "Precedence"): S_j >= E_i for each (i, j) in P
in the portfolio's exact and slotted models and in the fleet's; the optima against enumeration over
the orders that respect P; a chain that cannot end by a job's deadline, named."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from support import SOLVERS
from test_fleet_inventory import brute_force as fleet_brute_force
from test_fleet_inventory import rent_way
from test_portfolio import ECONOMICS, candidate_table, random_job
from test_portfolio_bruteforce import WEIGHTS, instance
from test_release import brute_force, check_released, released, released_options

from planner.errors import Constraint, InfeasiblePlan
from planner.search.fleet import Holding, size_fleet
from planner.search.job_candidates import JobCandidates
from planner.search.late_band import LateOnRentRows
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
    the ways where it starts once the first ends: a rented one at once (its head, or the first's end).
    The rent rows as the fleet picks them: the first's to end by the second's deadline less the
    second's fastest row, the second's from the first's rent row's end (each as before where none fits)."""
    first, second = jobs
    horizon_s = horizon_days * DAY
    finish = min(t for t in (second.deadline_s, horizon_s) if t is not None)
    fastest = min(end for _, slot, end, _ in released_options(first, None, horizon_s, 3) if slot == 0)
    headed = [first, replace(second, release_s=fastest)]
    second_fastest = min(end for _, slot, end, _ in released_options(second, None, horizon_s, 3) if slot == 0)
    tail = min(t for t in (first.deadline_s, finish - second_fastest) if t is not None)
    rent_first = rent_way(replace(first, deadline_s=tail), horizon_s, 3, set(), released_options) or rent_way(
        first, horizon_s, 3, set(), released_options
    )
    rent_end = first.table.time_to_train_s[rent_first[0]]
    rent_second = rent_way(replace(second, release_s=rent_end), horizon_s, 3, set(), released_options) or rent_way(
        headed[1], horizon_s, 3, set(), released_options
    )

    def ends(way, job):
        row, _, end, _, held = way
        return end if held else job.release_s + job.table.time_to_train_s[row]

    def keep(combo) -> bool:
        first_end, (row, _, end, _, held) = ends(combo[0], first), combo[1]
        T = second.table.time_to_train_s[row]
        return end - T >= first_end * (1 - 1e-12) if held else max(fastest, first_end) + T <= finish * (1 + 1e-12)

    args = (headed, ECONOMICS, {}, tco, horizon_days, 3, {"a100": 6, "h100": 6})
    ways = [rent_first, rent_second]
    return fleet_brute_force(*args, rent=rent, options_of=released_options, keep=keep, rent_ways=ways)


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


def test_several_late_chains_share_a_heading_that_fits_chains() -> None:
    """Review after52 M2: two late chains were headed "2 jobs cannot run on their own", though each
    runs alone; each job's own words follow, in portfolio and fleet."""

    def job(name: str, days: float, **limits) -> JobCandidates:
        return JobCandidates(name, candidate_table(name, ["h100"], [4], [days * DAY], [1920.0], [True]), **limits)

    jobs = [
        job("pre-a", 8),
        job("sft-a", 3, deadline_s=10 * DAY, after=("pre-a",)),
        job("pre-b", 5),
        job("sft-b", 2, deadline_s=6 * DAY, after=("pre-b",)),
    ]
    for solve in (lambda: solve_portfolio(jobs, {"h100": 8}), lambda: size_fleet(jobs, ECONOMICS, 30)):
        with pytest.raises(InfeasiblePlan) as caught:
            solve()
        answer = caught.value
        assert answer.constraint is Constraint.DEADLINE and [name for name, _ in answer.jobs] == ["sft-a", "sft-b"]
        assert answer.detail.startswith(
            "2 jobs cannot end in time after the jobs they start after (after): job 'sft-a': after 'pre-a',"
        )
        assert "on their own" not in answer.detail and "job 'sft-b': after 'pre-b'" in answer.detail


def rent_chain(deadline_days: float) -> list[JobCandidates]:
    """'a' rents its cheap 10-day h100 row, or its dearer 4-day one (h100, or a100 where given), 'b'
    (3 days) after it, due by ``deadline_days``: 'b''s head is day 4."""
    a = JobCandidates(
        "a", candidate_table("a", ["h100", "h100"], [4, 8], [10 * DAY, 4 * DAY], [3840.0, 6000.0], [1, 1])
    )
    b_table = candidate_table("b", ["h100"], [4], [3 * DAY], [1152.0], [True])
    return [a, JobCandidates("b", b_table, deadline_s=deadline_days * DAY, after=("a",))]


def test_a_chain_rents_rows_that_end_it_in_time() -> None:
    """Review chain52 H1: 'a''s rent row was its cheap 10-day one (it has no deadline), so renting
    both ended 'b' on day 13 and rent only was none (and mixed, with no rent row that fits after
    another, bought GPUs where renting was cheaper: the CLI's 36x). Now 'a' rents its 4-day row."""
    solution = size_fleet(rent_chain(12), ECONOMICS, 30, num_slots=6)
    rent_only = solution.rent_only
    assert rent_only is not None and rent_only.total_cost_usd == pytest.approx(6000.0 + 1152.0)
    assert [(x.holding, x.row, x.end_s / DAY) for x in rent_only.assignments] == [
        (Holding.RENTED, 1, 4.0),
        (Holding.RENTED, 0, 7.0),
    ]
    assert solution.mixed.total_cost_usd <= rent_only.total_cost_usd and solution.rent_only_late == ()
    alone = size_fleet([rent_chain(12)[0]], ECONOMICS, 30, num_slots=6)  # no chain: its cheap 10-day row
    assert [x.row for x in alone.rent_only.assignments] == [0]


def held_only_chain() -> list[JobCandidates]:
    """As ``rent_chain(12)``, 'a''s fast row on a100, a type only bought (held_only): its rent row is
    the 10-day one, after which 'b' ends on day 13."""
    a, b = rent_chain(12)
    table = candidate_table("a", ["h100", "a100"], [4, 8], [10 * DAY, 4 * DAY], [3840.0, 6000.0], [1, 1])
    return [replace(a, table=table), b]


def test_rent_only_says_which_chain_of_rent_rows_ends_late() -> None:
    """Review after52 M3: rent only was None with no word where a chain of rent rows ends late."""
    late = size_fleet(held_only_chain(), ECONOMICS, 30, num_slots=6, held_only=frozenset({"a100"}))
    assert late.rent_only is None and late.mixed.assignments[0].holding is Holding.OWNED
    assert late.rent_only_late == (LateOnRentRows("b", ("a",), 13.0, 12.0, "deadline_days"),)
    assert late.rent_only_late[0].words() == "b (after a) ends on day 13.0, past its deadline_days of day 12"


def test_no_fleet_holds_the_chains_in_time() -> None:
    """``_no_chained_fleet``: 'a''s fast row may not be bought, and its rent row ends 'b' late, though
    each chain fits on its fastest rows."""
    caps = {"h100": 0, "a100": 0}
    with pytest.raises(InfeasiblePlan) as caught:
        size_fleet(held_only_chain(), ECONOMICS, 30, num_slots=6, max_purchase=caps, held_only=frozenset({"a100"}))
    answer = caught.value
    assert answer.constraint is Constraint.DEADLINE and answer.detail.startswith(
        "the jobs' chains (after) cannot all end by their deadlines on the GPUs this fleet may rent, reserve or buy"
    )
    assert answer.fix == "raise deadline_days or horizon_days, raise num_slots, or drop a job from an after"
