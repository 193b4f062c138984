"""What to change when a configuration does not fit its GPUs' memory: the fixes relative to the
layout in use (``memory_fix_hint``), each named only where the estimate's own rules and the
stack would run it (the callables and flags ``planner/model/fit_check.py``'s ``FitCheck`` passes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from planner.estimate_parts import MemoryTerms
from planner.fix_codes import GROUP_FIGURE, REPLICAS_FIGURE, FixCode
from planner.layout import (
    Implementation,
    Layout,
    PipelineSchedule,
    Sharding,
    TrainingConfig,
    cp_pays,
)
from planner.model.spec import ModelSpec
from planner.plan import FixHint


class World(NamedTuple):
    """Where a wider tp, cp or pp runs and fits (``FitCheck.fitting_world``): its GPUs and the
    data-parallel replicas it keeps (``dp_replicate``: ``kept_replicas`` of the layout, or fewer,
    the rest folded into the FSDP group: ``fit_check.wider_worlds``)."""

    gpus: int
    dp_replicate: int


def kept_replicas(layout: Layout) -> int:
    """The ``dp_replicate`` a fix keeps unless it says otherwise: HSDP's (and ZeRO's) replicas as
    given; under DDP every data-parallel rank is a replica, the rest of the GPUs (``Layout.resolve``),
    so 1, as the CLI's default."""
    return 1 if layout.sharding == Sharding.NONE else layout.dp_replicate


def _none(_: int) -> None:
    return None


@dataclass(frozen=True)
class FixProbes:
    """What the memory model says of the fixes a memory answer may name, judged as the estimate
    judges a row (planner/model/fit_check.py ``FitCheck.probes`` binds them to the stack's settings;
    these defaults find none). A fix the estimate would then refuse, or that does not fit, is none."""

    # The World on which tp widened to the degree runs by the estimate's rules and fits (trial s24:
    # tp=4 offered for Nemotron on HF's modules; trial s52: tp 2, 4, 8 each named on the same GPUs,
    # where the data-parallel group shrinks as tp grows, and none fitted).
    tp_world: Callable[[int], World | None] = _none
    # The fewest stages from the number asked that run and fit, with their World (trial s31: pp > 1
    # offered under hf-trainer, which has no pipeline engine; trial s52: named where it needed more
    # GPUs, unsaid).
    pp_world: Callable[[int], tuple[int, World] | None] = _none
    # The World on which a wider cp runs and fits (trial s34: at a million tokens the fixes went to tp
    # and pp, which the schedule refused, never to cp; review s34: the 1/cp split alone named a cp
    # that did not fit).
    cp_world: Callable[[int], World | None] = _none
    # The GiB the same layout needs with full recomputation (None: not known), so checkpointing that
    # does not close the gap alone is said after the fixes that do (trial s38: it led, and left 417 GiB).
    full_ac_need: Callable[[], float | None] = lambda: None
    # The World on which full recomputation with that cp runs and fits (review52: only these GPUs were
    # tried; buyer trial s45: at a million tokens neither fixed it alone, and together, cp 16, they did).
    full_ac_cp_world: Callable[[int], World | None] = _none
    # Whether an FSDP group of (dp_shard, dp_replicate) on that many GPUs fits (review s39: under a
    # pipeline the gradients stay unsharded, and the group the states' split named did not fit).
    group_fits: Callable[[int, int, int], bool] = lambda dp_shard, dp_replicate, gpus: True
    # Whether a smaller micro-batch, the batch kept by more accumulation, is a fix (a stack that holds
    # whole gradients while it accumulates adds them: ``FitCheck.micro_batch_fits``).
    micro_batch_fits: Callable[[], bool] = lambda: True


