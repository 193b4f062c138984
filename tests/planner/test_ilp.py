"""The single-job ILP against brute-force enumeration, pruning, solvers and diagnosis messages."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from support import SOLVERS, needs_highs

from planner.errors import ROW_CONSTRAINTS, Constraint, InfeasiblePlan
from planner.frontier import anchor_survivors
from planner.search.ilp import (
    NEAR_TIE_FRACTION,
    TIE_BREAK_WEIGHT,
    ScoredTable,
    check_rows,
    pareto_mask,
    solve_single,
)
from planner.search.solver import make_solver

GPU_TYPES = np.array(["a100", "h100", "h200"], dtype=object)
CAPACITY_GIB = np.array([80.0, 80.0, 141.0])
SEEDS = range(20)


def random_table(rng: np.random.Generator, num_rows: int) -> ScoredTable:
    """Rows with random flags and costs; coarse grids make exact ties in cost and time likely."""
    gpu = rng.integers(0, len(GPU_TYPES), num_rows)
    need = rng.uniform(20, 200, num_rows)
    return ScoredTable(
        gpu_id=GPU_TYPES[gpu],
        num_gpus=rng.choice([1, 2, 4, 8, 16, 32, 64], num_rows),
        fits_memory=need <= CAPACITY_GIB[gpu] * 0.9,
        memory_need_gib=need,
        capacity_gib=CAPACITY_GIB[gpu],
        time_to_train_s=rng.integers(1, 60, num_rows) * 86400.0 / 4,
        cost_usd=rng.integers(1, 80, num_rows) * 25_000.0,
        batch_ok=rng.random(num_rows) < 0.85,
        divisible=rng.random(num_rows) < 0.85,
        label=np.array([f"row {i}" for i in range(num_rows)], dtype=object),
        extra={"tp": rng.choice([1, 2, 4, 8], num_rows), "dp_shard": rng.choice([1, 2, 8], num_rows)},
    )


def random_limits(rng: np.random.Generator) -> dict:
    inventory = {str(g): int(rng.choice([0, 4, 16, 64])) for g in GPU_TYPES if rng.random() < 0.8}
    return dict(
        deadline_s=float(rng.uniform(2, 15)) * 86400 if rng.random() < 0.8 else None,
        budget_usd=float(rng.uniform(2e5, 1.5e6)) if rng.random() < 0.8 else None,
        inventory=inventory if rng.random() < 0.8 else None,
    )


def brute_force_feasible(table: ScoredTable, deadline_s=None, budget_usd=None, inventory=None) -> np.ndarray:
    rows = []
    for i in range(len(table)):
        gpu, n = table.gpu_id[i], table.num_gpus[i]
        ok = table.fits_memory[i] and table.divisible[i] and table.batch_ok[i]
        ok = ok and (inventory is None or (n <= inventory.get(gpu, 0) and inventory.get(gpu, 0) > 0))
        ok = ok and (deadline_s is None or table.time_to_train_s[i] <= deadline_s)
        ok = ok and (budget_usd is None or table.cost_usd[i] <= budget_usd)
        rows.append(bool(ok))
    return np.array(rows)


def brute_force_scores(table: ScoredTable, feasible: np.ndarray, objective: str, cost_weight: float) -> np.ndarray:
    C, T = table.cost_usd[feasible], table.time_to_train_s[feasible]
    w = {"cost": (1.0, TIE_BREAK_WEIGHT), "time": (TIE_BREAK_WEIGHT, 1.0), "mix": (cost_weight, 1 - cost_weight)}[
        objective
    ]
    return w[0] * C / C.min() + w[1] * T / T.min()


@pytest.mark.parametrize("seed", SEEDS)
def test_single_job_optimum_equals_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = random_table(rng, int(rng.integers(30, 201)))
    limits = random_limits(rng)
    feasible = brute_force_feasible(table, **limits)
    for objective in ("cost", "time", "mix"):
        if not feasible.any():
            with pytest.raises(InfeasiblePlan):
                solve_single(table, objective, **limits)
            continue
        solution = solve_single(table, objective, cost_weight=0.3, **limits)
        assert feasible[solution.row], "the chosen row breaks a constraint"
        if objective == "mix":
            best = brute_force_scores(table, feasible, objective, 0.3).min()
            assert solution.objective_value == pytest.approx(best, rel=1e-9)
            continue
        primary, other = (table.cost_usd, table.time_to_train_s)[:: 1 if objective == "cost" else -1]
        tied = feasible & (primary <= primary[feasible].min() * (1 + NEAR_TIE_FRACTION))
        assert tied[solution.row], "the choice is not within the near-tie band of the optimum"
        assert other[solution.row] == pytest.approx(other[tied].min(), rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_pruning_never_removes_the_optimum(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    table = random_table(rng, int(rng.integers(30, 201)))
    for objective in ("cost", "time", "mix"):
        pruned = solve_single(table, objective, prune=True)
        full = solve_single(table, objective, prune=False)
        assert pruned.objective_value == pytest.approx(full.objective_value, rel=1e-12)
        assert pruned.num_variables == full.num_feasible - pruned.num_pruned
        assert full.num_pruned == 0 and full.num_variables == full.num_feasible


@needs_highs
@pytest.mark.parametrize("seed", range(8))
def test_cbc_and_highs_find_the_same_optimum(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    table = random_table(rng, 150)
    limits = random_limits(rng)
    if not brute_force_feasible(table, **limits).any():
        limits = {}
    for objective in ("cost", "mix"):
        cbc = solve_single(table, objective, solver="cbc", prune=False, **limits)
        highs = solve_single(table, objective, solver="highs", prune=False, **limits)
        assert (cbc.solver, highs.solver) == ("cbc", "highs")
        assert cbc.objective_value == pytest.approx(highs.objective_value, rel=1e-9)


def quadratic_front(group, cost, time, size=None) -> np.ndarray:
    keep = np.ones(len(cost), dtype=bool)
    size = np.zeros(len(cost)) if size is None else size
    for i in range(len(cost)):
        for j in range(len(cost)):
            if i == j or group[i] != group[j]:
                continue
            no_worse = cost[j] <= cost[i] and time[j] <= time[i] and size[j] <= size[i]
            better = cost[j] < cost[i] or time[j] < time[i] or size[j] < size[i]
            if no_worse and (better or j < i):
                keep[i] = False
    return keep


@pytest.mark.parametrize("seed", range(10))
def test_pareto_mask_matches_the_definition(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    num_rows = 120
    group = rng.choice(np.array(["a", "b", "c"], dtype=object), num_rows)
    cost, time = rng.integers(0, 12, num_rows).astype(float), rng.integers(0, 12, num_rows).astype(float)
    size = rng.choice([1, 2, 4, 8], num_rows)
    assert np.array_equal(pareto_mask(group, cost, time), quadratic_front(group, cost, time))
    assert np.array_equal(pareto_mask(group, cost, time, size=size), quadratic_front(group, cost, time, size))
    # Cells (the GPU count within each type) only drop rows before the sort: the same front.
    assert np.array_equal(pareto_mask(group, cost, time, cells=size), quadratic_front(group, cost, time))


@pytest.mark.parametrize("seed", range(10))
def test_cells_prune_the_sort_to_few_rows_and_keep_the_front(seed: int) -> None:
    # As in a scored table: within a GPU type and count, cost is time times one rate.
    rng = np.random.default_rng(500 + seed)
    num_rows = 3000
    group = rng.choice(np.array(["a", "b"], dtype=object), num_rows)
    count = rng.choice([8, 16, 32, 64], num_rows)
    time = rng.integers(1, 40, num_rows).astype(float)
    cost = time * count * np.where(group == "a", 2.0, 3.0)
    cells = pd.factorize(group)[0] * 100 + count
    assert np.array_equal(pareto_mask(group, cost, time, cells=count), pareto_mask(group, cost, time))
    assert anchor_survivors(pd.factorize(cells)[0], cost, time).sum() <= 8  # one per cell
    cost[:5] = np.nan  # non-finite keys: nothing is dropped before the sort
    assert anchor_survivors(pd.factorize(cells)[0], cost, time).all()
    assert np.array_equal(pareto_mask(group, cost, time, cells=count), pareto_mask(group, cost, time))


def test_alternatives_are_the_next_best_feasible_rows() -> None:
    rng = np.random.default_rng(7)
    table = random_table(rng, 200)
    feasible = brute_force_feasible(table)
    solution = solve_single(table, "mix", cost_weight=0.5, top_k=6)
    scores = np.full(len(table), np.inf)
    scores[feasible] = brute_force_scores(table, feasible, "mix", 0.5)
    assert len(solution.alternatives) == 6
    assert len(set(solution.alternatives)) == 6 and solution.row not in solution.alternatives
    assert all(feasible[r] for r in solution.alternatives)
    alt_scores = scores[list(solution.alternatives)]
    assert np.all(np.diff(alt_scores) >= 0)
    expected = np.sort(scores[feasible])[1:7]
    np.testing.assert_allclose(alt_scores, expected, rtol=1e-12)
    assert solve_single(table, top_k=0).alternatives == ()


def test_tied_alternatives_are_the_lowest_rows() -> None:
    """Rows held at an efficiency ceiling tie exactly: the alternatives are then the tied rows of
    lowest index, not whichever few a partial sort kept (issue 28)."""
    rng = np.random.default_rng(3)
    table = random_table(rng, 20000)
    feasible = np.flatnonzero(brute_force_feasible(table))
    best = feasible[rng.random(len(feasible)) < 0.5]  # half the feasible rows tie for the best
    time_s, cost = table.time_to_train_s.copy(), table.cost_usd.copy()
    time_s[feasible], cost[feasible] = 2000.0, 20.0
    time_s[best], cost[best] = 1000.0, 10.0
    tied = dataclasses.replace(table, time_to_train_s=time_s, cost_usd=cost)
    solution = solve_single(tied, "cost", top_k=5)
    lowest = [int(r) for r in best if r != solution.row][:5]
    assert list(solution.alternatives) == lowest


def test_large_tables_are_pruned_to_a_small_model() -> None:
    rng = np.random.default_rng(11)
    num_rows = 100_000
    gpu = rng.integers(0, 3, num_rows)
    time = rng.uniform(1e5, 1e7, num_rows)
    table = ScoredTable(
        gpu_id=GPU_TYPES[gpu],
        num_gpus=rng.choice([8, 16, 32, 64], num_rows),
        fits_memory=rng.random(num_rows) < 0.7,
        memory_need_gib=np.full(num_rows, 50.0),
        capacity_gib=CAPACITY_GIB[gpu],
        time_to_train_s=time,
        cost_usd=3e9 / time * rng.uniform(0.5, 2.0, num_rows),
        batch_ok=np.ones(num_rows, bool),
        divisible=np.ones(num_rows, bool),
        label=np.full(num_rows, "x", dtype=object),
    )
    solution = solve_single(table, "mix", inventory={"h100": 64, "h200": 32})
    assert solution.num_variables < 500 < solution.num_feasible
    assert solution.num_variables + solution.num_pruned == solution.num_feasible


def test_solver_is_quiet_and_leaves_no_files(tmp_path, monkeypatch, capfd) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("TMP", str(tmp_path))
    table = random_table(np.random.default_rng(3), 60)
    for solver in (*SOLVERS, "auto"):
        solve_single(table, solver=solver)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert list(tmp_path.iterdir()) == []


def test_solver_choice_is_validated() -> None:
    assert make_solver("auto")[1] == SOLVERS[-1]  # HiGHS when installed
    assert make_solver("CBC")[1] == "cbc"
    with pytest.raises(ValueError, match="solver"):
        make_solver("gurobi")


# --- the candidate table --------------------------------------------------------------------


def core_columns(table: ScoredTable) -> dict[str, np.ndarray]:
    return {f.name: getattr(table, f.name) for f in dataclasses.fields(table) if f.name != "extra"}


def test_table_take_and_column_types() -> None:
    table = random_table(np.random.default_rng(5), 40)
    assert len(table) == 40 and len(core_columns(table)) + len(table.extra) == 13
    assert table.dominated.dtype == bool and not table.dominated.any()  # none unless the search says
    part = table.take([3, 1, 39])
    assert list(part.label) == ["row 3", "row 1", "row 39"]
    assert np.array_equal(part.extra["tp"], table.extra["tp"][[3, 1, 39]])
    assert np.array_equal(part.cost_usd, table.cost_usd[[3, 1, 39]])
    assert table.num_gpus.dtype == np.int64 and table.fits_memory.dtype == bool


def test_table_rejects_ragged_columns() -> None:
    core = core_columns(random_table(np.random.default_rng(5), 10))
    with pytest.raises(ValueError, match="cost_usd"):
        ScoredTable(**{**core, "cost_usd": core["cost_usd"][:9]})
    with pytest.raises(ValueError, match="extra\\['tp'\\]"):
        ScoredTable(**core, extra={"tp": np.ones(3)})
    with pytest.raises(ValueError, match="clashes"):
        ScoredTable(**core, extra={"label": core["label"]})


def test_bad_inputs_raise_value_errors() -> None:
    table = random_table(np.random.default_rng(9), 50)
    with pytest.raises(ValueError, match="objective"):
        solve_single(table, "fastest")
    with pytest.raises(ValueError, match="cost_weight"):
        solve_single(table, "mix", cost_weight=1.5)
    with pytest.raises(ValueError, match="deadline_s"):
        solve_single(table, deadline_s=-1.0)
    with pytest.raises(ValueError, match="inventory\\['h100'\\]"):
        solve_single(table, inventory={"h100": 2.5})
    plausible = np.flatnonzero(table.fits_memory & table.divisible & table.batch_ok)[0]
    cost = table.cost_usd.copy()
    cost[plausible] = math.nan
    with pytest.raises(ValueError, match=f"cost_usd: row {plausible}"):
        solve_single(dataclasses.replace(table, cost_usd=cost))


# --- infeasibility diagnosis ----------------------------------------------------------------


def hand_table(rows: list[dict], layout_columns: bool = True) -> ScoredTable:
    defaults = dict(
        gpu_id="h200",
        num_gpus=8,
        fits_memory=True,
        memory_need_gib=100.0,
        capacity_gib=141.0,
        time_to_train_s=86400.0,
        cost_usd=1e5,
        batch_ok=True,
        divisible=True,
        tp=1,
        dp_shard=8,
    )
    records = [{**defaults, **row} for row in rows]
    columns = {key: np.array([record[key] for record in records]) for key in defaults}
    extra = {key: columns.pop(key) for key in ("tp", "dp_shard")}
    labels = np.array([f"row {i}" for i in range(len(records))], dtype=object)
    return ScoredTable(**columns, label=labels, extra=extra if layout_columns else {})


def test_memory_message_names_need_capacity_and_sharding() -> None:
    table = hand_table(
        [
            dict(fits_memory=False, memory_need_gib=162.0, num_gpus=1, tp=1, dp_shard=1),
            dict(fits_memory=False, memory_need_gib=170.0, num_gpus=2, tp=2, dp_shard=1),
            dict(fits_memory=False, memory_need_gib=150.0, divisible=False),
            dict(gpu_id="a100", capacity_gib=80.0, fits_memory=False, memory_need_gib=90.0),
        ]
    )
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(table, inventory={"h200": 8})
    error = caught.value
    assert str(error) == (
        "memory: needs 162.0 GiB per GPU, the largest allowed GPU has 141.0 GiB; "
        "more GPUs than the 8 searched, to shard the states and activations over "
        "(FSDP, tensor or pipeline parallel), or a GPU with more memory"
    )
    assert error.constraint is Constraint.MEMORY
    assert (error.required, error.available) == (162.0, 141.0)
    assert "\n" not in str(error)


def test_memory_message_without_layout_columns_and_within_headroom() -> None:
    table = hand_table([dict(fits_memory=False, memory_need_gib=135.0)], layout_columns=False)
    with pytest.raises(
        InfeasiblePlan, match=r"135.0 GiB .* 141.0 GiB less the headroom.*more GPUs than the 8 searched"
    ):
        solve_single(table)


def test_divisibility_and_batch_messages() -> None:
    table = hand_table([dict(divisible=False, num_gpus=8), dict(divisible=False, num_gpus=24), dict(fits_memory=False)])
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(table)
    assert caught.value.constraint is Constraint.DIVISIBILITY
    assert "none of the 2 candidates that fit in memory (8-24 GPUs)" in str(caught.value)
    table = hand_table([dict(batch_ok=False), dict(batch_ok=False, divisible=False)])
    with pytest.raises(InfeasiblePlan, match=r"^batch: none of the 1 valid layouts that fit \(8 GPUs\)"):
        solve_single(table)


def test_the_messages_count_the_untimed_rows_that_fit() -> None:
    """A row the search left untimed (a twin without recompute fits) fits all the same: the
    counts name it, though no answer can be it (its time and cost are NaN)."""
    rows = [dict(divisible=False), dict(divisible=False, time_to_train_s=np.nan, cost_usd=np.nan)]
    table = dataclasses.replace(hand_table(rows), dominated=np.array([False, True]))
    with pytest.raises(InfeasiblePlan, match="none of the 2 candidates that fit in memory"):
        solve_single(table)
    rows = [dict(batch_ok=False), dict(batch_ok=False, time_to_train_s=np.nan, cost_usd=np.nan)]
    table = dataclasses.replace(hand_table(rows), dominated=np.array([False, True]))
    with pytest.raises(InfeasiblePlan, match="none of the 2 valid layouts that fit"):
        solve_single(table)


def test_inventory_messages() -> None:
    table = hand_table([dict(num_gpus=16), dict(num_gpus=32), dict(gpu_id="a100", capacity_gib=80.0, num_gpus=64)])
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(table, inventory={"h200": 8, "a100": 16})
    assert str(caught.value) == (
        "inventory: the smallest plan that fits needs 16 h200 GPUs, the "
        "inventory allows h200<=8; allow 16 h200 GPUs or a GPU type with "
        "more memory"
    )
    assert (caught.value.required, caught.value.available) == (16, 8)
    with pytest.raises(
        InfeasiblePlan,
        match="no candidate uses a GPU type in the inventory \\(b200<=8\\); candidate GPU types: a100, h200",
    ):
        solve_single(table, inventory={"b200": 8})


def test_deadline_messages() -> None:
    day = 86400.0
    table = hand_table(
        [
            dict(num_gpus=64, time_to_train_s=41.3 * day),
            dict(num_gpus=128, time_to_train_s=22.0 * day),
            dict(num_gpus=32, time_to_train_s=80.0 * day),
        ]
    )
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(table, deadline_s=30 * day, inventory={"h200": 64})
    assert str(caught.value) == (
        "deadline: the fastest plan needs 41.3 days with the allowed "
        "inventory (h200<=64); allow 42 days or more GPUs (128 h200 finish "
        "in 22.0 days)"
    )
    assert caught.value.required == pytest.approx(41.3 * day)
    with pytest.raises(InfeasiblePlan, match=r"needs 22.0 days .*no inventory limit.*allow 22 days$"):
        solve_single(table, deadline_s=10 * day)
    with pytest.raises(InfeasiblePlan, match=r"allow 42 days; no count up to 128 GPUs meets the deadline$"):
        solve_single(table, deadline_s=10 * day, inventory={"h200": 64})
    with pytest.raises(InfeasiblePlan, match=r"needs 22.0 days .*allow 22 days"):
        solve_single(hand_table([dict(time_to_train_s=22 * day)]), deadline_s=1 * day)
    with pytest.raises(InfeasiblePlan, match=r"needs 5.0 hours.*allow 5 hours"):
        solve_single(hand_table([dict(time_to_train_s=5 * 3600.0)]), deadline_s=3600.0)


def test_budget_messages() -> None:
    day = 86400.0
    table = hand_table(
        [
            dict(num_gpus=64, time_to_train_s=20 * day, cost_usd=1.2e6),
            dict(num_gpus=16, time_to_train_s=70 * day, cost_usd=0.9e6),
        ]
    )
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(table, deadline_s=30 * day, budget_usd=1.0e6)
    assert str(caught.value) == (
        "budget: the cheapest plan that meets the deadline (64 x h200, 20.0 days) costs $1.20M > "
        "$1.00M; raise the budget to $1.20M or extend the deadline to 70 days"
    )
    assert caught.value.constraint is Constraint.BUDGET
    # trial s28b: "$1.23M" beside "raise the budget to $1.24M": the detail and the fix print one amount
    # trial s30: not "$1.235M > $1.200M" (nor "$3.4413M", "$100.00k"); review s35: money()'s two
    # decimals, the cost rounded up, where the gap is a step or more (whole dollars below)
    with pytest.raises(InfeasiblePlan, match=r"costs \$1\.24M > \$1\.20M; raise the budget to \$1\.24M$"):
        solve_single(hand_table([dict(cost_usd=1_234_567.2)]), deadline_s=30 * day, budget_usd=1.2e6)
    with pytest.raises(InfeasiblePlan, match=r"costs \$99,996 > \$99,990; raise the budget to \$99,996$"):
        solve_single(hand_table([dict(cost_usd=99_995.3)]), deadline_s=30 * day, budget_usd=99_990)
    with pytest.raises(InfeasiblePlan, match=r"costs \$3.24M > \$3.20M; raise the budget to \$3.24M$"):
        solve_single(hand_table([dict(cost_usd=3_236_521.0)]), deadline_s=30 * day, budget_usd=3.2e6)
    with pytest.raises(
        InfeasiblePlan, match=r"^budget: the cheapest plan \(16 x h200, 70.0 days\) costs \$900.0k > \$500.0k"
    ):
        solve_single(table, budget_usd=5e5)


@pytest.mark.parametrize("seed", SEEDS)
def test_diagnosis_names_the_first_constraint_that_empties_the_set(seed: int) -> None:
    rng = np.random.default_rng(400 + seed)
    table = random_table(rng, int(rng.integers(2, 30)))  # few rows: every constraint gets to bind
    limits = dict(
        deadline_s=float(rng.uniform(1, 12)) * 86400,
        budget_usd=float(rng.uniform(1e5, 1e6)),
        inventory={"h100": int(rng.choice([1, 4, 16])), "h200": int(rng.choice([1, 4, 16]))},
    )
    checks = check_rows(table, **limits)
    steps = [
        table.fits_memory,
        table.divisible,
        table.batch_ok,
        checks.inventory,
        table.time_to_train_s <= limits["deadline_s"],
        table.cost_usd <= limits["budget_usd"],
    ]
    passing = np.isin(table.gpu_id, ["h100", "h200"]) & (
        np.array([limits["inventory"].get(g, 0) for g in table.gpu_id]) > 0
    )
    expected = None
    for constraint, step in zip(ROW_CONSTRAINTS, steps, strict=True):
        if not (passing & step).any():
            expected = constraint
            break
        passing &= step
    if expected is None:
        solve_single(table, **limits)
        return
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(table, **limits)
    assert caught.value.constraint is expected
    assert str(caught.value).startswith(f"{expected.value}: ") and "\n" not in str(caught.value)


def test_infeasible_plan_survives_pickling_and_empty_tables_are_rejected() -> None:
    import pickle

    error = InfeasiblePlan(Constraint.BUDGET, "costs $2", "raise it", required=2.0, available=1.0)
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.constraint, copy.fix, copy.required) == (str(error), error.constraint, "raise it", 2.0)
    late = InfeasiblePlan(Constraint.DEADLINE, "d", "f").but(batch_tokens=8_388_608, batch_seconds=3600.0)
    copy = pickle.loads(pickle.dumps(late))  # the app caches answers: a deadline's batch survives
    assert (copy.batch_tokens, copy.batch_seconds) == (8_388_608, 3600.0)
    with pytest.raises(InfeasiblePlan) as caught:
        solve_single(hand_table([dict(cost_usd=2.0e6, num_gpus=16)]), budget_usd=1e6)
    assert pickle.loads(pickle.dumps(caught.value)).named == caught.value.named is not None
    slower = InfeasiblePlan(Constraint.BUDGET, "b", "f", within_budget_seconds=7200.0).but(fix="g")
    assert pickle.loads(pickle.dumps(slower)).within_budget_seconds == 7200.0  # the app's offer survives both
    with pytest.raises(ValueError, match="no rows"):
        solve_single(hand_table([{}]).take([]))


def test_a_near_tie_goes_to_the_faster_plan_under_cost_and_the_cheaper_under_time():
    """2 GPUs for 4.6 days vs 8 for 27.7 h at 0.1 % more (issue 10): cost takes the 8."""
    table = ScoredTable(
        gpu_id=np.array(["b200"] * 3, dtype=object),
        num_gpus=np.array([2, 8, 16]),
        fits_memory=np.ones(3, bool),
        memory_need_gib=np.full(3, 50.0),
        capacity_gib=np.full(3, 180.0),
        time_to_train_s=np.array([4.6 * 86400, 27.7 * 3600, 14 * 3600]),
        cost_usd=np.array([4000.0, 4004.0, 4300.0]),
        batch_ok=np.ones(3, bool),
        divisible=np.ones(3, bool),
        label=np.array(["2 x b200", "8 x b200", "16 x b200"], dtype=object),
    )
    assert solve_single(table, "cost").row == 1
    assert solve_single(table, "time").row == 2
    beyond = dataclasses.replace(table, cost_usd=np.array([4000.0, 4041.0, 4300.0]))  # +1.03 %
    assert solve_single(beyond, "cost").row == 0


def test_alternatives_differ_in_more_than_the_micro_batch_split() -> None:
    """With ``choice_group`` (score.py ``choice_groups``) the alternatives are the best row of
    each group other than the chosen row's, best first."""
    rng = np.random.default_rng(5)
    table = random_table(rng, 400)
    feasible = brute_force_feasible(table)
    group = rng.integers(0, 40, len(table))
    grouped = dataclasses.replace(table, extra={**table.extra, "choice_group": group})
    solution = solve_single(grouped, "mix", cost_weight=0.5, top_k=5)
    scores = np.full(len(table), np.inf)
    scores[feasible] = brute_force_scores(table, feasible, "mix", 0.5)
    best_of = {}
    for r in np.argsort(scores, kind="stable"):
        if feasible[r] and group[r] not in best_of:
            best_of[group[r]] = int(r)
    expected = [r for g, r in best_of.items() if g != group[solution.row]][:5]
    assert list(solution.alternatives) == expected
    assert len({group[r] for r in (solution.row, *solution.alternatives)}) == 6


