"""What one run chooses beside its configuration, applied to a stack's profile in one place: the
attention kernel, Megatron-DeepSpeed's partitioned activations, Megatron-Core's overlapped expert
all-to-alls and its TP overlap, the optimizer's formats and the user's own run-loss figures. A plan
request (planner/request.py ``PlanRequest``) and a job being built (planner/api/wrap.py
``JobChoices``) each carry them; ``RunChoices.of`` reads them from either."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Protocol

from planner.model.attention_choice import with_attention
from planner.model.attention_kernels import AttentionKernel
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision
from planner.model.run_loss_inputs import DEFAULT_RUN_LOSSES, RunLossInputs
from planner.model.settings import ModelingSettings
from planner.model.stack_profiles import moe_a2a_overlapped, tp_overlap_unbuffered


class CarriesRunChoices(Protocol):
    """What ``RunChoices.of`` reads: a ``PlanRequest`` or a ``JobChoices`` (review54: typed, so mypy
    checks both carriers' names and types against the record's)."""

    @property
    def attention(self) -> AttentionKernel | None: ...
    @property
    def partition_activations(self) -> bool: ...
    @property
    def moe_a2a_overlap(self) -> bool: ...
    @property
    def optimizer_precision(self) -> OptimizerPrecision: ...
    @property
    def run_losses(self) -> RunLossInputs: ...
    @property
    def tp_comm_overlap(self) -> bool: ...


@dataclass(frozen=True)
class RunChoices:
    """The run's choices, each at the stack's own default where not made."""

    attention: AttentionKernel | None = None  # None: the stack's kernel
    partition_activations: bool = False
    moe_a2a_overlap: bool = False
    optimizer_precision: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION
    run_losses: RunLossInputs = DEFAULT_RUN_LOSSES
    tp_comm_overlap: bool = True

    @classmethod
    def of(cls, carrier: CarriesRunChoices) -> RunChoices:
        """The choices a request or a job carries under the same names."""
        return cls(**{f.name: getattr(carrier, f.name) for f in fields(cls)})


def run_settings(settings: ModelingSettings, run: RunChoices) -> ModelingSettings:
    """A profile with what one run chooses: its attention kernel, under Megatron-DeepSpeed
    partitioned activation checkpoints (``partition_problem``), under Megatron-Core the
    overlapped expert all-to-alls (``a2a_overlap_problem``) and the TP overlap turned off
    (``tp_overlap_problem``), the optimizer's formats
    (``optimizer_precision_problem``: bf16 gradients, 16-bit master remainders), and the user's
    own run-loss figures (``RunLossInputs``: the one place they reach the settings)."""
    chosen = with_attention(settings, run.attention)
    chosen = chosen.but(partition_activations=True) if run.partition_activations else chosen
    chosen = run.run_losses.applied(run.optimizer_precision.applied(chosen))
    chosen = chosen if run.tp_comm_overlap else tp_overlap_unbuffered(chosen)
    return moe_a2a_overlapped(chosen) if run.moe_a2a_overlap else chosen
