"""Per-GPU memory: states, buffers, activations, logits; allocated and reserved peaks.

Every function broadcasts over a ``Candidates`` table. Byte counts come from what autograd
saves for backward in the forward of each module (derivations in docs/model.md, checked
against measured FSDP2 runs in tests/planner/test_calibration.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from planner.model.attention_scores import (
    backward_bytes_per_score,
    saved_bytes_per_score,
    scores_per_microbatch,
    scores_per_token,
)
from planner.model.block import block_table, root_table
from planner.model.block_rows import Part
from planner.model.candidates import (
    AC_ATTENTION,
    AC_BLOCKS,
    AC_FULL,
    AC_SELECTIVE,
    IMPL_HF,
    PREC_FP8,
    PREC_FP32,
    SHARD_FSDP,
    SHARD_ZERO1,
    SHARD_ZERO2,
    Candidates,
)
from planner.model.flops import checkpointed_blocks, chunked_loss, recompute_fraction
from planner.model.moe import (
    busiest_rank_load,
    expert_view,
    grouped_mlp_saved_bytes_per_token,
    held_fraction,
    routed_expert_params_per_layer,
)
from planner.model.pipeline import PipelineRank, max_rank_layers, pipeline_ranks
from planner.model.rowwise import MEMORY_COLUMNS, once_per_table, per_distinct_row
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.units import FP32_BYTES, GIB

FP8_BYTES = 1.0


def usable_capacity(capacity, headroom: float):
    """What the fit rule lets a plan use of a device: ``capacity * (1 - headroom)``."""
    return capacity * (1.0 - headroom)


def fits(memory, capacity, headroom: float):
    """The fit rule, the one the planner searches with and the trainer checks with:

        memory <= capacity * (1 - headroom)

    ``memory`` is what must fit on the device (caching-allocator reserve + CUDA context),
    ``capacity`` the device's memory, both in the same unit; numbers or numpy arrays.
    """
    return memory <= usable_capacity(capacity, headroom)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU on the most loaded pipeline stage (arrays over candidates)."""

    params: np.ndarray  # sharded master weights (fp32)
    grads: np.ndarray  # gradients (fp32), at the peak
    optimizer: np.ndarray  # AdamW moments
    unsharded_params: np.ndarray  # compute-dtype copies: FSDP all-gather buffers / autocast cache
    activations: np.ndarray  # saved for backward, all in-flight micro-batches
    logits_loss: np.ndarray  # loss backward (logits, fp32 log-softmax, grads) or block recompute
    misc: np.ndarray  # workspaces and small buffers
    measured_correction: np.ndarray  # (memory_factor - 1) x peak: a measured job's (measured_job.py)
    peak_allocated: np.ndarray
    reserved: np.ndarray  # caching-allocator peak (max_memory_reserved)
    device_total: np.ndarray  # reserved + CUDA context: what must fit on the device

    def as_gib(self, row: int = 0) -> dict[str, float]:
        skip = {"peak_allocated", "reserved", "device_total"}
        return {f.name: float(getattr(self, f.name)[row]) / GIB for f in fields(self) if f.name not in skip}


@dataclass(frozen=True)
class StageParams:
    """Parameter counts held by one pipeline stage, before tensor-parallel splitting."""

    blocks: np.ndarray  # transformer-block parameters on the stage
    root: np.ndarray  # embedding / final norm / LM head on the stage
    per_block: float
    # MoE: the routed experts' share of ``blocks`` / ``per_block``, and the fraction of them one
    # rank holds in units of 1/tp (1/ep; ``moe.held_fraction``). Zero / one for dense models.
    experts: np.ndarray | float = 0.0
    per_block_experts: float = 0.0
    expert_held: np.ndarray | float = 1.0

    @property
    def total(self) -> np.ndarray:
        return self.blocks + self.root

    @property
    def held(self) -> np.ndarray:
        """Parameters one rank holds before data-parallel sharding: the dense ones and its ep
        group's share of the experts."""
        return self.total - self.experts * (1.0 - self.expert_held)

    @property
    def held_per_block(self):
        return self.per_block - self.per_block_experts * (1.0 - self.expert_held)