def test_alternatives_a_buyer_cannot_tell_apart_are_listed_once():
    """Trial s26: zero1 / zero2 twins (same GPU type and count, time, cost and memory) took half of
    --top; one of each is listed, the chosen row's twins none, other rows as before (a row of the
    same time and cost but other memory is another layout: listed)."""
    n = 7
    table = ScoredTable(
        gpu_id=np.array(["b200"] * 4 + ["h100"] * 3, dtype=object),
        num_gpus=np.array([8, 8, 8, 16, 8, 8, 8]),
        fits_memory=np.ones(n, bool),
        memory_need_gib=np.array([50.0, 50.0, 60.0, 50.0, 45.0, 45.0, 70.0]),
        capacity_gib=np.full(n, 180.0),
        time_to_train_s=np.array([100.0, 100.0, 120.0, 60.0, 200.0, 200.0, 200.0]) * 3600,
        cost_usd=np.array([1000.0, 1000.0, 1100.0, 1200.0, 1500.0, 1500.0, 1500.0]),
        batch_ok=np.ones(n, bool),
        divisible=np.ones(n, bool),
        label=np.array([f"row {i}" for i in range(n)], dtype=object),
    )
    solution = solve_single(table, "cost", top_k=5)
    assert solution.row in (0, 1)
    assert list(solution.alternatives) == [2, 3, 4, 6]  # not the chosen row's twin, one of the h100 pair


