"""Generate the candidate table for a planning request.

Knobs are crossed with a Cartesian product of index arrays (one vectorised generator, no
nested loops per knob), then constraints filter the rows: degrees multiply to the GPU count,
and the shared structural rules of ``planner/model/structure.py`` hold (what the trainer runs). The
accumulation is chosen to reach the global batch; ``batch_within_tolerance`` checks it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.catalog.hardware import Catalog
from planner.layout import (
    ActivationCheckpointing,
    Implementation,
    Precision,
    cp_pays,
    ep_fits,
    max_pipeline_stages,
    shard_group_of,
)
from planner.model.candidates import (
    AC_BLOCKS,
    AC_CODES,
    IMPL_CODES,
    PRECISION_CODES,
    SCHED_1F1B,
    SHARD_FSDP,
    SHARD_NONE,
    SHARD_ZERO1,
    SHARD_ZERO2,
    Candidates,
    hardware_columns,
    zero_over_one_rank,
)
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision, refused_rows
from planner.model.partial_recompute import full_ac_blocks, too_many_ac_blocks
from planner.model.rowwise import KNOB_COLUMNS, distinct
from planner.model.spec import ModelSpec
from planner.model.stack_profiles import a2a_overlap_refused
from planner.model.stacks import Stack
from planner.model.structure import structurally_valid, tp_in_domain

# Sharding variants searched: (sharding code, replicate across nodes?) -> HSDP when True.
SHARDING_VARIANTS = (
    (SHARD_FSDP, False),
    (SHARD_FSDP, True),
    (SHARD_ZERO2, False),
    (SHARD_ZERO1, False),
    (SHARD_NONE, False),
)
MICRO_BATCHES = (1, 2, 4, 8, 16)
TP_DEGREES = (1, 2, 4, 8, 16, 32, 64, 72)
CP_DEGREES = (1, 2, 4, 8, 16)
# Largest relative distance of a candidate's global batch from the requested one. Of the feasible
# candidates, plan() then keeps those of the achievable batch nearest the request (docs/ilp.md).
DEFAULT_BATCH_TOLERANCE = 0.05


# The largest GPU count searched for a GPU type with no inventory (and no ``max_gpus``). A type
# with an inventory is searched up to its inventory; the cap is printed with the plan and named
# in infeasible answers when it, not an inventory, limits the search (planner/request.py).
DEFAULT_MAX_GPUS = 4096


@dataclass(frozen=True)
class SearchSpace:
    """What the planner may choose; each tuple lists the allowed values of one knob."""

    seq_len: int
    global_batch_tokens: int
    batch_tolerance: float = DEFAULT_BATCH_TOLERANCE
    precisions: tuple[Precision, ...] = (Precision.BF16,)
    activation_checkpointing: tuple[ActivationCheckpointing, ...] = tuple(ActivationCheckpointing)
    # Blocks checkpointed per pp rank in the ``blocks`` rows; None: the fewest that fit, per row
    # (planner/model/partial_recompute.py, called by planner/search/score.py).
    ac_blocks: int | None = None
    allow_offload: bool = False
    allow_cp: bool = True
    impl: Implementation = Implementation.NATIVE
    compile: bool = False
    max_gpus: int = DEFAULT_MAX_GPUS
    min_gpus: int = 1
    extra_counts: tuple[int, ...] = ()  # whole-node counts searched besides the grid (a cap, an inventory)
    # False: another stack's estimate, which only the laws of the layout bind, not trainplan's
    # trainer's limits (planner/model/structure.py Rule.trainer_only).
    trainer_rules: bool = True
    # The stack that runs the plan: some have no pipeline engine or context parallelism, DeepSpeed's
    # engine refuses some layouts (planner/model/stacks.py Stack.refusals).
    stack: Stack = Stack.TRAINPLAN
    # Megatron-Core's overlapped expert all-to-alls (--moe-a2a-overlap): only the layouts it runs.
    moe_a2a_overlap: bool = False
    # The optimizer formats a run asks (--grad-reduce-in-bf16, --precision-aware-optimizer, --pure-bf16):
    # only the rows its stack runs them on (``optimizer_precision.refused_rows``).
    optimizer_precision: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION


def gpu_counts(max_gpus: int, gpus_per_node: int, min_gpus: int = 1, extra: tuple[int, ...] = ()) -> np.ndarray:
    """1, 2, 4, ... up to a node, then whole nodes on a ~1.25x geometric grid, at every power of
    two (the data-parallel degrees that divide a power-of-two global batch exactly) and at three
    times every power of two, the largest whole-node count and the ``extra`` whole-node counts;
    ``max_gpus`` itself below a node.

    The 3 x 2^k node counts are the ones between powers of two whose data-parallel degrees come
    closest to dividing a power-of-two batch (3,072 H100 hold 1,024 sequences of a 4M batch at
    +3.1 %, inside the search's batch tolerance; the 1.25x grid's 2,888 and 3,608 do not). Without
    them a budget that 3,072 GPUs meet was reported as needing 4,096 (trial s35)."""
    small = [n for n in (1, 2, 4) if n < gpus_per_node]
    nodes, k = [], 1
    while k * gpus_per_node <= max_gpus:
        nodes.append(k * gpus_per_node)
        k = max(k + 1, round(k * 1.25))
    for base in (1, 3):
        k = base
        while k * gpus_per_node <= max_gpus:
            nodes.append(k * gpus_per_node)
            k *= 2
    # A cap or inventory smaller than a node is a count of its own (3 GPUs in a workstation).
    whole = [n for n in (max_gpus, *extra) if n % gpus_per_node == 0 or n < gpus_per_node]
    counts = np.array(sorted(set(small + nodes + whole)))
    return counts[(counts >= min_gpus) & (counts <= max_gpus)]


def expert_parallel_degrees(model: ModelSpec, impl: Implementation) -> np.ndarray:
    """The ep degrees worth trying: every divisor of the expert count (experts split in equal
    whole groups, planner/model/structure.py); 1 for dense models and the Hugging Face path. Which
    of them a layout admits is ``ep_fits`` (torchtitan's rule), applied per row."""
    if not model.is_moe or impl == Implementation.HF:
        return np.array([1])
    e = model.num_experts
    return np.array([d for d in range(1, e + 1) if e % d == 0])


# Pipeline degrees the search tries besides the powers of two: divisors of the layer count up to
# this (3, 5, 6, 7, ...: even stages on node counts that are not powers of two); and interleaved
# chunks per rank up to this many (Megatron's and torchtitan's recipes use 2-8). Larger grids cost
# search time for layouts that rarely win; estimate takes any pp x vpp <= max_pipeline_stages.
PP_DIVISOR_MAX = 16
VPP_MAX = 8


def pipeline_degrees(num_layers: int) -> tuple[np.ndarray, np.ndarray]:
    """The (pp, vpp) pairs searched, derived from the layer count (stages may be uneven,
    planner/layout.py ``stage_layer_counts``): pp every power of two up to the layer count and
    every divisor of it up to ``PP_DIVISOR_MAX`` (126 layers: 1, 2, 3, 4, 6, 7, 8, 9, 14, 16, 32,
    64); interleaved chunks per rank (pp > 1) every power of two up to ``max_pipeline_stages // pp`` and
    ``VPP_MAX``. The bubble shrinks by vpp for vpp times the stage-boundary traffic and more
    in-flight activations (planner/model/pipeline.py)."""
    powers = [1 << k for k in range(num_layers.bit_length()) if 1 << k <= num_layers]
    divisors = [d for d in range(1, min(num_layers, PP_DIVISOR_MAX) + 1) if num_layers % d == 0]
    pairs = [(1, 1)]
    stages = max_pipeline_stages(num_layers)  # the embedding's and the head's stages may hold no block
    for pp in sorted(set(powers + divisors) - {1}):
        pairs += [(pp, vpp) for vpp in powers if vpp <= min(stages // pp, VPP_MAX)]
    pp_values, vpp_values = zip(*pairs, strict=True)
    return np.array(pp_values), np.array(vpp_values)


def cartesian(**axes: np.ndarray) -> dict[str, np.ndarray]:
    """Every combination of the given 1-D arrays, as flat columns."""
    grids = np.meshgrid(*axes.values(), indexing="ij")
    return {name: grid.ravel() for name, grid in zip(axes, grids, strict=True)}


def cross(table: dict[str, np.ndarray], **axes: np.ndarray) -> dict[str, np.ndarray]:
    """Every row of ``table`` combined with every combination of ``axes``."""
    grid = cartesian(**axes)
    num_rows, num_combos = len(next(iter(table.values()))), len(next(iter(grid.values())))
    return {
        **{k: np.repeat(v, num_combos) for k, v in table.items()},
        **{k: np.tile(v, num_rows) for k, v in grid.items()},
    }


def searched_cp(space: SearchSpace, cp: int) -> bool:
    """Whether the search tries context-parallel degree ``cp`` > 1: where it pays (``cp_pays``)."""
    return space.allow_cp and cp_pays(space.seq_len, cp)


def knob_rows(model: ModelSpec, counts: np.ndarray, space: SearchSpace) -> dict[str, np.ndarray]:
    """Every knob combination at the GPU ``counts`` whose mesh degrees divide the count, before
    the layout rules (``gpu_rows``). The mesh degrees first: most combinations do not divide the
    GPU count, so dropping them before the other knobs multiply the table keeps the search fast."""
    cp_options = [cp for cp in CP_DEGREES if cp == 1 or searched_cp(space, cp)]
    pp_values, vpp_values = pipeline_degrees(model.num_layers)
    mesh = cartesian(
        num_gpus=counts,
        tp=np.array(TP_DEGREES),
        pipeline=np.arange(len(pp_values)),
        cp=np.array(cp_options),
    )
    mesh["pp"], mesh["vpp"] = pp_values[mesh["pipeline"]], vpp_values[mesh["pipeline"]]
    del mesh["pipeline"]
    non_dp = mesh["tp"] * mesh["pp"] * mesh["cp"]
    fits = (mesh["num_gpus"] % non_dp == 0) & (mesh["num_gpus"] >= non_dp)
    return cross(
        {k: v[fits] for k, v in mesh.items()},
        variant=np.arange(len(SHARDING_VARIANTS)),
        micro_batch=np.array(MICRO_BATCHES),
        ac=np.array(searched_ac_codes(space)),
        precision=np.array([PRECISION_CODES.index(p) for p in space.precisions]),
        offload=np.array([False, True] if space.allow_offload else [False]),
        ep=expert_parallel_degrees(model, space.impl),
    )


def gpu_rows(
    model: ModelSpec, scaleup_domain_size: int, gpus_per_node: int, counts: np.ndarray, space: SearchSpace
) -> dict[str, np.ndarray]:
    """All structurally valid combinations for a GPU type of that scale-up domain at the GPU
    ``counts`` (``gpu_counts``), count by count in their order."""
    rows = knob_rows(model, counts, space)
    n, tp, pp, cp = rows["num_gpus"], rows["tp"], rows["pp"], rows["cp"]
    sharding = np.array([v[0] for v in SHARDING_VARIANTS])[rows["variant"]]
    hsdp = np.array([v[1] for v in SHARDING_VARIANTS])[rows["variant"]]
    non_dp = tp * pp * cp
    dp = np.maximum(n // non_dp, 1)
    num_nodes = np.maximum(1, n // gpus_per_node)
    # HSDP: replicate across nodes, shard inside a node (tp*cp ranks of it are not dp).
    replicate = np.where(hsdp, num_nodes, 1)
    # The accumulation nearest the batch (ties to the larger), as TrainingConfig.grad_accum_for.
    grad_accum = np.maximum(
        1, np.floor(space.global_batch_tokens / (rows["micro_batch"] * space.seq_len * dp) + 0.5 + 1e-9)
    )
    dp_shard = np.where(sharding == SHARD_NONE, 1, dp // np.maximum(replicate, 1))
    ok = (
        (~hsdp | ((num_nodes > 1) & (dp % np.maximum(replicate, 1) == 0)))
        & ep_fits(rows["ep"], cp, dp_shard)
        & ((rows["ep"] == 1) | (sharding != SHARD_NONE))
        & ~zero_over_one_rank(sharding, dp, cp)
        & ~space.stack.refusals(
            tp, pp, sharding, rows["vpp"], cp, rows["ep"], model.num_layers, grad_accum, rows["offload"], rows["ac"]
        ).any()
        & ~excess_ac_blocks(model, space, rows)
        & ~(space.moe_a2a_overlap & a2a_overlap_refused(rows["ep"], pp, rows["vpp"], rows["ac"]))
        & ~refused_rows(space.optimizer_precision, sharding, rows["precision"], rows["offload"])
        & structurally_valid(
            model,
            tp=tp,
            pp=pp,
            cp=cp,
            seq_len=space.seq_len,
            grad_accum=grad_accum,
            scaleup_domain_size=scaleup_domain_size,
            hf=space.impl == Implementation.HF,
            fp8=rows["precision"] == PRECISION_CODES.index(Precision.FP8),
            one_f_one_b=True,
            vpp=rows["vpp"],
            shard_group=shard_group_of(sharding != SHARD_NONE, dp_shard, cp),
            ep=rows["ep"],
            trainer=space.trainer_rules,
        )
    )
    rows = {k: v[ok] for k, v in rows.items()}
    dp, replicate, sharding = dp[ok], replicate[ok], sharding[ok]
    rows["sharding"] = sharding
    rows["dp_replicate"] = np.where(sharding == SHARD_NONE, dp, replicate)
    rows["dp_shard"] = dp_shard[ok]
    rows["grad_accum"] = grad_accum[ok].astype(int)
    del rows["variant"]
    return rows


def excess_ac_blocks(model: ModelSpec, space: SearchSpace, rows: dict[str, np.ndarray]) -> np.ndarray:
    """The ``blocks`` rows whose requested count exceeds what their fullest pp rank holds."""
    if space.ac_blocks is None:
        return np.zeros(len(rows["ac"]), dtype=bool)
    blocks = rows["ac"] == AC_BLOCKS
    return blocks & too_many_ac_blocks(model.num_layers, space.ac_blocks, rows["pp"], rows["vpp"])


def searched_ac_codes(space: SearchSpace) -> list[int]:
    """The recompute codes the rows take: the stack's (``Stack.offers_ac``). A ``blocks`` row whose
    count is searched ends at full recompute where nothing less fits, and is then recoded ``full``
    (partial_recompute.py): with both allowed, ``full`` rows would repeat those rows. (Session 42:
    the rule dropped ``full`` for stacks without ``blocks`` too, whose refusals then dropped the
    ``blocks`` rows: torchtitan, HF Trainer and DeepSpeed searched no full recompute at all.)"""
    modes = tuple(m for m in space.activation_checkpointing if space.stack.offers_ac(m))
    if space.ac_blocks is None and ActivationCheckpointing.BLOCKS in modes:
        modes = tuple(m for m in modes if m != ActivationCheckpointing.FULL)
    return [AC_CODES.index(a) for a in modes]


def initial_ac_blocks(model: ModelSpec, rows: dict[str, np.ndarray], space: SearchSpace) -> np.ndarray:
    """The ``ac_blocks`` column as generated: in the ``blocks`` rows the requested count, or all
    of a rank's blocks (``full_ac_blocks``: the memory of a row that fits nowhere is then that of
    full recompute, and the search lowers the count of each row that fits, score.py); 0 elsewhere."""
    blocks = rows["ac"] == AC_BLOCKS
    if space.ac_blocks is not None:
        return np.where(blocks, space.ac_blocks, 0)
    count = np.zeros(len(blocks), dtype=int)
    count[blocks] = full_ac_blocks(model.num_layers, rows["pp"][blocks], rows["vpp"][blocks])
    return count


def shape_rows(
    model: ModelSpec, space: SearchSpace, shapes: dict[tuple[int, int, int], None]
) -> dict[tuple[int, int, int], dict[str, np.ndarray]]:
    """``gpu_rows`` of each (GPUs per node, count limit, scale-up domain) shape, in the order given.

    A shape whose node size matches one already built with a limit at least its own and a domain
    that its domain divides takes that one's rows at its counts where tp divides its domain: the
    domain is read by that rule only (``tp_in_domain``), and a count's rows depend on that count
    alone. The counts the other lacks are generated, and the rows put back in count order (they
    come count by count): the same rows in the same order, at a fraction of the work."""
    rows: dict[tuple[int, int, int], dict[str, np.ndarray]] = {}
    for shape in sorted(shapes, key=lambda s: (-s[2], -s[1])):  # the largest domains and limits first
        per_node, limit, domain = shape
        counts = gpu_counts(limit, per_node, space.min_gpus, space.extra_counts)
        source = next(
            (key for key in rows if key[0] == per_node and key[1] >= limit and key[2] % domain == 0),
            None,
        )
        if source is None:
            rows[shape] = gpu_rows(model, domain, per_node, counts, space)
            continue
        larger = rows[source]
        keep = np.isin(larger["num_gpus"], counts) & tp_in_domain(larger["tp"], domain)
        parts = [{k: v[keep] for k, v in larger.items()}]
        missing = counts[~np.isin(counts, gpu_counts(source[1], per_node, space.min_gpus, space.extra_counts))]
        if len(missing):
            parts.append(gpu_rows(model, domain, per_node, missing, space))
        merged = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        order = np.argsort(merged["num_gpus"], kind="stable")
        rows[shape] = {k: v[order] for k, v in merged.items()} if len(parts) > 1 else merged
    return {shape: rows[shape] for shape in shapes}


def with_ids(shapes: dict[tuple[int, int, int], dict[str, np.ndarray]]) -> None:
    """Give each shape's rows their ``layout_id`` (in place, so every GPU type of the shape
    shares them): one id per distinct combination of the generated knob columns, over all the
    shapes (most rows recur in several: a larger count limit adds rows to the same layouts)."""
    blocks = list(shapes.values())
    names = [k for k in blocks[0] if k in KNOB_COLUMNS]  # num_gpus is not a knob
    _, ids = distinct([np.concatenate([b[k] for b in blocks]) for k in names], sum(len(b["tp"]) for b in blocks))
    ends = np.cumsum([len(b["tp"]) for b in blocks])
    for block, end in zip(blocks, ends, strict=True):
        block["layout_id"] = ids[end - len(block["tp"]) : end]


def build_candidates(model: ModelSpec, catalog: Catalog, gpus: dict[str, int | None], space: SearchSpace) -> Candidates:
    """The candidate table over the allowed GPU types (inventory caps the count searched)."""
    specs = [catalog.gpu(gid) for gid in gpus]
    # gpu_rows reads the GPU's scale-up domain only: the catalog's 25 types share a few shapes.
    shape_of = [
        (
            catalog.node(g.default_node).gpus_per_node,
            min(space.max_gpus, gpus[g.id] or space.max_gpus),
            g.scaleup_domain_size,
        )
        for g in specs
    ]
    shapes = shape_rows(model, space, dict.fromkeys(shape_of))
    with_ids(shapes)
    columns = [{**shapes[shape], "gpu_index": np.full(len(shapes[shape]["tp"]), i)} for i, shape in enumerate(shape_of)]
    flat = {k: np.concatenate([c[k] for c in columns]) for k in columns[0]}
    node_sizes = [catalog.node(g.default_node).gpus_per_node for g in specs]
    networks = [catalog.network(g.default_network) for g in specs]
    hw = hardware_columns(
        specs,
        flat["gpu_index"],
        flat["precision"],
        node_sizes,
        [n.bandwidth_bytes_per_s_per_gpu for n in networks],
        [n.ring_bus_bandwidth_bytes_per_s for n in networks],
        [n.allreduce_busbw_curve for n in networks],
    )
    # Knobs the search does not vary are single values; any other Layout/TrainingConfig field
    # takes its default (Candidates.from_columns).
    return Candidates.from_columns(
        len(flat["tp"]),
        **flat,
        ac_blocks=initial_ac_blocks(model, flat, space),
        pp_schedule=SCHED_1F1B,
        seq_len=space.seq_len,
        impl=IMPL_CODES.index(space.impl),
        compile=space.compile,
        **hw,
    )


def batch_tokens(c: Candidates) -> np.ndarray:
    """Each candidate's global batch in tokens."""
    return c.micro_batch * c.seq_len * c.grad_accum * c.dp


def batch_within_tolerance(c: Candidates, space: SearchSpace) -> np.ndarray:
    achieved = batch_tokens(c)
    return np.abs(achieved - space.global_batch_tokens) <= space.batch_tolerance * space.global_batch_tokens
