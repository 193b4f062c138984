"""DeepSpeed ZeRO's data-parallel collectives, counted as its code issues them (``--stack deepspeed``).

Read in DeepSpeed edaa7221 (0.19.6; docs/model.md, "DeepSpeed's collectives"):

- ZeRO-1/2 reduce gradients in buckets of ``reduce_bucket_size`` elements, each with one
  **all-reduce** of the whole bucket (``reduce_scatter`` and ``use_multi_rank_bucket_allreduce``
  on by default: stage_1_and_2.py ``average_tensor`` -> ``allreduce_bucket``), twice a
  reduce-scatter's bytes. ZeRO-2 every micro-batch from the backward hooks, ZeRO-1 once at the
  accumulation boundary. Without ``overlap_comm`` they run on the compute stream (exposed); with
  it one bucket runs behind the backward and the last one is waited for (``synchronize``).
- After the optimizer step ZeRO-1/2 all-gather each parameter group's bf16 partition in one
  blocking call (runtime/utils.py ``all_gather_into_tensor_dp_groups``): exposed.
- ZeRO-3 gathers parameters per leaf module, a prefetch batch of up to
  ``stage3_prefetch_bucket_size`` elements at a time, on a side stream, in the forward and in the
  backward (a recompute gathers them once for its backward: ``max_reuse_distance``); reduces
  gradients with one reduce-scatter per ``reduce_bucket_size`` bucket every micro-batch, the last
  one waited for. Parameters of at most ``stage3_param_persistence_threshold`` elements stay whole
  and are re-gathered after every step one tensor at a time (stage3.py ``_post_step``): exposed,
  and latency-bound.

Each collective pays the ring's latency (comm.py); the bucket counts are what move at scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.model import comm
from planner.model.block import QKV_GEMM, block_table, root_table
from planner.model.block_rows import AttentionCore
from planner.model.candidates import SHARD_FSDP, SHARD_ZERO1, SHARD_ZERO2, Candidates
from planner.model.saved_bytes import compute_dtype_bytes
from planner.model.spec import ModelSpec
from planner.model.zero_config import ZeroConfig


@dataclass(frozen=True)
class ZeroTraffic:
    """A step's ZeRO collectives, split by whether compute can run beside them."""

    overlappable: np.ndarray  # on a side stream under the backward / forward (dp_comm_overlap applies)
    serial: np.ndarray  # on the compute stream or waited for before it goes on: always exposed


@dataclass(frozen=True)
class Tensors:
    """The parameter tensors (elements each, before tp) of one block and of the root, as HF
    modules hold them: one per dense projection, one per fused expert weight, one per norm."""

    block: tuple[int, ...]
    root: tuple[int, ...]  # embedding, untied LM head, final norm
    modules_per_block: int  # leaf modules with a weight of their own (norms included)