def memory_fix_hint(
    need_gib: float,
    usable_gib: float,
    terms: MemoryTerms,
    layout: Layout,
    training: TrainingConfig,
    model: ModelSpec,
    *,
    gpus_per_node: int,
    probes: FixProbes = FixProbes(),
    fsdp_runs: bool = True,
    offload_frees_gib: float = 0.0,
    optimizer_fix: FixCode | None = None,
    compile_fits: bool = False,
    host_holds: bool = True,
) -> tuple[FixHint, ...]:
    """Next steps relative to the layout already in use. The FSDP and tp degrees named are the
    smallest that remove the excess alone (unsharded states over a quarter of the need: FSDP is
    named unsized): sharding splits only the states (params, grads, optimizer), tensor parallelism
    nearly every term; checkpointing and a smaller micro-batch shrink the activations. In the order
    said: the fixes that keep the parallel degrees (``_hints_at_these_degrees``), the activations'
    (``_activation_hints``), a wider tp or more stages (``_split_hint``); a GPU with more memory
    where none applies; checkpointing that does not close the gap alone last. ``host_holds``: whether
    the host holds the offloaded states as they are; where it does not, a fix that shrinks only the
    device's activations (checkpointing, a smaller micro-batch) is none, and with no other the host's
    own is named (s53: "enable full activation checkpointing" was named for llama3-70b offloaded at
    dp_shard 2 x 8 replicas, which then overflowed the host). ``probes``: what the memory model says
    of each fix (``FixProbes``); the other arguments are described on the phase that reads them."""
    excess = need_gib - usable_gib
    hints = _hints_at_these_degrees(
        need_gib,
        excess,
        terms,
        layout,
        training,
        fsdp_runs,
        probes.group_fits,
        optimizer_fix,
        compile_fits,
        offload_frees_gib,
    )
    activation, partial = _activation_hints(need_gib, usable_gib, excess, terms, layout, training, probes)
    hints += activation
    hints += _split_hint(need_gib, excess, terms, layout, training, model, gpus_per_node, probes)
    if not host_holds:  # the degrees, groups and formats are judged device and host; these device only
        hints, partial = [h for h in hints if h.code not in DEVICE_ONLY_FIXES], []
    fallback = FixCode.BIGGER_GPU if host_holds else FixCode.HOST_OFFLOAD
    return (*(hints or [FixHint(code=fallback)]), *partial)


# Fixes that shrink only the device's activations: no fix where the host's offloaded states overflow.
DEVICE_ONLY_FIXES = frozenset({FixCode.FULL_AC, FixCode.FULL_AC_PARTIAL, FixCode.MICRO_BATCH, FixCode.ONE_F_ONE_B})


def _in_need(gib: float, need_gib: float, terms: MemoryTerms) -> float:
    """Allocated GiB of ``terms`` in the need's currency: the terms are allocated bytes, and the
    need also counts the allocator's reserve, which grows with them."""
    return gib * need_gib / max(terms.total, 1e-9)


def _hints_at_these_degrees(
    need_gib: float,
    excess: float,
    terms: MemoryTerms,
    layout: Layout,
    training: TrainingConfig,
    fsdp_runs: bool,
    group_fits: Callable[[int, int, int], bool],
    optimizer_fix: FixCode | None,
    compile_fits: bool,
    offload_frees_gib: float,
) -> list[FixHint]:
    """The fixes that keep tp, pp and cp: the 1F1B schedule, sharding (``_sharding_hints``), a
    narrower optimizer format, compiling, host offload. ``fsdp_runs``: whether the stack shards
    parameters at all (review s35: deepseek-v3 and megatron-lm were told to shard with FSDP, which
    they refuse); ``group_fits(dp_shard, dp_replicate, gpus)``: whether an FSDP group fits by the
    memory model (review s39: under a pipeline the gradients stay unsharded, and the group named by
    the states' split still did not fit, nor the next one); ``optimizer_fix``: the narrower
    optimizer formats that make the same layout fit, where the stack offers them
    (``FitCheck.optimizer_fix``); ``compile_fits``: whether the same layout compiled fits (trial
    s41: torchtitan's compiled loss freed 17.7 GiB and was never named; ``FitCheck.compile_fits``);
    ``offload_frees_gib``: the allocated GiB host offload would move off the GPU, 0 where the stack
    refuses it (trial s31: the fix that fitted was not named; review s31: it was named where the
    gradients stay on the GPU and it did not fit; trial s52: where the host could not hold the
    states)."""
    # A pipeline accumulates its gradients unsharded over the step (memory.py): only the
    # parameters and moments shrink with the group there.
    shardable = terms.states - (terms.grads if layout.pp > 1 else 0.0)
    states = _in_need(shardable, need_gib, terms)
    hints = []
    if layout.pp > 1 and layout.pp_schedule == PipelineSchedule.GPIPE and training.grad_accum > layout.pp:
        # GPipe keeps every micro-batch's activations until the backward; 1F1B at most pp of them.
        hints.append(FixHint(code=FixCode.ONE_F_ONE_B, figures={"pp": layout.pp, "accum": training.grad_accum}))
    hints += _sharding_hints(layout, states, need_gib, excess, group_fits) if fsdp_runs else []
    if optimizer_fix is not None:
        hints.append(FixHint(code=optimizer_fix))
    if compile_fits:
        hints.append(FixHint(code=FixCode.COMPILE))
    if not training.offload and _in_need(offload_frees_gib, need_gib, terms) > excess:
        hints.append(FixHint(code=FixCode.OFFLOAD))
    return hints


