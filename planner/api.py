"""The planner's public API: estimate one configuration, plan one job, plan a portfolio.

The CLI and the Streamlit app call only these functions. Planning is: generate candidates,
score them all (vectorised), solve the ILP over the scored table, then re-score the chosen
rows one by one through ``estimate`` and return typed ``Plan`` objects.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.catalog.hardware import Catalog, load_catalog
from planner.errors import InfeasiblePlan
from planner.fmt import duration_words
from planner.frontier import Knee, NearTie, knee_versus, near_tie
from planner.layout import ActivationCheckpointing, Implementation, Layout, Precision, TrainingConfig
from planner.model.estimate import divisible, estimate, job_totals, score
from planner.model.settings import DEFAULT_SETTINGS, STACK_SETTINGS, ModelingSettings, Stack
from planner.model.spec import ModelSpec
from planner.model.structure import context_extension_warning, default_implementation
from planner.plan import Plan
from planner.reports import ReplanRequest
from planner.search.candidates import Candidates
from planner.search.diagnosis import diagnose
from planner.search.ilp import CandidateTable, Objective, SingleSolution, check_rows, nearest_batch, solve_single
from planner.search.space import (
    DEFAULT_BATCH_TOLERANCE,
    SearchSpace,
    batch_tokens,
    batch_within_tolerance,
    build_candidates,
)
from planner.units import GIB, SECONDS_PER_DAY, SECONDS_PER_HOUR


def default_global_batch_tokens(model: ModelSpec) -> int:
    """Common practice: ~1M tokens below 3B parameters, 2M to 30B, 4M above (GPT-3, Llama)."""
    n = model.num_params()
    return 2**20 if n < 3e9 else (2**21 if n < 3e10 else 2**22)


DEFAULT_SEQ_LEN = 4096
# The largest GPU count searched for a GPU type with no inventory (and no ``max_gpus``). A type
# with an inventory is searched up to its inventory; the cap is printed with the plan and named
# in infeasible answers when it, not an inventory, limits the search.
DEFAULT_MAX_GPUS = 4096
# When a cap left the search empty, the counts up to this many times the cap are scored to tell
# whether the cap binds (docs/ilp.md, "GPU-count limits").
CAP_PROBE_FACTOR = 8
CAP_PROBE_MIN = 4 * DEFAULT_MAX_GPUS
# A plan that trains for longer than this gets a warning: GPUs, prices and methods rarely hold
# for a year, and "16 H100 for 1,244 days" was answered without a word (issue 10).
LONG_JOB_WARNING_DAYS = 365.0


class PlanRequest(BaseModel):
    """What the user asks for. ``gpus`` maps allowed GPU ids to an inventory (None = unlimited)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    model: ModelSpec
    hf_config_path: str | None = None
    training_tokens: float = Field(ge=1, allow_inf_nan=False)
    deadline_days: float | None = Field(None, gt=0, allow_inf_nan=False)
    budget_usd: float | None = Field(None, gt=0, allow_inf_nan=False)
    objective: Objective = Objective.COST
    cost_weight: float = Field(0.5, ge=0, le=1)
    gpus: dict[str, int | None] | None = None
    price_overrides: dict[str, float] = {}
    # None: DEFAULT_SEQ_LEN, or the model's context when that is shorter (GPT-3: 2048).
    seq_len: int | None = Field(None, ge=16)
    global_batch_tokens: int | None = Field(None, ge=1)
    # Largest relative distance of the batch from global_batch_tokens; of the feasible plans, those
    # of the achievable batch nearest the request are kept (the plan and its alternatives share it)
    # unless vary_batch, which lets each use any batch within the tolerance.
    batch_tolerance: float = Field(DEFAULT_BATCH_TOLERANCE, ge=0, lt=1)
    vary_batch: bool = False
    precision: Precision = Precision.BF16
    activation_checkpointing: tuple[ActivationCheckpointing, ...] = tuple(ActivationCheckpointing)
    allow_offload: bool = False
    # None: native where trainer/model.py builds the model (Llama, GPT-2/3 families), else Hugging
    # Face transformers (MoE, GPT-NeoX, MPT, BLOOM).
    impl: Implementation | None = None
    compile: bool = False
    # Largest GPU count to consider per type. None: a type's inventory, and for a type without
    # one, DEFAULT_MAX_GPUS or the largest inventory given, whichever is larger.
    max_gpus: int | None = Field(None, ge=1)
    top_k: int = Field(5, ge=0, le=100)
    solver: str = "auto"
    # The software to predict for (its settings profile, STACK_SETTINGS); non-trainplan plans
    # are estimate-only.
    stack: Stack = Stack.TRAINPLAN

    @model_validator(mode="after")
    def _check_sequence(self) -> PlanRequest:
        seq_len = min(DEFAULT_SEQ_LEN, self.model.max_seq_len) if self.seq_len is None else self.seq_len
        object.__setattr__(self, "seq_len", seq_len)
        if self.impl is None:
            object.__setattr__(self, "impl", default_implementation(self.model))
        return self

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the request asks that works but deserves a word (context extension)."""
        assert self.seq_len is not None
        warning = context_extension_warning(self.model, self.seq_len)
        return (warning,) if warning else ()


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


def catalog_with_prices(catalog: Catalog, overrides: dict[str, float]) -> Catalog:
    if not overrides:
        return catalog
    gpus = dict(catalog.gpus)
    for gpu_id, price in overrides.items():
        spec = catalog.gpu(gpu_id)
        gpus[spec.id] = spec.with_price(price)
    return catalog.model_copy(update={"gpus": gpus})


def allowed_gpus(request: PlanRequest, catalog: Catalog) -> dict[str, int | None]:
    """Validated GPU ids -> inventory; the whole catalog when the request names none."""
    if not request.gpus:
        return {gid: None for gid in catalog.gpus}
    out = {}
    for gid, limit in request.gpus.items():
        if limit is not None and limit < 1:
            raise ValueError(f"inventory for {gid} must be >= 1, got {limit}")
        out[catalog.gpu(gid).id] = limit
    return out


@dataclass(frozen=True)
class CountLimits:
    """The largest GPU count searched per type, and which of those limits are caps (``max_gpus``
    or DEFAULT_MAX_GPUS) rather than the type's inventory."""

    limits: dict[str, int]
    caps: dict[str, int]

    @property
    def largest(self) -> int:
        return max(self.limits.values())


