"""The planner's public API: estimate one configuration, plan one job, plan a portfolio.

The CLI and the Streamlit app call only these functions. Planning is: generate candidates,
score them all (vectorised), solve the ILP over the scored table, then re-score the chosen
rows one by one through ``estimate`` and return typed ``Plan`` objects. The request and the
scored table it implies are planner/request.py (``PlanRequest`` is re-exported here).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

from planner.accuracy import DEFAULT_RISK, Risk
from planner.api.batch_offers import LargerBatch, with_batch_fix, with_larger_batch
from planner.api.budget_fix import with_tokens_fix
from planner.api.judged import RiskSetting, judged_at_risk, judged_cost_usd, judged_hours
from planner.api.notices import (
    LONG_JOB_WARNING_DAYS,
    VaryBatch,
    chosen_dearer,
    defaulted_accum_warning,
    estimate_warnings,
    plan_commitment,
    search_warnings,
    trains_too_long,
    unplanned_price_warnings,
)
from planner.api.side_answers import memory_at_model_warnings, side_rows, solve_at_risk
from planner.api.wrap import JobChoices, wrapped_plan
from planner.catalog.calibration import AppliedCalibration
from planner.catalog.hardware import Catalog, load_catalog
from planner.catalog.networks import catalog_on_network
from planner.count_probe import cap_diagnosis, deadline_fix, memory_fix
from planner.errors import InfeasiblePlan
from planner.frontier import Knee, NearTie, OverBudget
from planner.idle import IdleGPUs
from planner.layout import Layout, TrainingConfig
from planner.model.candidates import Candidates
from planner.model.estimate import estimate
from planner.model.settings import ModelingSettings
from planner.plan import Plan
from planner.plan_calibration import PlanCalibration, rate_gpus
from planner.reports import ReplanRequest
from planner.request import (
    CountLimits,
    PlanRequest,
    allowed_gpus,
    count_limits,
    default_global_batch_tokens,
    priced_catalog,
    request_settings,
    requested_batch_tokens,
)
from planner.search.ilp import ScoredTable, SingleSolution
from planner.search.score import scored_table, search_space
from planner.search.space import build_candidates
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR


@dataclass(frozen=True)
class PlanResult:
    plan: Plan
    alternatives: tuple[Plan, ...]
    solution: SingleSolution
    num_candidates: int
    seconds: float
    warnings: tuple[str, ...] = ()  # printed on stderr by the CLI
    count_limits: dict[str, int] = field(default_factory=dict)  # largest count searched per GPU type
    count_caps: dict[str, int] = field(default_factory=dict)  # the types a cap limited, not an inventory
    near_tie: NearTie | None = None  # a feasible plan slightly worse on the objective, much better on the other
    near_tie_plan: Plan | None = None  # that plan
    knee: Knee | None = None  # without a deadline: the cost/time front's knee (planner.frontier), unless chosen
    knee_plan: Plan | None = None  # that plan
    # with a budget: much faster plans a little over it (the knee of their front, then the fastest), their plans
    over_budget: tuple[OverBudget, ...] = ()
    over_budget_plans: tuple[Plan, ...] = ()
    risk: Risk = DEFAULT_RISK  # the quantile the search judged plans by
    median_plan: Plan | None = None  # what judging at the median (p50) would have chosen, when that differs
    idle: IdleGPUs | None = None  # the chosen plan leaves over 10 % of its inventory idle (planner/idle.py)
    idle_plan: Plan | None = None  # the best plan that uses that inventory, at its batch
    vary_batch: VaryBatch | None = None  # the exact batch costs over 5 % more than --vary-batch's choice
    vary_batch_plan: Plan | None = None  # that choice
    larger_batch: LargerBatch | None = None  # one sequence per GPU would save over 5 % (tp/pp split the batch's)
    larger_batch_plan: Plan | None = None  # that plan
    per_gpu: tuple[Plan, ...] | None = None  # ``request.per_gpu``: each other GPU type's best plan, best first
    searched_gpus: tuple[str, ...] = ()  # the GPU types the search scored
    # At --risk p80 / p90 no plan that fits at its reserved peak's band's high end met the request, so
    # this one was chosen at the model's figure, and its band's high end passes the GPU's memory: the
    # CLI's warning (``memory_at_model_warnings``) and the app's card read it (app53 H1: only the CLI said so).
    memory_judged_at_model: bool = False

    @property
    def priced_plans(self) -> tuple[Plan, ...]:
        """Every plan the answer prices beside the chosen one: its tables (alternatives, ``--per-gpu``
        rows) and its side lines (near tie, knee, over-budget, median, idle inventory, varied batch),
        each checked for a price above on-demand by the CLI's warnings and the app's card alike (app
        trial s48: a knee on h200, priced above on-demand, went unwarned)."""
        beside = (
            self.near_tie_plan, self.knee_plan, *self.over_budget_plans, self.median_plan, self.idle_plan,
            self.vary_batch_plan,
        )  # fmt: skip
        return (*self.alternatives, *(self.per_gpu or ()), *(p for p in beside if p is not None))

    @property
    def median_over_budget(self) -> int | None:
        """Which over-budget answer the median plan is (0: a little over, 1: further over), if it
        is one: said once, not named twice (review s30)."""
        if self.median_plan is None:
            return None
        return next((i for i, p in enumerate(self.over_budget_plans) if p == self.median_plan), None)

    @property
    def median_batch(self) -> int | None:
        """The median plan's batch where it differs from the chosen one's: the batch rule keeps
        the batch nearest the request among the plans that meet it at each quantile (trial s28c: at
        p50 +1.6 %, at p80 -1.7 %, which read as a contradiction unsaid)."""
        if self.median_plan is None:
            return None
        batch = self.median_plan.estimate.global_batch_tokens
        return None if batch == self.plan.estimate.global_batch_tokens else batch


def plan_from_row(
    request: PlanRequest,
    c: Candidates,
    row: int,
    gpu_ids: list[str],
    catalog: Catalog,
    settings: ModelingSettings,
    calibration: PlanCalibration | None = None,
) -> Plan:
    """Re-score one chosen row through the scalar path and wrap it as a runnable Plan
    (``calibration``: the record of the file ``catalog`` was calibrated with)."""
    gpu = catalog.gpu(gpu_ids[int(c.gpu_index[row])])
    layout, training = c.layout(row), c.training(row)
    num_gpus = int(c.num_gpus[row])
    num_nodes = int(c.num_nodes[row])
    job = JobChoices.of_request(request, catalog)
    est = job.judged(
        gpu, layout, training, num_gpus=num_gpus, num_nodes=num_nodes, catalog=catalog, settings=settings,
        calibration=calibration,
    ).model_copy(
        update={
            "requested_global_batch_tokens": requested_batch_tokens(request),
            "batch_varied": request.vary_batch,
            "batch_defaulted": request.global_batch_tokens is None,
        }
    )  # fmt: skip
    return wrapped_plan(job, gpu, layout, training, est, calibration)


def calibrated(
    catalog: Catalog | None, calibration: AppliedCalibration | None
) -> tuple[Catalog | None, PlanCalibration | None]:
    """The catalog to estimate with and the record its plans keep: a calibration's merged catalog
    and its file's record, else ``catalog`` (None: the built-in) and no record."""
    if calibration is None:
        return catalog, None
    if catalog is not None:
        raise ValueError("give a catalog or a calibration, not both (a calibration carries its catalog)")
    return calibration.catalog, calibration.record


