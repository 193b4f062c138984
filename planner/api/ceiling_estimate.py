"""An estimate as the planner gives it (``judged_estimate``): held at the efficiency ceiling of its
regime, with the error band of every figure (planner/accuracy); what ``plan``'s rows, ``build_plan``
and a replan are re-scored through."""

from __future__ import annotations

from planner import accuracy
from planner.accuracy.ceiling import ceiling_regime, coarse_experts
from planner.accuracy.regime import Regime
from planner.catalog.calibration import rates_timed_on_cpu
from planner.catalog.hardware import Catalog, GPUSpec
from planner.job_fit import measured_job_use, shape_words
from planner.layout import Layout, TrainingConfig
from planner.model.estimate import estimate, gpus_per_node_of
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.plan import Estimate


def judged_estimate(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: Layout,
    training: TrainingConfig,
    *,
    num_gpus: int,
    num_nodes: int | None,
    catalog: Catalog,
    settings: ModelingSettings,
    training_tokens: float | None,
    stack: Stack,
    measured_rates: bool,
    trainer_rules: bool,
    named_kernel: str = "",
    run_features: int = 0,
    optimizer: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION,
) -> Estimate:
    """``estimate`` held at the efficiency ceiling of its regime, with the error band of every
    figure (planner/accuracy). The ceiling is lifted where a calibration file measured the GPU's
    kernel rates (``measured_rates``) or measured this very job (``measured_job_use``: a job of
    another shape corrects it by extrapolation, under the ceiling). ``named_kernel``: the attention
    kernel the user named, where its stack would not pick it (a recipe's kernel, in ``settings``, is its
    stack's own; "": none); ``run_features``: the run's own choices' band features (``accuracy.run_feature_bits``:
    the stack's TP overlap turned off, pure bf16); ``optimizer``: the run's formats (in ``settings`` already),
    whose refusals bind the memory fixes named."""
    resolved = layout.resolve(num_gpus)
    regime = _band_regime(
        model, gpu, resolved, training, num_gpus, num_nodes, catalog, Stack(stack), named_kernel, run_features
    )
    shape = shape_words(model.name, num_gpus, gpu.id, resolved.describe(Stack(stack).fsdp_word), training, Stack(stack))
    job = measured_job_use(gpu, shape)
    own_job = job is not None and job.exact
    regime_ceiling = accuracy.ceiling_of(ceiling_regime(regime, coarse_experts(model)), gpu, False)
    ceiling = None if measured_rates or own_job else regime_ceiling
    # what kernel rates alone lifted, said beside the figure (calib50 H1): they measure kernels, not the step
    by_rates = measured_rates and not own_job
    est = estimate(
        model,
        gpu,
        layout,
        training,
        num_gpus=num_gpus,
        num_nodes=num_nodes,
        catalog=catalog,
        settings=settings,
        training_tokens=training_tokens,
        trainer_rules=trainer_rules,
        mfu_ceiling=None if ceiling is None else ceiling.mfu,
        stack=Stack(stack),
        optimizer=optimizer,
    )
    # rates a CPU measured (a calibration file's format check): no band describes such figures
    band = None if rates_timed_on_cpu(gpu) else accuracy.uncertainty(est, regime, ceiling, job)
    return est.model_copy(
        update={
            "uncertainty": band,
            "ceiling": accuracy.efficiency_ceiling(regime_ceiling if by_rates else ceiling, est, lifted=by_rates),
        }
    )


def _band_regime(
    model: ModelSpec,
    gpu: GPUSpec,
    resolved: Layout,
    training: TrainingConfig,
    num_gpus: int,
    num_nodes: int | None,
    catalog: Catalog,
    stack: Stack,
    named_kernel: str,
    run_features: int,
) -> Regime:
    """The job's regime in the validation (``accuracy.regime_for``): what its band and its ceiling
    are read from."""
    # the nodes the estimate will hold the GPUs on: DeepSpeed's ZeRO-3 across them is a band
    # feature no row measured (the ceiling reads no node fact beyond the GPU count)
    node = catalog.node(gpu.default_node)
    per_node = gpus_per_node_of(num_gpus, num_nodes, node)
    return accuracy.regime_for(
        stack.value,
        gpu,
        resolved,
        training,
        model.is_moe,
        named_kernel,
        per_node,
        node.scaleup_domain_size,
        run_features,
    )
