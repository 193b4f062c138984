"""The rows of a block table (planner/model/block.py): GEMMs, the attention core, saved tensors
and elementwise passes, each with how tensor parallelism splits it, and the two tables they form.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TpSplit(StrEnum):
    """How Megatron tensor parallelism splits a GEMM's weight over the tp ranks."""

    COLUMN = "column"  # output features split (q/k/v, gate/up, LM head): each rank computes d_out / tp
    ROW = "row"  # input features split (o, down): each rank reduces d_in / tp, then all-reduce
    NONE = "none"  # replicated (the MoE router)


class Recompute(StrEnum):
    """Output-discarding selective recompute: the tensors a module's backward rebuilds instead of
    saving, named as Megatron-Core's ``TransformerConfig.recompute_modules`` (megatron/core/
    transformer/transformer_config.py) and switched on by ``ModelingSettings.recompute_modules``."""

    LAYERNORM = "layernorm"  # the block's input and pre-MLP norms: their outputs
    MLA_UP_PROJ = "mla_up_proj"  # MLA's latent norms, q/kv up projections and rotary: q, k, v
    MOE_ACT = "moe_act"  # the routed experts' activation: its output (the fc2 input)


class Part(StrEnum):
    """Which share of the block a row belongs to (the breakdowns the consumers report)."""

    ATTENTION = "attention"
    MLP = "mlp"
    ROUTER = "router"
    NORMS = "norms"
    OTHER = "other"  # rotary, residual adds


@dataclass(frozen=True)
class Gemm:
    """A projection ``d_in -> d_out`` applied to each token.

    ``count`` same-shape matrices read the same input (SwiGLU's gate and up: 2); ``experts``
    copies are stored (MoE: every expert), ``active`` of them run per token (routed experts).
    """

    name: str
    part: Part
    d_in: int
    d_out: int
    split: TpSplit
    count: int = 1
    experts: int = 1
    active: int = 1
    bias: bool = False
    tied: bool = False  # shares its weight with another row (tied LM head): no parameters of its own
    # Part of the shape-aware GEMM time (step_time.block_gemm_time_per_token).
    timed: bool = True
    # Run again in backward where the stack recomputes this module (its output is not saved).
    recompute: Recompute | None = None

    @property
    def params(self) -> int:
        if self.tied:
            return 0
        return self.count * self.experts * (self.d_in * self.d_out + (self.d_out if self.bias else 0))

    @property
    def active_params(self) -> int:
        """Parameters one token touches: the ``active`` copies (all of a dense row)."""
        if self.tied:
            return 0
        return self.count * self.active * (self.d_in * self.d_out + (self.d_out if self.bias else 0))

    @property
    def active_weights(self) -> int:
        """Weights one token multiplies with (2 FLOPs each forward)."""
        return self.count * self.active * self.d_in * self.d_out

    @property
    def copies(self) -> int:
        """GEMMs of this shape one token runs through."""
        return self.count * self.active

    def local_dims(self, tp):
        """(in, out) dimensions of the GEMM on one tp rank."""
        if self.split == TpSplit.COLUMN:
            return self.d_in, self.d_out / tp
        if self.split == TpSplit.ROW:
            return self.d_in / tp, self.d_out
        return self.d_in, self.d_out


@dataclass(frozen=True)
class AttentionCore:
    """Scaled dot-product attention: QK^T and AV, 2 FLOPs per multiply-add each."""

    heads: int
    kv_heads: int
    head_dim: int  # query/key head size
    v_head_dim: int  # value head size (differs under MLA)

    @property
    def flops_per_token_per_key(self) -> int:
        """Forward FLOPs per query token per key position: 2 heads head_dim (QK^T) + 2 heads
        v_head_dim (AV); 4 q_size when the two head sizes agree."""
        return 2 * self.heads * (self.head_dim + self.v_head_dim)


@dataclass(frozen=True)
class Saved:
    """A tensor autograd keeps for backward, ``elements`` per token.

    ``tp_split``: each tp rank holds 1/tp of it (split heads or ffn columns, or sequence
    parallelism); otherwise it is whole on every rank (a norm's gathered output feeding a
    column-parallel linear). ``cp_gathered``: all-gather context parallelism keeps the whole
    sequence's copy (cp x the local tokens). ``copies``: per routed expert (MoE). In a
    checkpointed block (selective: every other block; full: every block) all of them are
    recomputed in backward and only the block's ``checkpoint`` is kept.
    """

    name: str
    part: Part
    elements: int
    fp32: bool = False  # kept in fp32 whatever the compute dtype (flash attention's LSE)
    tp_split: bool = True
    # Split by sequence parallelism alone (a norm's internals, the block input): whole on every
    # tp rank without it (``ModelingSettings.sequence_parallel``).
    sequence_split: bool = False
    cp_gathered: bool = False
    copies: int = 1
    # Held per routed token copy on the rank of its expert: under expert parallelism the busiest
    # rank holds more than the mean (planner/model/moe.py busiest_rank_load).
    routed: bool = False
    # Kept only as a linear's input for its weight gradient (a norm's output, the down / fc2
    # input): a stack whose FP8 linears save the quantised input keeps it in 1 byte
    # (``ModelingSettings.fp8_saves_float8_linear_inputs``).
    linear_input: bool = False
    # Kept by another op and also the input of a linear (the attention output, o_proj's input):
    # such a stack's FP8 linear saves its own 1-byte copy on top.
    shared_linear_input: bool = False
    # A gated activation's output that a fused kernel saving only its input recomputes in
    # backward (``ModelingSettings.fused_glu_saves_input_only``).
    fused_glu_output: bool = False
    # Dropped and rebuilt in backward where the stack recomputes this module.
    recompute: Recompute | None = None


