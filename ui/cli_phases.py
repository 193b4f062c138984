"""The steps of ``estimate`` and ``plan`` (ui/cli.py), named so each command's body reads as its
sequence: check the flags, read the model, build the request, call the API, render.

Where the two commands do the same thing (read the model and the stack that runs it, the settings
both pass to the planner) the step is one function here. What the commands imported inside
their bodies (planner.api, planner.stack_rules, ...) the steps import inside theirs: loading the
CLI for ``--help`` or another command does not import them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from planner.layout import ActivationCheckpointing, Implementation, Layout, Precision, TrainingConfig
from planner.limits import (
    MAX_BATCH_TOKENS,
    MAX_BUDGET_USD,
    MAX_DAYS,
    MAX_GPUS,
    MAX_PRICE_USD,
    MAX_SEQ_LEN,
    MAX_TRAINING_TOKENS,
    MIN_SEQ_LEN,
)
from planner.model.attention_kernels import AttentionKernel
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.run_loss_inputs import RunLossInputs
from planner.model.stacks import Stack
from ui import render, render_plan
from ui.calibration import CalibrationChoice, applied_calibration, choose_calibration
from ui.inputs import ac_modes, check_priced_gpus, check_range, load_model_arg, parse_pairs, save_plan, whole_tokens

if TYPE_CHECKING:
    from planner.api import PlanRequest, PlanResult
    from planner.model.spec import ModelSpec
    from planner.plan import Plan
    from planner.stack_rules import StackSwitch


# --------------------------------------------------------------------------- check the flags


def check_tokens(tokens: float | None) -> None:
    """``--tokens``: a positive count (estimate's is optional, plan's required)."""
    check_range("--tokens", tokens, 0, MAX_TRAINING_TOKENS, low_open=True)


def check_seq_len(seq_len: int | None) -> None:
    check_range("--seq-len", seq_len, MIN_SEQ_LEN, MAX_SEQ_LEN)


def batch_tokens_given(batch_tokens: float | None) -> int | None:
    """``--global-batch-tokens`` as a whole count (4e6 reads as 4,000,000), None when not given."""
    return whole_tokens("--global-batch-tokens", batch_tokens, MAX_BATCH_TOKENS)


def check_estimate_flags(
    *,
    num_gpus: int,
    batch_tokens: float | None,
    grad_accum: int | None,
    micro_batch: int,
    tokens: float | None,
    price: float | None,
    seq_len: int | None,
    nodes: int | None,
) -> int | None:
    """estimate's flags within their bounds, in the order it names a first bad one; the global
    batch in tokens (None: not given)."""
    if batch_tokens is not None and grad_accum is not None:
        raise ValueError("give --global-batch-tokens or --grad-accum, not both")
    check_range("--num-gpus", num_gpus, 1, MAX_GPUS)
    global_batch_tokens = batch_tokens_given(batch_tokens)
    check_range("--grad-accum", grad_accum, 1, MAX_BATCH_TOKENS)
    if micro_batch > MAX_BATCH_TOKENS:  # past int64 a ZeroDivisionError (fuzz s47); under 1 the layout's rule says
        check_range("--micro-batch", micro_batch, 1, MAX_BATCH_TOKENS)
    check_tokens(tokens)
    check_range("--price", price, 0, MAX_PRICE_USD, low_open=True)  # the catalog's rule: a positive price
    check_seq_len(seq_len)
    check_range("--nodes", nodes, 1, MAX_GPUS)
    return global_batch_tokens


def check_plan_flags(
    *,
    tokens: float,
    batch_tokens: float | None,
    max_gpus: int | None,
    seq_len: int | None,
    deadline_days: float | None,
    budget_usd: float | None,
    batch_tolerance: float,
) -> int | None:
    """plan's flags within their bounds, in the order it names a first bad one; the global batch
    in tokens (None: not given)."""
    check_tokens(tokens)
    global_batch_tokens = batch_tokens_given(batch_tokens)
    check_range("--max-gpus", max_gpus, 1, MAX_GPUS)
    check_seq_len(seq_len)
    check_range("--deadline-days", deadline_days, 0, MAX_DAYS, low_open=True)
    check_range("--budget-usd", budget_usd, 0, MAX_BUDGET_USD, low_open=True)
    check_range("--batch-tolerance", batch_tolerance, 0, 1, high_open=True)
    return global_batch_tokens


# --------------------------------------------------------------------------- read the model


@dataclass(frozen=True)
class ModelRead:
    """The model a command reads, the stack that runs it and the calibration file it applies."""

    spec: ModelSpec
    hf_path: str | None  # the config.json's resolved path; None for a preset
    stack: Stack  # the one asked for, or the fork that runs the model where it would refuse it
    switch: StackSwitch | None  # why the fork runs it (None: the stack asked for does)
    calibration: CalibrationChoice | None

    @property
    def switch_words(self) -> tuple[str, ...]:
        """The switch's notice, the first of a command's warnings (none without a switch)."""
        return (self.switch.words(self.spec.name),) if self.switch else ()


def read_model(model: str, stack: Stack, pp: int, calibration: Path | None, no_calibration: bool) -> ModelRead:
    """``--model``, ``--stack`` at ``pp`` stages and the calibration flags. The switch is read before
    the layout is made: the fork's default sharding is its own."""
    from planner.stack_rules import stack_switch

    chosen = choose_calibration(calibration, no_calibration)
    spec, hf_path = load_model_arg(model)
    switch = stack_switch(stack, spec, pp)
    return ModelRead(spec, hf_path, switch.runs if switch else stack, switch, chosen)