def count_limits(request: PlanRequest, gpus: dict[str, int | None]) -> CountLimits:
    """Inventory where given (lowered by an explicit ``max_gpus``), else the cap."""
    inventories = [n for n in gpus.values() if n is not None]
    cap = request.max_gpus or max([DEFAULT_MAX_GPUS, *inventories])
    limits, caps = {}, {}
    for gpu, inventory in gpus.items():
        limits[gpu] = cap if inventory is None else min(inventory, cap)
        if inventory is None or cap < inventory:
            caps[gpu] = cap
    return CountLimits(limits, caps)


def requested_batch_tokens(request: PlanRequest) -> int:
    """The global batch the request asks for (its own, or the default for the model's size)."""
    return request.global_batch_tokens or default_global_batch_tokens(request.model)


def search_space(request: PlanRequest, max_gpus: int | None = None) -> SearchSpace:
    assert request.seq_len is not None and request.impl is not None, "PlanRequest's validator sets both"
    return SearchSpace(
        seq_len=request.seq_len,
        global_batch_tokens=requested_batch_tokens(request),
        batch_tolerance=request.batch_tolerance,
        precisions=(request.precision,),
        activation_checkpointing=request.activation_checkpointing,
        allow_offload=request.allow_offload,
        impl=request.impl,
        compile=request.compile,
        max_gpus=max_gpus or request.max_gpus or DEFAULT_MAX_GPUS,
    )


def candidate_table(
    model: ModelSpec,
    c: Candidates,
    gpu_ids: list[str],
    space: SearchSpace,
    training_tokens: float,
    settings: ModelingSettings,
) -> CandidateTable:
    """Score every candidate and hand the ILP the columns it constrains on."""
    s = score(model, c, settings)
    seconds, cost, _ = job_totals(s, c, training_tokens, settings)
    return CandidateTable(
        gpu_id=np.asarray(gpu_ids, dtype=object)[c.gpu_index],
        num_gpus=c.num_gpus,
        fits_memory=s.fits,
        memory_need_gib=s.memory.device_total / GIB,
        capacity_gib=s.capacity_bytes / GIB,
        time_to_train_s=seconds,
        cost_usd=cost,
        batch_ok=batch_within_tolerance(c, space),
        divisible=divisible(model, c),
        label=np.full(len(c), "", dtype=object),
        extra={
            "tp": c.tp,
            "pp": c.pp,
            "dp_shard": c.dp_shard,
            "row": np.arange(len(c)),
            "batch_tokens": batch_tokens(c),
        },
    )


