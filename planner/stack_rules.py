"""What a stack cannot run, one rule per refusal, each coded so the app words it (ui/reasons.py):
the settings of a request or a plan (``settings_problem``: partitioned activations, the
overlapped all-to-alls, the modules, torch.compile, the attention kernel) and one
configuration's layout (``configuration_problem``: ``Stack.refusals``, the search's filter too).
Split out of planner/request.py, whose requests are checked with them."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from planner.accuracy.regime import LONG_SEQUENCE_TOKENS
from planner.errors import RuleCode, RuleViolation
from planner.layout import (
    ActivationCheckpointing,
    Implementation,
    Layout,
    Precision,
    TrainingConfig,
    max_pipeline_stages,
)
from planner.model.attention_kernels import AttentionKernel
from planner.model.candidates import code
from planner.model.optimizer_precision import (
    DEFAULT_OPTIMIZER_PRECISION,
    OptimizerPrecision,
    bf16_grads_refused,
    not_bf16_weights,
    pure_bf16_refused,
    remainders_refused,
)
from planner.model.partial_recompute import full_ac_blocks, too_many_ac_blocks
from planner.model.spec import ModelSpec
from planner.model.stack_profiles import a2a_overlap_refused
from planner.model.stacks import Stack


def stack_problem(
    stack: Stack,
    model: ModelSpec,
    layout: Layout,
    grad_accum: int,
    offload: bool = False,
    ac: ActivationCheckpointing | None = None,
) -> RuleViolation | None:
    """Why ``stack`` cannot run ``layout`` (None: it can), from ``Stack.refusals``: a pipeline
    without an engine, DeepSpeed's engine with ZeRO-2/3 or interleaving, Megatron-LM's even stages
    and interleaving limits, a context or expert split the stack lacks, more sharding than it has.
    Coded, so the app words it (ui/reasons.py)."""
    layers = model.num_layers
    r = stack.layout_refusals(layout, layers, grad_accum, offload, ac)
    figures = {"stack": stack.value, "sharding": layout.sharding.value, "layers": layers, "pp": layout.pp}
    figures |= {"vpp": layout.vpp, "grad_accum": grad_accum, "ac": "" if ac is None else ac.value}
    figures |= {"modes": stack.ac_mode_names}
    for refused, rule in (
        (r.no_context_parallel, RuleCode.STACK_NO_CP),
        (r.no_expert_parallel, RuleCode.STACK_NO_EP),
        (r.sharding, RuleCode.STACK_SHARDING),
        (r.no_zero1, RuleCode.STACK_NO_ZERO1),
        (r.ac_mode, RuleCode.STACK_AC_MODE),
        (r.no_pipeline, RuleCode.STACK_NO_PIPELINE),
        (r.hf_pipeline, RuleCode.STACK_HF_PIPELINE),
        (r.autotp_zero3, RuleCode.STACK_AUTOTP_ZERO3),
        (r.pipeline_zero, RuleCode.STACK_PIPELINE_ZERO),
        (r.interleaved, RuleCode.STACK_INTERLEAVED),
        (r.uneven_stages, RuleCode.STACK_EVEN_STAGES),
        (r.interleaving, RuleCode.STACK_INTERLEAVING),
        (r.unsharded_offload, RuleCode.STACK_OFFLOAD_ZERO),
    ):
        if refused:
            return RuleViolation(rule, figures)
    return None


def ac_modes_problem(stack: Stack, modes: tuple[ActivationCheckpointing, ...]) -> RuleViolation | None:
    """Why a plan's recompute modes, asked by name, are not all ``stack``'s (``Stack.ac_codes``;
    the search's filter drops the others of the default modes silently)."""
    refused = [m for m in modes if code(m) not in stack.ac_codes]
    if not refused:
        return None
    return RuleViolation(
        RuleCode.STACK_AC_MODE, {"stack": stack.value, "ac": refused[0].value, "modes": stack.ac_mode_names}
    )


def impl_problem(stack: Stack, impl: Implementation | None) -> RuleViolation | None:
    """Why ``impl`` is not ``stack``'s (None: it is, or the stack has no fixed modules): a stack
    trains its own modules (``Stack.modules``; trial s26: `--stack megatron-core --impl hf` was
    accepted and timed with Megatron's modules all the same)."""
    if stack.modules is None or impl is None or impl == stack.modules:
        return None
    whose = "Hugging Face's modules" if stack.modules == Implementation.HF else "its own modules"
    figures = {"stack": stack.value, "whose": whose, "modules": stack.modules.value, "impl": impl.value}
    return RuleViolation(RuleCode.STACK_IMPL, figures)


def compile_problem(stack: Stack, compile: bool) -> RuleViolation | None:
    """Why ``--compile`` cannot be asked of ``stack`` (None: it can; ``Stack.compiles``)."""
    return RuleViolation(RuleCode.STACK_COMPILE, {"stack": stack.value}) if compile and not stack.compiles else None


def partition_problem(stack: Stack, partition_activations: bool) -> RuleViolation | None:
    """Why partitioned activations cannot be asked of ``stack`` (None: they can): they are
    DeepSpeed's activation checkpointing under Megatron's tensor parallelism."""
    if partition_activations and not stack.partitions_activations:
        return RuleViolation(RuleCode.STACK_PARTITION, {"stack": stack.value})
    return None


def a2a_overlap_problem(stack: Stack, moe_a2a_overlap: bool) -> RuleViolation | None:
    """Why the overlapped expert all-to-alls cannot be asked of ``stack`` (None: they can): they
    are Megatron-Core's combined 1F1B schedule; deepseek-v3's profile hides them already (DualPipe)
    and the other stacks wait for each exchange."""
    if moe_a2a_overlap and not stack.overlaps_moe_a2a:
        return RuleViolation(RuleCode.STACK_A2A_OVERLAP, {"stack": stack.value})
    return None


def tp_overlap_problem(stack: Stack, tp_comm_overlap: bool) -> RuleViolation | None:
    """Why the TP communication overlap cannot be turned off under ``stack`` (None: it can, or it is
    kept): only megatron-core's profile overlaps it (``Stack.overlaps_tp_comm``)."""
    if not tp_comm_overlap and not stack.overlaps_tp_comm:
        return RuleViolation(RuleCode.STACK_TP_OVERLAP, {"stack": stack.value})
    return None


def optimizer_precision_problem(stack: Stack, chosen: OptimizerPrecision) -> RuleViolation | None:
    """Why ``stack`` cannot take the optimizer formats asked (None: it can): bf16 gradient buffers
    (``Stack.reduces_grads_in_bf16``), 16-bit master remainders (``Stack.stores_param_remainders``), pure
    bf16 (``Stack.trains_pure_bf16``)."""
    if chosen.grad_reduce_bf16 and not stack.reduces_grads_in_bf16:
        return RuleViolation(RuleCode.STACK_GRAD_BF16, {"stack": stack.value})
    if chosen.param_remainders and not stack.stores_param_remainders:
        return RuleViolation(RuleCode.STACK_PARAM_REMAINDERS, {"stack": stack.value})
    if chosen.pure_bf16 and not stack.trains_pure_bf16:
        return RuleViolation(RuleCode.STACK_PURE_BF16, {"stack": stack.value})
    return None


class RunChoices(NamedTuple):
    """The run-level choices a stack may or may not offer (``kept_under``)."""

    partition_activations: bool
    moe_a2a_overlap: bool
    optimizer: OptimizerPrecision
    # Megatron-Core's --tp-comm-overlap kept (True: the stack's own; ``tp_overlap_problem``).
    tp_comm_overlap: bool = True

    def kept_under(self, stack: Stack) -> RunChoices:
        """Those ``stack`` offers (a restacked plan, a portfolio job re-solved on another stack)."""
        return RunChoices(
            self.partition_activations and stack.partitions_activations,
            self.moe_a2a_overlap and stack.overlaps_moe_a2a,
            self.optimizer.kept_under(stack),
            self.tp_comm_overlap or not stack.overlaps_tp_comm,
        )


def kernel_stack_problem(stack: Stack, attention: AttentionKernel | None) -> RuleViolation | None:
    """Why ``stack`` cannot call the named attention kernel (None: it can; ``Stack.attention_kernels``)."""
    if attention is None or stack.calls(attention):
        return None
    names = ", ".join(sorted(k.value for k in AttentionKernel if stack.calls(k)))
    return RuleViolation(RuleCode.STACK_KERNEL, {"stack": stack.value, "kernel": attention.value, "kernels": names})


def settings_problem(
    stack: Stack,
    impl: Implementation | None,
    compile: bool,
    partition_activations: bool,
    moe_a2a_overlap: bool,
    attention: AttentionKernel | None = None,
    optimizer: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION,
    tp_comm_overlap: bool = True,
) -> RuleViolation | None:
    """Why ``stack`` cannot run these settings of a request or a plan (None: it can): partitioned
    activations, the overlapped all-to-alls, the TP overlap turned off, the optimizer's formats, the
    modules, torch.compile, the attention kernel. The search's rows and an estimate's layout also meet
    ``configuration_problem``'s layout rules."""
    return (
        partition_problem(stack, partition_activations)
        or a2a_overlap_problem(stack, moe_a2a_overlap)
        or tp_overlap_problem(stack, tp_comm_overlap)
        or optimizer_precision_problem(stack, optimizer)
        or impl_problem(stack, impl)
        or compile_problem(stack, compile)
        or kernel_stack_problem(stack, attention)
    )


def moe_stack_problem(stack: Stack, model: ModelSpec) -> RuleViolation | None:
    """Why ``stack`` cannot train ``model`` at all (None: it can): experts in a stack without MoE
    layers (``Stack.mixture_of_experts``), ALiBi in one without it (``Stack.alibi``)."""
    if model.is_moe and not stack.mixture_of_experts:
        return RuleViolation(RuleCode.STACK_NO_MOE, {"stack": stack.value, "model": model.name})
    if model.position == "alibi" and not stack.alibi:
        return RuleViolation(RuleCode.STACK_NO_ALIBI, {"stack": stack.value, "model": model.name})
    return None


class StackSwitch(NamedTuple):
    """A stack asked for that refuses a request, and the fork of its code line that estimates it."""

    asked: Stack
    runs: Stack
    refusal: RuleCode  # what ``asked`` would have answered: STACK_NO_ALIBI or STACK_HF_PIPELINE

    def words(self, model: str) -> str:
        """The notice an estimate or a plan prints before its figures."""
        why = (
            f"{self.asked.value} has no ALiBi attention bias, which {model} needs; BigScience's fork of"
            " Megatron-LM added it to train BLOOM"
            if self.refusal == RuleCode.STACK_NO_ALIBI
            else "DeepSpeed's pipeline engine trains a PipelineModule, not Hugging Face's modules, so its 3D"
            " parallelism (pp > 1) is Megatron-DeepSpeed's"
        )
        return f"{why}: estimated as --stack {self.runs.value} (its profile and its validation rows)"


def stack_switch(stack: Stack, model: ModelSpec, pp: int) -> StackSwitch | None:
    """The fork that estimates ``model`` at ``pp`` stages where ``stack`` would refuse it for a reason
    the fork lacks (``Stack.fork``): ALiBi under Megatron-LM, pp > 1 on DeepSpeed's Hugging Face
    modules. None: ``stack`` runs it, or refuses it for a reason no fork mends. Read before the layout
    is made, since the fork's default sharding is its own (ZeRO-1 under DeepSpeed's pipeline)."""
    if (fork := stack.fork) is None:
        return None
    if model.position == "alibi" and not stack.alibi:
        return StackSwitch(stack, fork, RuleCode.STACK_NO_ALIBI)
    if pp > 1 and stack.hf_modules_on_deepspeed:
        return StackSwitch(stack, fork, RuleCode.STACK_HF_PIPELINE)
    return None


def expert_tp_problem(model: ModelSpec, layout: Layout) -> RuleViolation | None:
    """Why the layout's expert tensor parallelism is not the model's (None: it is): whole experts
    (``expert_tp`` off) need experts (trial s34: a dense model read "etp=1" and was timed as any)."""
    if layout.expert_tp or model.is_moe:
        return None
    return RuleViolation(RuleCode.EXPERT_TP_DENSE, {})


def configuration_problem(
    stack: Stack,
    model: ModelSpec,
    layout: Layout,
    training: TrainingConfig,
    partition_activations: bool,
    moe_a2a_overlap: bool,
    attention: AttentionKernel | None = None,
    optimizer: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION,
    tp_comm_overlap: bool = True,
) -> RuleViolation | None:
    """Why ``stack`` cannot run this one configuration (None: it can): ``settings_problem``, then
    the layout's refusals (``stack_problem``: ``Stack.refusals``, the search's filter too) and the
    checkpointed block count (``ac_blocks_problem``: ``too_many_ac_blocks``, likewise)."""
    return (
        settings_problem(
            stack,
            training.impl,
            training.compile,
            partition_activations,
            moe_a2a_overlap,
            attention,
            optimizer,
            tp_comm_overlap,
        )
        or moe_stack_problem(stack, model)
        or expert_tp_problem(model, layout)
        or stack_problem(stack, model, layout, training.grad_accum, training.offload, training.activation_checkpointing)
        or ac_blocks_problem(model, layout, training)
        or (a2a_layout_problem(layout, training) if moe_a2a_overlap else None)
        or optimizer_layout_problem(layout, training, optimizer)
    )


def optimizer_layout_problem(
    layout: Layout, training: TrainingConfig, optimizer: OptimizerPrecision
) -> RuleViolation | None:
    """Why the stack would not run the optimizer formats asked on this layout and training (``refused_rows``,
    the search's filter too; None: it runs them)."""
    if problem := precision_formats_problem(training.precision, optimizer):
        return problem
    sharding, precision = code(layout.sharding), code(training.precision)
    figures = {"sharding": layout.sharding.value, "precision": training.precision.value}
    if optimizer.param_remainders and remainders_refused(sharding, precision):
        return RuleViolation(RuleCode.PARAM_REMAINDERS_LAYOUT, figures)
    if optimizer.pure_bf16 and pure_bf16_refused(precision, training.offload):
        return RuleViolation(RuleCode.PURE_BF16_OFFLOAD, figures | {"offload_flag": "--offload"})
    return None


def precision_formats_problem(precision: Precision, optimizer: OptimizerPrecision) -> RuleViolation | None:
    """Why the formats asked cannot run at ``precision`` on any layout: bf16 gradient buffers, pure
    bf16 and 16-bit master remainders need bf16 weights. A request's search rows all share its precision, so it is refused here in
    one line (trial bf16pure55: ``plan --precision fp8 --pure-bf16``, and ``--grad-reduce-in-bf16`` at
    fp16 before it, failed on an empty table: "cannot reshape array of size 0")."""
    figures = {"precision": precision.value}
    if optimizer.grad_reduce_bf16 and bf16_grads_refused(code(precision)):
        return RuleViolation(RuleCode.BF16_GRADS_PRECISION, figures)
    if optimizer.pure_bf16 and pure_bf16_refused(code(precision), False):
        return RuleViolation(RuleCode.PURE_BF16_PRECISION, figures)
    # s55: ``plan --precision fp16 --precision-aware-optimizer`` failed on the same empty table
    if optimizer.param_remainders and not_bf16_weights(code(precision)):
        return RuleViolation(RuleCode.PARAM_REMAINDERS_PRECISION, figures)
    return None


def a2a_layout_problem(layout: Layout, training: TrainingConfig) -> RuleViolation | None:
    """Why Megatron-Core would refuse the overlapped all-to-alls on this layout (``a2a_overlap_refused``,
    the search's filter too; None: it runs them)."""
    ac = training.activation_checkpointing
    if not a2a_overlap_refused(layout.ep, layout.pp, layout.vpp, code(ac)):
        return None
    figures = {"ep": layout.ep, "pp": layout.pp, "vpp": layout.vpp, "ac": ac.value}
    return RuleViolation(RuleCode.STACK_A2A_LAYOUT, figures)


def ac_blocks_problem(model: ModelSpec, layout: Layout, training: TrainingConfig) -> RuleViolation | None:
    """Why ``training.ac_blocks`` cannot be checkpointed on ``layout`` (None: it can): more blocks
    than the fullest pp rank holds (``too_many_ac_blocks``, the search's filter too)."""
    if training.activation_checkpointing != ActivationCheckpointing.BLOCKS or layout.pp * layout.vpp > (
        max_pipeline_stages(model.num_layers)
    ):
        return None  # not blocks, or stages the structural rules refuse
    if not too_many_ac_blocks(model.num_layers, training.ac_blocks, layout.pp, layout.vpp)[0]:
        return None
    most = int(full_ac_blocks(model.num_layers, *np.atleast_1d(layout.pp, layout.vpp))[0])
    figures = {
        "blocks": training.ac_blocks,
        "most": most,
        "layers": model.num_layers,
        "pp": layout.pp,
        "vpp": layout.vpp,
    }
    return RuleViolation(RuleCode.AC_BLOCKS_RANK, figures)


def sequence_split_stacks(stack: Stack, seq_len: int) -> tuple[Stack, ...]:
    """The stacks that split a sequence over ranks, where ``stack`` cannot and the sequence is long
    (``LONG_SEQUENCE_TOKENS``): what a memory answer no GPU count meets names (trial s34: megatron-lm
    at 131K tokens was told only "a GPU type with more memory"; ``Stack.context_parallel``)."""
    if stack.context_parallel or seq_len < LONG_SEQUENCE_TOKENS:
        return ()
    return tuple(s for s in Stack if s.context_parallel)