@dataclass(frozen=True)
class Elementwise:
    """A memory-bound pass: ``elements`` read + written per token in the forward, in compute-dtype
    units, counted kernel by kernel as PyTorch eager runs it (backward about twice that)."""

    name: str
    part: Part
    elements: int
    params: int = 0  # norm weights (+ biases)
    tp_split: bool = True  # runs on 1/tp of the sequence (sequence parallelism) or of the heads/ffn
    # Split by sequence parallelism alone (norms, residual adds): unsplit on every tp rank without
    # it (``ModelingSettings.sequence_parallel``).
    sequence_split: bool = False
    copies: int = 1
    # Run again in backward where the stack recomputes this module.
    recompute: Recompute | None = None
    # Eager PyTorch ops in every stack's own code, outside the hand-fused kernel libraries
    # (Megatron-Core's Python around TransformerEngine): ``elementwise_fusion_factor`` does not
    # shrink them, torch.compile does (planner/model/step_time.py ``fused_elementwise_bytes``).
    eager: bool = False


@dataclass(frozen=True)
class BlockTable:
    """The operations of one decoder block, per token, in execution order."""

    gemms: tuple[Gemm, ...]
    attention: AttentionCore
    saved: tuple[Saved, ...]
    checkpoint: Saved  # what a checkpointed block keeps: its input
    elementwise: tuple[Elementwise, ...]
    parallel: bool = False  # ``ModelShape.parallel_block``: attention and MLP share one reduction

    def params(self, part: Part | None = None) -> int:
        gemms = sum(g.params for g in self.gemms if part in (None, g.part))
        return gemms + sum(e.params for e in self.elementwise if part in (None, e.part))

    @property
    def active_params(self) -> int:
        """Parameters one token touches in this block (MoE: routed experts only)."""
        return sum(g.active_params for g in self.gemms) + sum(e.params for e in self.elementwise)

    @property
    def matmul_weights(self) -> int:
        """Weights one token multiplies with in one block (MoE: routed experts only)."""
        return sum(g.active_weights for g in self.gemms)

    @property
    def tp_reductions(self) -> int:
        """Row-parallel GEMMs (o, down): each ends in a tp all-reduce (reduce-scatter under
        sequence parallelism) forward, and its column-parallel partner's input gradient in one
        backward (Megatron's f/g operators). Row-parallel partial sums of one sub-layer (routed and
        shared experts' down projections) add up before a single reduction: one per part. A
        parallel block adds its attention and MLP outputs first, so both parts share one (Falcon
        paper, arXiv 2311.16867 sec. 4.3.4: one all_reduce per layer; GPT-J and GPT-NeoX alike)."""
        parts = {g.part for g in self.gemms if g.split == TpSplit.ROW}
        return min(len(parts), 1) if self.parallel else len(parts)

    @property
    def routed_only_reductions(self) -> int:
        """``tp_reductions`` of parts whose row-parallel GEMMs are all routed experts (an MoE
        block without shared experts): none once each tp rank routes its own tokens, nor in a
        parallel block, whose one reduction carries the attention output too."""
        parts = {g.part for g in self.gemms if g.split == TpSplit.ROW}
        if self.parallel:
            return 0
        return sum(all(g.experts > 1 for g in self.gemms if g.part == p and g.split == TpSplit.ROW) for p in parts)

    def saved_in(self, part: Part) -> tuple[Saved, ...]:
        return tuple(t for t in self.saved if t.part == part)

    @property
    def saved_parts(self) -> tuple[Part, ...]:
        return tuple(dict.fromkeys(t.part for t in self.saved))

    @property
    def cp_gathered_elements(self) -> int:
        """Elements per token context parallelism exchanges (K and V)."""
        return sum(t.elements for t in self.saved if t.cp_gathered)

    def elementwise_elements(self, eager_only: bool = False) -> int:
        """Forward elementwise traffic per token of the tp-split passes (all of them today; only
        the ``Elementwise.eager`` ones: ``eager_only``)."""
        assert all(e.tp_split for e in self.elementwise), "step_time assumes every pass is tp-split"
        return sum(e.elements * e.copies for e in self.elementwise if e.eager or not eager_only)

    def sequence_elementwise_elements(self, eager_only: bool = False) -> int:
        """The part of ``elementwise_elements`` that sequence parallelism alone splits."""
        rows = (e for e in self.elementwise if e.sequence_split and (e.eager or not eager_only))
        return sum(e.elements * e.copies for e in rows)

    def recomputed_elementwise_elements(
        self, modules: frozenset[Recompute], sequence_only: bool = False, eager_only: bool = False
    ) -> int:
        """Forward elementwise traffic per token that the recomputed ``modules`` run again (only the
        sequence-parallel passes among them: ``sequence_only``; only the eager ones: ``eager_only``)."""
        rows = (
            e
            for e in self.elementwise
            if e.recompute in modules and (e.sequence_split or not sequence_only) and (e.eager or not eager_only)
        )
        return sum(e.elements * e.copies for e in rows)


@dataclass(frozen=True)
class RootTable:
    """What sits outside the blocks: token (+ position) embedding, final norm, LM head."""

    embedding_params: int
    final_norm: Elementwise
    final_norm_saved: tuple[Saved, ...]
    lm_head: Gemm
    # Per-token passes besides the final norm: Gemma's embedding scaling (h) and the logit
    # soft-cap (divide, tanh, multiply over the vocabulary), in compute-dtype elements.
    elementwise: tuple[Elementwise, ...] = ()