# --------------------------------------------------------------------------- build the request


class StackSettings(TypedDict):
    """The keywords estimate's ``build_plan`` and plan's ``PlanRequest`` take alike from the flags."""

    hf_config_path: str | None
    stack: Stack
    price_kind: str | None
    term_filled: float
    network: str | None
    attention: AttentionKernel | None
    partition_activations: bool
    moe_a2a_overlap: bool
    tp_comm_overlap: bool
    optimizer_precision: OptimizerPrecision
    run_losses: RunLossInputs


def stack_settings(
    read: ModelRead,
    *,
    price_kind: str | None,
    term_filled: float,
    network: str | None,
    attention: AttentionKernel | None,
    partition_activations: bool,
    moe_a2a_overlap: bool,
    tp_comm_overlap: bool,
    optimizer: OptimizerPrecision,
    run_losses: RunLossInputs,
) -> StackSettings:
    """The settings of the flags estimate and plan share, for the stack ``read`` runs."""
    return StackSettings(
        hf_config_path=read.hf_path,
        stack=read.stack,
        price_kind=price_kind,
        term_filled=term_filled,
        network=network,
        attention=attention,
        partition_activations=partition_activations,
        moe_a2a_overlap=moe_a2a_overlap,
        tp_comm_overlap=tp_comm_overlap,
        optimizer_precision=optimizer,
        run_losses=run_losses,
    )


def optimizer_formats(
    grad_reduce_in_bf16: bool, precision_aware_optimizer: bool, pure_bf16: bool
) -> OptimizerPrecision:
    """The optimizer formats the flags ask (--grad-reduce-in-bf16, --precision-aware-optimizer, --pure-bf16)."""
    return OptimizerPrecision(
        grad_reduce_bf16=grad_reduce_in_bf16, param_remainders=precision_aware_optimizer, pure_bf16=pure_bf16
    )


def estimate_ac_mode(
    ac: ActivationCheckpointing | None, ac_blocks: int | None, spec: ModelSpec
) -> ActivationCheckpointing:
    """estimate's one recompute mode (none by default; ``--ac-blocks`` alone: blocks)."""
    (mode,) = ac_modes([ac] if ac else None, ac_blocks, spec.num_layers) or (ActivationCheckpointing.NONE,)
    if mode == ActivationCheckpointing.BLOCKS and ac_blocks is None:
        raise ValueError("--ac blocks needs --ac-blocks N (blocks checkpointed per pp rank)")
    return mode


@dataclass(frozen=True)
class EstimateTraining:
    """estimate's training configuration, and whether its accumulation was the default's."""

    training: TrainingConfig
    defaulted_accum: bool  # no accumulation given and the default took more than one micro-step (a pipeline's)


