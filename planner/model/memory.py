"""Per-GPU memory: states, buffers, activations, logits; allocated and reserved peaks.

Every function broadcasts over a ``Candidates`` table. Byte counts come from what autograd
saves for backward in the forward of each module (derivations in docs/model.md, checked
against measured FSDP2 runs in tests/planner/test_calibration.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from planner.model.accum_sync import deferred_grad_bytes, defers_reduction
from planner.model.block import block_table
from planner.model.block_rows import Part
from planner.model.candidates import (
    AC_ATTENTION,
    AC_BLOCKS,
    AC_FULL,
    AC_SELECTIVE,
    IMPL_NATIVE,
    SHARD_ZERO2,
    Candidates,
)
from planner.model.flops import checkpointed_blocks, chunked_loss, recompute_fraction
from planner.model.op_checkpoint import op_policy_bytes_per_token
from planner.model.pipeline import PipelineRank, pipeline_ranks
from planner.model.rowwise import (
    MEMORY_COLUMNS,
    distinct_or_all,
    per_distinct_row,
    rows_of,
    spread,
    take,
)
from planner.model.saved_bytes import block_activation_bytes_per_token as block_activation_bytes_per_token
from planner.model.saved_bytes import block_input_bytes_per_token as block_input_bytes_per_token
from planner.model.saved_bytes import compute_dtype_bytes as compute_dtype_bytes
from planner.model.saved_bytes import grad_element_bytes
from planner.model.saved_bytes import native_saved_bytes as native_saved_bytes
from planner.model.saved_bytes import norm_saved_bytes as norm_saved_bytes
from planner.model.saved_bytes import score_backward_bytes as score_backward_bytes
from planner.model.saved_bytes import tp_gathered_bytes as tp_gathered_bytes
from planner.model.settings import FUSED_CE_BYTES_PER_LOGIT, ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stage_params import stage_params
from planner.model.state_memory import offload_keeps_grads as offload_keeps_grads
from planner.model.state_memory import optimizer_grad_copy_bytes as optimizer_grad_copy_bytes
from planner.model.state_memory import state_bytes as state_bytes
from planner.model.state_memory import unsharded_param_bytes as unsharded_param_bytes
from planner.model.zero_collectives import bucket_buffer_bytes
from planner.units import GIB


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
    at_backward: np.ndarray  # the peak is the last backward's start, not its end (estimate_parts.PeakMoment)

    def as_gib(self, row: int = 0) -> dict[str, float]:
        skip = {"peak_allocated", "reserved", "device_total", "at_backward"}
        return {f.name: float(getattr(self, f.name)[row]) / GIB for f in fields(self) if f.name not in skip}


def activation_bytes(
    model: ModelSpec,
    c: Candidates,
    s: ModelingSettings,
    rank: PipelineRank,
    per_token: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Activations saved for backward by all in-flight micro-batches of one pp rank
    (``per_token``: ``block_activation_bytes_per_token``, where the caller has it)."""
    return activation_terms(model, c, s, rank, per_token).saved(c)


@dataclass(frozen=True)
class ActivationTerms:
    """One pp rank's activations but for the checkpointing: per micro-batch, a block's saved
    bytes (``full``) and a checkpointed block's (``kept``, its input); ``saved`` combines them."""

    layers: np.ndarray
    full: np.ndarray
    kept: np.ndarray
    selective: np.ndarray  # the rank's blocks under ``selective`` (``selective_bytes``)
    attention_kept: np.ndarray  # each block's attention sub-layer checkpointed: it keeps its input
    resident: np.ndarray  # offloaded blocks (Megatron-Core, no recompute) leave by the forward's end
    in_flight: np.ndarray
    last_norm: np.ndarray

    def saved(self, c: Candidates) -> np.ndarray:
        """Selective: ``selective_bytes``; blocks = the first ac_blocks of the rank
        (flops.checkpointed_blocks)."""
        n, kept = self.layers, self.kept
        per_microbatch = np.select(
            [c.ac == AC_SELECTIVE, c.ac == AC_FULL, c.ac == AC_BLOCKS, c.ac == AC_ATTENTION],
            [
                self.selective,
                n * kept,
                self._blocks(checkpointed_blocks(c, n)),
                n * self.attention_kept,
            ],
            self.resident * self.full,
        )
        return per_microbatch * self.in_flight + self.last_norm

    def of_blocks(self, count) -> np.ndarray:
        """``saved`` of ``blocks`` rows that checkpoint ``count`` blocks: the same floats."""
        return self._blocks(np.minimum(count, self.layers)) * self.in_flight + self.last_norm

    def _blocks(self, checkpointed) -> np.ndarray:
        return (self.layers - checkpointed) * self.full + checkpointed * self.kept


