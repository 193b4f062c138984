"""Context parallelism for the native model: all-gather K/V attention over the ``cp`` mesh axis.

Each of the ``cp`` ranks of a group holds ``seq_len / cp`` tokens of every sequence. The
sequence is cut into ``2 cp`` equal chunks and rank ``r`` keeps chunks ``r`` and
``2 cp - 1 - r``: under a causal mask the early chunks attend to few keys and the late ones
to many, so pairing them gives every rank the same attention work (the load balancing of
Llama 3, Dubey et al. 2024, sec. 3.3.2, and of Megatron-LM's context parallelism).

Inside attention every rank all-gathers the keys and values of its group (after RoPE, with
the kv heads only, so GQA keeps the traffic small), puts the chunks back in sequence order
and computes its own queries against the keys up to each query chunk's end with a
bottom-right-aligned causal mask. The backward of the all-gather is a reduce-scatter of dK
and dV. Everything else in the block is token-wise, so it runs on the local tokens as is.

Unlike ring attention this needs no custom attention kernel: it runs on any backend (gloo
on CPU in the tests, NCCL on GPU), and on CUDA torch's ``CausalBias`` dispatches the
bottom-right mask to flash attention in bf16/fp16 (not yet run on a GPU here). The cost is that every rank keeps the gathered K and V of the whole sequence
for backward (``planner/model/memory.py`` counts it), and the gather is not overlapped with
compute (``planner/model/step_time.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from trainer.collectives import all_gather_single, reduce_scatter_single


@dataclass(frozen=True)
class ContextParallel:
    """This rank's place in its context-parallel group."""

    group: dist.ProcessGroup
    size: int
    rank: int

    def chunk_ids(self) -> tuple[int, int]:
        """The two global chunks (of ``2 size``) this rank holds, in local order."""
        return self.rank, 2 * self.size - 1 - self.rank

    def positions(self, seq_len: int, device: torch.device | None = None) -> torch.Tensor:
        """Global token positions of this rank's ``seq_len / size`` tokens."""
        if seq_len % (2 * self.size):
            raise ValueError(f"seq_len {seq_len} is not divisible by 2*cp={2 * self.size}")
        chunk = seq_len // (2 * self.size)
        return torch.cat([torch.arange(i * chunk, (i + 1) * chunk, device=device) for i in self.chunk_ids()])

    def shard(self, tensor: torch.Tensor, dim: int = 1) -> torch.Tensor:
        """This rank's tokens of a full-sequence tensor (inputs, labels)."""
        return tensor.index_select(dim, self.positions(tensor.shape[dim], tensor.device))


class _GatherSequence(torch.autograd.Function):
    """All-gather along dim 0 forward; reduce-scatter of the gradient backward."""

    @staticmethod
    def forward(ctx, local: torch.Tensor, group: dist.ProcessGroup, size: int, rank: int) -> torch.Tensor:
        ctx.group, ctx.size, ctx.rank = group, size, rank
        gathered = local.new_empty((size * local.shape[0], *local.shape[1:]))
        if not local.is_meta:  # the pipeline's shape inference runs stages on meta tensors
            all_gather_single(gathered, local.contiguous(), group=group)
        return gathered

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        grad = grad.contiguous()
        if grad.is_cuda:
            local = grad.new_empty((grad.shape[0] // ctx.size, *grad.shape[1:]))
            reduce_scatter_single(local, grad, group=ctx.group)
        else:
            # gloo has no reduce-scatter: all-reduce and keep this rank's slice (CPU tests only).
            dist.all_reduce(grad, group=ctx.group)
            local = grad.chunk(ctx.size)[ctx.rank].clone()
        return local, None, None, None


def gather_sequence(local: torch.Tensor, cp: ContextParallel) -> torch.Tensor:
    """``[batch, seq/cp, ...]`` on each rank -> ``[batch, seq, ...]`` in global token order."""
    gathered = _GatherSequence.apply(local.transpose(0, 1), cp.group, cp.size, cp.rank)
    # Rank-major [rank, (first chunk, second chunk), chunk_len, ...] -> sequence order: first
    # chunks of ranks 0..cp-1, then second chunks of ranks cp-1..0.
    by_rank = gathered.unflatten(0, (cp.size, 2, -1))
    ordered = torch.cat([by_rank[:, 0], by_rank[:, 1].flip(0)], dim=0).flatten(0, 1)
    return ordered.transpose(0, 1)


@torch.compiler.disable  # collectives and CausalBias masks: one clean graph break under per-block compile
def context_parallel_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cp: ContextParallel) -> torch.Tensor:
    """Causal attention of this rank's queries over the whole sequence.

    ``q`` ``[batch, heads, seq/cp, head_dim]``, ``k``/``v`` ``[batch, kv_heads, seq/cp, head_dim]``
    (local tokens, RoPE applied); returns ``[batch, heads, seq/cp, head_dim]``.
    """
    k_all, v_all = (gather_sequence(t.transpose(1, 2), cp).transpose(1, 2) for t in (k, v))
    chunk = q.shape[2] // 2
    outputs = []
    for half, chunk_id in enumerate(cp.chunk_ids()):
        q_chunk = q[:, :, half * chunk : (half + 1) * chunk]
        num_keys = (chunk_id + 1) * chunk  # every key up to the end of this query chunk
        mask = causal_lower_right(chunk, num_keys)
        outputs.append(
            F.scaled_dot_product_attention(
                q_chunk,
                k_all[:, :, :num_keys],
                v_all[:, :, :num_keys],
                attn_mask=mask,
                enable_gqa=k.shape[1] != q.shape[1],
            )
        )
    return torch.cat(outputs, dim=2)


def apply_context_parallel(model: torch.nn.Module, mesh) -> ContextParallel:
    """Point the native model (and each of its attention modules) at the ``cp`` mesh axis."""
    cp = ContextParallel(group=mesh.get_group(), size=mesh.size(), rank=mesh.get_local_rank())
    for module in model.modules():
        if hasattr(module, "context_parallel"):
            # Module.__setattr__ is typed for Tensor | Module values; this attribute holds a ContextParallel
            cast(Any, module).context_parallel = cp
    return cp
