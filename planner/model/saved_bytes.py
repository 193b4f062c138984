"""Bytes a block saves for backward per token: the rows of ``planner/model/block.py`` as a stack
keeps them (dtype, tensor- and context-parallel splits, FP8 copies, recomputed modules, materialised
scores). Split out of memory.py, which sums them into a rank's activations."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from planner.model.attention_scores import (
    backward_bytes_per_score,
    saved_bytes_per_score,
    scores_per_microbatch,
    scores_per_token,
)
from planner.model.block import block_table, root_table
from planner.model.block_rows import Part, Saved
from planner.model.candidates import IMPL_HF, PREC_FP8, PREC_FP32, SHARD_ZERO1, Candidates
from planner.model.flops import banded_window_rows
from planner.model.moe import busiest_rank_load, expert_view, grouped_mlp_saved_bytes_per_token
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.units import FP32_BYTES

FP8_BYTES = 1.0


def compute_dtype_bytes(c: Candidates) -> np.ndarray:
    """Bytes of a compute-dtype element: fp32 runs in fp32; bf16/fp16/fp8 keep bf16 weights."""
    return np.where(c.precision == PREC_FP32, 4.0, 2.0)


def grad_element_bytes(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes per gradient element held for the step and reduced: ``s.grad_bytes``, or the model's
    dtype at ZeRO >= 1 where the stack's optimizer keeps them so (``s.zero_grads_in_model_dtype``)."""
    model_dtype = s.zero_grads_in_model_dtype & (c.sharding >= SHARD_ZERO1)
    return np.where(model_dtype, compute_dtype_bytes(c), s.grad_bytes)