def plan(
    request: PlanRequest,
    *,
    catalog: Catalog | None = None,
    settings: ModelingSettings | None = None,
    calibration: AppliedCalibration | None = None,
) -> PlanResult:
    """Choose GPU type, count and layout for one job. Raises InfeasiblePlan when none fits.
    ``settings`` None: the profile of ``request.stack``. ``calibration``: a calibration file merged
    over the catalog (planner.catalog.calibration.calibrate); every plan returned records it.
    Where the batch asked for holds the plan back, the same GPUs at one sequence per GPU are
    searched too (planner/api/batch_offers.py): offered beside a plan that splits its sequences
    when that saves over 5 % (``LargerBatch``), or added to a missed deadline's fix."""

    def again(other: PlanRequest, probe: bool = True) -> PlanResult:
        return search(other, catalog=catalog, settings=settings, calibration=calibration, probe=probe)

    try:
        result = again(request)
    except InfeasiblePlan as answer:
        raise with_batch_fix(with_tokens_fix(answer, request), request, again) from None
    return with_larger_batch(result, request, again)


def search(
    request: PlanRequest,
    *,
    catalog: Catalog | None = None,
    settings: ModelingSettings | None = None,
    calibration: AppliedCalibration | None = None,
    probe: bool = True,
) -> PlanResult:
    """``plan`` without the larger-batch offers: one search of the request. ``probe`` False: an
    infeasible request is answered from its table alone, without probing the counts past it (the
    offers' own searches, which keep only a feasible answer)."""
    settings = request_settings(request, settings)
    started = time.perf_counter()
    scope = search_scope(request, catalog, calibration, settings)
    try:
        solution, table, at_model = solve_at_risk(request, scope.table, scope.deadline_s, scope.inventory)
    except InfeasiblePlan as within:
        if not probe:
            raise
        raise explained(within, request, scope.catalog, scope.gpus, scope.limits, scope.deadline_s, settings) from None
    return search_result(scope, solution, table, at_model, started)