def plan_from_row(
    request: PlanRequest, c: Candidates, row: int, gpu_ids: list[str], catalog: Catalog, settings: ModelingSettings
) -> Plan:
    """Re-score one chosen row through the scalar path and wrap it as a runnable Plan."""
    gpu = catalog.gpu(gpu_ids[int(c.gpu_index[row])])
    layout, training = c.layout(row), c.training(row)
    num_gpus = int(c.num_gpus[row])
    num_nodes = int(c.num_nodes[row])
    est = estimate(
        request.model,
        gpu,
        layout,
        training,
        num_gpus=num_gpus,
        num_nodes=num_nodes,
        catalog=catalog,
        settings=settings,
        training_tokens=request.training_tokens,
    ).model_copy(update={"requested_global_batch_tokens": requested_batch_tokens(request)})
    return Plan(
        model=request.model,
        hf_config_path=request.hf_config_path,
        gpu=gpu.id,
        num_gpus=num_gpus,
        num_nodes=num_nodes,
        gpus_per_node=num_gpus // num_nodes,
        layout=layout,
        training=training,
        training_tokens=request.training_tokens,
        price_per_gpu_hour_usd=gpu.price_per_gpu_hour_usd,
        estimate=est,
        stack=request.stack,
    )


def plan(
    request: PlanRequest, *, catalog: Catalog | None = None, settings: ModelingSettings | None = None
) -> PlanResult:
    """Choose GPU type, count and layout for one job. Raises InfeasiblePlan when none fits.
    ``settings`` None: the profile of ``request.stack``."""
    settings = settings or STACK_SETTINGS[request.stack]
    started = time.perf_counter()
    catalog = catalog_with_prices(catalog or load_catalog(), request.price_overrides)
    gpus = allowed_gpus(request, catalog)
    limits = count_limits(request, gpus)
    space = search_space(request, limits.largest)
    c = build_candidates(request.model, catalog, dict(limits.limits), space)
    gpu_ids = list(gpus)
    table = candidate_table(request.model, c, gpu_ids, space, request.training_tokens, settings)
    inventory = {g: n for g, n in gpus.items() if n is not None} or None
    deadline_s = None if request.deadline_days is None else request.deadline_days * SECONDS_PER_DAY
    try:
        solution = solve_single(
            table,
            request.objective,
            cost_weight=request.cost_weight,
            deadline_s=deadline_s,
            budget_usd=request.budget_usd,
            inventory=inventory,
            top_k=request.top_k,
            solver=request.solver,
            batch_target=None if request.vary_batch else requested_batch_tokens(request),
        )
    except InfeasiblePlan:
        if not limits.caps:
            raise
        raise cap_diagnosis(request, catalog, gpus, limits, deadline_s, settings) from None
    chosen = plan_from_row(request, c, solution.row, gpu_ids, catalog, settings)
    assert chosen.estimate.time_to_train_h is not None  # plan() always has training tokens
    assert math.isclose(
        chosen.estimate.time_to_train_h * SECONDS_PER_HOUR, float(table.time_to_train_s[solution.row]), rel_tol=1e-6
    ), "scalar re-score disagrees with the vectorised score"
    alternatives = tuple(plan_from_row(request, c, r, gpu_ids, catalog, settings) for r in solution.alternatives)
    rows = choosable_rows(request, table, deadline_s, inventory)
    tie = near_tie(table.cost_usd, table.time_to_train_s, rows, solution.row, Objective(request.objective).value)
    bend = None if deadline_s is not None else knee_versus(table.cost_usd, table.time_to_train_s, rows, solution.row)
    return PlanResult(
        plan=chosen,
        alternatives=alternatives,
        solution=solution,
        num_candidates=len(c),
        seconds=time.perf_counter() - started,
        warnings=request.warnings + long_job_warnings(chosen),
        count_limits=limits.limits,
        count_caps=limits.caps,
        near_tie=tie,
        near_tie_plan=None if tie is None else plan_from_row(request, c, tie.row, gpu_ids, catalog, settings),
        knee=bend,
        knee_plan=None if bend is None else plan_from_row(request, c, bend.row, gpu_ids, catalog, settings),
    )


