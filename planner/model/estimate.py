"""Score configurations: memory, step time, throughput, time-to-train, cost and energy.

``score`` works on a whole ``Candidates`` table (the search); ``estimate`` wraps one concrete
configuration and returns the typed ``Estimate`` with its breakdowns (the CLI/app/trainer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from planner.catalog.hardware import Catalog, GPUSpec, load_catalog
from planner.catalog.networks import catalog_on_network, on_network
from planner.catalog.prices import billed_gpus
from planner.errors import RuleCode, RuleViolation
from planner.layout import Implementation, Layout, PipelineSchedule, TrainingConfig
from planner.model.attention_kernels import AttentionKernel
from planner.model.candidates import IMPL_HF, PREC_FP8, SCHED_1F1B, Candidates, code, network_columns, single
from planner.model.energy import energy_kwh, wall_power_w
from planner.model.flops import hardware_flops_per_token, model_flops_per_token
from planner.model.goodput import Goodput, checkpoint_bytes, failure_rates, goodput
from planner.model.host import host_fits, host_memory_gib, host_memory_words
from planner.model.memory import MemoryBreakdown, fits, memory, offload_keeps_grads, usable_capacity
from planner.model.rates import timed_attention_kernels
from planner.model.rowwise import RULE_COLUMNS, per_distinct_row
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.model.step_time import TimeBreakdown, step_time
from planner.model.structure import first_structural_problem, first_structural_violation, structurally_valid
from planner.plan import (
    Estimate,
    EstimateLayout,
    FixHint,
    GoodputEstimate,
    MemoryEstimate,
    MemoryTerms,
    ModelSummary,
    Plan,
    ThroughputEstimate,
    TimeEstimate,
    TimeTerms,
    even_node_count,
    fullest_node,
)
from planner.rule_codes import FixCode
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


def rule_values(c: Candidates) -> dict:
    """The candidate columns the structural rules (planner/model/structure.py) read."""
    return dict(
        tp=c.tp,
        pp=c.pp,
        cp=c.cp,
        seq_len=c.seq_len,
        grad_accum=c.grad_accum,
        scaleup_domain_size=c.scaleup_domain_size,
        hf=c.impl == IMPL_HF,
        fp8=c.precision == PREC_FP8,
        one_f_one_b=c.pp_schedule == SCHED_1F1B,
        vpp=c.vpp,
        shard_group=c.shard_group,
        ep=c.ep,
    )


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
        fits=fits(mem.device_total, c.memory_bytes, settings.memory_headroom) & host_fits(model, c, settings),
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
    gpu_rate, node_rate = failure_rates(c.failure_rate_per_gpu_hour, c.failure_rate_per_node_hour, settings)
    preempted = c.preemptions_per_node_hour * float(settings.model_failures)
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
    cost = hours * billed_gpus(c.num_gpus, c.rent_unit_gpus, c.num_nodes) * c.price_per_gpu_hour
    energy = energy_kwh(hours * c.num_gpus, wall_power_w(c.tdp_watts, c.node_power_w_per_gpu, settings), settings.pue)
    return seconds, cost, energy


def memory_fix_hint(
    need_gib: float,
    usable_gib: float,
    terms: MemoryTerms,
    layout: Layout,
    training: TrainingConfig,
    model: ModelSpec,
    *,
    gpus_per_node: int,
    tp_runs: Callable[[int], bool],
    pp_runs: Callable[[int], bool] = lambda pp: True,
    offload_frees_gib: float = 0.0,
) -> tuple[FixHint, ...]:
    """Next steps relative to the layout already in use. The FSDP and tp degrees named are the
    smallest that remove the excess alone (unsharded states over a quarter of the need: FSDP is
    named unsized): sharding splits only the states (params, grads,
    optimizer), tensor parallelism nearly every term; checkpointing and a smaller micro-batch
    shrink the activations. ``tp_runs``: whether the estimate's own rules take a tp degree (a
    fix it would then refuse is none: trial s24, tp=4 offered for Nemotron on HF's modules);
    ``pp_runs`` the same for twice the stages (trial s31: pp > 1 offered under hf-trainer, which
    has no pipeline engine), ``offload_frees_gib`` the allocated GiB host offload would move off
    the GPU, 0 where the stack refuses it (trial s31: the fix that fitted was not named; review
    s31: it was named where the gradients stay on the GPU and it did not fit)."""
    excess = need_gib - usable_gib
    # The terms are allocated bytes; the need also counts the allocator's reserve, which grows
    # with them: compare in the need's currency.
    states = terms.states * need_gib / max(terms.total, 1e-9)
    hints = []
    if layout.pp > 1 and layout.pp_schedule == PipelineSchedule.GPIPE and training.grad_accum > layout.pp:
        # GPipe keeps every micro-batch's activations until the backward; 1F1B at most pp of them.
        hints.append(FixHint(code=FixCode.ONE_F_ONE_B, figures={"pp": layout.pp, "accum": training.grad_accum}))
    if layout.sharding.value != "fsdp" and states > 0.25 * need_gib:  # a large share left unsharded
        hints.append(FixHint(code=FixCode.SHARD_FSDP))
    elif states > excess:  # FSDP over k x more ranks frees (1 - 1/k) of the states
        k = next((2**j for j in range(1, 31) if states * (1 - 2.0**-j) >= excess), None)
        if k is not None:
            # A degree of this layout, not a GPU count (with tp or pp the job needs more GPUs).
            hints.append(
                FixHint(code=FixCode.FSDP_GROUP, figures={"group": layout.dp_shard * k, "dp_shard": layout.dp_shard})
            )
    if not training.offload and offload_frees_gib * need_gib / max(terms.total, 1e-9) > excess:
        hints.append(FixHint(code=FixCode.OFFLOAD))
    if training.activation_checkpointing.value != "full" and terms.activations > 0:
        hints.append(FixHint(code=FixCode.FULL_AC))
    if training.micro_batch > 1:
        hints.append(FixHint(code=FixCode.MICRO_BATCH, figures={"micro_batch": training.micro_batch}))
    splittable = need_gib - terms.misc
    native_moe = model.is_moe and training.impl == Implementation.NATIVE  # its blocks take no tp (structure.py)
    tp = next(
        (
            t
            for t in (layout.tp * 2**j for j in range(1, 8))
            if not native_moe
            and t <= gpus_per_node
            and model.num_heads % t == 0
            and splittable * (1 - layout.tp / t) >= excess
            and tp_runs(t)
        ),
        None,
    )
    if tp is not None and layout.world_size % (layout.non_dp // layout.tp * tp) == 0:
        hints.append(FixHint(code=FixCode.TP, figures={"tp": tp, "now": layout.tp}))
    elif tp is not None:  # the other degrees times tp outgrow the world: the same dp needs more GPUs
        gpus = layout.world_size // layout.tp * tp
        hints.append(FixHint(code=FixCode.TP_MORE_GPUS, figures={"tp": tp, "now": layout.tp, "gpus": gpus}))
    elif layout.pp < model.num_layers and pp_runs(2 * layout.pp):
        hints.append(FixHint(code=FixCode.PP, figures={"pp": layout.pp}))
    return tuple(hints) or (FixHint(code=FixCode.BIGGER_GPU),)


def sdpa_picks_cudnn(stack: Stack | None, settings: ModelingSettings, kernel: AttentionKernel) -> bool:
    """Whether the stack's own SDPA dispatch (no kernel named) runs cuDNN (``Estimate.sdpa_picks_cudnn``)."""
    chosen = stack is not None and stack.attention_via_sdpa and settings.attention_kernel is None
    return chosen and kernel == AttentionKernel.CUDNN


