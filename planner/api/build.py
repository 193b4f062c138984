"""One given configuration estimated and wrapped as a runnable Plan (``trainplan estimate``). Split
from planner/api/__init__.py, which imports it last (it reads ``calibrated`` from there)."""

from __future__ import annotations

from dataclasses import replace

from planner.api import calibrated
from planner.api.wrap import JobChoices, wrapped_plan
from planner.catalog.calibration import AppliedCalibration
from planner.catalog.hardware import Catalog, GPUSpec, load_catalog
from planner.catalog.networks import canonical_network, catalog_on_network
from planner.catalog.terms import term_billing
from planner.layout import Layout, TrainingConfig
from planner.model.attention_kernels import AttentionKernel
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision
from planner.model.run_choices import RunChoices, run_settings
from planner.model.run_loss_inputs import DEFAULT_RUN_LOSSES, RunLossInputs
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.plan import Plan
from planner.request import kernel_problem, priced_catalog
from planner.stack_rules import configuration_problem


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
    price_kind: str | None = None,
    term_filled: float | None = 0.0,
    hf_config_path: str | None = None,
    catalog: Catalog | None = None,
    settings: ModelingSettings | None = None,
    requested_global_batch_tokens: int | None = None,
    stack: Stack = Stack.TRAINPLAN,
    calibration: AppliedCalibration | None = None,
    attention: AttentionKernel | None = None,
    partition_activations: bool = False,
    moe_a2a_overlap: bool = False,
    network: str | None = None,
    optimizer_precision: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION,
    run_losses: RunLossInputs = DEFAULT_RUN_LOSSES,
    tp_comm_overlap: bool = True,
) -> Plan:
    """Estimate one given configuration and wrap it as a runnable Plan (``trainplan estimate``).
    ``requested_global_batch_tokens``: the batch asked for, recorded beside the one the layout makes.
    ``settings`` None: the profile of ``stack``. ``calibration``: as for ``plan``. ``price_kind``:
    price at the median of the GPU's offers of that kind (planner/catalog/prices.py); ``price`` wins.
    ``term_filled``: under a reserved kind, the share of its term other work uses (``TermBilling``);
    None bills the job's hours (a portfolio's job re-estimated as it was billed).
    ``network``: a catalog network the nodes are on (None: the GPU's default).
    ``partition_activations``: DeepSpeed's partitioned checkpoints (Megatron-DeepSpeed only).
    ``moe_a2a_overlap``: the expert all-to-alls under another micro-batch's compute (Megatron-Core only).
    ``optimizer_precision``: bf16 gradient buffers, 16-bit master remainders (Megatron only), pure bf16.
    ``run_losses``: the user's own failure rate, checkpoint bandwidth and other run losses.
    ``tp_comm_overlap``: False turns off Megatron-Core's --tp-comm-overlap (megatron-core only)."""
    job = JobChoices(
        model=model,
        hf_config_path=hf_config_path,
        training_tokens=training_tokens,
        price_kind=price_kind,
        stack=stack,
        attention=attention,
        partition_activations=partition_activations,
        moe_a2a_overlap=moe_a2a_overlap,
        tp_comm_overlap=tp_comm_overlap,
        optimizer_precision=optimizer_precision,
        run_losses=run_losses,
        network=network,
    )
    settings = _job_settings(job, layout, training, settings, term_filled)
    base, record = calibrated(catalog, calibration)
    catalog, spec, network = _priced_gpu(base or load_catalog(), job, gpu, price, settings)
    job = replace(job, network=network)
    est = job.judged(
        spec, layout, training, num_gpus=num_gpus, num_nodes=num_nodes, catalog=catalog, settings=settings,
        calibration=record,
    )  # fmt: skip
    if requested_global_batch_tokens is not None:
        est = est.model_copy(update={"requested_global_batch_tokens": requested_global_batch_tokens})
    return wrapped_plan(job, spec, layout.resolve(num_gpus), training, est, record)


def _job_settings(
    job: JobChoices,
    layout: Layout,
    training: TrainingConfig,
    settings: ModelingSettings | None,
    term_filled: float | None,
) -> ModelingSettings:
    """The settings the job is estimated under, once its stack would run the configuration:
    ``settings`` (None: the stack's profile) with the run's choices, and a reserved term's billing."""
    choices = (job.partition_activations, job.moe_a2a_overlap, job.attention, job.optimizer_precision)
    if problem := configuration_problem(Stack(job.stack), job.model, layout, training, *choices, job.tp_comm_overlap):
        raise problem
    chosen = settings or STACK_SETTINGS[job.stack]
    settings = run_settings(chosen, RunChoices.of(job))
    return settings.but(term=None if term_filled is None else term_billing(job.price_kind, term_filled))


def _priced_gpu(
    base: Catalog, job: JobChoices, gpu: str, price: float | None, settings: ModelingSettings
) -> tuple[Catalog, GPUSpec, str | None]:
    """The catalog on the job's network, priced for ``gpu`` (``price`` wins over the job's kind),
    the GPU's entry there and the network's catalog spelling; refused where the job's attention
    kernel cannot run on the GPU."""
    catalog = catalog_on_network(base, job.network)
    network = canonical_network(catalog, job.network)
    spec = catalog.gpu(gpu)
    if kernel := kernel_problem(job.attention, spec):
        raise ValueError(kernel)
    catalog = priced_catalog(catalog, job.price_kind, [spec.id], {} if price is None else {spec.id: price}, settings)
    return catalog, catalog.gpu(spec.id), network