def _activation_hints(
    need_gib: float,
    usable_gib: float,
    excess: float,
    terms: MemoryTerms,
    layout: Layout,
    training: TrainingConfig,
    probes: FixProbes,
) -> tuple[list[FixHint], list[FixHint]]:
    """The fixes that shrink the activations: full recomputation (with a wider cp where it needs
    one, ``probes.full_ac_cp_world``), a smaller micro-batch (``probes.micro_batch_fits``), a wider
    cp (``probes.cp_world``); and checkpointing that does not close the gap alone, said last
    (``probes.full_ac_need``)."""
    # context parallelism splits each sequence: its activations and its loss, 1/cp per rank; on more
    # GPUs the FSDP group grows with cp and shards the states too (review52 M6: llama3-8b at 128K on 1
    # GPU was told no one change fits, where cp 16 on 16 GPUs did): the bound that prunes the degrees
    # tried counts every term but misc, the memory model (``cp_world``) says which fits
    splittable = _in_need(terms.total - terms.misc, need_gib, terms)
    full, partial = _recompute_hints(training, terms, usable_gib, probes.full_ac_need)

    def cp_named(c: int) -> bool:  # a degree the search runs at this sequence (trial s47 L3: cp=16 at 4K)
        return c <= MAX_CP_FIX and cp_pays(training.seq_len, c)

    if partial:  # checkpointing alone leaves some to find: with a wider cp too, where that fits
        both = _full_ac_cp_hint(layout, lambda c: probes.full_ac_cp_world(c) if cp_named(c) else None)
        full, partial = ([both], []) if both is not None else (full, partial)
    hints = [*full]
    if training.micro_batch > 1 and probes.micro_batch_fits():
        hints.append(FixHint(code=FixCode.MICRO_BATCH, figures={"micro_batch": training.micro_batch}))
    cp = _smallest_degree(layout.cp, splittable, excess, lambda c: probes.cp_world(c) if cp_named(c) else None)
    if cp is not None:
        hints.append(_degree_hint(layout, "cp", *cp, FixCode.CP, FixCode.CP_MORE_GPUS))
    return hints, partial


