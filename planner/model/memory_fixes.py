"""What to change when a configuration does not fit its GPUs' memory: the fixes relative to the
layout in use (``memory_fix_hint``), each named only where the estimate's own rules and the
stack would run it (``FitCheck``), and the words of the need against the room (``memory_words``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from planner.catalog.hardware import Catalog, GPUSpec
from planner.layout import Implementation, Layout, PipelineSchedule, TrainingConfig
from planner.model.candidates import code
from planner.model.configuration import checked_configuration, refused_by
from planner.model.memory import offload_keeps_grads
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.plan import FixHint, MemoryTerms
from planner.rule_codes import FixCode


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


def offload_frees_gib(terms: MemoryTerms, layout: Layout, s: ModelingSettings) -> float:
    """The allocated GiB host offload moves off each GPU: the master weights and moments, and the
    gradients unless the stack keeps unsharded ones there (``s.offload_unsharded_grads``)."""
    grads_stay = bool(offload_keeps_grads(code(layout.sharding), s))
    return terms.params + terms.optimizer + (0.0 if grads_stay else terms.grads)


def _digits(need: float, usable: float) -> int:
    """Decimals that tell the need from the room: never "needs 75.4, allows 75.4"."""
    return 1 if round(need, 1) != round(usable, 1) else 3


@dataclass(frozen=True)
class FitCheck:
    """Whether a memory fix's layout would run: the same configuration with a wider degree or with
    host offload, checked as an estimate is (and against ``stack``'s refusals, when given), on the
    GPUs the hint would name: these, or as many more as the degree outgrows them by."""

    model: ModelSpec
    gpu: GPUSpec
    resolved: Layout
    training: TrainingConfig
    num_gpus: int
    gpus_per_node: int
    catalog: Catalog
    trainer_rules: bool
    stack: Stack | None

    def runs(self, degree: str, value: int, config: TrainingConfig) -> bool:
        now = getattr(self.resolved, degree)
        fits_here = self.num_gpus % (self.resolved.non_dp // now * value) == 0
        world = self.num_gpus if fits_here else self.num_gpus // now * value
        try:
            wider = self.resolved.model_copy(update={degree: value, "dp_shard": -1, "dp_replicate": 1})
            checked_configuration(
                self.model, self.gpu, wider, config, world, self.gpus_per_node, self.catalog, self.trainer_rules
            )
        except ValueError:
            return False
        return self.stack is None or not refused_by(self.stack, self.model, wider.resolve(world), config)

    def with_tp(self, tp: int) -> bool:
        return self.runs("tp", tp, self.training)

    def with_pp(self, pp: int) -> bool:
        # more stages with at least as many micro-batches (the schedules' own rule, not the stack's)
        accum = max(self.training.grad_accum, pp)
        return self.runs("pp", pp, self.training.model_copy(update={"grad_accum": accum}))

    def device_memory(
        self, need: float, usable: float, cap: float, terms: MemoryTerms, settings: ModelingSettings
    ) -> tuple[str, tuple[FixHint, ...]]:
        """The need against the room in words (GiB), and the fixes that would run."""
        frees = offload_frees_gib(terms, self.resolved, settings) if self.with_offload() else 0.0
        fixes = memory_fix_hint(
            need,
            usable,
            terms,
            self.resolved,
            self.training,
            self.model,
            gpus_per_node=self.gpus_per_node,
            tp_runs=self.with_tp,
            pp_runs=self.with_pp,
            offload_frees_gib=frees,
        )
        return memory_words(need, usable, cap, self.gpu.id, settings.memory_headroom), fixes

    def with_offload(self) -> bool:
        """The same layout with the optimizer states on the host (review s32: it was asked as
        'does tp stay tp')."""
        return self.runs("tp", self.resolved.tp, self.training.model_copy(update={"offload": True}))


def memory_words(need: float, usable: float, cap: float, gpu: str, headroom: float) -> str:
    """'memory: needs 81.2 GiB per GPU (...), h100-sxm allows 75.4 GiB (79.3 GiB less 5% headroom)'."""
    d = _digits(need, usable)
    return (
        f"memory: needs {need:.{d}f} GiB per GPU (reserved peak + CUDA context), {gpu} allows {usable:.{d}f} GiB"
        f" ({cap:.1f} GiB less {headroom:.0%} headroom)"
    )
