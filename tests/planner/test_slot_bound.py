"""The slotted portfolio model's greedy start and bound (planner/search/slot_bound.py), its slots
past the span, and the solvers' warm start: reductions that must leave the optimum where it was."""

from __future__ import annotations

import itertools

import numpy as np
import pulp
import pytest
from support import SOLVERS, needs_highs
from test_portfolio import random_job

import planner.search.portfolio as portfolio_module
import planner.search.portfolio_slotted as slotted_module
import planner.search.slots as slots_module
from planner.search.ownership import HourlyRate
from planner.search.portfolio import solve_portfolio
from planner.search.slot_bound import Bounded, SlottedInstance, bounded_options, greedy_schedule, prunable
from planner.search.slots import SlotOptions, held_slots, usage_constraints
from planner.search.solver import new_binaries, run_solver

DAY = 86400.0


def slotted_optimum(monkeypatch, jobs, inventory, **options) -> float:
    """The slotted ILP's own optimum (before the list schedule compacts it)."""
    seen: list[float] = []
    solve = portfolio_module.run_solver

    def keep(problem, *args, **kwargs):
        result = solve(problem, *args, **kwargs)
        seen.append(float(pulp.value(problem.objective)))
        return result

    monkeypatch.setattr(portfolio_module, "run_solver", keep)  # under a time limit given
    monkeypatch.setattr(slots_module, "run_solver", keep)  # the slotted model's own (slots.solve_slotted)
    solve_portfolio(jobs, inventory, exact=False, **options)
    return seen[-1]