def test_per_gpu_is_the_best_feasible_row_of_each_other_type() -> None:
    """Trial s26: a buyer asking "which GPU" saw one type only; per_gpu lists each other type's
    best row by the objective, best first, against brute force."""
    rng = np.random.default_rng(8)
    table = random_table(rng, 600)
    feasible = brute_force_feasible(table)
    solution = solve_single(table, "mix", cost_weight=0.5, top_k=0, per_gpu=True)
    scores = np.full(len(table), np.inf)
    scores[feasible] = brute_force_scores(table, feasible, "mix", 0.5)
    best: dict[str, int] = {}
    for r in np.argsort(scores, kind="stable"):
        if feasible[r] and table.gpu_id[r] not in best:
            best[table.gpu_id[r]] = int(r)
    expected = [r for g, r in best.items() if g != table.gpu_id[solution.row]]
    assert list(solution.best_per_gpu) == expected and len(expected) >= 1
    assert solve_single(table, "mix", cost_weight=0.5, top_k=0).best_per_gpu == ()


@pytest.mark.parametrize("objective", ["cost", "time"])
def test_per_gpu_picks_each_type_as_a_search_of_it_alone_does(objective: str) -> None:
    """Trial s43: --per-gpu listed an H200 plan of 44.7 days by the bare objective, where a search of
    the H200 alone took the near-tied one of 16.8 days for 0.4 % more (constraint (8)). Costs and
    times here lie within 5 % of each other so that near ties are common."""
    rng = np.random.default_rng(0)
    table = random_table(rng, 600)
    spread = rng.uniform(1.0, 1.05, (2, len(table)))
    table = dataclasses.replace(table, cost_usd=1e6 * spread[0], time_to_train_s=86400.0 * spread[1])
    solution = solve_single(table, objective, top_k=0, per_gpu=True)
    plain = solve_single(table, "mix", cost_weight=1.0 if objective == "cost" else 0.0, top_k=0, per_gpu=True)
    assert len(solution.best_per_gpu) >= 2
    assert solution.best_per_gpu != plain.best_per_gpu  # the window moved some type's pick
    for row in solution.best_per_gpu:
        alone = np.flatnonzero(table.gpu_id == table.gpu_id[row])
        assert alone[solve_single(table.take(alone), objective, top_k=0).row] == row