def layers_per_stage(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Blocks on the pp rank with the most of them (uneven stages: planner/model/pipeline.py)."""
    return max_rank_layers(model.num_layers, c)


def stage_params(model: ModelSpec, c: Candidates, rank: PipelineRank) -> StageParams:
    """The rank's blocks (uneven stages); the embedding on the first stage, norm + head on the
    last (a tied head keeps its own copy of the embedding on the last stage once pp > 1: its
    gradient is all-reduced with the first stage's, ``step_time.tied_embedding_sync_s``)."""
    counts = model.param_counts()
    head = counts.final_norm + (counts.lm_head or counts.embedding)
    whole = counts.embedding + counts.final_norm + counts.lm_head
    root = np.where(c.pp == 1, whole, np.where(rank.embedding, counts.embedding, 0.0) + np.where(rank.head, head, 0.0))
    experts = float(routed_expert_params_per_layer(model))
    return StageParams(
        # The heaviest blocks when they differ (DeepSeek: a stage of expert blocks, not its dense ones).
        blocks=counts.heaviest_blocks(rank.layers),
        root=root.astype(float),
        per_block=float(counts.per_layer),
        # The heaviest blocks are expert blocks: at most moe_layers of the rank's blocks hold experts.
        experts=np.minimum(rank.layers, model.moe_layers) * experts,
        per_block_experts=experts,
        expert_held=held_fraction(c),
    )


def busiest_stage(model: ModelSpec, c: Candidates) -> StageParams:
    """The parameters of the pp rank that holds the most of them, row by row (kept for the last
    table: comm, optimizer and host time each ask for it)."""
    return once_per_table("busiest_stage", c, model, lambda: _busiest_stage(model, c))


def _busiest_stage(model: ModelSpec, c: Candidates) -> StageParams:
    stages = [stage_params(model, c, rank) for rank in pipeline_ranks(model.num_layers, c)]
    busiest = np.argmax(np.stack([stage.total for stage in stages]), axis=0)
    pick = lambda field: np.choose(busiest, [np.broadcast_to(getattr(st, field), busiest.shape) for st in stages])  # noqa: E731
    return StageParams(
        blocks=pick("blocks"),
        root=pick("root"),
        per_block=stages[0].per_block,
        experts=pick("experts"),
        per_block_experts=stages[0].per_block_experts,
        expert_held=stages[0].expert_held,
    )


def busiest_stage_params(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Parameters (before tp) of the pp rank that holds the most of them."""
    return busiest_stage(model, c).total


def compute_dtype_bytes(c: Candidates) -> np.ndarray:
    """Bytes of a compute-dtype element: fp32 runs in fp32; bf16/fp16/fp8 keep bf16 weights."""
    return np.where(c.precision == PREC_FP32, 4.0, 2.0)


def tp_gathered_bytes(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes of a tp-gathered block activation (a column-parallel linear's input): fp8 x tp on
    native blocks casts it to float8 before the all-gather and the linears save that float8
    copy (``fp8_tp_float8_all_gather``; trainer/tensor_parallel.py)."""
    float8 = (c.precision == PREC_FP8) & (c.tp > 1) & (c.impl != IMPL_HF) & s.fp8_tp_float8_all_gather
    return np.where(float8, FP8_BYTES, compute_dtype_bytes(c))


def state_bytes(stage: StageParams, c: Candidates, s: ModelingSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fp32 master params, full-step grads and AdamW moments per GPU, by sharding stage.

    DDP keeps all three whole. ZeRO-1 shards the optimizer state, which includes the fp32
    master weights (Rajbhandari et al. 2020, Sec. 5: K = 12 bytes per parameter); ZeRO-2 also
    the grads; FSDP also the 16-bit working params (counted in ``unsharded_param_bytes``).
    Offload moves all three to host memory. MoE experts split over ep ranks are sharded over
    the other ``shard_group / ep``: the sharded states are ``total / shard_group`` either way,
    the unsharded ones hold 1/ep of the experts (``StageParams.held``): the expert-data-parallel
    group of Megatron-Core (``dp x cp x tp / (ep x etp)``, parallel_state.py) gives the same
    per-rank share, ``experts / (ep x edp) = experts / shard_group``. Gradients are
    ``s.grad_bytes`` per element (fp32 unless a stack keeps bf16 gradient buffers).
    """
    local, held = stage.total / c.tp, stage.held / c.tp
    shard = np.maximum(c.shard_group, 1)
    params = np.where(c.sharding >= SHARD_ZERO1, local / shard, held) * FP32_BYTES
    grads = np.where(c.sharding >= SHARD_ZERO2, local / shard, held) * s.grad_bytes
    moments = np.where(c.sharding >= SHARD_ZERO1, local / shard, held) * s.adam_state_bytes
    on_gpu = ~c.offload.astype(bool)
    return params * on_gpu, grads * on_gpu, moments * on_gpu


def optimizer_grad_copy_bytes(stage: StageParams, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """fp32 gradient shard a sharded optimizer makes from bf16 gradients (``s.grad_bytes`` < 4)
    at its step; none when the gradients are fp32 already (the default)."""
    if s.grad_bytes >= FP32_BYTES:
        return np.zeros(len(c))
    shard = np.maximum(c.shard_group, 1)
    sharded = (c.sharding >= SHARD_ZERO1) & ~c.offload.astype(bool)
    return np.where(sharded, stage.total / c.tp / shard * FP32_BYTES, 0.0)


def unsharded_param_bytes(stage: StageParams, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Compute-dtype parameter copies that exist during forward/backward.

    FSDP: the root (embedding/head) stays gathered for the whole step, plus the gathered block
    and the one being prefetched. ZeRO-2 (no reshard after forward) keeps every block gathered.
    DDP/ZeRO-1 keep a low-precision working copy of every weight for the step (FSDP2's
    ``replicate`` and no-reshard wrapping cast the fp32 master once per step).
    """
    dtype = compute_dtype_bytes(c)
    blocks_gathered = np.where(
        c.sharding == SHARD_FSDP,
        np.minimum(s.fsdp_unsharded_blocks, stage.blocks / stage.per_block),
        stage.blocks / stage.per_block,
    )
    # A gathered MoE block holds its ep rank's experts only.
    copies = (stage.root + blocks_gathered * stage.held_per_block) / c.tp * dtype
    needs_copy = (c.precision != PREC_FP32) | (c.sharding == SHARD_FSDP) | c.offload.astype(bool)
    return np.where(needs_copy, copies, 0.0)


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


def native_saved_bytes(rows, c: Candidates, s: ModelingSettings, kv_tokens_per_token=1.0, whole_dtype=None):
    """``saved_bytes`` of native block rows as the stack keeps them: a fused gated activation
    that saves only its input drops its output (``fused_glu_saves_input_only``), a recomputed
    module its outputs (``recompute_modules``); FP8 linears that save their quantised input
    (``fp8_saves_float8_linear_inputs``) keep the linear-only inputs in 1 byte and add a 1-byte
    copy of the shared ones."""
    rows = tuple(t for t in rows if not (s.fused_glu_saves_input_only and t.fused_glu_output))
    every = _stack_saved_bytes(rows, c, s, kv_tokens_per_token, whole_dtype)
    if not s.recompute_modules:
        return every
    # Only native blocks recompute modules (flops.module_recompute_share): HF ones save them all.
    kept = tuple(t for t in rows if t.recompute not in s.recompute_modules)
    return np.where(c.impl == IMPL_HF, every, _stack_saved_bytes(kept, c, s, kv_tokens_per_token, whole_dtype))


def _stack_saved_bytes(rows, c: Candidates, s: ModelingSettings, kv_tokens_per_token, whole_dtype) -> np.ndarray:
    """``native_saved_bytes`` of rows already filtered: the FP8 linear-input rule."""
    dtype, kept = compute_dtype_bytes(c), s.sp_saves_gathered_inputs
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


def _saved_by_impl(
    native_rows, hf_rows, c: Candidates, s: ModelingSettings, kv_tokens_per_token=1.0, whole_dtype=None
) -> np.ndarray:
    """``native_saved_bytes`` of the native blocks' rows, or ``saved_bytes`` per row of the
    Hugging Face blocks' where they differ (HF's eager RMSNorm)."""
    dtype, kept = compute_dtype_bytes(c), s.sp_saves_gathered_inputs
    native = native_saved_bytes(native_rows, c, s, kv_tokens_per_token, whole_dtype)
    if hf_rows == native_rows:
        return native
    return np.where(c.impl == IMPL_HF, saved_bytes(hf_rows, dtype, c.tp, kv_tokens_per_token, kept), native)


def norm_saved_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes one norm saves per token (the final norm's rows in ``planner/model/block.py``).

    HF LlamaRMSNorm upcasts to fp32 (saved by pow/mul: 4h), saves the normalised bf16 value for
    the weight multiply (2h) and its output is saved by the next linear (2h): 8h. A fused norm
    (F.rms_norm / nn.LayerNorm) saves its input and output only: 4h. With tensor + sequence
    parallelism the norm runs on 1/tp of the sequence, but the gathered output that feeds the
    column-parallel linear is whole.
    """
    return _saved_by_impl(root_table(model).final_norm_saved, root_table(model, True).final_norm_saved, c, s)


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
        return _saved_by_impl(native_rows, hf_rows, view, s, kv_tokens_per_token, whole_dtype=whole) * share

    saved = {}
    for part in native.saved_parts:
        # A grouped expert MLP saves its own set per routed copy; the shared experts stay local.
        grouped = part == Part.MLP and model.is_moe and s.moe_grouped_mlp
        routed = grouped_mlp_saved_bytes_per_token(model, c, s) if grouped else kept(part, True)
        saved[part.value] = kept(part, False) + routed * load
    saved[Part.ATTENTION.value] = saved[Part.ATTENTION.value] + score_saved_bytes_per_token(model, c, s)
    return saved


def score_saved_bytes_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """What a block saves of its materialised attention scores per local token (zero under
    flash attention). Like every saved row it is kept per block in flight and dropped for a
    checkpointed block, which keeps its input only."""
    return scores_per_token(model, c) * saved_bytes_per_score(model, c, s)


def score_backward_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Gradient temporaries of one block's materialised scores during its attention backward,
    per micro-batch, above what the block saved (zero under flash attention)."""
    return scores_per_microbatch(model, c) * backward_bytes_per_score(model, c, s)


def block_input_bytes_per_token(model: ModelSpec, c: Candidates) -> np.ndarray:
    """What a fully checkpointed block keeps: its input (sequence-sharded under TP)."""
    return saved_bytes((block_table(model).checkpoint,), compute_dtype_bytes(c), c.tp)


def activation_bytes(
    model: ModelSpec,
    c: Candidates,
    s: ModelingSettings,
    rank: PipelineRank,
    per_token: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Activations saved for backward by all in-flight micro-batches of one pp rank
    (``per_token``: ``block_activation_bytes_per_token``, where the caller has it)."""
    tokens = c.micro_batch * c.seq_len / c.cp
    per_token = block_activation_bytes_per_token(model, c, s) if per_token is None else per_token
    full = sum(per_token.values()) * tokens
    kept = block_input_bytes_per_token(model, c) * tokens
    n = rank.layers
    # Offloaded blocks (Megatron-Core, no recompute only) leave the device by the forward's end.
    resident = np.maximum(n - s.offloaded_activation_blocks, 0)
    # Selective = every other block checkpointed (torchtitan's layer-selective AC, freq 2);
    # blocks = the first ac_blocks of the rank (flops.checkpointed_blocks).
    # attention = each block's attention sub-layer checkpointed: it keeps its input instead.
    checkpointed = checkpointed_blocks(c, n)
    attention_kept = full - per_token[Part.ATTENTION.value] * tokens + kept
    per_microbatch = np.select(
        [c.ac == AC_SELECTIVE, c.ac == AC_FULL, c.ac == AC_BLOCKS, c.ac == AC_ATTENTION],
        [
            np.ceil(n / 2) * full + np.floor(n / 2) * kept,
            n * kept,
            (n - checkpointed) * full + checkpointed * kept,
            n * attention_kept,
        ],
        resident * full,
    )
    last_norm = np.where(rank.head, norm_saved_bytes(model, c, s) * tokens, 0.0)
    return per_microbatch * rank.in_flight + last_norm


def recompute_bytes(
    model: ModelSpec, c: Candidates, s: ModelingSettings, per_token: dict[str, np.ndarray] | None = None
) -> np.ndarray:
    """A checkpointed block re-materialises its activations during its own backward, and a
    recomputed module (``s.recompute_modules``) the outputs it did not save (``per_token``: as
    ``activation_bytes``)."""
    tokens = c.micro_batch * c.seq_len / c.cp
    per_token = block_activation_bytes_per_token(model, c, s) if per_token is None else per_token
    full = sum(per_token.values()) * tokens
    attention = per_token[Part.ATTENTION.value] * tokens  # what a recomputed attention sub-layer holds
    checkpointed = np.where(recompute_fraction(c, 1) > 0, full, np.where(c.ac == AC_ATTENTION, attention, 0.0))
    if not s.recompute_modules:
        return checkpointed
    # What the modules did not save: the same rules with and without them (zero for HF blocks).
    saved_all = sum(block_activation_bytes_per_token(model, c, s.but(recompute_modules=frozenset())).values())
    return checkpointed + (saved_all * tokens - full)


def gathered_kv_grad_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """All-gather context parallelism: one block's attention backward holds dK and dV of the
    whole sequence until they are reduce-scattered (ring attention keeps only local ones)."""
    tokens = c.micro_batch * c.seq_len
    grads = tokens * block_table(model).cp_gathered_elements / c.tp * compute_dtype_bytes(c)
    return np.where((c.cp > 1) & ~np.asarray(s.cp_ring_attention), grads, 0.0)


def logits_loss_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Peak of the LM head + cross-entropy on the last stage, per micro-batch.

    Backward of log-softmax holds its saved fp32 output, the fp32 incoming gradient and the
    fp32 result at once: 12 bytes per logit (vocabulary split by tp with loss parallelism).
    The forward peak is lower (bf16 logits 2 + fp32 upcast 4 + log-softmax 4 = 10 bytes).
    The chunked loss (``chunked_loss``) holds the logits of one chunk of
    ``s.loss_chunk_tokens`` tokens at a time (recomputed bf16 2 + fp32 4 + fp32 temporaries):
    the same 12 bytes per logit bound them, for the chunk's tokens only.
    """
    tokens = c.micro_batch * c.seq_len / c.cp
    held = np.where(chunked_loss(c, s), np.minimum(tokens, max(s.loss_chunk_tokens, 1)), tokens)
    return s.loss_bytes_per_logit * held * model.vocab_size / c.tp


def stage_memory(
    model: ModelSpec, c: Candidates, s: ModelingSettings, rank: PipelineRank, shared: Shared
) -> MemoryBreakdown:
    """One pp rank's peak (the only rank when pp is 1); ``shared``: what every rank has alike,
    ``block_activation_bytes_per_token`` and ``block_backward_bytes`` (``_memory``)."""
    per_token, block_backward = shared
    stage = stage_params(model, c, rank)
    params, grads_full, moments = state_bytes(stage, c, s)
    unsharded = unsharded_param_bytes(stage, c, s)
    acts = activation_bytes(model, c, s, rank, per_token)
    loss = logits_loss_bytes(model, c, s) * np.where(rank.head, 1.0, 0.0)
    # Peak A: start of the last micro-batch's backward (grads of earlier micro-batches exist).
    # Pipelines accumulate unsharded fp32 gradients over the step's micro-batches.
    unsharded_grads = stage.held / c.tp * s.grad_bytes * ~c.offload.astype(bool)
    grads_during = np.where(c.grad_accum > 1, np.where(c.pp > 1, unsharded_grads, grads_full), 0.0)
    misc = np.full(len(c), s.misc_allocated_bytes)
    # The loss buffers are gone before the first block is recomputed: the larger one counts.
    transient = np.maximum(loss, block_backward)
    peak_a = params + moments + unsharded + grads_during + acts + transient
    # Peak B: end of backward, all gradients materialised, activations freed; with bf16 gradient
    # buffers the sharded optimizer also holds an fp32 copy of its gradient shard for the step
    # (Megatron-Core docs/source/api-guide/dist_optimizer.md: 4 + 16/d bytes per parameter).
    peak_b = params + moments + unsharded + grads_full + optimizer_grad_copy_bytes(stage, c, s)
    peak = np.maximum(peak_a, peak_b) + misc
    correction = (c.memory_factor - 1.0) * peak  # a measured job's, on the modelled peak
    peak = peak + correction
    grads = np.where(peak_a >= peak_b, grads_during, grads_full)
    reserved = reserved_bytes(peak, loss, grads_full, acts, c, s)
    device_total = reserved + s.cuda_context_bytes
    return MemoryBreakdown(
        params=params,
        grads=grads,
        optimizer=moments,
        unsharded_params=unsharded,
        activations=np.where(peak_a >= peak_b, acts, 0.0),
        logits_loss=np.where(peak_a >= peak_b, transient, 0.0),
        misc=misc,
        measured_correction=correction,
        peak_allocated=peak,
        reserved=reserved,
        device_total=device_total,
    )


def block_backward_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings, per_token: PerToken) -> np.ndarray:
    """One block's backward: its recomputed activations, all-gathered dK/dV, score gradients."""
    recomputed = recompute_bytes(model, c, s, per_token)
    return recomputed + gathered_kv_grad_bytes(model, c, s) + score_backward_bytes(model, c, s)


PerToken = dict[str, np.ndarray]  # what block_activation_bytes_per_token returns
Shared = tuple[PerToken, np.ndarray]  # with block_backward_bytes: alike on every pp rank


def reserved_bytes(peak, loss, grads_full, acts, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """The caching allocator keeps freed blocks: the logits-sized buffers and the gradient
    churn of each step leave reserved-but-unallocated segments above the allocated peak."""
    del acts, c
    slack = s.reserve_transient_fraction * loss / 3.0 + s.reserve_static_fraction * grads_full
    return peak + np.maximum(slack, s.reserve_floor_bytes)


def memory(model: ModelSpec, c: Candidates, s: ModelingSettings) -> MemoryBreakdown:
    """The most loaded pp rank: the first (embedding, most in-flight activations), the second
    (most blocks of a middle rank) or the last (head and loss); planner/model/pipeline.py.
    Once per distinct layout: memory does not depend on the GPU type (rowwise.py)."""
    return per_distinct_row(lambda rows: _memory(model, rows, s), c, MEMORY_COLUMNS)


def _memory(model: ModelSpec, c: Candidates, s: ModelingSettings) -> MemoryBreakdown:
    # The terms every rank shares, once (each rank asked for them: a third of memory's work).
    per_token = block_activation_bytes_per_token(model, c, s)
    shared = (per_token, block_backward_bytes(model, c, s, per_token))
    stages = [stage_memory(model, c, s, rank, shared) for rank in pipeline_ranks(model.num_layers, c)]
    worst = np.argmax(np.stack([m.device_total for m in stages]), axis=0)
    return MemoryBreakdown(
        **{f.name: np.choose(worst, [getattr(m, f.name) for m in stages]) for f in fields(MemoryBreakdown)}
    )
