"""What a search answers beside its chosen row: the plan the median would have chosen, a near tie,
the cost/time knee, a much faster plan a little over the budget, an inventory left idle and a
batch off the request that costs less.

Each is a row of the scored table (``plan`` wraps them into ``Plan``s); see ``PlanResult``'s
fields for when each is offered.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from planner import accuracy
from planner.accuracy import Risk
from planner.api.notices import VaryBatch, vary_batch_choice
from planner.catalog.hardware import Catalog
from planner.catalog.terms import rebilled
from planner.errors import InfeasiblePlan
from planner.frontier import OVER_BUDGET_STRETCH, Knee, NearTie, OverBudget, knee_versus, near_tie, over_budget
from planner.idle import IdleGPUs, idle_gpus
from planner.model.candidates import Candidates
from planner.request import PlanRequest, request_term, requested_batch_tokens, solve_request
from planner.search.ilp import NEAR_TIE_FRACTION, Objective, ScoredTable, SingleSolution, check_rows, nearest_batch
from planner.search.score import sure_fit_table
from planner.search.ties import near_tied, tied_to
from planner.units import SECONDS_PER_HOUR

if TYPE_CHECKING:  # planner.api imports this module
    from planner.api import PlanResult


@dataclass(frozen=True)
class SideRows:
    median: int | None  # the row judging at p50 chooses, when that differs from the request's risk
    tie: NearTie | None
    knee: Knee | None  # without a deadline only
    over_budget: tuple[OverBudget, ...]  # with a budget only: the knee over it, then the fastest
    idle: IdleGPUs | None
    varied: VaryBatch | None  # only where the idle-GPU offer, which answers for the batch, is absent


def side_rows(
    request: PlanRequest,
    c: Candidates,
    table: ScoredTable,
    catalog: Catalog,
    gpu_ids: list[str],
    chosen: int,
    deadline_s: float | None,
    inventory: dict[str, int] | None,
    held: dict[str, int],
    scored: ScoredTable | None = None,
) -> SideRows:
    """The side answers of a search that chose ``chosen`` among ``gpu_ids``; ``held``: the GPU
    types with a count; ``scored``: every scored row, where ``table`` holds only those the request's
    risk lets fit: the median's choice reads them all, as p50 judges memory at the model's figure
    (review s42: the median line was silent where memory, not time, changed the choice)."""
    median = median_choice(request, c, scored or table, catalog, gpu_ids, chosen, deadline_s, inventory)
    rows = choosable_rows(request, table, deadline_s, inventory)
    # The chosen row's ties are the chosen plan (ties.py): review s29, the H800 twin of a chosen
    # H100 read as the knee, "for -0.0 % cost, 1.0x faster".
    rows = rows[~tied_to(table, rows, chosen) | (rows == chosen)]
    tie = near_tie(table.cost_usd, table.time_to_train_s, rows, chosen, Objective(request.objective).value)
    bend = None if deadline_s is not None else knee_versus(
        table.cost_usd, table.time_to_train_s, rows, chosen, table.count_cells()
    )  # fmt: skip
    stretched = over_budget_choice(request, table, chosen, deadline_s, inventory)
    idle = idle_gpus(
        table,
        chosen,
        Objective(request.objective),
        inventory,
        held,
        batch_target=requested_batch_tokens(request),
        deadline_s=deadline_s,
        budget_usd=request.budget_usd,
        cost_weight=request.cost_weight,
    )
    # The idle-GPU offer already answers for a batch off the request (planner/idle.py).
    varied = None if idle is not None else vary_batch_choice(request, table, chosen, deadline_s, inventory)
    return SideRows(median=median, tie=tie, knee=bend, over_budget=stretched, idle=idle, varied=varied)


def median_choice(
    request: PlanRequest,
    c: Candidates,
    table: ScoredTable,
    catalog: Catalog,
    gpu_ids: list[str],
    chosen: int,
    deadline_s: float | None,
    inventory: dict[str, int] | None,
) -> int | None:
    """The row the search would choose judged at the median (``Risk.P50``) instead of the
    request's risk; None when the request is judged at the median already, none is feasible
    there, or it is ``chosen`` or near-tied with it there (``told_apart``)."""
    if request.risk == Risk.P50:
        return None
    gpus = [catalog.gpu(g) for g in gpu_ids]
    (median,) = accuracy.time_factors(
        c,
        gpus,
        request.stack.value,
        request.model.is_moe,
        (Risk.P50.quantile,),
        named_kernel=request.kernel_choice,
        run_features=request.run_features,
    )
    factor = table.extra["time_factor"]
    seconds = table.time_to_train_s / factor * median
    at_median = replace(
        table,
        time_to_train_s=seconds,
        cost_usd=rebilled(
            table.cost_usd, table.time_to_train_s / SECONDS_PER_HOUR, seconds / SECONDS_PER_HOUR, request_term(request)
        ),
        extra={**table.extra, "time_factor": np.broadcast_to(median, factor.shape)},
    )
    try:
        row = solve_request(request.model_copy(update={"top_k": 0}), at_median, deadline_s, inventory).row
    except InfeasiblePlan:
        return None
    if not told_apart(at_median, row, chosen) or tie_rule_chose(request, (at_median, table), row, chosen):
        return None
    return row


def tie_rule_chose(request: PlanRequest, tables: tuple[ScoredTable, ...], row: int, chosen: int) -> bool:
    """Whether ``row`` and ``chosen`` lie within NEAR_TIE_FRACTION of each other on the objective's
    figure (cost, time; both under mix) in every one of ``tables`` (the median's and the request's
    risk's): then the near-tie rule, which takes the faster (the cheaper) of such plans, set them
    apart, not the risk (buyer trial s45: "risk p80 changed the choice" of a 256-GPU plan for a
    128-GPU one that cost 0.2 % less at p50 and at p80 alike)."""
    objective = Objective(request.objective)
    axes = {Objective.COST: ("cost_usd",), Objective.TIME: ("time_to_train_s",)}
    names = axes.get(objective, ("cost_usd", "time_to_train_s"))
    figures = [getattr(t, name) for t in tables for name in names]
    return all(abs(f[row] / f[chosen] - 1.0) <= NEAR_TIE_FRACTION for f in figures)


def told_apart(table: ScoredTable, row: int, other: int) -> bool:
    """Whether ``row`` and ``other`` lie more than NEAR_TIE_FRACTION apart in cost or in time in
    ``table`` (trial s38: "risk p80 changed the choice" was said of two plans $1.86M and $1.86M,
    22.3 and 22.3 days at the median, 0.1 % apart)."""
    return row != other and not near_tied(table, np.array([row]), other, NEAR_TIE_FRACTION)[0]


def over_budget_choice(
    request: PlanRequest,
    table: ScoredTable,
    chosen: int,
    deadline_s: float | None,
    inventory: dict[str, int] | None,
) -> tuple[OverBudget, ...]:
    """The much faster plans a little over the request's budget (planner/frontier.py), at the batch
    the request's rule reaches over the stretched budget or the chosen plan's (trial s30: a
    chosen plan at a fallback batch had hidden the plans at the batch asked for; review s30: no
    third batch), the chosen plan's ties excluded; none without a budget."""
    if request.budget_usd is None:
        return ()
    stretched = request.budget_usd * (1 + OVER_BUDGET_STRETCH)
    rows = feasible_rows(table, deadline_s, stretched, inventory)
    if not request.vary_batch:
        batch = table.extra["batch_tokens"]
        # every batch the rule keeps (review s30b: the first row's alone made the answer order-bound)
        rows = rows[at_requested_batch(request, table, rows) | (batch[rows] == batch[chosen])]
    rows = rows[~tied_to(table, rows, chosen)]
    time_s, cost_usd = table.limit_figures()  # as the budget judged them (review s46 M2)
    return over_budget(cost_usd, time_s, rows, chosen, request.budget_usd)


def choosable_rows(
    request: PlanRequest, table: ScoredTable, deadline_s: float | None, inventory: dict[str, int] | None
) -> np.ndarray:
    """The rows the solver could have chosen, where the near tie and the knee are read: those
    passing every constraint, at the chosen batch unless the request varies it."""
    rows = feasible_rows(table, deadline_s, request.budget_usd, inventory)
    return rows if request.vary_batch else rows[at_requested_batch(request, table, rows)]


def feasible_rows(
    table: ScoredTable, deadline_s: float | None, budget_usd: float | None, inventory: dict[str, int] | None
) -> np.ndarray:
    """The rows passing every constraint under ``budget_usd`` (the request's, or stretched)."""
    return np.flatnonzero(
        check_rows(table, deadline_s=deadline_s, budget_usd=budget_usd, inventory=inventory).feasible()
    )


def at_requested_batch(request: PlanRequest, table: ScoredTable, rows: np.ndarray) -> np.ndarray:
    """Mask of ``rows`` at the batch the request's rule keeps (``nearest_batch``)."""
    return nearest_batch(table.extra["batch_tokens"][rows], requested_batch_tokens(request))


def solve_at_risk(
    request: PlanRequest, table: ScoredTable, deadline_s: float | None, inventory: dict[str, int] | None
) -> tuple[SingleSolution, ScoredTable, bool]:
    """The ILP at the request's risk: at p80 / p90 among the plans whose reserved peak fits at its
    memory band's high end (``Risk.judges_memory``; trial s42: a p90 plan its band said may not
    fit beside a sure one 3 % dearer); where none does, at the model's figure. (The solution, the
    table it chose from, whether it fell back to the model's figure.)"""
    if request.risk.judges_memory and table.extra["may_not_fit"].any():
        sure = sure_fit_table(table)
        try:
            solution = solve_request(request, sure, deadline_s, inventory)
        except InfeasiblePlan:
            pass
        else:
            return with_types_at_model(request, solution, table, deadline_s, inventory), sure, False
    return solve_request(request, table, deadline_s, inventory), table, request.risk.judges_memory


def with_types_at_model(
    request: PlanRequest,
    solution: SingleSolution,
    table: ScoredTable,
    deadline_s: float | None,
    inventory: dict[str, int] | None,
) -> SingleSolution:
    """``--per-gpu``'s answer with each GPU type that has no sure plan taking its best at the model's
    figure, as a search of that type alone would (review s42: "no plan on h100-sxm (memory)" where
    plan on the H100 alone answered); its plan then shows that it may not fit."""
    if not request.per_gpu or not solution.unplanned_gpus:
        return solution
    try:
        # only its best row per type is read: no alternatives to rank
        at_model = solve_request(request.model_copy(update={"top_k": 0}), table, deadline_s, inventory)
    except InfeasiblePlan:
        return solution
    planned = {table.gpu_id[r] for r in (solution.row, *solution.best_per_gpu)}
    added = tuple(r for r in at_model.best_per_gpu if table.gpu_id[r] not in planned)
    taken = {table.gpu_id[r] for r in added}
    return replace(
        solution,
        best_per_gpu=solution.best_per_gpu + added,
        unplanned_gpus=tuple(u for u in solution.unplanned_gpus if u.gpu not in taken),
    )


def memory_at_model_warnings(request: PlanRequest, result: PlanResult) -> tuple[str, ...]:
    """Where no plan fits at its band's high end, the one chosen at the model's figure says so
    (``PlanResult.memory_judged_at_model``)."""
    if not result.memory_judged_at_model:
        return ()
    return (
        f"--risk {request.risk.value}: no plan that fits at the high end of its reserved peak's 80 % band meets the"
        " request (its deadline, budget, GPUs); this one is judged at the model's figure, and its band's high end"
        " passes the GPU's memory: it may not fit",
    )