@dataclass(frozen=True)
class SearchScope:
    """What one search of a request runs over (``search_scope``): its catalog before and after the
    request's prices, the GPU types and counts, the candidates and their table scored at the request."""

    request: PlanRequest
    settings: ModelingSettings
    record: PlanCalibration | None  # the calibration file's, which every plan keeps
    unpriced: Catalog
    catalog: Catalog
    gpus: dict[str, int | None]
    limits: CountLimits
    candidates: Candidates
    table: ScoredTable
    # check_rows allows only the types an inventory names: a type without one (None) takes its
    # searched count limit beside those that have one
    inventory: dict[str, int] | None
    deadline_s: float | None

    @property
    def gpu_ids(self) -> list[str]:
        return list(self.gpus)

    def plan_of(self, row: int) -> Plan:
        """One scored row re-scored and wrapped as a Plan (``plan_from_row``)."""
        return plan_from_row(self.request, self.candidates, row, self.gpu_ids, self.catalog, self.settings, self.record)


def search_scope(
    request: PlanRequest, catalog: Catalog | None, calibration: AppliedCalibration | None, settings: ModelingSettings
) -> SearchScope:
    """The request's catalog, GPU types, count limits and candidates, scored (``scored_table``)."""
    base, record = calibrated(catalog, calibration)
    unpriced = base or load_catalog()
    catalog = request_catalog(request, unpriced, settings)
    gpus = allowed_gpus(request, catalog)
    limits = count_limits(request, gpus)
    space = search_space(request, limits.largest)
    c = build_candidates(request.model, catalog, dict(limits.limits), space)
    table = scored_table(request, catalog, c, list(gpus), space, settings, rate_gpus(record))
    limited = any(n is not None for n in gpus.values())
    inventory = {g: limits.limits[g] if n is None else n for g, n in gpus.items()} if limited else None
    deadline_s = None if request.deadline_days is None else request.deadline_days * SECONDS_PER_DAY
    return SearchScope(request, settings, record, unpriced, catalog, gpus, limits, c, table, inventory, deadline_s)