def long_job_warnings(chosen: Plan) -> tuple[str, ...]:
    """A warning when the chosen plan trains for over LONG_JOB_WARNING_DAYS."""
    hours = chosen.estimate.time_to_train_h
    if hours is None or hours * SECONDS_PER_HOUR <= LONG_JOB_WARNING_DAYS * SECONDS_PER_DAY:
        return ()
    return (
        f"the plan trains for {duration_words(hours * SECONDS_PER_HOUR)}, over a year: a deadline "
        "(--deadline-days) sizes the GPU count for a date",
    )


def choosable_rows(
    request: PlanRequest, table: CandidateTable, deadline_s: float | None, inventory: dict[str, int] | None
) -> np.ndarray:
    """The rows the solver could have chosen, where the near tie and the knee are read: those
    passing every constraint, at the chosen batch unless the request varies it."""
    checks = check_rows(table, deadline_s=deadline_s, budget_usd=request.budget_usd, inventory=inventory)
    rows = np.flatnonzero(checks.feasible())
    if not request.vary_batch:
        rows = rows[nearest_batch(table.extra["batch_tokens"][rows], requested_batch_tokens(request))]
    return rows


def cap_diagnosis(
    request: PlanRequest,
    catalog: Catalog,
    gpus: dict[str, int | None],
    limits: CountLimits,
    deadline_s: float | None,
    settings: ModelingSettings,
) -> InfeasiblePlan:
    """Why a capped search found nothing: score the counts up to CAP_PROBE_FACTOR x the cap (never
    past an inventory) and diagnose them with the caps as limits, so the answer names the cap when
    more GPUs than it allows would do (constraint 'inventory', docs/ilp.md)."""
    probe: dict[str, int | None] = {}
    for gpu, limit in limits.limits.items():
        wider = max(limit * CAP_PROBE_FACTOR, CAP_PROBE_MIN)
        probe[gpu] = limit if gpu not in limits.caps else min(gpus[gpu] or wider, wider)
    largest = max(n for n in probe.values() if n is not None)
    space = replace(search_space(request, largest), extra_counts=tuple(sorted(set(limits.limits.values()))))
    c = build_candidates(request.model, catalog, probe, space)
    table = candidate_table(request.model, c, list(gpus), space, request.training_tokens, settings)
    checks = check_rows(
        table, deadline_s=deadline_s, budget_usd=request.budget_usd, inventory=limits.limits, count_caps=limits.caps
    )
    assert not checks.feasible().any(), "the probe's rows within the limits are the search's rows"
    return diagnose(table, checks)


def build_plan(
    model: ModelSpec,
    gpu: str,
    layout: Layout,
    training: TrainingConfig,
    *,
    num_gpus: int,
    num_nodes: int | None = None,
    training_tokens: float | None = None,
    price: float | None = None,
    hf_config_path: str | None = None,
    catalog: Catalog | None = None,
    settings: ModelingSettings | None = None,
    requested_global_batch_tokens: int | None = None,
    stack: Stack = Stack.TRAINPLAN,
) -> Plan:
    """Estimate one given configuration and wrap it as a runnable Plan (``trainplan estimate``).
    ``requested_global_batch_tokens``: the batch asked for, recorded beside the one the layout makes.
    ``settings`` None: the profile of ``stack``."""
    settings = settings or STACK_SETTINGS[stack]
    catalog = catalog or load_catalog()
    spec = catalog.gpu(gpu)
    if price is not None:
        catalog = catalog_with_prices(catalog, {spec.id: price})
        spec = catalog.gpu(spec.id)
    est = estimate(
        model,
        spec,
        layout,
        training,
        num_gpus=num_gpus,
        num_nodes=num_nodes,
        catalog=catalog,
        settings=settings,
        training_tokens=training_tokens,
    )
    if requested_global_batch_tokens is not None:
        est = est.model_copy(update={"requested_global_batch_tokens": requested_global_batch_tokens})
    return Plan(
        model=model,
        hf_config_path=hf_config_path,
        gpu=spec.id,
        num_gpus=num_gpus,
        num_nodes=est.num_nodes,
        gpus_per_node=num_gpus // est.num_nodes,
        layout=layout.resolve(num_gpus),
        training=training,
        training_tokens=training_tokens,
        price_per_gpu_hour_usd=spec.price_per_gpu_hour_usd,
        estimate=est,
        stack=stack,
    )


