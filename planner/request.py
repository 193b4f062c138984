"""What the user asks for (``PlanRequest``) and the bounds it sets on the search: the GPU types
allowed and the largest count searched for each (``count_limits``). planner/search/score.py
turns a request into its scored candidate table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, Field, model_validator

from planner.accuracy import DEFAULT_RISK, Risk, run_feature_bits
from planner.catalog.hardware import Catalog, GPUSpec
from planner.catalog.hf_config import encoder_warning
from planner.catalog.prices import PriceKind, catalog_with_price_kind
from planner.catalog.terms import TermBilling, term_billing
from planner.errors import RuleCode, RuleViolation
from planner.frozen import FROZEN
from planner.layout import (
    ActivationCheckpointing,
    Implementation,
    Precision,
    TrainingConfig,
)
from planner.limits import (
    MAX_BATCH_TOKENS,
    MAX_BUDGET_USD,
    MAX_DAYS,
    MAX_GPUS,
    MAX_PRICE_USD,
    MAX_SEARCH_BREADTH,
    MAX_SEQ_LEN,
    MAX_TRAINING_TOKENS,
    MIN_SEQ_LEN,
)
from planner.model.attention_kernels import FLASH3_CAPABILITY_MAJOR, AttentionKernel
from planner.model.candidates import matmul_peak
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision
from planner.model.profiles import kernel_choice, own_model_profile_warning
from planner.model.run_choices import RunChoices, run_settings
from planner.model.run_loss_inputs import DEFAULT_RUN_LOSSES, RunLossInputs
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.model.structure import (
    NativeGap,
    context_extension_warning,
    default_implementation,
    native_gaps,
    native_unsupported,
)
from planner.search.ilp import Objective, ScoredTable, SingleSolution, solve_single
from planner.search.space import (
    DEFAULT_BATCH_TOLERANCE,
    DEFAULT_MAX_GPUS,
    expert_parallel_degrees,
    pipeline_degrees,
)
from planner.stack_rules import ac_modes_problem, moe_stack_problem, precision_formats_problem, settings_problem


def default_global_batch_tokens(model: ModelSpec) -> int:
    """Common practice: ~1M tokens below 3B parameters, 2M to 30B, 4M above (GPT-3, Llama)."""
    n = model.num_params()
    return 2**20 if n < 3e9 else (2**21 if n < 3e10 else 2**22)


def default_grad_accum(model: ModelSpec, pp: int, micro_batch: int, seq_len: int, dp: int) -> int:
    """Micro-steps per optimizer step where an estimate names neither them nor a batch: 1, or with a
    pipeline (pp > 1) those of the model's default global batch (``default_global_batch_tokens``),
    rounded up to a multiple of pp: a pipeline's schedule runs pp micro-batches in flight, and the
    interleaved one needs a multiple of pp (trial s44 L2: issue 27's BLOOM and Nemotron commands
    failed as typed; review s44: 85 micro-steps were refused at pp 4 vpp 2)."""
    if pp <= 1:
        return 1
    accum = TrainingConfig.grad_accum_for(default_global_batch_tokens(model), micro_batch, seq_len, dp)
    return -(-accum // pp) * pp


# What a deadline answer adds where a larger global batch may let more GPUs share a step: the field and
# the flag, so the app names its own field for both (ui/infeasible_words.py app_words; app trial s45 L1).
LARGER_BATCH_WORDS = " (a larger one, global_batch_tokens or --global-batch-tokens, lets more GPUs share a step)"

DEFAULT_SEQ_LEN = 4096


def default_seq_len(model: ModelSpec) -> int:
    """DEFAULT_SEQ_LEN, or the model's context when that is shorter (GPT-3: 2048)."""
    return min(DEFAULT_SEQ_LEN, model.max_seq_len)


# The recompute modes searched unless the request names some: every mode but ``attention``,
# which stays an explicit choice (a mode more is a third more candidates to score, issue 28's
# speed target; ``blocks`` adds none: it takes the place of ``full``, space.searched_ac_codes).
DEFAULT_AC = tuple(m for m in ActivationCheckpointing if m != ActivationCheckpointing.ATTENTION)


# Alternatives a plan lists beside its choice (``trainplan plan --top``).
DEFAULT_TOP_K = 5