# Owned GPUs, held only (the makespan is the cost); held and busy; one type rented (its rows' rent)
PRICES = (
    {},
    {"rates": {"a100": HourlyRate(1.0, 1.0), "h100": HourlyRate(1.0, 3.0)}},
    {"rates": {"a100": HourlyRate(0.5, 1.0)}, "rented": frozenset({"h100"})},
)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("seed", range(6))
def test_the_bound_and_the_start_leave_the_slotted_optimum_where_it_was(monkeypatch, seed: int, solver: str) -> None:
    rng = np.random.default_rng(700 + seed)
    jobs = [random_job(rng, f"job{j}", 12) for j in range(6)]
    inventory = {"a100": 6, "h100": 4}
    common = {
        "objective": ("cost", "time", "mix")[seed % 3],
        "horizon_s": 40 * DAY,
        "num_slots": 12,
        "solver": solver,
        **PRICES[seed // 2],
    }
    bounded = slotted_optimum(monkeypatch, jobs, inventory, **common)
    # Review s31 (T2): the bound alone is toggled; prune=False would also drop the Pareto row pruning,
    # which moves the objective's scale C_ref.
    keep_all = lambda instance: Bounded(np.ones(len(instance.job), dtype=bool), None, 0.0)  # noqa: E731
    monkeypatch.setattr(slotted_module, "bounded_options", keep_all)
    unbounded = slotted_optimum(monkeypatch, jobs, inventory, **common)
    assert bounded == pytest.approx(unbounded, rel=1e-7)


def instance_of(jobs: list[list[tuple[int, int, int, float, float]]], inventory, num_slots: int, held: float):
    """Options (start slot, busy slots, GPUs, end day, cost) per job, all on type "a"."""
    rows = [(j, *o) for j, options in enumerate(jobs) for o in options]
    column = lambda k, dtype=float: np.array([r[k] for r in rows], dtype=dtype)  # noqa: E731
    return SlottedInstance(
        job=column(0, int),
        gpu=np.array(["a"] * len(rows), dtype=object),
        num_gpus=column(3, int),
        start_slot=column(1, int),
        busy_slots=column(2, int),
        end_days=column(4),
        gpu_days=column(3) * column(2),  # a day per slot, held throughout
        cost=column(5),
        held=held,
        inventory=inventory,
        num_slots=num_slots,
        num_jobs=len(jobs),
    )


def test_the_greedy_schedule_fits_the_slots_and_the_bound_keeps_it() -> None:
    # Two jobs of 4 GPUs on 4: one must wait for the other. Each may start in slot 0, 2 or 5.
    options = [[(s, 2, 4, s + 2.0, 0.1 * s) for s in (0, 2, 5)] for _ in range(2)]
    instance = instance_of(options, {"a": 4}, num_slots=8, held=1.0)
    picked, value = greedy_schedule(instance)
    starts = sorted(int(instance.start_slot[o]) for o in picked)
    assert starts == [0, 2]  # back to back, never together
    assert value == pytest.approx(instance.objective(picked)) == pytest.approx(4.0 + 0.2)
    drop = prunable(instance, value)
    assert not drop[picked].any()
    assert drop[instance.start_slot == 5].all()  # ends on day 7: a schedule costs at least 7 > 4.2
    bounded = bounded_options(instance)
    assert bounded.keep.sum() == 4 and bounded.makespan_days == pytest.approx(4.0)
    kept = np.flatnonzero(bounded.keep)
    assert sorted(int(instance.start_slot[kept[i]]) for i in bounded.start) == [0, 2]


def random_instance(rng: np.random.Generator) -> SlottedInstance:
    """3-4 jobs of 4-6 options on two types of 4 and 6 GPUs, 6 slots."""
    options = []
    for j in range(int(rng.integers(3, 5))):
        for _ in range(int(rng.integers(4, 7))):
            start, busy = int(rng.integers(0, 6)), int(rng.integers(1, 4))
            options.append((j, "ab"[int(rng.integers(0, 2))], int(rng.choice([1, 2, 4])), start, busy))
    job, gpu, n, start, busy = (np.array(column) for column in zip(*options, strict=True))
    end = start + busy - rng.uniform(0, 0.9, len(job))
    return SlottedInstance(
        job=job,
        gpu=gpu.astype(object),
        num_gpus=n,
        start_slot=start,
        busy_slots=busy,
        end_days=end,
        gpu_days=n * (end - start),
        cost=rng.uniform(0, 2, len(job)),
        held=float(rng.uniform(0.2, 2)),
        inventory={"a": 4, "b": 6},
        num_slots=6,
        num_jobs=int(job.max()) + 1,
    )


def fits(instance: SlottedInstance, picked) -> bool:
    """Every slot's GPUs of each type within its count (written apart from slot_bound's)."""
    for g, limit in instance.inventory.items():
        for t in range(12):
            used = sum(
                instance.num_gpus[o]
                for o in picked
                if instance.gpu[o] == g
                and instance.start_slot[o] <= t < instance.start_slot[o] + instance.busy_slots[o]
            )
            if used > limit:
                return False
    return True


@pytest.mark.parametrize("seed", range(12))
def test_the_bound_drops_no_option_of_a_schedule_at_or_under_the_incumbent(seed: int) -> None:
    rng = np.random.default_rng(900 + seed)
    instance = random_instance(rng)
    per_job = [np.flatnonzero(instance.job == j) for j in range(instance.num_jobs)]
    schedules = [(instance.objective(p), p) for p in itertools.product(*per_job) if fits(instance, p)]
    if not schedules:
        assert greedy_schedule(instance) is None
        return
    best = min(value for value, _ in schedules)
    first = greedy_schedule(instance)
    assert first is not None and fits(instance, first[0]) and first[1] >= best - 1e-12
    for incumbent in (best, first[1], (best + first[1]) / 2):
        drop = prunable(instance, incumbent)
        for value, picked in schedules:
            assert value > incumbent or not drop[list(picked)].any()


def test_the_greedy_schedule_gives_up_when_no_order_fits() -> None:
    # Both jobs hold all 4 GPUs in slot 0 and may start nowhere else: the solver must say so.
    instance = instance_of([[(0, 1, 4, 1.0, 0.0)], [(0, 1, 4, 1.0, 0.0)]], {"a": 4}, num_slots=2, held=1.0)
    assert greedy_schedule(instance) is None
    assert bounded_options(instance).keep.all() and bounded_options(instance).start is None


def test_gpu_usage_is_bounded_in_every_slot_an_option_holds_past_the_span() -> None:
    # Two 4-GPU jobs on 4 GPUs, both started in the span's last slot and running 3 slots past it:
    # without the slots past the span, the model would let them overlap there.
    options = SlotOptions(
        job=np.array([0, 1]),
        row=np.array([0, 0]),
        gpu=np.array(["a", "a"], dtype=object),
        num_gpus=np.array([4, 4]),
        cost_usd=np.zeros(2),
        start_slot=np.array([3, 3]),
        busy_slots=np.array([4, 4]),
        start_s=np.full(2, 3.0),
        end_s=np.full(2, 7.0),
    )
    assert held_slots(options.start_slot, options.busy_slots, 4) == 7
    problem = pulp.LpProblem("usage", pulp.LpMinimize)
    z = new_binaries(problem, "z", 2)
    problem += pulp.lpSum(z)
    usage_constraints(problem, options, z, 4, 2, lambda g: 4)
    assert problem.numConstraints() == 4  # slots 3, 4, 5 and 6
    problem += pulp.lpSum(z) == 2
    assert run_solver(problem, "auto", None)[0] is False


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_warm_start_reaches_the_same_optimum_even_from_an_infeasible_start(solver: str) -> None:
    for start in ((1, 0, 0), (1, 1, 1)):  # feasible but poor; infeasible
        problem = pulp.LpProblem("start", pulp.LpMinimize)
        x = new_binaries(problem, "x", 3)
        problem += 3 * x[0] + 2 * x[1] + 4 * x[2]
        problem += pulp.lpSum(x) == 1
        problem += x[1] + x[2] <= 1
        for var, value in zip(x, start, strict=True):
            var.setInitialValue(value)
        assert run_solver(problem, solver, None, warm_start=True) == (True, solver)
        assert [var.varValue for var in x] == [0, 1, 0]


@needs_highs
def test_the_start_is_handed_to_highs_as_its_first_incumbent(monkeypatch) -> None:
    """Review s31 (T1): the optimum alone cannot show a start was used (it is the same either way);
    HiGHS must be handed the variables' initial values, column by column, and only when asked."""
    import highspy

    handed: list[list[float]] = []
    original = highspy.Highs.setSolution

    def record(self, *args, **kwargs):
        handed.append(list(args[-1].col_value))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(highspy.Highs, "setSolution", record)
    for warm in (True, False):
        problem = pulp.LpProblem("start", pulp.LpMinimize)
        x = new_binaries(problem, "x", 3)
        problem += 3 * x[0] + 2 * x[1] + 4 * x[2]
        problem += pulp.lpSum(x) == 1
        for var, value in zip(x, (0, 0, 1), strict=True):
            var.setInitialValue(value)
        assert run_solver(problem, "highs", None, warm_start=warm) == (True, "highs")
    assert handed == [[0.0, 0.0, 1.0]]


@needs_highs
def test_a_time_limited_solve_from_a_start_is_not_called_optimal():
    """Review s31: with a warm start, HiGHS stopped by its time limit held the start, which PuLP
    called "Optimal"; the start came back as the answer."""
    rng = np.random.default_rng(0)
    problem = pulp.LpProblem("knapsack", pulp.LpMaximize)
    x = new_binaries(problem, "x", 60)
    value = rng.integers(10, 100, 60)
    problem += pulp.lpSum(float(value[i]) * x[i] for i in range(60))
    for _ in range(5):
        weight = rng.integers(10, 100, 60)
        problem += pulp.lpSum(float(weight[i]) * x[i] for i in range(60)) <= float(weight.sum() / 2)
    for var in x:
        var.setInitialValue(0)
    with pytest.raises(RuntimeError, match="stopped without an optimal solution"):
        run_solver(problem, "highs", 1e-6, warm_start=True)
