"""What a stack's ring attention runs per ring step beside the FLOPs the model counts: the HBM
traffic of merging each step's partial output and of the backward's fp32 gradient accumulators
(``ring_merge_bytes``), and the kernel shapes of the steps (``ring_flash_shares``).

torch's context parallelism (torch.distributed.tensor.experimental: ``_templated_ring_attention``
and ``_templated_ring_attention_backward``; the same loop in the Dec 2024 file torchtitan's
benchmark rows ran and in torch 2.13's ``_context_parallel/_attention.py``) calls SDPA once per ring
step on its load-balanced halves, which adds no FLOPs (every step is half a local square, as the
model counts): the first step is causal over the local chunk, every later one non-causal over half
of it (the queries' second half against all keys, or all queries against the keys' first half;
``_is_causal_behavior`` with ``enable_load_balance``, 2.13 line 83). It combines the steps in
Python, in fp32 (``convert_to_f32`` True, line 75), one eager op per line. Counted here per element
of the rank's attention output [batch, heads / tp, seq / cp, head dim], for a bf16 SDPA, on the
rank whose queries stay whole at every step (the last cp rank: its merges cover the whole output,
the others' half of it plus a concatenation), read + write, the 1/head-dim log-sum-exp tensors
left out. torchtitan repeats K and V to every query head before SDPA (``repeat_kv``), so K, V and
their gradients have the output's element count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RingLoop:
    """A stack's ring-attention loop as its code runs it: bytes per output element it moves outside
    its attention kernel, per attention call (``*_call_bytes``) and per ring step after the first
    (``*_step_bytes``); ``balanced_halves``: the steps after the first are non-causal calls over half
    the local chunk (load balancing), timed at the flash kernel's non-causal rate."""

    forward_call_bytes: float
    forward_step_bytes: float
    backward_call_bytes: float
    backward_step_bytes: float
    balanced_halves: bool = True


# torch's loop, line by line (torch 2.13 _context_parallel/_attention.py, line numbers there; the
# Dec 2024 file, stored as index id 106942014, has the same loop):
# forward, once a call: ``key.contiguous()`` and ``value.contiguous()`` (line 418) copy torchtitan's
# transposed K and V (bf16: 8); ``_SDPAMerger.step`` upcasts the first step's bf16 output (line 214:
# read 2, write 4) and ``results`` casts the merged one back (line 224: read 4, write 2): 20. Each
# later step: the upcast (6); ``out - F.sigmoid(block_lse - lse) * (out - block_out)`` (line 186) as
# three fp32 passes, a subtraction (read 8, write 4), the product (read 4, write 4) and a
# subtraction (read 8, write 4): 32; and ``torch.cat([key.flatten(), value.flatten()])`` of the K
# and V it passes on (line 438; bf16, read 4, write 4): 8. Together 46.
# backward, once a call: the K, V copies again (line 517: 8), three fp32 ``zeros_like`` accumulators
# for dQ, dK, dV (line 513: 12), the first step's ``grad_query += grad_query_`` (line 630; fp32 +=
# bf16: read 6, write 4) and the same for dK and dV (20), ``torch.cat([grad_key.flatten(),
# grad_value.flatten()])`` of what it sends (line 625; fp32: 16), and the casts back of dQ (line
# 645: 6) and of the dK, dV it receives last (line 646: 12): 84. Each later step on that rank: dQ's
# add (10); dK and dV added into the half their key chunk holds (``_partial_update(..., add=True)``,
# line 605: read 3, write 2 each) and re-concatenated whole (its ``torch.cat``, line 136: read 4,
# write 4 each): 26; the fp32 dK, dV concatenation it sends on (16) and the K, V one (line 533: 8).
# Together 60.
TORCH_RING_LOOP = RingLoop(
    forward_call_bytes=20.0,
    forward_step_bytes=46.0,
    backward_call_bytes=84.0,
    backward_step_bytes=60.0,
)


def ring_merge_bytes(traffic: RingLoop, output_elements, cp, forwards) -> np.ndarray:
    """Eager HBM bytes of one block's ring merges for one micro-batch: ``forwards`` forward calls
    (the recomputed ones too) and one backward, each over the rank's ``output_elements``, with
    ``cp - 1`` ring steps after the first; 0 without context parallelism."""
    steps = np.asarray(cp, dtype=float) - 1.0
    forward = traffic.forward_call_bytes + traffic.forward_step_bytes * steps
    backward = traffic.backward_call_bytes + traffic.backward_step_bytes * steps
    return np.where(steps > 0, output_elements * (forwards * forward + backward), 0.0)


def ring_flash_shares(loop: RingLoop | None, cp, causal_share, non_causal_share) -> np.ndarray:
    """The share of the flash kernel's reference rate a ring's attention reaches over its ``cp``
    steps, each half a local square of FLOPs: one causal step at ``causal_share`` and ``cp - 1``
    non-causal ones at ``non_causal_share`` (time-weighted); ``causal_share`` where the steps are not
    balanced halves (or without context parallelism)."""
    if loop is None or not loop.balanced_halves:
        return np.asarray(causal_share)
    cp = np.asarray(cp, dtype=float)
    mixed = 1.0 / ((1.0 / cp) / causal_share + (1.0 - 1.0 / cp) / non_causal_share)
    return np.where(cp > 1, mixed, causal_share)
