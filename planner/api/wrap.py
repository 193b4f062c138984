"""One rule that wraps an estimated configuration as a runnable Plan: a searched row
(``plan_from_row``) and a given configuration (``build_plan``, ``trainplan estimate``) alike, so a
field added to ``Plan`` is filled in one place. The price fields that say where a plan's price
comes from are one list too (``PriceProvenance``): what a re-estimate priced at the plan's own
figure keeps (planner/api/rebuild.py ``with_price_basis``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from planner.accuracy import run_feature_bits
from planner.api.ceiling_estimate import judged_estimate
from planner.catalog.hardware import Catalog, GPUSpec
from planner.catalog.networks import canonical_network
from planner.catalog.prices import PriceBasis, PriceOffer, offers_behind
from planner.layout import Layout, TrainingConfig
from planner.model.attention_kernels import AttentionKernel
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.profiles import kernel_choice
from planner.model.run_loss_inputs import RunLossInputs
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.plan import Estimate, Plan
from planner.plan_calibration import PlanCalibration, rates_measured
from planner.request import PlanRequest


class PriceProvenance(NamedTuple):
    """Where a plan's price comes from, beside the rate itself: its basis, the offers behind it
    (``offers_behind``) and the kind asked for. Named once: a plan takes them from its GPU's priced
    catalog entry (``of_gpu``), a re-estimate priced with a plan's own rate keeps the plan's
    (``of_plan``), lest that rate read as the user's own."""

    price_basis: PriceBasis | None
    price_offers: tuple[PriceOffer, ...]
    price_kind: str | None  # a PriceKind (the CLI passes its word; Plan validates it)

    @classmethod
    def of_gpu(cls, gpu: GPUSpec, price_kind: str | None) -> PriceProvenance:
        return cls(gpu.price_basis, offers_behind(gpu, price_kind), price_kind)

    @classmethod
    def of_plan(cls, plan: Plan) -> PriceProvenance:
        return cls(*(getattr(plan, name) for name in cls._fields))


@dataclass(frozen=True)
class JobChoices:
    """What a plan trains and the run choices it is estimated with, beside its configuration: a
    request's (``of_request``) or ``build_plan``'s arguments."""

    model: ModelSpec
    hf_config_path: str | None
    training_tokens: float | None
    price_kind: str | None  # the --price-kind the GPU's catalog entry was priced under
    stack: Stack
    attention: AttentionKernel | None
    partition_activations: bool
    moe_a2a_overlap: bool
    tp_comm_overlap: bool
    optimizer_precision: OptimizerPrecision
    run_losses: RunLossInputs
    network: str | None  # the catalog's own spelling (``canonical_network``); None: the GPU's default

    @classmethod
    def of_request(cls, request: PlanRequest, catalog: Catalog) -> JobChoices:
        return cls(
            model=request.model,
            hf_config_path=request.hf_config_path,
            training_tokens=request.training_tokens,
            price_kind=request.price_kind,
            stack=request.stack,
            attention=request.attention,
            partition_activations=request.partition_activations,
            moe_a2a_overlap=request.moe_a2a_overlap,
            tp_comm_overlap=request.tp_comm_overlap,
            optimizer_precision=request.optimizer_precision,
            run_losses=request.run_losses,
            network=canonical_network(catalog, request.network),
        )

    def judged(
        self,
        gpu: GPUSpec,
        layout: Layout,
        training: TrainingConfig,
        *,
        num_gpus: int,
        num_nodes: int | None,
        catalog: Catalog,
        settings: ModelingSettings,
        calibration: PlanCalibration | None,
    ) -> Estimate:
        """``judged_estimate`` of a configuration of this job on ``gpu`` (its priced catalog entry):
        the rules its stack binds, the kernel, TP overlap and pure bf16 it chose, whether ``calibration``
        measured the GPU's rates, derived here once for a searched row and a given configuration."""
        stack = Stack(self.stack)
        return judged_estimate(
            self.model,
            gpu,
            layout,
            training,
            num_gpus=num_gpus,
            num_nodes=num_nodes,
            catalog=catalog,
            settings=settings,
            training_tokens=self.training_tokens,
            stack=stack,
            measured_rates=rates_measured(calibration, gpu.id),
            # Another stack's plan is an estimate only: trainplan's trainer limits do not bind it.
            trainer_rules=stack.trainer_rules,
            named_kernel=kernel_choice(stack, self.attention),
            run_features=run_feature_bits(stack, self.tp_comm_overlap, self.optimizer_precision.pure_bf16),
            optimizer=self.optimizer_precision,
        )


def wrapped_plan(
    job: JobChoices,
    gpu: GPUSpec,
    layout: Layout,
    training: TrainingConfig,
    est: Estimate,
    calibration: PlanCalibration | None,
) -> Plan:
    """``est`` of ``layout`` and ``training`` on ``gpu`` (its priced catalog entry: the plan's rate,
    rental unit and ``PriceProvenance``) as a runnable Plan of ``job``; ``calibration``: the record of
    the file the catalog was calibrated with. The GPU and node counts are the estimate's."""
    return Plan(
        model=job.model,
        hf_config_path=job.hf_config_path,
        gpu=gpu.id,
        num_gpus=est.num_gpus,
        num_nodes=est.num_nodes,
        gpus_per_node=est.num_gpus // est.num_nodes,
        layout=layout,
        training=training,
        training_tokens=job.training_tokens,
        price_per_gpu_hour_usd=gpu.price_per_gpu_hour_usd,
        rent_unit_gpus=gpu.rent_unit_gpus,
        **PriceProvenance.of_gpu(gpu, job.price_kind)._asdict(),
        estimate=est,
        stack=job.stack,
        calibration=calibration,
        attention=job.attention,
        partition_activations=job.partition_activations,
        moe_a2a_overlap=job.moe_a2a_overlap,
        tp_comm_overlap=job.tp_comm_overlap,
        optimizer_precision=job.optimizer_precision,
        run_losses=job.run_losses,
        network=job.network,
    )
