"""The collectives of one step, by parallel axis, before any overlap (``comm_times``): data-parallel
gathers and reductions (FSDP, ZeRO, DeepSpeed's own: planner/model/zero_collectives.py), tensor-
parallel all-reduces / all-gathers, pipeline sends, the context-parallel K/V exchange, the experts'
all-to-all, and the tied embedding's gradient sync between pipeline ends. planner/model/step_time.py
decides how much of each the compute hides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.model import comm, moe, zero_collectives
from planner.model.accum_sync import ddp_reductions_per_step, gathers_per_step, reductions_per_step
from planner.model.block import block_table
from planner.model.block_rows import Part, TpSplit
from planner.model.candidates import SHARD_ZERO1, Candidates
from planner.model.flops import (
    attention_recompute_fraction,
    recompute_fraction,
)
from planner.model.memory import compute_dtype_bytes, tp_gathered_bytes
from planner.model.saved_bytes import reduced_grad_bytes
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stage_params import busiest_stage, busiest_stage_params, layers_per_stage
from planner.units import FP32_BYTES


@dataclass(frozen=True)
class CommTimes:
    """Raw (un-overlapped) communication seconds per step, by parallel axis."""

    dp: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    # The share of ``dp`` that compute never runs beside (DeepSpeed's waited-for collectives:
    # zero_collectives.py); the rest is hidden up to ``dp_comm_overlap``.
    dp_serial: np.ndarray | float = 0.0


def context_parallel_comm_s(
    model: ModelSpec, c: Candidates, s: ModelingSettings, token_bytes, link, n_layers
) -> np.ndarray:
    """K/V exchange of one block for one micro-batch on a rank of ``n_layers`` blocks; each
    tensor-parallel rank moves only its own kv heads (``token_bytes`` = local tokens x dtype bytes)."""
    kv_bytes = token_bytes * block_table(model).cp_gathered_elements / c.tp  # this rank's K and V
    # Ring: K,V pass around the cp ranks forward, K,V,dK,dV backward.
    ring = 3.0 * (c.cp - 1) * (link.slowest_hop + kv_bytes / link.bandwidth)
    # All-gather (trainer/context_parallel.py): gather K and V (2 collectives) forward, again
    # when a checkpointed block is recomputed, and reduce-scatter dK, dV backward.
    passes = 2.0 + recompute_fraction(c, n_layers) + attention_recompute_fraction(c)
    gathered = passes * comm.all_gather_s(kv_bytes * c.cp, c.cp, link, calls=2)
    return np.where(c.cp > 1, np.where(s.cp_ring_attention, ring, gathered), 0.0)


def comm_times(model: ModelSpec, c: Candidates, s: ModelingSettings) -> CommTimes:
    """Per-step collective time of each axis (mesh order pp, dp_replicate, dp_shard, cp, tp)."""
    dtype = compute_dtype_bytes(c)
    tokens = c.micro_batch * c.seq_len / c.cp
    n_layers = layers_per_stage(model, c)
    dp, dp_serial = data_parallel_comm_s(model, c, s, n_layers)
    cp = np.zeros(len(c))
    if (c.cp > 1).any():  # most searches have no cp rows (cp is searched from 8K tokens on: space.searched_cp)
        cp_link = comm.group_link(c, c.cp, c.tp, s)
        cp = context_parallel_comm_s(model, c, s, tokens * dtype, cp_link, n_layers) * n_layers * c.grad_accum
    return CommTimes(
        dp=dp,
        tp=tensor_parallel_comm_s(model, c, s, tokens, n_layers),
        pp=pipeline_comm_s(model, c, s, tokens),
        cp=cp,
        ep=moe.all_to_all_s(model, c, s, dtype) * n_layers * c.grad_accum,
        dp_serial=dp_serial,
    )


def data_parallel_comm_s(
    model: ModelSpec, c: Candidates, s: ModelingSettings, n_layers
) -> tuple[np.ndarray, np.ndarray]:
    """The step's data-parallel collectives and the share of them nothing hides (DeepSpeed's
    waited-for ones). Sharded rows gather and reduce over the shard group (``sharded_comm_s``) and
    all-reduce the shard over the replicas (HSDP); DDP all-reduces the whole gradient once."""
    local_params = busiest_stage_params(model, c) / c.tp
    grad_bytes = reduced_grad_bytes(c, s)
    reductions = reductions_per_step(c, s)
    # Context-parallel ranks hold the same weights: they shard and reduce with the dp ranks.
    shard_link = comm.group_link(c, c.shard_group, c.tp, s)
    replicate_link = comm.group_link(c, c.dp_replicate, c.dp_shard * c.cp * c.tp, s)
    shard_traffic, expert_units = sharded_comm_s(model, c, s, local_params, shard_link, n_layers)
    # DDP: one collective's latency (as ever), but a measured curve is read at its bucket's size.
    whole = local_params * grad_bytes
    bucket = whole / (n_layers + 1) if s.ddp_bucket_bytes is None else np.minimum(whole, s.ddp_bucket_bytes)
    dp_link = comm.group_link(c, c.dp * c.cp, c.tp, s)
    replicated_dp = ddp_reductions_per_step(c, s) * comm.all_reduce_s(whole, c.dp * c.cp, dp_link, message_bytes=bucket)
    hsdp = reductions * comm.all_reduce_s(local_params * grad_bytes / c.shard_group, c.dp_replicate, replicate_link)
    dp = np.where(c.sharding >= SHARD_ZERO1, shard_traffic + hsdp, replicated_dp)
    dp_serial = np.zeros(len(c))
    if s.deepspeed_zero is not None:
        # DeepSpeed's own buckets and streams; rows with expert units keep FSDP2's per-unit estimate.
        zero = zero_collectives.zero_s(model, c, s.deepspeed_zero, local_params, shard_link, n_layers)
        own = (c.sharding >= SHARD_ZERO1) & ~expert_units
        dp = np.where(own, zero.overlappable + zero.serial + hsdp, dp)
        dp_serial = np.where(own, zero.serial, 0.0)
    return dp, dp_serial


def sharded_comm_s(
    model: ModelSpec, c: Candidates, s: ModelingSettings, local_params, shard_link, n_layers
) -> tuple[np.ndarray, np.ndarray]:
    """Gathers and gradient reductions over the shard group per step, and which rows shard their
    experts as units of their own.

    Per step (trainer/parallel.py): FSDP gathers params for each forward and each backward;
    ZeRO-1/2 gather once and keep them through the accumulation window. FSDP and ZeRO-2
    reduce-scatter gradients (``reduced_grad_bytes`` each) after every micro-batch (they stay
    sharded); ZeRO-1 and pipelines accumulate locally and reduce once. Each pass is one collective
    per block (+ one for the root), each paying the ring latency."""
    dtype = compute_dtype_bytes(c)
    calls = n_layers + 1
    grad_bytes = reduced_grad_bytes(c, s)
    gathers = gathers_per_step(c, s)
    reductions = reductions_per_step(c, s)

    def sharded(params, n, link, calls):
        return gathers * comm.all_gather_s(params * dtype, n, link, calls) + reductions * comm.reduce_scatter_s(
            params * grad_bytes, n, link, calls
        )

    # With ep > 1 (or whole experts on tp ranks) a block's experts are their own FSDP unit over
    # the expert shard group (ranks etp x ep apart), holding 1/ep of the experts (trainer/parallel.py).
    shard_traffic = sharded(local_params, c.shard_group, shard_link, calls)
    expert_units = (c.ep > 1) | ((c.expert_token_split > 1) & model.is_moe)
    if expert_units.any():  # a dense model's search has none: the branch is not evaluated
        stage = busiest_stage(model, c)
        experts = stage.experts * stage.expert_held / c.tp
        expert_link = comm.group_link(c, c.expert_shard_group, c.etp * c.ep, s)
        shard_traffic = np.where(
            expert_units,
            sharded(local_params - stage.experts / c.tp, c.shard_group, shard_link, calls)
            + sharded(experts, c.expert_shard_group, expert_link, n_layers),
            shard_traffic,
        )
    return shard_traffic, expert_units


def tensor_parallel_comm_s(model: ModelSpec, c: Candidates, s: ModelingSettings, tokens, n_layers) -> np.ndarray:
    """Megatron TP (+SP): one all-reduce-equivalent per row-parallel GEMM forward (2), as many
    backward, as many more when recomputing; each is an all-gather (the block input forward, the
    output gradient backward) and a reduce-scatter. Under fp8 the all-gathers move float8
    (``tp_gathered_bytes``), the reduce-scatters bf16 partial sums."""
    dtype = compute_dtype_bytes(c)
    tp_link = comm.group_link(c, c.tp, np.ones_like(c.tp), s)
    # Each tp rank routing its own tokens (expert tp off) leaves the routed MLP no tp collective.
    table = block_table(model)
    row_parallel = np.where(
        c.expert_token_split > 1, table.tp_reductions - table.routed_only_reductions, table.tp_reductions
    )
    # Backward as many as forward, but a parallel block's second branch unless the stack gathers
    # its input once for both (``s.parallel_block_single_gather``).
    backward = row_parallel + (1.0 if table.parallel and not s.parallel_block_single_gather else 0.0)
    tp_collectives = row_parallel + backward + row_parallel * recompute_fraction(c, n_layers)
    # A recomputed attention sub-layer gathers its input and reduces its output projection again.
    attention_reductions = len({g.part for g in table.gemms if g.split == TpSplit.ROW and g.part == Part.ATTENTION})
    tp_collectives = tp_collectives + attention_reductions * attention_recompute_fraction(c)
    activation_elements = tokens * model.hidden_size
    tp = (
        n_layers
        * c.grad_accum
        * tp_collectives
        * (
            comm.all_gather_s(activation_elements * tp_gathered_bytes(c, s), c.tp, tp_link)
            + comm.reduce_scatter_s(activation_elements * dtype, c.tp, tp_link)
        )
    )
    if s.partition_activations and not s.sequence_parallel:
        # Each checkpointed block gathers its partitioned input before its recompute.
        gathered = comm.all_gather_s(activation_elements * dtype, c.tp, tp_link)
        tp = tp + n_layers * c.grad_accum * recompute_fraction(c, n_layers) * gathered
    return tp


def pipeline_comm_s(model: ModelSpec, c: Candidates, s: ModelingSettings, tokens) -> np.ndarray:
    """Activations forward and gradients backward across each stage boundary; with vpp chunks per
    rank every micro-batch crosses vpp times as many boundaries. Stage outputs are sequence-sharded
    over tp (sequence parallelism; Megatron's scatter/gather optimisation before it, Narayanan et
    al. 2021 sec. 4.1): each tp rank sends 1/tp. Plus the tied embedding's gradient sync."""
    pp_link = comm.group_link(c, np.full_like(c.pp, 2), c.dp * c.cp * c.tp, s)
    activation = tokens * model.hidden_size * compute_dtype_bytes(c) / c.tp
    transfers = s.pp_transfers_per_microbatch * c.grad_accum * c.vpp
    pp = np.where(c.pp > 1, transfers * comm.p2p_s(activation, pp_link), 0.0)
    return pp + tied_embedding_sync_s(model, c, pp_link, s)


def tied_embedding_sync_s(model: ModelSpec, c: Candidates, pp_link, s: ModelingSettings) -> np.ndarray:
    """A tied embedding split over the pipeline: once per step the first and the last pp rank
    sum the gradient of their copies (trainer/pipeline.py ``TiedEmbeddingSync``), in the
    gradient dtype (``s.grad_bytes``) and sharded as the step left it (by tp, and over the shard
    group from ZeRO-1 on); in fp32 and whole where the stack reduces its master gradient
    (``s.tied_grad_fp32_unsharded``)."""
    if not model.tied_embeddings:
        return np.zeros(len(c))
    shard = np.where((c.sharding >= SHARD_ZERO1) & (not s.tied_grad_fp32_unsharded), np.maximum(c.shard_group, 1), 1)
    element_bytes = FP32_BYTES if s.tied_grad_fp32_unsharded else s.grad_bytes
    grad_bytes = model.vocab_size * model.hidden_size * element_bytes / c.tp / shard
    return np.where(c.pp > 1, comm.all_reduce_s(grad_bytes, np.full_like(c.pp, 2), pp_link), 0.0)
