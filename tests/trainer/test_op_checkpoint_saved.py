"""What the planner keeps per block under torchtitan's per-op selective checkpointing
(planner/model/op_checkpoint.py) is what PyTorch's own selective checkpointing keeps when run with
torchtitan's policy on a torchtitan-shaped Llama block, counted on the CPU."""

from __future__ import annotations

from collections import defaultdict

import torch
import torch.nn.functional as F
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from planner.model.op_checkpoint import op_policy_bytes_per_token
from planner.model.spec import ModelSpec
from planner.model.stack_profiles import TORCHTITAN_SETTINGS
from tests.planner.test_op_checkpoint import BATCH, SEQ, TINY, fp32_candidates

# torchtitan's save list (models/llama3/parallelize_llama.py at e7c0cae), with the CPU's flash op.
SAVE_LIST = {
    torch.ops.aten.mm.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
    torch.ops.aten.max.default,
}


def torchtitan_policy():
    """torchtitan's ``_custom_policy``: save the listed ops' outputs but every second mm."""
    meta: dict[str, int] = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        save = func in SAVE_LIST and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


class Block(torch.nn.Module):
    """torchtitan's Llama 3 TransformerBlock (models/llama3/model.py): RMSNorm, wq/wk/wv, rotary,
    SDPA, wo; RMSNorm, w2(silu(w1 x) * w3 x); two residual adds."""

    def __init__(self, m: ModelSpec):
        super().__init__()
        h, q, kv, f = m.hidden_size, m.q_size, m.kv_size, m.ffn_hidden_size
        self.m = m
        self.wq, self.wk, self.wv = (torch.nn.Linear(h, n, bias=False) for n in (q, kv, kv))
        self.wo = torch.nn.Linear(q, h, bias=False)
        self.w1, self.w3 = (torch.nn.Linear(h, f, bias=False) for _ in range(2))
        self.w2 = torch.nn.Linear(f, h, bias=False)
        self.norm1, self.norm2 = torch.nn.RMSNorm(h), torch.nn.RMSNorm(h)

    def forward(self, x):
        b, s, _ = x.shape
        m, y = self.m, self.norm1(x)
        q = self.wq(y).view(b, s, m.num_heads, -1)
        k = self.wk(y).view(b, s, m.num_kv_heads, -1)
        v = self.wv(y).view(b, s, m.num_kv_heads, -1)
        angle = torch.arange(s).view(1, s, 1, 1) * 0.01
        q, k = q * angle.cos() + q.roll(1, -1) * angle.sin(), k * angle.cos() + k.roll(1, -1) * angle.sin()
        rep = m.num_heads // m.num_kv_heads
        k, v = k.repeat_interleave(rep, 2), v.repeat_interleave(rep, 2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.wo(o.transpose(1, 2).reshape(b, s, -1))
        z = self.norm2(x)
        return x + self.w2(F.silu(self.w1(z)) * self.w3(z))


class LiveStorages(TorchDispatchMode):
    """Every storage an op writes during the forward, to see which outlive it."""

    def __init__(self):
        super().__init__()
        self.storages: dict[int, tuple[StorageWeakRef, int]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                self.storages[storage.data_ptr()] = (StorageWeakRef(storage), storage.nbytes())
        return out

    def alive_bytes(self, *besides: torch.Tensor) -> int:
        skip = {t.untyped_storage().data_ptr() for t in besides}
        return sum(n for ptr, (ref, n) in self.storages.items() if ptr not in skip and not ref.expired())


def kept_by_torch(block: Block) -> int:
    """Bytes the block keeps for its backward after a selective-checkpointed forward: what its
    ops wrote and is still alive, beside its output (the next block's input), plus its input."""
    x = torch.randn(BATCH, SEQ, TINY.hidden_size, requires_grad=True)
    recorder = LiveStorages()
    with recorder:
        out = checkpoint(block, x, use_reentrant=False, context_fn=torchtitan_policy)
    # Beside the output, the weights' transposed views (their storage is the weights').
    kept = recorder.alive_bytes(out, *block.parameters()) + x.untyped_storage().nbytes()
    out.sum().backward()  # the forward was trainable as run
    return kept


def test_the_planner_keeps_what_torch_keeps_under_torchtitans_policy():
    torch.manual_seed(0)
    planned = op_policy_bytes_per_token(TINY, fp32_candidates(TINY), TORCHTITAN_SETTINGS)
    assert planned is not None
    assert kept_by_torch(Block(TINY)) == float(planned[0]) * BATCH * SEQ