def reduced_grad_bytes(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes per gradient element the data-parallel reductions move: the held width
    (``grad_element_bytes``), or ``s.grad_reduce_bytes`` where the stack reduces in another
    (torchtitan's pure bf16: fp32, its gradient shards bf16)."""
    held = grad_element_bytes(c, s)
    return held if s.grad_reduce_bytes is None else np.full_like(held, s.grad_reduce_bytes, dtype=float)


def tp_gathered_bytes(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes of a tp-gathered block activation (a column-parallel linear's input): fp8 x tp on
    native blocks casts it to float8 before the all-gather and the linears save that float8
    copy (``fp8_tp_float8_all_gather``; trainer/tensor_parallel.py). Without sequence parallelism
    nothing is gathered: the whole input is the block's own, in the compute dtype."""
    float8 = (c.precision == PREC_FP8) & (c.tp > 1) & (c.impl != IMPL_HF)
    float8 = float8 & s.fp8_tp_float8_all_gather & s.sequence_parallel
    return np.where(float8, FP8_BYTES, compute_dtype_bytes(c))


def saved_bytes(tensors, dtype, tp, kv_tokens_per_token=1.0, gathered_kept=True, whole_dtype=None) -> np.ndarray:
    """Bytes per local token of one part's saved tensors (``planner/model/block.py`` rows):
    compute-dtype and fp32 tensors split by tp, whole ones (gathered for a column-parallel
    linear, ``whole_dtype`` bytes each, default ``dtype``) on every rank, or split too where only
    their sequence shard is kept (not ``gathered_kept``: ``ModelingSettings.sp_saves_gathered_inputs``);
    context-parallel-gathered ones for ``kv_tokens_per_token`` tokens; each row ``copies`` times
    (per routed expert)."""
    assert all(t.tp_split or not t.fp32 for t in tensors), "whole fp32 tensors are not modelled"
    total: Any = None  # an array after the first non-empty part
    for rows, size, split in (
        ([t for t in tensors if t.tp_split and not t.fp32], dtype, True),
        ([t for t in tensors if t.tp_split and t.fp32], FP32_BYTES, True),
        ([t for t in tensors if not t.tp_split], dtype if whole_dtype is None else whole_dtype, False),
    ):
        if not rows:
            continue
        # copies: per routed expert (MoE); shared experts' rows have one.
        elements = sum(t.elements * t.copies for t in rows if not t.cp_gathered)
        gathered = sum(t.elements * t.copies for t in rows if t.cp_gathered)
        if gathered:
            elements = elements + gathered * kv_tokens_per_token
        term = elements * size / tp if (split or not gathered_kept) else elements * size
        total = term if total is None else total + term
    return total


def unsplit_sequence(rows: tuple[Saved, ...], s: ModelingSettings) -> tuple[Saved, ...]:
    """The rows as a stack keeps them: without sequence parallelism the ones it alone would split
    (norm internals, the block input) are whole on every tp rank (``s.sequence_parallel``)."""
    if s.sequence_parallel:
        return rows
    return tuple(replace(t, tp_split=False, sequence_split=False) if t.sequence_split else t for t in rows)


def gathered_inputs_kept(s: ModelingSettings) -> bool:
    """Whether a column-parallel linear's whole input is saved whole: always without sequence
    parallelism (nothing is gathered, the input is whole), else per ``s.sp_saves_gathered_inputs``."""
    return s.sp_saves_gathered_inputs or not s.sequence_parallel


def native_saved_bytes(rows, c: Candidates, s: ModelingSettings, kv_tokens_per_token=1.0, whole_dtype=None):
    """``saved_bytes`` of native block rows as the stack keeps them: a fused gated activation
    that saves only its input drops its output (``fused_glu_saves_input_only``), a recomputed
    module its outputs (``recompute_modules``); FP8 linears that save their quantised input
    (``fp8_saves_float8_linear_inputs``) keep the linear-only inputs in 1 byte and add a 1-byte
    copy of the shared ones."""
    rows = tuple(t for t in unsplit_sequence(rows, s) if not (s.fused_glu_saves_input_only and t.fused_glu_output))
    every = _stack_saved_bytes(rows, c, s, kv_tokens_per_token, whole_dtype)
    if not s.recompute_modules:
        return every
    # Only native blocks recompute modules (flops.module_recompute_share): HF ones save them all.
    kept = tuple(t for t in rows if t.recompute not in s.recompute_modules)
    return np.where(c.impl == IMPL_HF, every, _stack_saved_bytes(kept, c, s, kv_tokens_per_token, whole_dtype))


def _stack_saved_bytes(rows, c: Candidates, s: ModelingSettings, kv_tokens_per_token, whole_dtype) -> np.ndarray:
    """``native_saved_bytes`` of rows already filtered: the FP8 linear-input rule."""
    dtype, kept = compute_dtype_bytes(c), gathered_inputs_kept(s)
    whole = dtype if whole_dtype is None else whole_dtype
    float8 = (c.precision == PREC_FP8) & s.fp8_saves_float8_linear_inputs
    linear_dtype, linear_whole = np.where(float8, FP8_BYTES, dtype), np.where(float8, FP8_BYTES, whole)
    total = np.zeros(len(c))
    groups = (
        ([t for t in rows if not t.linear_input], dtype, whole),
        ([t for t in rows if t.linear_input], linear_dtype, linear_whole),
        (
            [t for t in rows if t.shared_linear_input],
            np.where(float8, FP8_BYTES, 0.0),
            np.where(float8, FP8_BYTES, 0.0),
        ),
    )
    for group, size, whole_size in groups:
        if group:
            total = total + saved_bytes(group, size, c.tp, kv_tokens_per_token, kept, whole_size)
    return total


def saved_by_impl(
    native_rows, hf_rows, c: Candidates, s: ModelingSettings, kv_tokens_per_token=1.0, whole_dtype=None
) -> np.ndarray:
    """``native_saved_bytes`` of the native blocks' rows, or ``saved_bytes`` per row of the
    Hugging Face blocks' where they differ (HF's eager RMSNorm)."""
    dtype, kept = compute_dtype_bytes(c), gathered_inputs_kept(s)
    native = native_saved_bytes(native_rows, c, s, kv_tokens_per_token, whole_dtype)
    if hf_rows == native_rows:
        return native
    hf = saved_bytes(unsplit_sequence(hf_rows, s), dtype, c.tp, kv_tokens_per_token, kept)
    return np.where(c.impl == IMPL_HF, hf, native)


def norm_saved_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes one norm saves per token (the final norm's rows in ``planner/model/block.py``).

    HF LlamaRMSNorm upcasts to fp32 (saved by pow/mul: 4h), saves the normalised bf16 value for
    the weight multiply (2h) and its output is saved by the next linear (2h): 8h. A fused norm
    (F.rms_norm / nn.LayerNorm) saves its input and output only: 4h. With tensor + sequence
    parallelism the norm runs on 1/tp of the sequence, but the gathered output that feeds the
    column-parallel linear is whole.
    """
    return saved_by_impl(root_table(model).final_norm_saved, root_table(model, True).final_norm_saved, c, s)


def block_activation_bytes_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> dict[str, np.ndarray]:
    """Bytes saved for backward by one block per local token (no recompute), split by part:
    the ``saved`` rows of ``planner/model/block.py`` (q, k, v, attention output and fp32 LSE;
    SwiGLU's gate, SiLU output, up and product or GeLU's fc1 and GeLU outputs, per routed
    expert; the two norms); attention that materialises its scores (no flash attention, eager
    soft-capped attention: planner/model/attention_scores.py) adds what it saves of them to the attention
    part, seq_len x heads / tp scores per local token at ``saved_bytes_per_score``."""
    # All-gather context parallelism keeps the K and V of the whole sequence (cp x the local
    # tokens) for the attention backward; ring attention keeps only its own.
    kv_tokens_per_token = np.where(s.cp_ring_attention, 1.0, c.cp)
    native, hf = block_table(model), block_table(model, hf_modules=True)
    load = busiest_rank_load(c, s)  # MoE: the busiest ep rank's routed copies over the mean

    def kept(part: Part, routed: bool) -> np.ndarray:
        native_rows, hf_rows = (tuple(t for t in table.saved_in(part) if t.routed == routed) for table in (native, hf))
        # Routed copies live on the expert's rank: split by etp, on the tokens the rank routes.
        view, share = (expert_view(c), 1.0 / c.expert_token_split) if routed else (c, 1.0)
        whole = tp_gathered_bytes(c, s)
        return saved_by_impl(native_rows, hf_rows, view, s, kv_tokens_per_token, whole_dtype=whole) * share

    saved = {}
    for part in native.saved_parts:
        # A grouped expert MLP saves its own set per routed copy; the shared experts stay local.
        grouped = part == Part.MLP and model.is_moe and s.moe_grouped_mlp
        routed = grouped_mlp_saved_bytes_per_token(model, c, s) if grouped else kept(part, True)
        saved[part.value] = kept(part, False) + routed * load
    extra = score_saved_bytes_per_token(model, c, s) + band_saved_bytes_per_token(model, c, s)
    saved[Part.ATTENTION.value] = saved[Part.ATTENTION.value] + extra
    return saved


def band_saved_bytes_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """What trainplan's banded window attention (trainer/sliding_window.py ``sliding_window_attention``)
    saves beyond q, k, v and the output, per local token and block (averaged over the blocks; 0
    where it does not run, ``banded_window_rows``): with one sequence per micro-batch, the
    zero-padded copies of q, k and v where the sequence is not a whole number of n windows (over
    n w tokens); with more, the later blocks' q and their two-block K and V bands, copies when the
    batch and block dimensions merge: (heads + 4 kv_heads) head_dim x (n - 1) w / s. Measured on
    CPU against autograd's saved tensors (tests/trainer/test_sliding_window.py). The one cached
    additive mask all blocks share, 2 w^2 elements, is not counted (64 MiB at a 4,096 window)."""
    w = float(model.sliding_window or 0)
    heads, kv, d = model.num_heads, model.num_kv_heads, model.dim_head
    blocks = np.ceil(c.seq_len / max(w, 1.0))
    padded = np.where(c.seq_len % max(w, 1.0) > 0, (heads + 2 * kv) * d * blocks * w / c.seq_len, 0.0)
    bands = (heads + 4 * kv) * d * (blocks - 1) * w / c.seq_len
    elements = np.where(c.micro_batch > 1, bands, padded) * model.sliding_layers / model.num_layers
    return np.where(banded_window_rows(model, c, s), elements * compute_dtype_bytes(c) / c.tp, 0.0)


def score_saved_bytes_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """What a block saves of its materialised attention scores per local token (zero under
    flash attention). Like every saved row it is kept per block in flight and dropped for a
    checkpointed block, which keeps its input only."""
    return scores_per_token(model, c) * saved_bytes_per_score(model, c, s)


def score_backward_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Gradient temporaries of one block's materialised scores during its attention backward,
    per micro-batch, above what the block saved (zero under flash attention)."""
    return scores_per_microbatch(model, c) * backward_bytes_per_score(model, c, s)


def block_input_bytes_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """What a fully checkpointed block keeps: its input (sequence-sharded under TP with sequence
    parallelism, whole on every tp rank without, a 1/tp slice where DeepSpeed partitions it:
    ``s.partition_activations``)."""
    kept = (block_table(model).checkpoint,)
    return saved_bytes(kept if s.partition_activations else unsplit_sequence(kept, s), compute_dtype_bytes(c), c.tp)