def restack(
    plan_: Plan, stack: Stack, *, catalog: Catalog | None = None, settings: ModelingSettings | None = None
) -> Plan:
    """The same configuration estimated for another software stack, catalog or settings (``explain
    --stack``, ``--calibration``; emit, when a run setting changes what the planner modelled).
    ``settings`` None: the profile of ``stack``."""
    if stack == plan_.stack and catalog is None and settings is None:
        return plan_
    return build_plan(
        plan_.model,
        plan_.gpu,
        plan_.layout,
        plan_.training,
        num_gpus=plan_.num_gpus,
        num_nodes=plan_.num_nodes,
        training_tokens=plan_.training_tokens,
        price=plan_.price_per_gpu_hour_usd,
        hf_config_path=plan_.hf_config_path,
        catalog=catalog,
        requested_global_batch_tokens=plan_.estimate.requested_global_batch_tokens,
        stack=stack,
        settings=settings,
    )


OOM_CORRECTION = 1.5  # assumed under-prediction when the probe ran out of memory before measuring


def replan(
    plan_: Plan,
    memory_correction: float | ReplanRequest,
    *,
    catalog: Catalog | None = None,
    settings: ModelingSettings = DEFAULT_SETTINGS,
) -> Plan:
    """Re-solve a plan after a probe measured ``memory_correction`` x the predicted memory.

    ``memory_correction`` is a factor or the trainer's ``replan_needed.json`` (a ReplanRequest). Keeps the
    GPU type, count and token budget; inflates every memory prediction by the measured factor
    (through a larger headroom) so the chosen layout leaves room for it.
    """
    if isinstance(memory_correction, ReplanRequest):
        memory_correction = memory_correction.memory_correction or OOM_CORRECTION
    if not memory_correction > 0:
        raise ValueError(f"memory correction must be > 0, got {memory_correction}")
    headroom = 1 - (1 - settings.memory_headroom) / max(memory_correction, 1.0)
    corrected = settings.but(memory_headroom=min(headroom, 0.95))
    request = PlanRequest(
        model=plan_.model,
        hf_config_path=plan_.hf_config_path,
        training_tokens=plan_.training_tokens or 1e9,
        gpus={plan_.gpu: plan_.num_gpus},
        seq_len=plan_.training.seq_len,
        global_batch_tokens=plan_.estimate.global_batch_tokens,
        precision=plan_.training.precision,
        impl=plan_.training.impl,
        compile=plan_.training.compile,
        max_gpus=plan_.num_gpus,
        objective=Objective.TIME,
        top_k=0,
    )
    space = replace(search_space(request), min_gpus=plan_.num_gpus)
    catalog = catalog or load_catalog()
    c = build_candidates(request.model, catalog, {plan_.gpu: plan_.num_gpus}, space)
    table = candidate_table(request.model, c, [plan_.gpu], space, request.training_tokens, corrected)
    solution = solve_single(
        table,
        Objective.TIME,
        inventory={plan_.gpu: plan_.num_gpus},
        top_k=0,
        batch_target=plan_.estimate.global_batch_tokens,
    )
    replanned = plan_from_row(request, c, solution.row, [plan_.gpu], catalog, corrected)
    requested = plan_.estimate.requested_global_batch_tokens  # what the first plan was asked for
    if requested is None:
        return replanned
    estimate_ = replanned.estimate.model_copy(update={"requested_global_batch_tokens": requested})
    return replanned.model_copy(update={"estimate": estimate_})


__all__ = [
    "Layout",
    "PlanRequest",
    "PlanResult",
    "ReplanRequest",
    "TrainingConfig",
    "build_plan",
    "default_global_batch_tokens",
    "estimate",
    "plan",
    "replan",
    "restack",
]
