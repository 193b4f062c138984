"""The many-job portfolio's bound LB and its lanes' schedule (planner/search/lanes.py) against brute
force over every row and order: LB never above the optimum, the lanes' schedule valid and never
below it, the gap said honestly, and the slotted search cut short only where LB certifies the lanes."""

from __future__ import annotations

import numpy as np
import pytest
from support import SOLVERS, needs_highs
from test_portfolio_bruteforce import WEIGHTS, brute_force, check_schedule, instance, small_job

import planner.search.portfolio as portfolio_module
import planner.search.slots as slots_module
from planner.errors import InfeasiblePlan
from planner.search.ilp import TIE_BREAK_WEIGHT
from planner.search.lanes import LANES_GAP, RowTerms, lane_widths
from planner.search.portfolio import solve_portfolio
from planner.search.solver import new_binaries, run_solver

import pulp  # isort: skip


def answers(jobs, inventory, objective, options, slotted: bool = True):
    """solve_portfolio's many-job answer; ``slotted`` False: the slotted model finds nothing, so the
    lanes' schedule answers where it has one."""
    if slotted:
        return solve_portfolio(jobs, inventory, objective, exact=False, num_slots=6, **options)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(portfolio_module, "solve_slotted", lambda problem, solver, *args, **kwargs: (None, solver))
        return solve_portfolio(jobs, inventory, objective, exact=False, num_slots=6, **options)


@pytest.mark.parametrize("seed", range(12))
def test_the_bound_is_under_the_optimum_and_the_lanes_schedule_is_valid(seed: int) -> None:
    jobs, inventory, rates, horizon_s = instance(seed)
    for k, (objective, weights) in enumerate(WEIGHTS.items()):
        expected = brute_force(jobs, inventory, rates, weights, horizon_s)
        options = dict(rates=rates, cost_weight=0.4, horizon_s=horizon_s, solver=SOLVERS[(seed + k) % len(SOLVERS)])
        if expected is None:
            continue
        for slotted in (True, False):
            try:
                answer = answers(jobs, inventory, objective, options, slotted)
            except (InfeasiblePlan, RuntimeError):  # slots round up; lanes may miss a tight deadline
                assert horizon_s is not None or any(job.deadline_s for job in jobs)
                continue
            assert answer.lower_bound <= expected * (1 + 1e-7), (objective, slotted)
            assert answer.objective_value >= expected * (1 - 1e-6)
            assert answer.lanes or slotted
            check_schedule(jobs, inventory, answer, horizon_s)
            if answer.stopped_gap is not None:
                gap = (answer.objective_value - answer.lower_bound) / answer.objective_value
                assert answer.stopped_gap == pytest.approx(max(gap, 0.0), abs=1e-12)


def test_seeded_lanes_cases_answer_and_some_bounds_are_tight() -> None:
    """The cases above are not empty: the lanes answer most of them, and LB meets the optimum in some
    (one job per type, or jobs that must run one after another)."""
    answered = tight = 0
    for seed in range(12):
        jobs, inventory, rates, horizon_s = instance(seed)
        expected = brute_force(jobs, inventory, rates, WEIGHTS["cost"], horizon_s)
        if expected is None:
            continue
        try:
            answer = answers(jobs, inventory, "cost", dict(rates=rates, horizon_s=horizon_s), slotted=False)
        except (InfeasiblePlan, RuntimeError):
            continue
        answered += 1
        tight += answer.lower_bound == pytest.approx(expected, rel=1e-6)
    assert answered >= 6 and tight >= 2, (answered, tight)


def test_the_bound_of_a_hand_case() -> None:
    """Two jobs of 8 GPU-days on 4 GPUs, each on 4 GPUs for 2 days or 2 GPUs for 4 days, held at
    1 per GPU-hour: the GPU-days bound the makespan at 4 days, which both on 2 GPUs side by side
    reach; LB is that makespan's held cost, 4 x 24 x 4 = 384, over C_ref = 2 x 8 x 24 = 384, plus the
    time terms at epsilon."""
    from test_portfolio import candidate_table

    from planner.search.job_candidates import JobCandidates
    from planner.search.ownership import HourlyRate

    day = 86400.0
    table = candidate_table("x", np.array(["h100"] * 2, dtype=object), np.array([4, 2]), np.array([2, 4]) * day,
                            np.array([100.0, 100.0]), np.ones(2, bool))  # fmt: skip
    jobs = [JobCandidates(f"job{j}", table) for j in range(2)]
    rates = {"h100": HourlyRate(1.0, 0.0)}
    answer = solve_portfolio(jobs, {"h100": 4}, "cost", rates=rates, exact=False)
    # LB's time terms are at the rows' own times (1 + 1 on 4 GPUs); the answer's at their ends, 1 + 2 one
    # after another on 4 GPUs (2 + 2 side by side on 2)
    assert answer.lower_bound == pytest.approx(1.0 + 2 * TIE_BREAK_WEIGHT, rel=1e-9)
    assert answer.objective_value == pytest.approx(1.0 + 3 * TIE_BREAK_WEIGHT, rel=1e-9)
    assert answer.makespan_s == pytest.approx(4 * day)
    assert answer.stopped_gap is None or answer.stopped_gap == pytest.approx(0.0, abs=1e-5)


