"""One description of a transformer block: its operations, from which everything else is derived.

Like Calculon's ``Layer`` list, a ``BlockTable`` lists what one decoder block does to each
token: every GEMM with its shape and how tensor parallelism splits it, the attention core, each
tensor autograd saves for backward, and each memory-bound elementwise pass. ``RootTable`` does
the same for what sits outside the blocks (embedding, final norm, LM head).

The consumers read these tables instead of restating the block:

* parameters: ``planner/model/spec.py`` (``ModelSpec.param_counts``);
* FLOPs per token: ``planner/model/flops.py``;
* GEMM time and elementwise HBM traffic: ``planner/model/step_time.py``;
* saved activations: ``planner/model/memory.py``.

Sizes are per token and in elements (integers), so that sums over the table are exact and the
consumers' floating-point arithmetic (dtype bytes, tp splits) is unchanged. Supporting a new
block feature (another MLP, a bias, an expert layout) means adding or changing its rows here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.model.spec import ModelSpec


class TpSplit(StrEnum):
    """How Megatron tensor parallelism splits a GEMM's weight over the tp ranks."""

    COLUMN = "column"  # output features split (q/k/v, gate/up, LM head): each rank computes d_out / tp
    ROW = "row"  # input features split (o, down): each rank reduces d_in / tp, then all-reduce
    NONE = "none"  # replicated (the MoE router)


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

    @property
    def params(self) -> int:
        if self.tied:
            return 0
        return self.count * self.experts * (self.d_in * self.d_out + (self.d_out if self.bias else 0))

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
    head_dim: int

    @property
    def flops_per_token_per_key(self) -> int:
        """Forward FLOPs per query token per key position: 2 q_size (QK^T) + 2 q_size (AV)."""
        return 2 * 2 * self.heads * self.head_dim


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
    cp_gathered: bool = False
    copies: int = 1
    # Held per routed token copy on the rank of its expert: under expert parallelism the busiest
    # rank holds more than the mean (planner/model/moe.py busiest_rank_load).
    routed: bool = False


@dataclass(frozen=True)
class Elementwise:
    """A memory-bound pass: ``elements`` read + written per token in the forward, in compute-dtype
    units, counted kernel by kernel as PyTorch eager runs it (backward about twice that)."""

    name: str
    part: Part
    elements: int
    params: int = 0  # norm weights (+ biases)
    tp_split: bool = True  # runs on 1/tp of the sequence (sequence parallelism) or of the heads/ffn
    copies: int = 1


@dataclass(frozen=True)
class BlockTable:
    """The operations of one decoder block, per token, in execution order."""

    gemms: tuple[Gemm, ...]
    attention: AttentionCore
    saved: tuple[Saved, ...]
    checkpoint: Saved  # what a checkpointed block keeps: its input
    elementwise: tuple[Elementwise, ...]

    def params(self, part: Part | None = None) -> int:
        gemms = sum(g.params for g in self.gemms if part in (None, g.part))
        return gemms + sum(e.params for e in self.elementwise if part in (None, e.part))

    @property
    def matmul_weights(self) -> int:
        """Weights one token multiplies with in one block (MoE: routed experts only)."""
        return sum(g.active_weights for g in self.gemms)

    @property
    def tp_reductions(self) -> int:
        """Row-parallel GEMMs (o, down): each ends in a tp all-reduce (reduce-scatter under
        sequence parallelism) forward, and its column-parallel partner's input gradient in one
        backward (Megatron's f/g operators)."""
        return sum(1 for g in self.gemms if g.split == TpSplit.ROW)

    def saved_in(self, part: Part) -> tuple[Saved, ...]:
        return tuple(t for t in self.saved if t.part == part)

    @property
    def saved_parts(self) -> tuple[Part, ...]:
        return tuple(dict.fromkeys(t.part for t in self.saved))

    @property
    def cp_gathered_elements(self) -> int:
        """Elements per token context parallelism exchanges (K and V)."""
        return sum(t.elements for t in self.saved if t.cp_gathered)

    @property
    def elementwise_elements(self) -> int:
        """Forward elementwise traffic per token of the tp-split passes (all of them today)."""
        assert all(e.tp_split for e in self.elementwise), "step_time assumes every pass is tp-split"
        return sum(e.elements * e.copies for e in self.elementwise)


@dataclass(frozen=True)
class RootTable:
    """What sits outside the blocks: token (+ position) embedding, final norm, LM head."""

    embedding_params: int
    final_norm: Elementwise
    final_norm_saved: tuple[Saved, ...]
    lm_head: Gemm


def _norm_params(model: ModelSpec) -> int:
    return model.hidden_size * (2 if model.norm_bias else 1)


def _eager_rmsnorm(model: ModelSpec, hf_modules: bool) -> bool:
    """HF's LlamaRMSNorm runs in Python (upcast, pow, mean, mul, downcast, weight mul); the native
    trainer and every LayerNorm use a fused kernel."""
    return hf_modules and model.norm == "rmsnorm"


def _norm_rows(model: ModelSpec, name: str, hf_modules: bool) -> tuple[Elementwise, tuple[Saved, ...]]:
    """A norm's elementwise pass and saved tensors.

    Eager RMSNorm moves ~18 h elements forward (fused ~4 h) and saves the fp32 upcast plus the
    normalised value (3 h compute-dtype units), a fused norm its input (h); both on 1/tp of the
    sequence under sequence parallelism. Its output, gathered for the next column-parallel
    linear, is saved whole (h).
    """
    h, eager = model.hidden_size, _eager_rmsnorm(model, hf_modules)
    pass_ = Elementwise(name, Part.NORMS, (18 if eager else 4) * h, params=_norm_params(model))
    saved = (
        Saved(f"{name} internals", Part.NORMS, (3 if eager else 1) * h),
        Saved(f"{name} output (gathered)", Part.NORMS, h, tp_split=False),
    )
    return pass_, saved