def estimate_training(
    read: ModelRead,
    layout: Layout,
    mode: ActivationCheckpointing,
    *,
    num_gpus: int,
    seq_len: int | None,
    micro_batch: int,
    grad_accum: int | None,
    global_batch_tokens: int | None,
    ac_blocks: int | None,
    precision: Precision,
    impl: Implementation | None,
    compile: bool,
    offload: bool,
) -> EstimateTraining:
    """The training configuration of estimate's flags: the model's default sequence where none is
    given; the accumulation given, or the one the global batch makes on ``layout``, else the
    model's default."""
    from planner.model.structure import default_implementation
    from planner.request import default_grad_accum, default_seq_len

    seq_len = default_seq_len(read.spec) if seq_len is None else seq_len
    dp = layout.resolve(num_gpus).dp
    given = grad_accum or (
        TrainingConfig.grad_accum_for(global_batch_tokens, micro_batch, seq_len, dp) if global_batch_tokens else None
    )
    accum = given or default_grad_accum(read.spec, layout.pp, micro_batch, seq_len, dp)
    training = TrainingConfig(
        seq_len=seq_len,
        micro_batch=micro_batch,
        grad_accum=accum,
        activation_checkpointing=mode,
        ac_blocks=ac_blocks or 0,
        precision=precision,
        impl=impl or read.stack.modules or default_implementation(read.spec),
        compile=compile,
        offload=offload,
    )
    return EstimateTraining(training, defaulted_accum=given is None and accum > 1)


@dataclass(frozen=True)
class PlanGpus:
    """plan's ``--gpus`` and ``--price``: the types allowed with their inventories, and the prices."""

    inventory: dict[str, int | None] | None  # a type's None: any count; None: every catalog type
    prices: dict[str, float]


def plan_gpus(gpus: list[str] | None, prices: list[str] | None) -> PlanGpus:
    """The GPU types plan may use and the prices given for them (each a type among ``--gpus``)."""
    inventory = parse_pairs(gpus, "--gpus", 1, MAX_GPUS, whole=True) or None
    # a positive price, as estimate's --price (PlanRequest's PositiveFloat)
    overrides = parse_pairs(prices, "--price", 0, MAX_PRICE_USD, low_open=True, example="h100-sxm=2.5")
    check_priced_gpus(overrides, inventory)
    return PlanGpus(inventory, overrides)


# --------------------------------------------------------------------------- call the API, render


def render_estimate(
    plan: Plan,
    read: ModelRead,
    defaulted_accum: bool,
    *,
    price_kind: str | None,
    price: float | None,
    out: Path | None,
    as_json: bool,
) -> None:
    """estimate's answer: its warnings on stderr (in the JSON, with --json), the plan file, the figures."""
    from planner.api import defaulted_accum_warning, estimate_warnings

    warnings = (
        *read.switch_words,
        *((defaulted_accum_warning(plan),) if defaulted_accum else ()),
        *estimate_warnings(plan, price_kind, price),
    )
    for warning in () if as_json else warnings:
        render.warn(warning)
    if out:
        save_plan(plan, out)
    render.estimate(plan, as_json=as_json, saved_to=out, calibration=read.calibration, warnings=warnings)


def solve_plan(request: PlanRequest, read: ModelRead, out: Path | None, as_json: bool) -> PlanResult | None:
    """The plan's solution; None when no plan is feasible, which is answered here (the reason and
    the fix) as an answer, not an error."""
    from planner.api import plan as solve
    from planner.errors import InfeasiblePlan

    try:
        with render.working("searching layouts and solving the ILP", quiet=as_json):
            return solve(request, calibration=applied_calibration(read.calibration))
    except InfeasiblePlan as exc:
        render_plan.no_plan(exc, request, as_json=as_json, calibration=read.calibration, said=read.switch_words)
        if out:  # trial s35: a script's `plan --out p.json && emit p.json` failed later, or emitted an old file
            stale = " (the file there is not this request's plan)" if out.exists() else ""
            render.warn(f"no plan is feasible, so none was written to {out}{stale}")
        return None


def render_planned(result: PlanResult, request: PlanRequest, read: ModelRead, out: Path | None, as_json: bool) -> None:
    """plan's answer: the switch's notice first among its warnings, the plan file, the table."""
    if read.switch:
        result = replace(result, warnings=(*read.switch_words, *result.warnings))
    if out:
        save_plan(result.plan, out)
    render_plan.plan_result(result, as_json=as_json, saved_to=out, calibration=read.calibration, request=request)