@pytest.mark.parametrize("num_jobs", [6, 8])
def test_the_slotted_search_is_cut_short_only_where_the_lanes_are_certified(monkeypatch, num_jobs: int) -> None:
    """Where LB certifies the lanes' schedule (within LANES_GAP) the slotted model runs for
    CERTIFIED_SLOTTED_LIMIT_S; elsewhere for SLOTTED_TIME_LIMIT_S, as before; the better answers."""
    limits: list[float] = []
    seen: list[tuple[float, object]] = []
    solve, lanes = slots_module.run_solver, portfolio_module._lanes

    def record(problem, solver, time_limit_s, *args, **kwargs):
        limits.append(time_limit_s)
        return solve(problem, solver, time_limit_s, *args, **kwargs)

    def keep(*args, **kwargs):
        seen.append(lanes(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(slots_module, "run_solver", record)
    monkeypatch.setattr(portfolio_module, "_lanes", keep)
    rng = np.random.default_rng(7)  # every job runs alone (some seeds leave one without a row that fits)
    jobs = [small_job(rng, f"job{j}", 2) for j in range(num_jobs)]
    answer = solve_portfolio(jobs, {"a100": 5, "h100": 5}, "cost", exact=False, num_slots=6)
    ((bound, by_lanes),) = seen
    certified = by_lanes is not None and by_lanes.objective_value - bound <= LANES_GAP * by_lanes.objective_value
    assert limits[0] == (slots_module.CERTIFIED_SLOTTED_LIMIT_S if certified else slots_module.SLOTTED_TIME_LIMIT_S)
    assert answer.lower_bound == bound
    assert answer.objective_value <= (by_lanes.objective_value if by_lanes else np.inf)


def test_lanes_halve_each_type_down_to_an_eighth() -> None:
    assert lane_widths({"h100": 256, "a100": 6}) == [
        ("h100", 256), ("h100", 128), ("h100", 128), ("h100", 64), ("h100", 64), ("h100", 32), ("h100", 32),
        ("a100", 6), ("a100", 3), ("a100", 3), ("a100", 1), ("a100", 1),
    ]  # fmt: skip
    assert RowTerms.__dataclass_fields__.keys() >= {"k", "held", "deadline", "smith"}


@needs_highs
def test_a_target_stops_highs_at_the_first_schedule_under_it() -> None:
    """``target``: HiGHS stops once its incumbent is at or under it, proven or not."""
    rng = np.random.default_rng(0)
    problem = pulp.LpProblem("knapsack", pulp.LpMinimize)
    x = new_binaries(problem, "x", 60)
    value = rng.integers(10, 100, 60)
    problem += pulp.lpSum(-float(value[i]) * x[i] for i in range(60))
    for _ in range(5):
        weight = rng.integers(10, 100, 60)
        problem += pulp.lpSum(float(weight[i]) * x[i] for i in range(60)) <= float(weight.sum() / 2)
    assert run_solver(problem, "highs", None, accept_incumbent=True, target=-100.0) == (True, "highs")
    assert pulp.value(problem.objective) <= -100.0


def test_a_callers_time_limit_caps_the_bound_and_the_lanes() -> None:
    """Review s45 L5: the two MIPs ran to their own limits (5 s and 3 s) past a caller's shorter one."""
    from planner.search.lanes import BOUND_TIME_LIMIT_S, LANES_TIME_LIMIT_S, capped

    assert capped(BOUND_TIME_LIMIT_S, None) == BOUND_TIME_LIMIT_S and capped(LANES_TIME_LIMIT_S, 0.5) == 0.5
    assert capped(LANES_TIME_LIMIT_S, 60.0) == LANES_TIME_LIMIT_S