def activation_terms(
    model: ModelSpec, c: Candidates, s: ModelingSettings, rank: PipelineRank, per_token: PerToken | None = None
) -> ActivationTerms:
    """``activation_bytes``' terms, before the rank's checkpointing picks among them."""
    tokens = c.micro_batch * c.seq_len / c.cp
    per_token = block_activation_bytes_per_token(model, c, s) if per_token is None else per_token
    full = sum(per_token.values()) * tokens
    kept = block_input_bytes_per_token(model, c, s) * tokens
    n = rank.layers
    return ActivationTerms(
        layers=n,
        full=full,
        kept=kept,
        selective=selective_bytes(model, c, s, n, full, kept),
        attention_kept=full - per_token[Part.ATTENTION.value] * tokens + kept,
        resident=np.maximum(n - s.offloaded_activation_blocks, 0),
        in_flight=rank.in_flight,
        last_norm=np.where(rank.head, norm_saved_bytes(model, c, s) * tokens, 0.0),
    )


def per_op_bytes_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray | None:
    """What a block keeps per token where ``selective`` is torchtitan's per-op policy: the stack's
    reading (``s.selective_per_op``) on a block whose rule is written (planner/model/op_checkpoint.py);
    None elsewhere (every other block checkpointed)."""
    return op_policy_bytes_per_token(model, c, s) if s.selective_per_op else None