def offload_frees_gib(terms: MemoryTerms, layout: Layout, s: ModelingSettings) -> float:
    """The allocated GiB host offload moves off each GPU: the master weights and moments, and the
    gradients unless the stack keeps unsharded ones there (``s.offload_unsharded_grads``)."""
    grads_stay = bool(offload_keeps_grads(code(layout.sharding), s))
    return terms.params + terms.optimizer + (0.0 if grads_stay else terms.grads)


def refused_by(stack: Stack, model: ModelSpec, layout: Layout, training: TrainingConfig) -> bool:
    """Whether ``stack`` refuses the layout (``Stack.refusals``, the rule the search filters by)."""
    return bool(stack.layout_refusals(layout, model.num_layers, training.grad_accum, training.offload).any())


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
) -> Estimate:
    """Predict one configuration. Raises ValueError when the layout cannot exist (or, with
    ``trainer_rules``, when trainplan's trainer cannot run it: planner/model/structure.py).
    ``mfu_ceiling``: hold the step at this MFU (``score``); ``stack``: whose refusals bind the
    memory fixes it names (the caller checked the configuration itself)."""
    catalog = catalog or load_catalog()
    gpu_spec = catalog.gpu(gpu) if isinstance(gpu, str) else gpu
    node = catalog.node(gpu_spec.default_node)
    if num_nodes is not None:
        if num_nodes < 1 or num_gpus % num_nodes:
            raise ValueError(f"--nodes {num_nodes} does not divide --num-gpus {num_gpus}")
        gpus_per_node = fullest_node(num_gpus, num_nodes, node, "--nodes")
    elif num_gpus >= 1:  # (fewer: checked_configuration says what is wrong, as before)
        gpus_per_node = num_gpus // even_node_count(num_gpus, node.gpus_per_node)
    else:
        gpus_per_node = node.gpus_per_node
    resolved, c = checked_configuration(
        model, gpu_spec, layout, training, num_gpus, gpus_per_node, catalog, trainer_rules
    )
    s = score(model, c, settings, None if mfu_ceiling is None else np.array([mfu_ceiling]))
    seconds, cost, energy = job_totals(s, c, training_tokens, settings)
    g = job_goodput(s, c, training_tokens, settings)
    need, cap = float(s.memory.device_total[0]) / GIB, float(c.memory_bytes[0]) / GIB
    usable = usable_capacity(cap, settings.memory_headroom)
    feasible = bool(s.fits[0])
    terms = MemoryTerms(**s.memory.as_gib())
    reason = None
    fixes: tuple[FixHint, ...] = ()
    if not feasible and need > usable:
        d = 1 if round(need, 1) != round(usable, 1) else 3  # never "needs 75.4, allows 75.4"
        reason = (
            f"memory: needs {need:.{d}f} GiB per GPU (reserved peak + CUDA context), "
            f"{gpu_spec.id} allows {usable:.{d}f} GiB ({cap:.1f} GiB less {settings.memory_headroom:.0%} headroom)"
        )

        def runs(degree: str, value: int, config: TrainingConfig = training) -> bool:
            # On the GPUs the hint would name: these, or as many more as the degree outgrows them by.
            now = getattr(resolved, degree)
            world = num_gpus if num_gpus % (resolved.non_dp // now * value) == 0 else num_gpus // now * value
            try:
                wider = resolved.model_copy(update={degree: value, "dp_shard": -1, "dp_replicate": 1})
                checked_configuration(model, gpu_spec, wider, config, world, gpus_per_node, catalog, trainer_rules)
            except ValueError:
                return False
            return stack is None or not refused_by(stack, model, wider.resolve(world), config)

        fixes = memory_fix_hint(
            need,
            usable,
            terms,
            resolved,
            training,
            model,
            gpus_per_node=gpus_per_node,
            tp_runs=lambda tp: runs("tp", tp),
            # more stages with at least as many micro-batches (the schedules' own rule, not the stack's)
            pp_runs=lambda pp: runs("pp", pp, training.model_copy(update={"grad_accum": max(training.grad_accum, pp)})),
            offload_frees_gib=offload_frees_gib(terms, resolved, settings)
            if runs("tp", resolved.tp, training.model_copy(update={"offload": True}))
            else 0.0,
        )
    elif not feasible:
        reason, fixes = host_memory_words(model, c, settings)
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
        memory=MemoryEstimate(
            peak_gib=float(s.memory.peak_allocated[0]) / GIB,
            reserved_gib=float(s.memory.reserved[0]) / GIB,
            capacity_gib=cap,
            headroom_fraction=settings.memory_headroom,
            breakdown_gib=terms,
            **host_memory_gib(model, c, settings),
        ),
        time=TimeEstimate(step_s=float(s.time.step[0]), breakdown_s=TimeTerms(**s.time.as_dict())),
        throughput=ThroughputEstimate(
            tokens_per_s=float(s.tokens_per_s[0]),
            tokens_per_s_per_gpu=float(s.tokens_per_s[0]) / num_gpus,
            mfu=float(s.mfu[0]),
            hfu=float(s.hfu[0]),
            model_flops_per_token=float(s.model_flops_per_token[0]),
            hardware_flops_per_token=float(s.hardware_flops_per_token[0]),
        ),
        layout=EstimateLayout.of(resolved, training),
        attention_kernel=timed.words,
        sdpa_picks_cudnn=sdpa_picks_cudnn(stack, settings, timed.kernel),
        attention_kernel_timed=timed.kernel,
        attention_cp_fallback=timed.cp_fallback,
        global_batch_tokens=int(s.tokens_per_step[0]),
        time_to_train_h=None if (train_s := optional(seconds)) is None else train_s / SECONDS_PER_HOUR,
        cost_usd=optional(cost),
        energy_kwh=optional(energy),
        goodput=goodput_estimate(g),
        model=ModelSummary.of(model),
    )


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