def search_result(
    scope: SearchScope, solution: SingleSolution, table: ScoredTable, at_model: bool, started: float
) -> PlanResult:
    """The answer of a solved search: the chosen row and every row it is weighed against (``table``,
    the one solved at the request's risk) as plans, with their warnings; ``started``: when the search began."""
    request, wrap = scope.request, scope.plan_of
    chosen = wrap(solution.row)
    assert chosen.estimate.time_to_train_h is not None  # plan() always has training tokens
    assert math.isclose(
        chosen.estimate.time_to_train_h * SECONDS_PER_HOUR,
        float(table.extra["model_time_s"][solution.row]),
        rel_tol=1e-6,
    ), "scalar re-score disagrees with the vectorised score"
    held = {g: n for g, n in scope.gpus.items() if n is not None}
    side = side_rows(
        request, scope.candidates, table, scope.catalog, scope.gpu_ids, solution.row, scope.deadline_s,
        scope.inventory, held, scope.table,
    )  # fmt: skip
    varied_plan = None if side.varied is None else wrap(side.varied.row)
    alternatives = tuple(wrap(r) for r in solution.alternatives)
    per_gpu = tuple(wrap(r) for r in solution.best_per_gpu) if request.per_gpu else None
    tie_plan, knee_plan = (None if s is None else wrap(s.row) for s in (side.tie, side.knee))
    over_plans = tuple(wrap(o.row) for o in side.over_budget)
    median_plan = None if side.median is None else wrap(side.median)
    idle_plan = None if side.idle is None else wrap(side.idle.row)
    result = PlanResult(
        plan=chosen,
        alternatives=alternatives,
        solution=solution,
        num_candidates=len(scope.candidates),
        seconds=time.perf_counter() - started,
        count_limits=scope.limits.limits,
        count_caps=scope.limits.caps,
        near_tie=side.tie,
        near_tie_plan=tie_plan,
        knee=side.knee,
        knee_plan=knee_plan,
        over_budget=side.over_budget,
        over_budget_plans=over_plans,
        risk=request.risk,
        median_plan=median_plan,
        idle=side.idle,
        idle_plan=idle_plan,
        vary_batch=side.varied,
        vary_batch_plan=varied_plan,
        per_gpu=per_gpu,
        searched_gpus=tuple(scope.gpu_ids),
    )
    shown = result.priced_plans
    warnings = search_warnings(request, scope.unpriced, scope.catalog, chosen, side.varied, varied_plan, shown)
    result = replace(result, memory_judged_at_model=at_model and chosen.estimate.may_not_fit)
    return replace(result, warnings=warnings + memory_at_model_warnings(request, result))


def explained(
    within: InfeasiblePlan,
    request: PlanRequest,
    catalog: Catalog,
    gpus: dict[str, int | None],
    limits: CountLimits,
    deadline_s: float | None,
    settings: ModelingSettings,
) -> InfeasiblePlan:
    """An infeasible search's answer: the counts past its caps or its deadline probed for the
    fix, the memory fix, the figures judged at the request's risk."""
    if limits.caps:
        answer = cap_diagnosis(within, request, catalog, gpus, limits, deadline_s, settings)
    else:
        answer = deadline_fix(within, request, catalog, limits.limits, settings)
    return judged_at_risk(memory_fix(answer, request, catalog, limits.limits, settings), request.risk, RiskSetting.FLAG)


def request_catalog(request: PlanRequest, catalog: Catalog, settings: ModelingSettings) -> Catalog:
    """The catalog a request is searched in (``plan``, ``scored_search``): each GPU at the median of
    its ``price_kind`` offers, the request's own prices over that, on the request's network."""
    pinned = list(request.gpus or {})
    priced = priced_catalog(catalog, request.price_kind, pinned, request.price_overrides, settings)
    return catalog_on_network(priced, request.network)


# One given configuration (estimate), and re-estimates of a saved plan (restack, replan), which use
# build_plan and plan_from_row above.
from planner.api.build import build_plan  # noqa: E402
from planner.api.rebuild import replan, restack  # noqa: E402

__all__ = [
    "LONG_JOB_WARNING_DAYS",
    "Layout",
    "PlanRequest",
    "PlanResult",
    "ReplanRequest",
    "TrainingConfig",
    "VaryBatch",
    "build_plan",
    "chosen_dearer",
    "default_global_batch_tokens",
    "defaulted_accum_warning",
    "estimate",
    "estimate_warnings",
    "judged_cost_usd",
    "judged_hours",
    "plan",
    "plan_commitment",
    "replan",
    "restack",
    "search",
    "trains_too_long",
    "unplanned_price_warnings",
]