def test_per_gpu_names_what_rules_out_each_type_batch_included() -> None:
    """Trial s27 / review s27: --per-gpu named the types with no plan but not why; a type whose rows
    miss only the batch the others meet was listed bare."""

    table = ScoredTable(
        gpu_id=np.array(["a", "a", "b", "c"], dtype=object),
        num_gpus=np.array([8, 16, 8, 8]),
        fits_memory=np.array([True, True, True, False]),
        memory_need_gib=np.full(4, 50.0),
        capacity_gib=np.full(4, 80.0),
        time_to_train_s=np.array([4e5, 2e5, 3e5, 1e5]),
        cost_usd=np.array([1e4, 1.1e4, 1.2e4, 1e4]),
        batch_ok=np.ones(4, bool),
        divisible=np.ones(4, bool),
        label=np.full(4, "x", dtype=object),
        extra={"batch_tokens": np.array([2**22, 2**22, 3_000_000, 2**22])},
    )
    solution = solve_single(table, "cost", per_gpu=True, batch_target=2**22)
    assert {u.gpu: u.constraint for u in solution.unplanned_gpus} == {"b": Constraint.BATCH, "c": Constraint.MEMORY}
    assert solve_single(table, "cost", batch_target=2**22).unplanned_gpus == ()  # only with per_gpu
    # trial s47 L4: a type the deadline rules out says its fastest time, as the deadline judged it
    late = solve_single(table, "cost", per_gpu=True, deadline_s=2.5e5)
    assert {u.gpu: (u.constraint, u.fastest_s) for u in late.unplanned_gpus} == {
        "b": (Constraint.DEADLINE, 3e5),
        "c": (Constraint.MEMORY, None),
    }