def checked_configuration(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: Layout,
    training: TrainingConfig,
    num_gpus: int,
    gpus_per_node: int,
    catalog: Catalog,
    trainer_rules: bool,
) -> tuple[Layout, Candidates]:
    """The resolved layout and one-row table of a configuration that passes every rule an estimate
    checks (degrees multiply to the world size, ``first_structural_violation``, the precision); the
    same rules re-check a plan file on read (``Plan.check``). ValueError naming the first broken."""
    resolved = layout.resolve(num_gpus)
    c = catalog_row(gpu, resolved, training, catalog, gpus_per_node=gpus_per_node, num_gpus=num_gpus)
    check_divisible(model, c, training, gpu, trainer_rules)
    return resolved, c


def structural_problem(plan: Plan, layout: Layout, catalog: Catalog) -> str | None:
    """The first structural rule a run of ``plan`` breaks with ``layout`` (resolved for the run's
    world size, its overrides applied), in English, or None: ``rule_values`` of the run's one row,
    the same columns the search judges (the trainer's check before anything is allocated)."""
    c = catalog_row(catalog.gpu(plan.gpu), layout, plan.training, catalog, gpus_per_node=plan.gpus_per_node)
    return first_structural_problem(plan.model, **rule_values(c))


def catalog_row(
    gpu: GPUSpec,
    layout: Layout,
    training: TrainingConfig,
    catalog: Catalog,
    *,
    gpus_per_node: int,
    num_gpus: int | None = None,
) -> Candidates:
    """``single``'s one-row table on ``gpu`` over its catalog network (a resolved ``layout``), its
    scale-up domain holding only the GPUs placed on each node (``NodeTemplate.scaleup_domain_holding``)."""
    network = catalog.network(gpu.default_network)
    domain = catalog.node(gpu.default_node).scaleup_domain_holding(gpus_per_node)
    if domain != gpu.scaleup_domain_size:
        gpu = gpu.model_copy(update={"scaleup_domain_size": domain})
    return single(
        gpu,
        layout,
        training,
        gpus_per_node=gpus_per_node,
        num_gpus=num_gpus,
        **network_columns(network),
    )


def check_divisible(
    model: ModelSpec, c: Candidates, training: TrainingConfig, gpu: GPUSpec, trainer_rules: bool = True
) -> None:
    """Name the first structural problem of a single configuration (RuleViolation, a ValueError)."""
    problem = first_structural_violation(model, **rule_values(c), trainer=trainer_rules)
    if problem is None and not np.isfinite(c.matmul_peak_flops[0]):
        problem = RuleViolation(RuleCode.PRECISION, {"gpu": gpu.id, "precision": training.precision.value})
    if problem is not None:
        raise problem