class PlanRequest(BaseModel):
    """What the user asks for. ``gpus`` maps allowed GPU ids to an inventory (None = unlimited)."""

    model_config = FROZEN
    model: ModelSpec
    hf_config_path: str | None = None
    # Bounds: planner/limits.py, the same for the CLI, the app and the jobs files.
    training_tokens: float = Field(ge=1, le=MAX_TRAINING_TOKENS, allow_inf_nan=False)
    deadline_days: float | None = Field(None, gt=0, le=MAX_DAYS, allow_inf_nan=False)
    budget_usd: float | None = Field(None, gt=0, le=MAX_BUDGET_USD, allow_inf_nan=False)
    objective: Objective = Objective.COST
    cost_weight: float = Field(0.5, ge=0, le=1)
    gpus: dict[str, int | None] | None = None
    price_overrides: dict[str, Annotated[float, Field(gt=0, le=MAX_PRICE_USD, allow_inf_nan=False)]] = {}
    # None: the catalog's default prices; else the median of each GPU's offers of this kind
    # (planner/catalog/prices.py; a spot price brings its interruptions into goodput).
    price_kind: PriceKind | None = None
    # Under a reserved kind, the share of the term beyond the job that other work uses and pays
    # (``TermBilling.filled``): 0 bills the whole term to this job.
    term_filled: float = Field(0.0, ge=0, le=1, allow_inf_nan=False)
    # None: each GPU on its catalog default network; else every GPU's nodes on this catalog
    # network (planner/catalog/networks.py: a cluster's own fabric).
    network: str | None = None
    # None: DEFAULT_SEQ_LEN, or the model's context when that is shorter (GPT-3: 2048).
    seq_len: int | None = Field(None, ge=MIN_SEQ_LEN, le=MAX_SEQ_LEN)
    global_batch_tokens: int | None = Field(None, ge=1, le=MAX_BATCH_TOKENS)
    # Largest relative distance of the batch from global_batch_tokens; of the feasible plans, those
    # of the achievable batch nearest the request are kept (the plan and its alternatives share it)
    # unless vary_batch, which lets each use any batch within the tolerance.
    batch_tolerance: float = Field(DEFAULT_BATCH_TOLERANCE, ge=0, lt=1, allow_inf_nan=False)
    vary_batch: bool = False
    precision: Precision = Precision.BF16
    activation_checkpointing: tuple[ActivationCheckpointing, ...] = DEFAULT_AC
    # Blocks checkpointed per pp rank in ``blocks`` plans; None: the fewest that fit, per candidate.
    ac_blocks: int | None = Field(None, ge=1)
    allow_offload: bool = False
    # None: native where trainer/model.py builds the model (the Llama relatives, GPT-2/3, Mixtral,
    # Qwen3-MoE, DeepSeek-V3), else Hugging Face transformers (Gemma, GPT-NeoX, MPT, BLOOM).
    impl: Implementation | None = None
    compile: bool = False
    # Largest GPU count to consider per type. None: a type's inventory, and for a type without
    # one, DEFAULT_MAX_GPUS or the largest inventory given, whichever is larger.
    max_gpus: int | None = Field(None, ge=1, le=MAX_GPUS)
    top_k: int = Field(DEFAULT_TOP_K, ge=0, le=100)
    # Also the best plan of each other GPU type searched (PlanResult.per_gpu; `plan --per-gpu`).
    per_gpu: bool = False
    solver: str = "auto"
    # The software to predict for (its settings profile, STACK_SETTINGS); non-trainplan plans
    # are estimate-only.
    stack: Stack = Stack.TRAINPLAN
    # The attention kernel the run uses; None: the one its stack picks (planner/model/stacks.py).
    attention: AttentionKernel | None = None
    # DeepSpeed's partitioned activation checkpoints (Megatron-DeepSpeed's --partition-activations).
    partition_activations: bool = False
    # Megatron-Core's --overlap-moe-expert-parallel-comm: each micro-batch's expert all-to-alls run
    # under another micro-batch's compute (combined 1F1B schedule; megatron-core only).
    moe_a2a_overlap: bool = False
    # Megatron-Core's --tp-comm-overlap (userbuffers), on as the recipes its profile was fitted on run
    # it; False: off, its TP collectives hidden only as Megatron hides them without it (megatron-core
    # only: ``tp_overlap_problem``, ``stack_profiles.tp_overlap_unbuffered``).
    tp_comm_overlap: bool = True
    # The optimizer's formats beyond the stack's profile (--grad-reduce-in-bf16,
    # --precision-aware-optimizer; ``optimizer_precision_problem``).
    optimizer_precision: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION
    # The user's own failure rate, checkpoint bandwidth, restart, stall, evaluation and start-up
    # figures for goodput (None each: the named default; planner/model/run_loss_inputs.py).
    run_losses: RunLossInputs = DEFAULT_RUN_LOSSES
    # The quantile of the held-out error band the search minimises and constrains by
    # (planner/accuracy): p80 by default, so a layout wins on evidence, not optimism.
    risk: Risk = DEFAULT_RISK

    @model_validator(mode="after")
    def _check_sequence(self) -> PlanRequest:
        seq_len = default_seq_len(self.model) if self.seq_len is None else self.seq_len
        object.__setattr__(self, "seq_len", seq_len)
        if self.impl is None:
            object.__setattr__(self, "impl", self.stack.modules or default_implementation(self.model))
        problem = settings_problem(
            self.stack,
            self.impl,
            self.compile,
            self.partition_activations,
            self.moe_a2a_overlap,
            self.attention,
            self.optimizer_precision,
            self.tp_comm_overlap,
        ) or moe_stack_problem(self.stack, self.model)
        problem = problem or precision_formats_problem(self.precision, self.optimizer_precision)
        if not problem and self.allow_offload and self.optimizer_precision.pure_bf16:
            # review55 L3: the search filtered every offload row away, unsaid
            problem = RuleViolation(RuleCode.PURE_BF16_OFFLOAD, {"offload_flag": "--allow-offload"})
        if not problem and self.activation_checkpointing != DEFAULT_AC:
            problem = ac_modes_problem(self.stack, self.activation_checkpointing)
        if problem:
            raise problem
        if self.global_batch_tokens is not None and self.global_batch_tokens * (1 + self.batch_tolerance) < seq_len:
            # trial s38: answered "widen the batch tolerance"; review s38: one within it of a
            # sequence is reachable (8,000 tokens at 8,192 planned at +2.4 %)
            raise ValueError(
                f"global batch {self.global_batch_tokens:,} tokens is less than one sequence ({seq_len:,} tokens),"
                f" even within the batch tolerance ({self.batch_tolerance:.0%}): give at least {seq_len:,}"
                " (--global-batch-tokens) or a shorter sequence (--seq-len)"
            )
        return self

    @property
    def kernel_choice(self) -> str:
        """Its ``attention``'s name where it is a choice its stack would not make (``kernel_choice``;
        "" for the stack's own), the kernel its band's regime is judged by."""
        return kernel_choice(self.stack, self.attention)

    @property
    def run_features(self) -> int:
        """The band features its own choices set (``accuracy.run_feature_bits``)."""
        return run_feature_bits(self.stack, self.tp_comm_overlap, self.optimizer_precision.pure_bf16)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the request asks that works but deserves a word (context extension)."""
        assert self.seq_len is not None and self.impl is not None
        experts = hf_experts_warning(self.model, self.stack, self.impl)
        notes = (
            context_extension_warning(self.model, self.seq_len),
            experts,
            encoder_warning(self.hf_config_path),
            own_model_profile_warning(self.model, self.stack),
        )
        return tuple(note for note in notes if note)

    @property
    def hf_experts_missing(self) -> str | None:
        assert self.impl is not None
        return hf_experts_missing(self.model, self.stack, self.impl)

    @property
    def hf_experts_gaps(self) -> list[NativeGap]:
        """``hf_experts_missing`` typed, for the app to word each feature (empty where it is None)."""
        return [] if self.hf_experts_missing is None else native_gaps(self.model)


def hf_experts_missing(model: ModelSpec, stack: Stack, impl: Implementation) -> str | None:
    """What the native trainer lacks of a MoE family that trainplan's stack therefore runs on
    Hugging Face's modules, whose expert layers run expert by expert (a plan the other stacks
    would beat; the CLI's and the app's warning); None otherwise."""
    if stack != Stack.TRAINPLAN or impl != Implementation.HF or model.num_experts <= 1:
        return None
    return ", ".join(native_unsupported(model))


def hf_moe_stack(model: ModelSpec, stack: Stack) -> bool:
    """Whether ``stack`` itself trains a MoE ``model`` on Hugging Face's expert-by-expert modules
    (HF Trainer, DeepSpeed: trial s43, warned of as trainplan's HF path was)."""
    return stack.modules == Implementation.HF and model.num_experts > 1


def hf_experts_warning(model: ModelSpec, stack: Stack, impl: Implementation) -> str | None:
    """The warning of ``hf_experts_missing``, for plan and estimate alike (trial s24: estimate said
    nothing of a Maverick on HF's expert-by-expert loop), and on any stack of a family whose HF
    MoE layer runs every expert on every token (trial s36: Llama 4 was timed as routed)."""
    missing = hf_experts_missing(model, stack, impl)
    why = "impl hf" if missing is None else f"impl hf; the native trainer lacks {missing}"
    if impl == Implementation.HF and model.hf_expert_work_factor > 1:
        return (
            f"{model.name} runs on Hugging Face's modules ({why}), whose MoE layers run all"
            f" {model.num_experts} experts on every token, {model.hf_expert_work_factor:g}x the routed experts'"
            " work (timed so, in bf16 whatever the precision):"
            " --stack megatron-core estimates a grouped-GEMM stack that runs the routed experts only"
        )
    if missing is None and not hf_moe_stack(model, stack):
        return None
    under = f"under {stack.value}" if missing is None else why
    return (
        f"{model.name} runs on Hugging Face's modules ({under}), whose MoE layers loop over the experts one at"
        " a time, each expert's kernel launches not timed (the step may be slower than shown): --stack"
        " megatron-core estimates a grouped-GEMM stack on the same GPUs"
    )


def request_settings(
    request: PlanRequest, settings: ModelingSettings | None = None, whole_terms: bool = True
) -> ModelingSettings:
    """The settings a request is scored with: ``settings`` (None: its stack's profile) with the
    attention kernel, the activation partitioning and the all-to-all overlap it names, and its
    price kind's reserved term billed whole (``whole_terms`` False: by the hour, for the jobs of a
    portfolio or fleet, which share their terms)."""
    chosen = settings or STACK_SETTINGS[request.stack]
    chosen = run_settings(chosen, RunChoices.of(request))
    return chosen.but(term=request_term(request) if whole_terms else None)


def request_term(request: PlanRequest) -> TermBilling | None:
    """The reserved term a single job's request bills whole (None: billed by the hour)."""
    return term_billing(request.price_kind, request.term_filled)


def catalog_with_prices(catalog: Catalog, overrides: dict[str, float]) -> Catalog:
    if not overrides:
        return catalog
    gpus = dict(catalog.gpus)
    for gpu_id, price in overrides.items():
        spec = catalog.gpu(gpu_id)
        gpus[spec.id] = spec.with_price(price)
    return catalog.model_copy(update={"gpus": gpus})


def priced_catalog(
    catalog: Catalog, kind: str | None, pinned: list[str], prices: dict[str, float], settings: ModelingSettings
) -> Catalog:
    """The catalog every pricing path uses (a search, an estimate, a replan): each GPU at the median
    of its ``kind`` offers (``pinned``: GPUs refused without one unless priced), the caller's own
    ``prices`` over that, a spot GPU priced so keeping spot's interruptions."""
    return catalog_with_prices(catalog_with_price_kind(catalog, kind, pinned, settings, list(prices)), prices)


def allowed_gpus(request: PlanRequest, catalog: Catalog) -> dict[str, int | None]:
    """Validated GPU ids -> inventory; the whole catalog when the request names none. Only the
    GPUs the requested attention kernel and precision run on (``gpu_problem``)."""
    if not request.gpus:
        out: dict[str, int | None] = {gid: None for gid in catalog.gpus}
    else:
        out = {}
        for gid, limit in request.gpus.items():
            if limit is not None and not 1 <= limit <= MAX_GPUS:
                raise ValueError(f"inventory for {gid} must be >= 1 and <= {MAX_GPUS:,}, got {limit}")
            gpu_id = catalog.gpu(gid).id
            if gpu_id in out:
                raise ValueError(f"GPU {gpu_id} is given twice ({gid})")
            out[gpu_id] = limit
    runs = {g: out[g] for g in runnable_gpus(request, catalog, out)}
    if not runs:  # every type has a problem: the first one's is the answer
        problem = gpu_problem(request, catalog.gpu(next(iter(out))))
        assert problem is not None
        raise problem
    check_search_breadth(request, len(runs))
    return runs


def check_search_breadth(request: PlanRequest, gpu_types: int) -> None:
    """Refuse a search broader than MAX_SEARCH_BREADTH: GPU types x pipeline splits x expert-parallel
    degrees, the axes a model's shape multiplies (a config of 1,024 layers and 2,520 experts, 48
    divisors, took 70 s to enumerate on one GPU type list; DeepSeek-V3's 135 per type, 11 s)."""
    assert request.impl is not None, "PlanRequest's validator sets it"
    splits = len(pipeline_degrees(request.model.num_layers)[0])
    degrees = len(expert_parallel_degrees(request.model, request.impl))
    breadth = gpu_types * splits * degrees
    if breadth > MAX_SEARCH_BREADTH:
        raise ValueError(
            f"the search is too broad: {gpu_types} GPU types x {splits} pipeline splits ({request.model.num_layers}"
            f" layers) x {degrees} expert-parallel degrees ({request.model.num_experts} experts) = {breadth:,},"
            f" more than {MAX_SEARCH_BREADTH:,}; name fewer GPU types (--gpus)"
        )


def runnable_gpus(request: PlanRequest, catalog: Catalog, ids: Iterable[str]) -> list[str]:
    """The ids of ``ids`` the request can run on (``gpu_problem`` None): the search's GPU types, and
    the app's candidates for why a type lost."""
    return [g for g in ids if gpu_problem(request, catalog.gpu(g)) is None]


def left_out_gpus(request: PlanRequest, catalog: Catalog) -> dict[str, ValueError]:
    """The GPU types ``request.gpus`` names that the request cannot run on, each with why
    (``gpu_problem``): what the search leaves out, which the CLI and the app then name."""
    named = (catalog.gpu(g) for g in request.gpus or {})
    return {gpu.id: problem for gpu in named if (problem := gpu_problem(request, gpu)) is not None}


def gpu_problem(request: PlanRequest, gpu: GPUSpec) -> ValueError | None:
    """Why the request cannot run on ``gpu`` at all (None: it can): its attention kernel or its
    precision (no dense peak for it: fp8 on an A100), so the GPU is left out of the search; with
    no GPU left the first reason is the answer, not a divisibility verdict on every row."""
    kernel = kernel_problem(request.attention, gpu)
    if kernel is not None:
        return ValueError(kernel)
    try:
        matmul_peak(gpu, request.precision)
    except ValueError:
        return RuleViolation(RuleCode.PRECISION, {"gpu": gpu.id, "precision": request.precision.value})
    return None


def kernel_problem(kernel: AttentionKernel | None, gpu: GPUSpec) -> str | None:
    """Why ``kernel`` cannot run on ``gpu`` (None: it can)."""
    major = None if gpu.compute_capability is None else gpu.compute_capability[0]
    if kernel == AttentionKernel.FLASH3 and major != FLASH3_CAPABILITY_MAJOR:
        return f"--attention flash3: FlashAttention-3 runs on Hopper GPUs only (sm90), not on {gpu.id}"
    if kernel == AttentionKernel.CUDNN and gpu.vendor != "nvidia":  # an NVIDIA library
        return f"--attention cudnn: cuDNN's attention runs on NVIDIA GPUs only, not on {gpu.id} ({gpu.vendor})"
    return None


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


def solve_request(
    request: PlanRequest, table: ScoredTable, deadline_s: float | None, inventory: dict[str, int] | None
) -> SingleSolution:
    """The ILP over ``table`` with the request's objective, limits and batch target."""
    return solve_single(
        table,
        request.objective,
        cost_weight=request.cost_weight,
        deadline_s=deadline_s,
        budget_usd=request.budget_usd,
        inventory=inventory,
        top_k=request.top_k,
        solver=request.solver,
        batch_target=None if request.vary_batch else requested_batch_tokens(request),
        per_gpu=request.per_gpu,
    )