def block_table(model: ModelSpec, hf_modules: bool = False) -> BlockTable:
    """The operations of one decoder block of ``model``.

    ``hf_modules``: the block is Hugging Face's eager module (only its RMSNorm differs here).
    Covers Llama-style (SwiGLU, RMSNorm, RoPE, GQA), GPT-2/3-style (GeLU, LayerNorm, biases,
    learned positions) and MoE blocks (``num_experts`` MLPs, ``experts_per_token`` routed).
    """
    h, f = model.hidden_size, model.ffn_hidden_size
    q, kv = model.q_size, model.kv_size
    swiglu = model.mlp == "swiglu"
    ept = model.experts_per_token
    gemms = [
        # wq, wk, wv share their input and are timed as one GEMM of their total width.
        Gemm("qkv", Part.ATTENTION, h, q + 2 * kv, TpSplit.COLUMN, bias=model.qkv_bias),
        Gemm("o", Part.ATTENTION, q, h, TpSplit.ROW, bias=model.out_bias),
        # SwiGLU: gate (w1) and up (w3); GeLU: fc1.
        Gemm(
            "gate+up" if swiglu else "up",
            Part.MLP,
            h,
            f,
            TpSplit.COLUMN,
            2 if swiglu else 1,
            experts=model.num_experts,
            active=ept,
            bias=model.mlp_bias,
        ),
        Gemm("down", Part.MLP, f, h, TpSplit.ROW, experts=model.num_experts, active=ept, bias=model.mlp_bias),
    ]
    if model.is_moe:
        # The router's h x experts GEMM, timed like the others (a narrow one: eff(E)).
        gemms.append(Gemm("router", Part.ROUTER, h, model.num_experts, TpSplit.NONE))
    attn_norm, attn_norm_saved = _norm_rows(model, "attention norm", hf_modules)
    mlp_norm, mlp_norm_saved = _norm_rows(model, "mlp norm", hf_modules)
    saved = [
        # q, k after rotary, v (SDPA saves them; all-gather CP keeps the whole sequence's K, V),
        # the attention output (saved by SDPA and by o_proj) and flash attention's fp32 LSE.
        Saved("q", Part.ATTENTION, q),
        Saved("k", Part.ATTENTION, kv, cp_gathered=True),
        Saved("v", Part.ATTENTION, kv, cp_gathered=True),
        Saved("attention output", Part.ATTENTION, q),
        Saved("log-sum-exp", Part.ATTENTION, model.num_heads, fp32=True),
    ]
    if swiglu:
        names: tuple[str, ...] = ("gate (SiLU input)", "SiLU output", "up", "product (down input)")
    else:
        names = ("fc1 output (GeLU input)", "GeLU output (fc2 input)")
    moe = model.is_moe
    saved += [Saved(name, Part.MLP, f, copies=ept, routed=moe) for name in names]
    if moe:
        # trainer/moe.py: each routed copy's hidden state as dispatched (the gate/up input) and the
        # expert's output kept by the weighted combine; the router's fp32 softmax probabilities.
        saved += [
            Saved("dispatched tokens (expert input)", Part.MLP, h, copies=ept, routed=True),
            Saved("expert output (combine input)", Part.MLP, h, copies=ept, routed=True),
            Saved("router probabilities", Part.ROUTER, model.num_experts, fp32=True),
        ]
    saved += [*attn_norm_saved, *mlp_norm_saved]
    elementwise = [attn_norm, mlp_norm]
    if model.position == "rope":
        elementwise.append(Elementwise("rotary", Part.OTHER, 10 * (q + kv)))  # ~10 per q/k element
    # SiLU and product ~5 per ffn element, GeLU ~3; two residual adds ~3 h each.
    elementwise.append(Elementwise("activation", Part.MLP, (5 if swiglu else 3) * f, copies=ept))
    elementwise += [Elementwise(f"residual add {i}", Part.OTHER, 3 * h) for i in (1, 2)]
    if moe:
        # Permuting each routed copy into expert order and back (read + write h, twice), and the
        # weighted sum of the k expert outputs (~3 h per copy).
        elementwise.append(Elementwise("dispatch, combine", Part.ROUTER, 7 * h, copies=ept))
    return BlockTable(
        gemms=tuple(gemms),
        attention=AttentionCore(model.num_heads, model.num_kv_heads, model.dim_head),
        saved=tuple(saved),
        checkpoint=Saved("block input", Part.OTHER, h),
        elementwise=tuple(elementwise),
    )


def root_table(model: ModelSpec, hf_modules: bool = False) -> RootTable:
    """Embedding (+ learned positions, + BLOOM's embedding norm), final norm, LM head."""
    h, v = model.hidden_size, model.vocab_size
    embedding = v * h + (model.max_seq_len * h if model.position == "learned" else 0)
    embedding += _norm_params(model) if model.embedding_norm else 0
    final_norm, final_norm_saved = _norm_rows(model, "final norm", hf_modules)
    return RootTable(
        embedding_params=embedding,
        final_norm=final_norm,
        final_norm_saved=final_norm_saved,
        lm_head=Gemm("lm_head", Part.OTHER, h, v, TpSplit.COLUMN, tied=model.tied_embeddings),
    )