def _split_hint(
    need_gib: float,
    excess: float,
    terms: MemoryTerms,
    layout: Layout,
    training: TrainingConfig,
    model: ModelSpec,
    gpus_per_node: int,
    probes: FixProbes,
) -> list[FixHint]:
    """The smallest wider tp that removes the excess alone (tensor parallelism splits nearly every
    term; ``probes.tp_world``), else more pipeline stages (``probes.pp_world``); none where neither
    runs."""
    native_moe = model.is_moe and training.impl == Implementation.NATIVE  # its blocks take no tp (structure.py)

    def tp_fits(t: int) -> World | None:
        return probes.tp_world(t) if not native_moe and t <= gpus_per_node and model.num_heads % t == 0 else None

    tp = _smallest_degree(layout.tp, need_gib - terms.misc, excess, tp_fits)
    if tp is not None:
        return [_degree_hint(layout, "tp", *tp, FixCode.TP, FixCode.TP_MORE_GPUS)]
    # More stages split the layers' states and copies, not the activations: 1F1B keeps pp micro-
    # batches of 1/pp of the layers in flight on the first stage (buyer trial s45 L2: at a million
    # tokens pp 8 was offered first and still needed 430 GiB); so only where those could close the gap
    split = _in_need(terms.states + terms.unsharded_params, need_gib, terms)
    if layout.pp < model.num_layers and split > excess and (pp := probes.pp_world(2 * layout.pp)) is not None:
        stages, world = pp
        folded = _replica_figures(layout, world, layout.non_dp // layout.pp * stages)
        more = {"gpus": world.gpus} if world.gpus != layout.world_size else {}
        # a fold's dp_shard holds for these stages alone, so they are named (review54: "pp > 2 with
        # dp_shard=2" held for pp 4 only; pp 8 with it needed 128 GPUs and was refused)
        named = {"stages": stages} if more or folded else {}
        code = FixCode.PP_MORE_GPUS if more else FixCode.PP_STAGES if folded else FixCode.PP
        return [FixHint(code=code, figures={"pp": layout.pp} | named | more | folded)]
    return []


def _recompute_hints(
    training: TrainingConfig, terms: MemoryTerms, usable_gib: float, full_ac_need: Callable[[], float | None]
) -> tuple[list[FixHint], list[FixHint]]:
    """Full recomputation as a fix that closes the gap alone, or as one that does not (said last,
    with the GiB it leaves: ``FULL_AC_PARTIAL``)."""
    if training.activation_checkpointing.value == "full" or terms.activations <= 0:
        return [], []
    after = full_ac_need()
    if after is None or after <= usable_gib:
        return [FixHint(code=FixCode.FULL_AC)], []
    return [], [FixHint(code=FixCode.FULL_AC_PARTIAL, figures={"need": after})]


def _full_ac_cp_hint(layout: Layout, world: Callable[[int], World | None]) -> FixHint | None:
    """Full recomputation together with the smallest power-of-two multiple of the context-parallel
    degree (up to MAX_CP_FIX) with which it runs and fits on some ``world``, with that ``World``:
    where checkpointing alone leaves the sequence's activations over the room, splitting the
    sequence is what shrinks them (buyer trial s45: more pipeline stages at a million tokens still
    needed 430 GiB, cp 8 with it 78 GiB of 75)."""
    wider = (layout.cp * 2**j for j in range(1, 8))
    found = next(((d, w) for d in wider if d <= MAX_CP_FIX and (w := world(d)) is not None), None)
    if found is None:
        return None
    return _degree_hint(layout, "cp", *found, FixCode.FULL_AC_CP, FixCode.FULL_AC_CP_MORE_GPUS)


def _sharding_hints(
    layout: Layout, states: float, need_gib: float, excess: float, group_fits: Callable[[int, int, int], bool]
) -> list[FixHint]:
    """FSDP where a large share of the need is unsharded states and it fits on these GPUs by the
    memory model (review52: megatron-core 70B at tp 4, pp 2 on 16 GPUs was told to shard with FSDP,
    which over its 2 data-parallel ranks still needed 110.8 GiB of 75.4), else the smallest FSDP group that
    fits: FSDP over k x more ranks frees (1 - 1/k) of the shardable ``states`` (a necessary bound),
    and ``group_fits`` checks the group by the memory model. The group grows on these GPUs only by
    folding replicas into it (dp_replicate); past that it needs ``group x non_dp`` GPUs (trial
    s35: "at least 12 (dp_shard now 6)" was told to an FSDP layout with no replica)."""
    # --sharding fsdp as said: every data-parallel rank in the group (DDP's are all replicas); a ZeRO
    # layout's replicas folded into it are named (review55: "shard ... with FSDP (sharding fsdp)", told to
    # zero2 dp_shard 4 x 4 replicas, typed beside the user's --dp-shard 4 --dp-replicate 4 did not fit)
    whole = layout.dp_shard * layout.dp_replicate
    if layout.sharding.value != "fsdp" and states > 0.25 * need_gib and group_fits(whole, 1, layout.world_size):
        folded = _replica_figures(layout, World(layout.world_size, 1), layout.non_dp)
        return [FixHint(code=FixCode.SHARD_FSDP, figures=folded)]
    if states <= excess:
        return []
    for k in (2**j for j in range(1, MAX_GROUP_DOUBLINGS + 1)):
        if states * (1 - 1 / k) < excess:
            continue
        # the smallest fold of d | dp_replicate replicas into the group that is at least k times it
        # (review s35: dp_replicate 3 with k 2 was sent to fewer GPUs than in use)
        fold = next((d for d in range(k, layout.dp_replicate + 1) if layout.dp_replicate % d == 0), None)
        if fold is not None:
            group = layout.dp_shard * fold
            if group_fits(group, layout.dp_replicate // fold, layout.world_size):
                world = World(layout.world_size, layout.dp_replicate // fold)
                figures = {"group": group, "dp_shard": layout.dp_shard} | _replica_figures(layout, world, layout.non_dp)
                return [FixHint(code=FixCode.FSDP_GROUP, figures=figures)]
            continue
        group = layout.dp_shard * k
        if group_fits(group, 1, group * layout.non_dp):
            world = World(group * layout.non_dp, 1)
            figures = {"group": group, "dp_shard": layout.dp_shard, "gpus": world.gpus}
            return [
                FixHint(
                    code=FixCode.FSDP_GROUP_MORE_GPUS, figures=figures | _replica_figures(layout, world, layout.non_dp)
                )
            ]
    return []


# The widest FSDP group a memory fix names: 2**12 times the group in use.
MAX_GROUP_DOUBLINGS = 12


# The widest context-parallel degree a memory fix names (Llama 3.1's long-context stage ran CP 16;
# NeMo's 1M-token recipes CP 16-32).
MAX_CP_FIX = 64


def _smallest_degree(
    now: int, splittable: float, excess: float, world: Callable[[int], World | None]
) -> tuple[int, World] | None:
    """The smallest power-of-two multiple of a degree (``now``) whose 1/degree split of
    ``splittable`` GiB could remove ``excess`` (a bound: it prunes) and whose layout runs and fits
    on some ``world``, with that world."""
    for d in (now * 2**j for j in range(1, 8)):
        found = world(d) if splittable * (1 - now / d) >= excess else None
        if found is not None:
            return d, found
    return None


def _degree_hint(layout: Layout, degree: str, value: int, world: World, here: FixCode, more_gpus: FixCode) -> FixHint:
    """``use tp=8 (now 1)``, or ``... on 128 GPUs`` where it needs more, with the replicas where it
    folds them (``_replica_figures``)."""
    non_dp = layout.non_dp // getattr(layout, degree) * value
    figures = {degree: value, "now": getattr(layout, degree)} | _replica_figures(layout, world, non_dp)
    if world.gpus == layout.world_size:
        return FixHint(code=here, figures=figures)
    return FixHint(code=more_gpus, figures=figures | {"gpus": world.gpus})


def _replica_figures(layout: Layout, world: World, non_dp: int) -> dict[str, int | float | str]:
    """The replicas a fix runs with, where they are not the layout's (``kept_replicas``), and the FSDP
    group that then holds the rest of the GPUs (``non_dp``: the fix's tp x pp x cp): the words then
    say so (planner/fix_codes.py ``with_replicas``; s54: "use tp=8 (now 1)" was named for
    llama3-70b at dp_shard 4 x 16 replicas on 64 GPUs, where tp 8 does not divide 64 with the 16
    kept, and fitted only with every replica folded into the FSDP group; the user's --dp-shard 4,
    kept, was then refused). Where it keeps an HSDP layout's replicas but not its group, the group
    alone (s55)."""
    group = world.gpus // (non_dp * world.dp_replicate)
    shard: dict[str, int | float | str] = {GROUP_FIGURE: group, "dp_shard_now": layout.dp_shard}
    if world.dp_replicate != kept_replicas(layout):
        return {REPLICAS_FIGURE: world.dp_replicate, "dp_replicate_now": layout.dp_replicate} | shard
    # Replicas kept, the FSDP group not: an HSDP user's --dp-shard, kept, would be refused (s55).
    hsdp = layout.sharding != Sharding.NONE and layout.dp_replicate > 1
    return shard if hsdp and group != layout.dp_shard else {}
