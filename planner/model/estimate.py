"""Score configurations: memory, step time, throughput, time-to-train, cost and energy.

``score`` works on a whole ``Candidates`` table (the search); ``estimate`` wraps one concrete
configuration and returns the typed ``Estimate`` with its breakdowns (the CLI/app/trainer).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from planner.catalog.hardware import Catalog, GPUSpec, load_catalog
from planner.catalog.networks import catalog_on_network, on_network
from planner.catalog.prices import billed_gpus
from planner.catalog.terms import billed_hours
from planner.estimate_parts import (
    GoodputEstimate,
    MemoryEstimate,
    MemoryTerms,
    PeakMoment,
    ThroughputEstimate,
    TimeEstimate,
    TimeTerms,
)
from planner.layout import Layout, TrainingConfig
from planner.model.attention_kernels import AttentionKernel, te_prefers_cudnn
from planner.model.attention_scores import cp_calls_flash_only
from planner.model.candidates import Candidates
from planner.model.configuration import checked_configuration, rule_values
from planner.model.energy import energy_kwh, wall_power_w
from planner.model.fit_check import FitCheck
from planner.model.flops import (
    HardwareFlops,
    chunked_loss,
    hardware_flops,
    hardware_flops_per_token,
    model_flops_per_token,
)
from planner.model.goodput import Goodput, checkpoint_bytes, failure_rates, goodput
from planner.model.host import host_fits, host_memory_gib, host_memory_words, row_fits
from planner.model.memory import (
    MemoryBreakdown,
    loss_bytes_per_logit,
    memory,
    per_op_selective,
    usable_capacity,
)
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision
from planner.model.rates import TimedKernel, timed_attention_kernels
from planner.model.rowwise import RULE_COLUMNS, per_distinct_row
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.model.step_time import TimeBreakdown, step_time
from planner.model.structure import structurally_valid
from planner.plan import Estimate, EstimateLayout, FixHint, ModelSummary, Plan, even_node_count, fullest_node
from planner.units import GIB, SECONDS_PER_HOUR


@dataclass(frozen=True)
class Scores:
    memory: MemoryBreakdown
    time: TimeBreakdown
    tokens_per_step: np.ndarray
    tokens_per_s: np.ndarray
    model_flops_per_token: np.ndarray
    hardware_flops_per_token: np.ndarray
    mfu: np.ndarray
    hfu: np.ndarray
    fits: np.ndarray
    capacity_bytes: np.ndarray
    checkpoint_bytes: float  # one checkpoint, all ranks (planner/model/goodput.py)


def divisible(model: ModelSpec, c: Candidates, trainer_rules: bool = True) -> np.ndarray:
    """Structurally valid (and, with ``trainer_rules``, runnable by trainplan's trainer): the
    shared rules, degrees that multiply to the GPU count, and a supported precision."""
    # Once per distinct layout and scale-up domain (rowwise.py): the rules read nothing else.
    rules = lambda rows: structurally_valid(model, **rule_values(rows), trainer=trainer_rules)  # noqa: E731
    return (
        per_distinct_row(rules, c, RULE_COLUMNS)
        & (c.dp * c.tp * c.pp * c.cp == c.num_gpus)
        & np.isfinite(c.matmul_peak_flops)
    )


def score(
    model: ModelSpec,
    c: Candidates,
    settings: ModelingSettings = DEFAULT_SETTINGS,
    mfu_ceiling: np.ndarray | float | None = None,
    mem: MemoryBreakdown | None = None,
) -> Scores:
    """Memory, step time and throughput of every candidate. ``mfu_ceiling``: the best MFU
    measured in each row's regime (planner/accuracy/ceiling.py; NaN: none): a step that would
    beat it is held at it, the difference its ``efficiency_ceiling`` term. ``mem``: ``memory``
    of ``c`` where the caller has it already (the search: its rows that fit)."""
    mem = memory(model, c, settings) if mem is None else mem
    time = step_time(model, c, settings)
    tokens_per_step = (c.micro_batch * c.seq_len * c.grad_accum * c.dp).astype(float)
    mflops = model_flops_per_token(model, c.seq_len, settings)
    hflops = hardware_flops_per_token(model, c, settings)
    cluster_peak = c.bf16_peak_flops * c.num_gpus
    if mfu_ceiling is not None:
        time = held_at_ceiling(time, tokens_per_step * mflops / cluster_peak, np.asarray(mfu_ceiling, dtype=float))
    tokens_per_s = tokens_per_step / time.step
    return Scores(
        memory=mem,
        time=time,
        tokens_per_step=tokens_per_step,
        tokens_per_s=tokens_per_s,
        model_flops_per_token=np.broadcast_to(mflops, tokens_per_s.shape),
        hardware_flops_per_token=hflops,
        mfu=tokens_per_s * mflops / cluster_peak,
        hfu=tokens_per_s * hflops / cluster_peak,
        fits=row_fits(model, c, mem.device_total, settings),
        capacity_bytes=c.memory_bytes,
        checkpoint_bytes=checkpoint_bytes(model, settings),
    )


def held_at_ceiling(time: TimeBreakdown, peak_seconds: np.ndarray, ceiling: np.ndarray) -> TimeBreakdown:
    """The step no shorter than the ceiling allows: MFU = ``peak_seconds`` / step (the step's model
    FLOPs at the dense peak, in seconds), so a step under ``peak_seconds / ceiling`` is stretched
    to it."""
    with np.errstate(invalid="ignore", divide="ignore"):
        floor = np.where(np.isfinite(ceiling) & (ceiling > 0), peak_seconds / ceiling, 0.0)
    extra = np.maximum(floor - time.step, 0.0)
    return replace(time, efficiency_ceiling=extra, step=time.step + extra)


def job_goodput(scores: Scores, c: Candidates, training_tokens: float | None, settings: ModelingSettings) -> Goodput:
    """Failures, checkpoints and restarts of each row (wall time NaN without a token budget)."""
    useful = np.full(len(c), np.nan) if training_tokens is None else training_tokens / scores.tokens_per_s
    preempted = c.preemptions_per_node_hour * float(settings.model_failures)
    gpu_rate, node_rate = failure_rates(
        c.failure_rate_per_gpu_hour, c.failure_rate_per_node_hour, settings, c.preemptions_per_node_hour
    )
    return goodput(
        useful,
        scores.time.step,
        c.num_gpus,
        gpu_rate,
        scores.checkpoint_bytes,
        settings,
        c.num_nodes,
        node_rate,
        preempted,
    )


def job_totals(
    scores: Scores, c: Candidates, training_tokens: float | None, settings: ModelingSettings
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time-to-train (s), rental cost (USD) and energy (kWh) for a token budget, the time lost
    to failures, checkpoints and restarts included (``job_goodput``)."""
    if training_tokens is None:
        nan = np.full(len(c), np.nan)
        return nan, nan, nan
    seconds = job_goodput(scores, c, training_tokens, settings).wall_s
    hours = seconds / SECONDS_PER_HOUR
    energy = energy_kwh(hours * c.num_gpus, wall_power_w(c.tdp_watts, c.node_power_w_per_gpu, settings), settings.pue)
    return seconds, job_cost_usd(seconds, c, settings), energy


def job_cost_usd(seconds: np.ndarray, c: Candidates, settings: ModelingSettings) -> np.ndarray:
    """Rental cost (USD) of holding ``c``'s GPUs ``seconds``: the GPUs billed (whole rental units)
    x their hourly price x the hours billed (under a reserved term its whole: ``billed_hours``)."""
    hours = billed_hours(seconds / SECONDS_PER_HOUR, settings.term)
    return hours * billed_gpus(c.num_gpus, c.rent_unit_gpus, c.num_nodes) * c.price_per_gpu_hour


def sdpa_dispatch(stack: Stack | None, settings: ModelingSettings) -> bool:
    """Whether attention is the stack's own SDPA dispatch (no kernel named)."""
    return stack is not None and stack.attention_via_sdpa and settings.attention_kernel is None


def sdpa_picks_cudnn(stack: Stack | None, settings: ModelingSettings, kernel: AttentionKernel) -> bool:
    """Whether the stack's own SDPA dispatch runs cuDNN (``Estimate.sdpa_picks_cudnn``)."""
    return sdpa_dispatch(stack, settings) and kernel == AttentionKernel.CUDNN


def sdpa_skips_cudnn(
    stack: Stack | None, settings: ModelingSettings, timed: TimedKernel, gpu: GPUSpec, c: Candidates
) -> bool:
    """Whether the stack's own SDPA dispatch timed FlashAttention-2 on a GPU whose cuDNN fused
    attention TransformerEngine runs (a datacenter Blackwell part SDPA's rule leaves out: sm103,
    B300 / GB300), so ``--attention cudnn`` times what a run that forces it gets (trial s37: B300
    at 128K was 2.5x slower than B200, unexplained; ``Estimate.sdpa_skips_cudnn``); not under a
    context parallelism that calls the flash kernel whatever is asked (review s37)."""
    flash = timed.kernel == AttentionKernel.FLASH2 and not timed.cp_fallback
    measured = gpu.rates.cudnn_attention_fwd_flops_per_s is not None
    cudnn_runs = not bool(cp_calls_flash_only(c, settings)[0])
    return (
        sdpa_dispatch(stack, settings)
        and flash
        and measured
        and cudnn_runs
        and te_prefers_cudnn(gpu.compute_capability)
    )


def gpus_per_node_of(num_gpus: int, num_nodes: int | None, node) -> int:
    """GPUs on each node: the user's node count's (``--nodes``), else the fewest even nodes."""
    if num_nodes is not None:
        if num_nodes < 1 or num_gpus % num_nodes:
            raise ValueError(f"--nodes {num_nodes} does not divide --num-gpus {num_gpus}")
        return fullest_node(num_gpus, num_nodes, node, "--nodes")
    if num_gpus >= 1:  # (fewer: checked_configuration says what is wrong)
        return num_gpus // even_node_count(num_gpus, node.gpus_per_node)
    return node.gpus_per_node


def _memory_estimate(
    model: ModelSpec, c: Candidates, s: Scores, settings: ModelingSettings, terms: MemoryTerms
) -> MemoryEstimate:
    """One row's memory record: the peaks, the GPU's capacity and headroom, the terms, the host's."""
    return MemoryEstimate(
        peak_gib=float(s.memory.peak_allocated[0]) / GIB,
        reserved_gib=float(s.memory.reserved[0]) / GIB,
        capacity_gib=float(c.memory_bytes[0]) / GIB,
        headroom_fraction=settings.memory_headroom,
        breakdown_gib=terms,
        **host_memory_gib(model, c, settings),
        loss_chunk_tokens=settings.loss_chunk_tokens if bool(chunked_loss(c, settings)[0]) else 0,
        loss_bytes_per_logit=float(loss_bytes_per_logit(c, settings)[0]),
        selective_per_op=bool(per_op_selective(model, c, settings)[0]),
        peak_moment=PeakMoment.BACKWARD if bool(s.memory.at_backward[0]) else PeakMoment.END_OF_BACKWARD,
    )


def _throughput_estimate(s: Scores, num_gpus: int, hardware: HardwareFlops) -> ThroughputEstimate:
    first = lambda v: float(np.broadcast_to(v, s.tokens_per_s.shape)[0])  # noqa: E731
    return ThroughputEstimate(
        tokens_per_s=float(s.tokens_per_s[0]),
        tokens_per_s_per_gpu=float(s.tokens_per_s[0]) / num_gpus,
        mfu=float(s.mfu[0]),
        hfu=float(s.hfu[0]),
        model_flops_per_token=float(s.model_flops_per_token[0]),
        hardware_flops_per_token=float(s.hardware_flops_per_token[0]),
        recompute_flops_per_token=first(hardware.recompute),
        masked_window_flops_per_token=first(hardware.masked_window),
        unrouted_expert_flops_per_token=first(hardware.unrouted_experts),
        head_recompute_flops_per_token=first(hardware.head_recompute),
    )


def estimate(
    model: ModelSpec,
    gpu: GPUSpec | str,
    layout: Layout,
    training: TrainingConfig,
    *,
    num_gpus: int,
    num_nodes: int | None = None,
    catalog: Catalog | None = None,
    settings: ModelingSettings = DEFAULT_SETTINGS,
    training_tokens: float | None = None,
    trainer_rules: bool = True,
    mfu_ceiling: float | None = None,
    stack: Stack | None = None,
    optimizer: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION,
) -> Estimate:
    """Predict one configuration. Raises ValueError when the layout cannot exist (or, with
    ``trainer_rules``, when trainplan's trainer cannot run it: planner/model/structure.py).
    ``mfu_ceiling``: hold the step at this MFU (``score``); ``stack``, ``optimizer`` (the run's formats,
    in ``settings`` already): whose refusals bind the memory fixes it names (the caller checked the rest)."""
    catalog = catalog or load_catalog()
    gpu_spec = catalog.gpu(gpu) if isinstance(gpu, str) else gpu
    per_node = gpus_per_node_of(num_gpus, num_nodes, catalog.node(gpu_spec.default_node))
    resolved, c = checked_configuration(model, gpu_spec, layout, training, num_gpus, per_node, catalog, trainer_rules)
    s = score(model, c, settings, None if mfu_ceiling is None else np.array([mfu_ceiling]))
    seconds, cost, energy = job_totals(s, c, training_tokens, settings)
    g = job_goodput(s, c, training_tokens, settings)
    feasible = bool(s.fits[0])
    terms = MemoryTerms(**s.memory.as_gib())
    fit = FitCheck(model, gpu_spec, resolved, training, num_gpus, per_node, catalog, trainer_rules, stack, optimizer)
    reason, fixes = (None, ()) if feasible else _unfit_words(fit, c, s, settings, terms)
    optional = lambda v: None if not np.isfinite(v[0]) else float(v[0])  # noqa: E731
    (timed,) = timed_attention_kernels(model, c, settings)
    return Estimate(
        feasible=feasible,
        reason=reason,
        fix=FixHint.joined(fixes) if fixes else None,
        fix_hints=fixes,
        gpu=gpu_spec.id,
        num_gpus=num_gpus,
        num_nodes=int(c.num_nodes[0]),
        memory=_memory_estimate(model, c, s, settings, terms),
        time=TimeEstimate(step_s=float(s.time.step[0]), breakdown_s=TimeTerms(**s.time.as_dict())),
        throughput=_throughput_estimate(s, num_gpus, hardware_flops(model, c, settings)),
        layout=EstimateLayout.of(resolved, training),
        attention_kernel=timed.words,
        sdpa_picks_cudnn=sdpa_picks_cudnn(stack, settings, timed.kernel),
        sdpa_skips_cudnn=sdpa_skips_cudnn(stack, settings, timed, gpu_spec, c),
        attention_kernel_timed=timed.kernel,
        attention_cp_fallback=timed.cp_fallback,
        attention_cp_fallback_from=timed.cp_fallback_from,
        global_batch_tokens=int(s.tokens_per_step[0]),
        time_to_train_h=None if (train_s := optional(seconds)) is None else train_s / SECONDS_PER_HOUR,
        cost_usd=optional(cost),
        term=settings.term,
        energy_kwh=optional(energy),
        goodput=goodput_estimate(g),
        model=ModelSummary.of(model),
    )


def _unfit_words(
    check: FitCheck, c: Candidates, s: Scores, settings: ModelingSettings, terms: MemoryTerms
) -> tuple[str, tuple[FixHint, ...]]:
    """Why a configuration that does not fit does not, and the fixes that would run: the GPU's
    memory where the need passes its room (``FitCheck.device_memory``), else the host's (offload)."""
    need, cap = float(s.memory.device_total[0]) / GIB, float(c.memory_bytes[0]) / GIB
    usable = usable_capacity(cap, settings.memory_headroom)
    if need > usable:
        return check.device_memory(need, usable, cap, terms, settings, bool(host_fits(check.model, c, settings)[0]))
    return host_memory_words(check.model, c, settings)


def estimate_plan(
    plan: Plan,
    catalog: Catalog,
    settings: ModelingSettings,
    *,
    gpu: GPUSpec | None = None,
    trainer_rules: bool = True,
) -> Estimate:
    """``estimate`` of a plan's own model, layout, batch, GPU count and nodes, again (a fresh
    estimate of an emitted job, a calibration's prediction); ``gpu``: a variant of its GPU. On the
    plan's network, when it names one."""
    catalog = catalog_on_network(catalog, plan.network)
    if gpu is None:
        spec = catalog.gpu(plan.gpu)  # on the plan's network already
    else:  # a variant from outside the catalog: put it on the plan's network too
        spec = gpu if plan.network is None else on_network(gpu, catalog.network(plan.network))
    return estimate(
        plan.model,
        spec,
        plan.layout,
        plan.training,
        num_gpus=plan.num_gpus,
        num_nodes=plan.num_nodes,
        catalog=catalog,
        settings=settings,
        trainer_rules=trainer_rules,
    )


def goodput_estimate(g: Goodput, row: int = 0) -> GoodputEstimate:
    """One row of ``Goodput`` as the typed record of the plan (None where nothing fails)."""
    finite = lambda v: None if not np.isfinite(v[row]) else float(v[row])  # noqa: E731
    mttf = finite(g.mttf_s)
    interval = finite(g.interval_s)
    return GoodputEstimate(
        mttf_h=None if mttf is None else mttf / SECONDS_PER_HOUR,
        expected_interruptions=finite(g.interruptions),
        checkpoint_interval_min=None if interval is None else interval / 60,
        checkpoint_interval_steps=None if interval is None else int(g.interval_steps[row]),
        young_daly_min=None if (young := finite(g.young_s)) is None else young / 60,
        interval_cut_to_run=bool(g.interval_cut[row]),
        checkpoint_write_s=float(g.write_s[row]),
        restart_s=float(g.restart_s[row]),
        straggler_fraction=float(np.broadcast_to(g.losses.straggler, g.fraction.shape)[row]),
        evaluation_fraction=g.losses.evaluation,
        data_stall_fraction=g.losses.data_stall,
        planned_restarts=finite(g.planned_restarts),
        # a spot price's preemptions, each waiting for capacity (None without a spot price or a
        # token budget; the wait is 0 without a spot price: review s31)
        spot_preemptions=finite(g.preemptions) if np.any(g.preemptions[row] > 0) else None,
        capacity_wait_s=float(np.broadcast_to(g.capacity_wait_s, g.fraction.shape)[row]),
        startup_s=g.losses.startup_s,
        goodput_fraction=float(g.fraction[row]),
    )