def per_op_selective(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Where ``selective`` is counted as the per-op policy (``per_op_bytes_per_token``)."""
    return (c.ac == AC_SELECTIVE) & (per_op_bytes_per_token(model, c, s) is not None)


def selective_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings, n, full, kept) -> np.ndarray:
    """``n`` blocks' activations per micro-batch under ``selective``: every other block
    checkpointed (``full`` saved by one, ``kept`` by the other), or under the per-op policy
    (``per_op_bytes_per_token``) what it keeps of every block."""
    op = per_op_bytes_per_token(model, c, s)
    if op is None:
        return np.ceil(n / 2) * full + np.floor(n / 2) * kept
    return n * op * c.micro_batch * c.seq_len / c.cp


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
    op = per_op_bytes_per_token(model, c, s)
    if op is not None:  # the per-op policy rebuilds what it did not keep, beside what it kept
        checkpointed = np.where(c.ac == AC_SELECTIVE, full - op * tokens, checkpointed)
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
    fp32 result at once: 12 bytes per logit (vocabulary split by tp with loss parallelism, where
    torch's ``loss_parallel`` holds more: ``loss_bytes_per_logit``).
    The forward peak is lower (bf16 logits 2 + fp32 upcast 4 + log-softmax 4 = 10 bytes).
    The chunked loss (``chunked_loss``) holds the logits of one chunk of
    ``s.loss_chunk_tokens`` tokens at a time (recomputed bf16 2 + fp32 4 + fp32 temporaries):
    the same 12 bytes per logit bound them, for the chunk's tokens only.
    """
    tokens = c.micro_batch * c.seq_len / c.cp
    held = np.where(chunked_loss(c, s), np.minimum(tokens, max(s.loss_chunk_tokens, 1)), tokens)
    return loss_bytes_per_logit(c, s) * held * model.vocab_size / c.tp


def loss_bytes_per_logit(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes per logit the loss backward holds: the stack's; torch's ``loss_parallel``'s where a
    native LM head is tensor-parallel (``s.loss_parallel_bytes_per_logit``); a compiled loss's
    where the stack compiles it with the model (``s.compile_fuses_loss``) over the whole logits."""
    per_logit = np.full(len(c), s.loss_bytes_per_logit)
    if s.loss_parallel_bytes_per_logit is not None:
        parallel = (c.tp > 1) & (c.impl == IMPL_NATIVE)
        per_logit = np.where(parallel, s.loss_parallel_bytes_per_logit, per_logit)
    # Compiled where the loss is a plain tensor's (tp 1: the rows that measured it); under
    # tp > 1 it is DTensor's loss_parallel, whose compiled form no measured peak shows.
    compiled = s.compile_fuses_loss & c.compile.astype(bool) & ~chunked_loss(c, s) & (c.tp == 1)
    return np.where(compiled, np.minimum(per_logit, FUSED_CE_BYTES_PER_LOGIT), per_logit)


def stage_memory(
    model: ModelSpec, c: Candidates, s: ModelingSettings, rank: PipelineRank, shared: Shared
) -> MemoryBreakdown:
    """One pp rank's peak (the only rank when pp is 1); ``shared``: what every rank has alike,
    ``block_activation_bytes_per_token`` and ``block_backward_bytes`` (``_memory``)."""
    terms = stage_terms(model, c, s, rank, shared)
    return terms.breakdown(terms.activations.saved(c), s)


@dataclass(frozen=True)
class StageTerms:
    """One pp rank's memory terms that do not depend on how many blocks a ``blocks`` row
    checkpoints (``stage_terms``): ``breakdown`` adds its activations."""

    params: np.ndarray
    grads_full: np.ndarray
    grads_during: np.ndarray
    moments: np.ndarray
    unsharded: np.ndarray
    loss: np.ndarray
    transient: np.ndarray
    peak_b: np.ndarray
    misc: np.ndarray
    memory_factor: np.ndarray
    activations: ActivationTerms

    def breakdown(self, acts: np.ndarray, s: ModelingSettings) -> MemoryBreakdown:
        peak_a, peak, correction, reserved = self._peaks(acts, s)
        at_a = peak_a >= self.peak_b
        return MemoryBreakdown(
            params=self.params,
            grads=np.where(at_a, self.grads_during, self.grads_full),
            optimizer=self.moments,
            unsharded_params=self.unsharded,
            activations=np.where(at_a, acts, 0.0),
            logits_loss=np.where(at_a, self.transient, 0.0),
            misc=self.misc,
            measured_correction=correction,
            peak_allocated=peak,
            reserved=reserved,
            device_total=reserved + s.cuda_context_bytes,
            at_backward=at_a,
        )

    def device_total(self, acts: np.ndarray, s: ModelingSettings) -> np.ndarray:
        """``breakdown(acts, s).device_total`` alone."""
        return self._peaks(acts, s)[3] + s.cuda_context_bytes

    def _peaks(self, acts: np.ndarray, s: ModelingSettings) -> tuple[np.ndarray, ...]:
        # Peak A: start of the last micro-batch's backward (grads of earlier micro-batches exist, or
        # a persistent buffer's at any count: ``persistent_grad_buffer``).
        peak_a = self.params + self.moments + self.unsharded + self.grads_during + acts + self.transient
        peak = np.maximum(peak_a, self.peak_b) + self.misc
        correction = (self.memory_factor - 1.0) * peak  # a measured job's, on the modelled peak
        peak = peak + correction
        # The churn of the gradients the step holds: a pipeline accumulates them unsharded whatever
        # the sharding (trial s38: zero2 under pp reserved 8.5 GiB less than its zero1 twin of the
        # same allocated peak, and both were listed as alternatives).
        churn = np.maximum(self.grads_full, self.grads_during)
        return peak_a, peak, correction, reserved_bytes(peak, self.loss, churn, s)


def stage_terms(model: ModelSpec, c: Candidates, s: ModelingSettings, rank: PipelineRank, shared: Shared) -> StageTerms:
    """``stage_memory``'s terms, before the activations."""
    per_token, block_backward = shared
    stage = stage_params(model, c, rank)
    params, grads_full, moments = state_bytes(stage, c, s)
    unsharded = unsharded_param_bytes(stage, c, s)
    loss = logits_loss_bytes(model, c, s) * np.where(rank.head, 1.0, 0.0)
    # Pipelines accumulate unsharded fp32 gradients over the step's micro-batches; a stack that
    # keeps 16-bit gradients beside them holds those too, whole, where its optimizer does not
    # shard gradients (DeepSpeed's BF16_Optimizer runs at ZeRO stage 0/1; stage 2/3 reduce-scatter).
    on_gpu = ~c.offload.astype(bool)
    lp_grads = np.where(c.sharding < SHARD_ZERO2, stage.held / c.tp * s.lp_grad_bytes, 0.0) * on_gpu
    grads_full = grads_full + lp_grads
    unsharded_grads = stage.held / c.tp * grad_element_bytes(c, s) * on_gpu + lp_grads
    # Earlier micro-batches' gradients, or a buffer that is always there (``persistent_grad_buffer``);
    # whole where the stack skips their reduction (HF Trainer's no_sync: accum_sync.py).
    held = np.where(c.pp > 1, unsharded_grads, grads_full)
    held = np.where(defers_reduction(c, s), deferred_grad_bytes(stage, c), held)
    return StageTerms(
        params=params,
        grads_full=grads_full,
        grads_during=np.where((c.grad_accum > 1) | s.persistent_grad_buffer, held, 0.0),
        moments=moments,
        unsharded=unsharded,
        loss=loss,
        # The loss buffers are gone before the first block is recomputed: the larger one counts.
        transient=np.maximum(loss, block_backward),
        # Peak B: end of backward, all gradients materialised, activations freed; with bf16 gradient
        # buffers the sharded optimizer also holds an fp32 copy of its gradient shard for the step
        # (Megatron-Core docs/source/api-guide/dist_optimizer.md: 4 + 16/d bytes per parameter).
        peak_b=params + moments + unsharded + grads_full + optimizer_grad_copy_bytes(stage, c, s),
        misc=s.misc_allocated_bytes + bucket_buffer_bytes(c, s.deepspeed_zero, stage.held / c.tp, model.hidden_size),
        memory_factor=c.memory_factor,
        activations=activation_terms(model, c, s, rank, per_token),
    )


def block_backward_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings, per_token: PerToken) -> np.ndarray:
    """One block's backward: its recomputed activations, all-gathered dK/dV, score gradients."""
    recomputed = recompute_bytes(model, c, s, per_token)
    return recomputed + gathered_kv_grad_bytes(model, c, s) + score_backward_bytes(model, c, s)


PerToken = dict[str, np.ndarray]  # what block_activation_bytes_per_token returns
Shared = tuple[PerToken, np.ndarray]  # with block_backward_bytes: alike on every pp rank


def reserved_bytes(peak, loss, grads, s: ModelingSettings) -> np.ndarray:
    """The caching allocator keeps freed blocks: the logits-sized buffers and the gradient
    churn of each step (``grads``: the most gradient bytes the step holds) leave
    reserved-but-unallocated segments above the allocated peak."""
    slack = s.reserve_transient_fraction * loss / 3.0 + s.reserve_static_fraction * grads
    return peak + np.maximum(slack, s.reserve_floor_bytes)


def memory(model: ModelSpec, c: Candidates, s: ModelingSettings) -> MemoryBreakdown:
    """The most loaded pp rank: the first (embedding, most in-flight activations), the second
    (most blocks of a middle rank) or the last (head and loss); planner/model/pipeline.py.
    Once per distinct layout: memory does not depend on the GPU type (rowwise.py)."""
    return per_distinct_row(lambda rows: _memory(model, rows, s), c, MEMORY_COLUMNS)


def _memory(model: ModelSpec, c: Candidates, s: ModelingSettings) -> MemoryBreakdown:
    return worst_stage([t.breakdown(t.activations.saved(c), s) for t in _stage_terms(model, c, s)])


def last_rank_memory(model: ModelSpec, c: Candidates, s: ModelingSettings) -> MemoryBreakdown:
    """The last pp rank's peak (the head and the loss), whichever rank is the most loaded: the one
    Megatron's logs report (``rank == world_size - 1``, megatron/training/global_vars.py)."""
    last = _stage_terms(model, c, s)[-1]
    return last.breakdown(last.activations.saved(c), s)


@dataclass(frozen=True)
class MemoryTerms:
    """``memory`` of a table and its ranks' count-free terms (``stage_terms``), these once per
    distinct layout: ``ranks`` over the distinct rows, ``inverse`` each row's."""

    breakdown: MemoryBreakdown
    ranks: tuple[StageTerms, ...]
    inverse: np.ndarray

    def of_rows(self, rows: np.ndarray) -> tuple[StageTerms, ...]:
        """The ranks' terms of ``rows`` of the table."""
        return rows_of(self.ranks, self.inverse[rows], len(self.ranks[0].params))


def memory_terms(model: ModelSpec, c: Candidates, s: ModelingSettings) -> MemoryTerms:
    """``memory`` (the same floats) with the terms a ``blocks`` row's memory at another count is
    re-added from (``blocks_device_total``), evaluated once."""
    found = distinct_or_all(c, MEMORY_COLUMNS)
    first, inverse = found if found is not None else (None, np.arange(len(c)))
    rows = c if first is None else take(c, first)
    ranks = _stage_terms(model, rows, s)
    at = worst_stage([t.breakdown(t.activations.saved(rows), s) for t in ranks])
    return MemoryTerms(at if first is None else spread(at, inverse, len(first)), ranks, inverse)


def _stage_terms(model: ModelSpec, c: Candidates, s: ModelingSettings) -> tuple[StageTerms, ...]:
    # The terms every rank shares, once (each rank asked for them: a third of memory's work).
    per_token = block_activation_bytes_per_token(model, c, s)
    shared = (per_token, block_backward_bytes(model, c, s, per_token))
    return tuple(stage_terms(model, c, s, rank, shared) for rank in pipeline_ranks(model.num_layers, c))


def worst_stage(stages: list[MemoryBreakdown]) -> MemoryBreakdown:
    """Row by row, the breakdown of the rank with the largest ``device_total``."""
    worst = np.argmax(np.stack([m.device_total for m in stages]), axis=0)
    return MemoryBreakdown(
        **{f.name: np.choose(worst, [getattr(m, f.name) for m in stages]) for f in fields(MemoryBreakdown)}
    )


def blocks_device_total(ranks: tuple[StageTerms, ...], count: np.ndarray, s: ModelingSettings) -> np.ndarray:
    """``memory(...).device_total`` of ``blocks`` rows that checkpoint ``count`` blocks, from their
    ranks' ``stage_terms``: the same floats, without re-evaluating the terms."""
    return np.max(np.stack([t.device_total(t.activations.of_blocks(count), s) for t in ranks]), axis=0)


def blocks_memory(ranks: tuple[StageTerms, ...], count: np.ndarray, s: ModelingSettings) -> MemoryBreakdown:
    """``memory`` of those rows (``blocks_device_total``'s)."""
    return worst_stage([t.breakdown(t.activations.of_blocks(count), s) for t in ranks])
