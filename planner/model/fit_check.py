"""Whether a memory fix would run: the same configuration with a wider degree, another FSDP group,
narrower optimizer formats, compiled or offloaded, checked as an estimate is, device and host
(``FitCheck``, which asks ``memory_fix_hint`` for the fixes and answers its questions), and the
words of the need against the room (``memory_words``)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.hardware import Catalog, GPUSpec
from planner.estimate_parts import MemoryTerms
from planner.fix_codes import FixCode
from planner.layout import ActivationCheckpointing, Layout, Sharding, TrainingConfig
from planner.model.accum_sync import defers_reduction
from planner.model.candidates import SHARD_FSDP, Candidates, code
from planner.model.configuration import checked_configuration, refused_by
from planner.model.host import row_fits
from planner.model.memory import memory, offload_keeps_grads
from planner.model.memory_fixes import FixProbes, World, kept_replicas, memory_fix_hint
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision, refused_rows
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.plan import FixHint
from planner.units import GIB

# The narrower optimizer formats a memory fix may name, one change before two.
OPTIMIZER_FIXES = (
    (FixCode.BF16_GRADS, OptimizerPrecision(grad_reduce_bf16=True)),
    (FixCode.PARAM_REMAINDERS, OptimizerPrecision(param_remainders=True)),
    (FixCode.BF16_GRADS_AND_REMAINDERS, OptimizerPrecision(grad_reduce_bf16=True, param_remainders=True)),
    # the stacks that train pure bf16 offer none of the three above, so it is the first they name
    (FixCode.PURE_BF16, OptimizerPrecision(pure_bf16=True)),
)


def wider_worlds(num_gpus: int, layout: Layout, degree: str, value: int) -> tuple[World, ...]:
    """Where a layout with ``degree`` widened to ``value`` may run, in the order tried: these GPUs
    (where the degrees divide them), else as many more as keep the data-parallel degree (trial s52:
    on the same GPUs the FSDP group shrinks as tp grows, so tp 2, 4 and 8 were each named and none
    fitted, where tp 2 on twice the GPUs did); on each, the layout's replicas kept
    (``kept_replicas``), then halved until every replica is folded into the FSDP group (s54: only
    the whole fold was tried, and unsaid, for 16 replicas with which tp 8 did not divide the 64 GPUs;
    review54 L3: the whole fold was named where 2 of the 16 kept fit, and HSDP keeps replicas for
    the traffic between nodes). The GPUs come first: with replicas kept on more GPUs first,
    llama3-70b at dp_shard 32 x 2 replicas was sent from 64 GPUs to 512 for a tp 8 that fits on the
    64 with the 2 folded."""
    more = num_gpus // getattr(layout, degree) * value
    kept = kept_replicas(layout)
    replicas = [kept // 2**j for j in range(kept.bit_length()) if kept % 2**j == 0] + [1]
    return tuple(dict.fromkeys(World(gpus, r) for gpus in (num_gpus, more) for r in replicas))


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
    host offload, checked as an estimate is (and against ``stack``'s refusals, when given, and the
    run's ``optimizer`` formats'), on the
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
    # the run's optimizer formats (pure bf16 refuses host offload: ``refused_rows``)
    optimizer: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION

    def fitting_world(
        self, degree: str, value: int, settings: ModelingSettings, config: TrainingConfig | None = None
    ) -> World | None:
        """The GPUs and replicas with which the degree widened to ``value`` runs and fits (the first
        of ``wider_worlds``); None where with none."""
        wider = self.resolved.model_copy(update={degree: value, "dp_shard": -1})
        for world in wider_worlds(self.num_gpus, self.resolved, degree, value):
            grown = wider.model_copy(update={"dp_replicate": world.dp_replicate})
            if self._runs(grown, world.gpus, config or self.training, settings):
                return world
        return None

    def fits_with_group(self, dp_shard: int, dp_replicate: int, gpus: int, settings: ModelingSettings) -> bool:
        """An FSDP group of ``dp_shard`` (``dp_replicate`` replicas) on ``gpus`` that runs and fits."""
        grouped = self.resolved.model_copy(
            update={"dp_shard": dp_shard, "dp_replicate": dp_replicate, "sharding": Sharding.FSDP}
        )
        return self._runs(grouped, gpus, self.training, settings)

    def _runs(self, layout: Layout, world: int, config: TrainingConfig, settings: ModelingSettings | None) -> bool:
        c = self._candidates(layout, world, config)
        if c is None:
            return False
        if self.stack is not None and refused_by(self.stack, self.model, layout.resolve(world), config):
            return False
        if refused_rows(self.optimizer, code(layout.sharding), code(config.precision), config.offload):
            return False  # trial bf16pure55: host offload was named as a fix of a pure-bf16 run, which refuses it
        # the device and the host, as the estimate judges a row (trial s52: an offload named where the
        # host could not hold the states)
        return settings is None or bool(
            row_fits(self.model, c, memory(self.model, c, settings).device_total, settings)[0]
        )

    def _candidates(self, layout: Layout, world: int, config: TrainingConfig) -> Candidates | None:
        """The configuration as the estimate checks it; None where its rules refuse it."""
        try:
            _, c = checked_configuration(
                self.model, self.gpu, layout, config, world, self.gpus_per_node, self.catalog, self.trainer_rules
            )
        except ValueError:
            return None
        return c

    def optimizer_fix(self, settings: ModelingSettings) -> FixCode | None:
        """The first of ``OPTIMIZER_FIXES`` (one change before two) that ``self.stack`` offers, that
        changes ``settings`` (one they hold already is no fix), and with which the same layout fits
        (``OptimizerPrecision.applied``, the rule a run's flags use)."""
        if self.stack is None:
            return None
        sharding, precision = code(self.resolved.sharding), code(self.training.precision)
        for fix, chosen in OPTIMIZER_FIXES:
            refused = refused_rows(chosen, sharding, precision, self.training.offload)
            offered = chosen.kept_under(self.stack) == chosen and not refused
            narrower = chosen.applied(settings)
            if offered and narrower != settings and self._runs(self.resolved, self.num_gpus, self.training, narrower):
                return fix
        return None

    def compile_fits(self, settings: ModelingSettings) -> bool:
        """Whether the same layout, not compiled, would fit compiled: where the stack has torch.compile
        and compiles the loss with the model (``s.compile_fuses_loss``), the only memory compile
        changes in the model (planner/model/memory.py ``loss_bytes_per_logit``)."""
        if self.training.compile or not settings.compile_fuses_loss:
            return False
        if self.stack is not None and not self.stack.compiles:
            return False
        return self._runs(self.resolved, self.num_gpus, self.training.model_copy(update={"compile": True}), settings)

    def pp_world(self, pp: int, settings: ModelingSettings) -> tuple[int, World] | None:
        """The fewest of ``pp``, twice and four times as many stages (at most one layer each) that
        run and fit, with at least as many micro-batches (the schedules' own rule, not the
        stack's), and the GPUs and replicas they fit with (``fitting_world``); None where none does."""
        for stages in (pp, 2 * pp, 4 * pp):
            if stages > self.model.num_layers:
                return None
            accum = max(self.training.grad_accum, stages)
            world = self.fitting_world("pp", stages, settings, self.training.model_copy(update={"grad_accum": accum}))
            if world is not None:
                return stages, world
        return None

    def micro_batch_fits(self, settings: ModelingSettings) -> bool:
        """Whether "lower the micro-batch" is a fix: where the stack holds whole gradients while it
        accumulates (``defers_reduction``: HF Trainer's no_sync), a smaller micro-batch with the batch
        kept by more accumulation adds them, so it is named only where micro-batch 1 then runs and
        fits; elsewhere a smaller micro-batch only shrinks the need and is named as before."""
        t = self.training
        one = t.model_copy(update={"micro_batch": 1, "grad_accum": t.grad_accum * t.micro_batch})
        c = self._candidates(self.resolved, self.num_gpus, one)
        if c is None or not defers_reduction(c, settings)[0]:
            return True
        return self._runs(self.resolved, self.num_gpus, one, settings)

    def probes(self, settings: ModelingSettings) -> FixProbes:
        """What the memory model says of each fix a memory answer may name, under ``settings``."""
        return FixProbes(
            tp_world=lambda tp: self.fitting_world("tp", tp, settings),
            pp_world=lambda pp: self.pp_world(pp, settings),
            cp_world=lambda cp: self.fitting_world("cp", cp, settings),
            full_ac_need=lambda: self.need_with_full_ac(settings),
            full_ac_cp_world=lambda cp: self.fitting_world("cp", cp, settings, self.full_ac_training()),
            group_fits=lambda shard, replicate, gpus: self.fits_with_group(shard, replicate, gpus, settings),
            micro_batch_fits=lambda: self.micro_batch_fits(settings),
        )

    def device_memory(
        self, need: float, usable: float, cap: float, terms: MemoryTerms, settings: ModelingSettings, host_holds: bool
    ) -> tuple[str, tuple[FixHint, ...]]:
        """The need against the room in words (GiB), and the fixes that would run (``host_holds``:
        whether the host holds the offloaded states as they are, the estimate's ``host_fits``)."""
        frees = offload_frees_gib(terms, self.resolved, settings) if self.with_offload(settings) else 0.0
        fixes = memory_fix_hint(
            need,
            usable,
            terms,
            self.resolved,
            self.training,
            self.model,
            gpus_per_node=self.gpus_per_node,
            probes=self.probes(settings),
            fsdp_runs=self.stack is None or self.stack.max_sharding >= SHARD_FSDP,
            offload_frees_gib=frees,
            optimizer_fix=self.optimizer_fix(settings),
            compile_fits=self.compile_fits(settings),
            host_holds=host_holds,
        )
        if fixes[0] == FixHint(code=FixCode.BIGGER_GPU):  # the partial hints after it stay (review s39)
            fixes = (*(self._past_every_gpu(need, settings) or fixes[:1]), *fixes[1:])
        return memory_words(need, usable, cap, self.gpu.id, settings.memory_headroom), fixes

    def _past_every_gpu(self, need: float, settings: ModelingSettings) -> tuple[FixHint, ...]:
        """Where "a GPU with more memory" is none: the need past the largest catalog GPU's room
        (trial s37: gpt-oss-20b's eager scores at 64K needed 3,652 GiB and were told to find one)."""
        largest = max(self.catalog.gpus.values(), key=lambda g: g.memory_bytes)
        room = largest.memory_bytes / GIB * (1 - settings.memory_headroom)
        if need <= room:
            return ()
        return (FixHint(code=FixCode.NO_ONE_FIX, figures={"times": need / room, "largest": largest.id}),)

    def need_with_full_ac(self, settings: ModelingSettings) -> float | None:
        """GiB per GPU (reserved + CUDA context) of the same layout with full recomputation; None
        where that configuration does not pass the estimate's rules."""
        c = self._candidates(self.resolved, self.num_gpus, self.full_ac_training())
        return None if c is None else float(memory(self.model, c, settings).device_total[0]) / GIB

    def full_ac_training(self) -> TrainingConfig:
        """The same training with every layer's activations recomputed."""
        return self.training.model_copy(
            update={"activation_checkpointing": ActivationCheckpointing.FULL, "ac_blocks": 0}
        )

    def with_offload(self, settings: ModelingSettings) -> bool:
        """The same layout with the optimizer states on the host runs and fits, GPU and host (trial
        s52: named where neither fitted), HSDP replicas kept (s53: judged on one FSDP group over every
        GPU, named for mixtral-8x7b at dp_shard 2 x 8 where the host held too little)."""
        offloaded = self.training.model_copy(update={"offload": True})
        return self._runs(self.resolved, self.num_gpus, offloaded, settings)


def memory_words(need: float, usable: float, cap: float, gpu: str, headroom: float) -> str:
    """'memory: needs 81.2 GiB per GPU (...), h100-sxm allows 75.4 GiB (79.3 GiB less 5% headroom)'."""
    d = _digits(need, usable)
    return (
        f"memory: needs {need:.{d}f} GiB per GPU (reserved peak + CUDA context), {gpu} allows {usable:.{d}f} GiB"
        f" ({cap:.1f} GiB less {headroom:.0%} headroom)"
    )