def tensors(model: ModelSpec) -> Tensors:
    """HF modules' parameter tensors: a dense row of ``count`` projections is ``count`` Linear
    modules, the fused q/k/v row three (one for ``ModelShape.fused_qkv`` families); a
    routed-expert row is one fused tensor (transformers' ``*Experts`` modules)."""
    table, root = block_table(model), root_table(model)
    block: list[int] = []
    for g in table.gemms:
        if not g.params:
            continue
        if g.experts > 1:
            block.append(g.params)
        elif g.name == QKV_GEMM and not model.fused_qkv:
            block.extend(_q_k_v(g.params, g.d_in, table.attention))
        else:
            block.extend([g.params // g.count] * g.count)
    norms = [e.params for e in table.elementwise if e.params]
    head = () if root.lm_head.tied else (root.lm_head.params,)
    roots = (root.embedding_params, *head, *([root.final_norm.params] if root.final_norm.params else []))
    return Tensors(block=(*block, *norms), root=roots, modules_per_block=len(block) + len(norms))


def _q_k_v(params: int, d_in: int, a: AttentionCore) -> tuple[int, int, int]:
    """The table's fused q/k/v projection as HF's three Linear modules (q_proj, k_proj, v_proj),
    its biases with q."""
    k, v = d_in * a.kv_heads * a.head_dim, d_in * a.kv_heads * a.v_head_dim
    return params - k - v, k, v


def bucket_calls(sizes, bucket: float) -> tuple[int, float]:
    """(tensors reduced alone, elements bucketed with others): a tensor of at least ``bucket``
    elements fills a bucket by itself; the rest share buckets."""
    alone = sum(1 for x in sizes if x >= bucket)
    return alone, float(sum(x for x in sizes if x < bucket))


def _stage_calls(model: ModelSpec, c: Candidates, n_layers, bucket: float) -> np.ndarray:
    """Collectives to reduce one pp rank's gradients in buckets of ``bucket`` elements, per
    distinct tp (the tensors shrink by tp): whole-bucket tensors alone, the rest packed."""
    t = tensors(model)
    calls = np.zeros(len(c))
    for tp in np.unique(c.tp):
        rows = c.tp == tp
        alone_b, rest_b = bucket_calls([x / tp for x in t.block], bucket)
        # The root's tensors sit on the first and last stage; a pipelined rank holds one of them.
        root = [x / tp for x in t.root]
        alone_r, rest_r = bucket_calls(root, bucket)
        alone_one, rest_one = bucket_calls(root[:1], bucket)
        alone_root = np.where(c.pp[rows] == 1, alone_r, alone_one)
        rest_root = np.where(c.pp[rows] == 1, rest_r, rest_one)
        rest = n_layers[rows] * rest_b + rest_root
        calls[rows] = n_layers[rows] * alone_b + alone_root + np.ceil(rest / bucket)
    return calls


def zero12_overlap_comm(c: Candidates, z: ZeroConfig) -> np.ndarray:
    """Where ZeRO-1/2 reduce with ``overlap_comm``: the stage's setting, off under a pipeline
    engine (engine.py turns it off)."""
    return np.where(c.sharding == SHARD_ZERO2, z.zero2_overlap_comm, z.zero1_overlap_comm) & (c.pp == 1)


def zero12_s(model: ModelSpec, c: Candidates, z: ZeroConfig, local_params, link, n_layers) -> ZeroTraffic:
    """ZeRO-1/2: bucketed gradient all-reduces (ZeRO-2 every micro-batch, ZeRO-1 once), then the
    blocking post-step all-gather of the updated parameters, one call per parameter group."""
    dtype = compute_dtype_bytes(c)
    n = c.shard_group
    calls = np.maximum(_stage_calls(model, c, n_layers, z.zero12_reduce_bucket_elements), 1.0)
    zero2 = c.sharding == SHARD_ZERO2
    reductions = np.where(zero2 & (c.pp == 1), c.grad_accum, 1.0)
    grads = reductions * comm.all_reduce_s(local_params * dtype, n, link, calls)
    # With overlap_comm one bucket runs behind the backward and the last is waited for.
    last_bucket = np.where(zero12_overlap_comm(c, z), grads / calls, grads)
    gather = comm.all_gather_s(local_params * dtype, n, link, z.param_groups)
    return ZeroTraffic(overlappable=grads - last_bucket, serial=last_bucket + gather)


def zero3_s(model: ModelSpec, c: Candidates, z: ZeroConfig, local_params, link, n_layers) -> ZeroTraffic:
    """ZeRO-3: per-module prefetch gathers in each forward and backward, bucketed reduce-scatters
    every micro-batch (the last waited for), persistent tensors re-gathered one by one per step."""
    dtype = compute_dtype_bytes(c)
    n, m = c.shard_group, c.grad_accum
    h2 = float(model.hidden_size) ** 2
    t = tensors(model)
    threshold = z.zero3_persistence_threshold_hidden * model.hidden_size
    kept_block = [x for x in t.block if x <= threshold]  # norms (and any small weight): whole
    kept_root = [x for x in t.root if x <= threshold]
    gathered_modules = t.modules_per_block - len(kept_block)
    gathered_block = float(sum(t.block) - sum(kept_block))
    # One prefetch batch per module fetch, or per prefetch bucket where modules are smaller.
    prefetch = z.zero3_prefetch_bucket_hidden_sq * h2
    per_block = np.minimum(gathered_modules, np.ceil(gathered_block / c.tp / prefetch))
    root_modules = np.where(c.pp == 1, len(t.root) - len(kept_root), 1)
    gathers = 2.0 * m * comm.all_gather_s(local_params * dtype, n, link, n_layers * per_block + root_modules)
    rs_calls = np.maximum(_stage_calls(model, c, n_layers, z.zero3_reduce_bucket_hidden_sq * h2), 1.0)
    reduces = m * comm.reduce_scatter_s(local_params * dtype, n, link, rs_calls)
    last_bucket = reduces / rs_calls
    kept_count = n_layers * len(kept_block) + len(kept_root)
    kept_bytes = (n_layers * sum(kept_block) + sum(kept_root)) * dtype
    post_step = comm.all_gather_s(kept_bytes, n, link, kept_count)
    return ZeroTraffic(overlappable=gathers + reduces - last_bucket, serial=last_bucket + post_step)


def bucket_buffer_bytes(c: Candidates, z: ZeroConfig | None, local_params, hidden_size: int) -> np.ndarray:
    """The gradient bucket buffers DeepSpeed keeps for the run, in the model dtype and never
    larger than the rank's parameters: ZeRO-1/2 one, two with ``overlap_comm`` (stage_1_and_2.py
    double-buffers its IPG bucket); ZeRO-3 one of its hidden^2 bucket (tens of MB; not read
    further). 0 for DDP rows and for stacks other than DeepSpeed (``z`` None)."""
    if z is None:
        return np.zeros(len(c))
    zero3 = c.sharding == SHARD_FSDP
    bucket = np.where(zero3, z.zero3_reduce_bucket_hidden_sq * float(hidden_size) ** 2, z.zero12_reduce_bucket_elements)
    buffers = np.where(zero12_overlap_comm(c, z) & ~zero3, 2.0, 1.0)
    held = np.minimum(bucket, local_params) * buffers * compute_dtype_bytes(c)
    return np.where(c.sharding >= SHARD_ZERO1, held, 0.0)


def zero_s(model: ModelSpec, c: Candidates, z: ZeroConfig, local_params, link, n_layers) -> ZeroTraffic:
    """DeepSpeed's ZeRO collectives per step for each row's stage (0 for DDP rows, which the
    caller times as its all-reduce)."""
    z12 = zero12_s(model, c, z, local_params, link, n_layers)
    z3 = zero3_s(model, c, z, local_params, link, n_layers)
    fsdp = c.sharding == SHARD_FSDP
    sharded = c.sharding >= SHARD_ZERO1
    pick = lambda a, b: np.where(sharded, np.where(fsdp, b, a), 0.0)  # noqa: E731
    return ZeroTraffic(overlappable=pick(z12.overlappable, z3.overlappable), serial=pick(z12.serial, z3.serial))
