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

import functools
from dataclasses import dataclass, replace

import numpy as np

from planner.model.block_rows import (
    AttentionCore,
    BlockTable,
    Elementwise,
    Gemm,
    Part,
    Recompute,
    RootTable,
    Saved,
    TpSplit,
)
from planner.model.shape import ModelShape

# GPT-OSS's clamped gated activation (``activation_clamp``): the gate clamped to <= limit and the
# linear half to +-limit, eagerly before the fused activation, then concatenated back (Megatron-
# Core d7288711 megatron/core/fusions/fused_bias_geglu.py l.424-431): read + write f per clamp and
# 2f for the cat forward (8 f), two clamp backwards and the gradient cat (~10 f): ~18 f over the
# three passes, 6 per ffn element in the table's forward units (backward twice the forward).
# Its own row, ``eager``: weighted_bias_quick_geglu_impl, which runs it, is plain Python; only
# the activation after it is compiled (``jit_fuser``, megatron/core/jit.py: torch.compile).
CLAMP_TRAFFIC = 6
# Biased experts' fc2 bias, added per expert with the routing probability (``_apply_bias``):
# ~6 h forward + ~8 h backward = ~14 h over the three passes, ~5 h in forward units; ``eager``,
# a Python loop of torch ops (moe/experts.py l.251-268 at d7288711). With fp32 probabilities:
# planner/model/moe.py ``EXPERT_BIAS_TRAFFIC_FP32_PROBS``.
EXPERT_BIAS_TRAFFIC = 5

# The one GEMM row that stands for wq, wk and wv (op_checkpoint splits it into its three matmuls).
QKV_GEMM = "qkv"


def _norm_params(model: ModelShape, width: int | None = None) -> int:
    return (width or model.hidden_size) * (2 if model.norm_bias else 1)


def _eager_rmsnorm(model: ModelShape, hf_modules: bool) -> bool:
    """HF's LlamaRMSNorm runs in Python (upcast, pow, mean, mul, downcast, weight mul); the native
    trainer and every LayerNorm use a fused kernel."""
    return hf_modules and model.norm == "rmsnorm"


def _norm_rows(
    model: ModelShape,
    name: str,
    hf_modules: bool,
    width: int | None = None,
    part: Part = Part.NORMS,
    recompute: Recompute | None = None,
) -> tuple[Elementwise, tuple[Saved, ...]]:
    """A norm's elementwise pass and saved tensors, ``width`` elements per token (hidden size).

    Eager RMSNorm moves ~18 elements per normalised element forward (fused ~4) and saves the
    fp32 upcast plus the normalised value (3 compute-dtype units), a fused norm its input (1);
    both on 1/tp of the sequence under sequence parallelism. Its output, gathered for the next
    column-parallel linear, is saved whole, unless the stack recomputes the norm (``recompute``:
    output-discarding, so the pass runs again and the input stays).
    """
    w, eager = width or model.hidden_size, _eager_rmsnorm(model, hf_modules)
    params = _norm_params(model, w)
    pass_ = Elementwise(name, part, (18 if eager else 4) * w, params=params, sequence_split=True, recompute=recompute)
    saved = (
        Saved(f"{name} internals", part, (3 if eager else 1) * w, sequence_split=True),
        Saved(f"{name} output (gathered)", part, w, tp_split=False, linear_input=True, recompute=recompute),
    )
    return pass_, saved


@dataclass(frozen=True)
class _Rows:
    """Rows of one share of the block (attention or MLP), in execution order."""

    gemms: tuple[Gemm, ...] = ()
    saved: tuple[Saved, ...] = ()
    elementwise: tuple[Elementwise, ...] = ()

    def __add__(self, other: _Rows) -> _Rows:
        return _Rows(self.gemms + other.gemms, self.saved + other.saved, self.elementwise + other.elementwise)


def _qk_norm_rows(model: ModelShape, hf_modules: bool) -> _Rows:
    """RMSNorm of q and k (Qwen3/Gemma 3 per head: head_dim weights each; OLMo 2 over the
    whole projection: q_size + kv_size weights). The pass covers every q and k element."""
    if model.qk_norm == "none":
        return _Rows()
    q, kv = model.q_size, model.kv_size
    weights = 2 * model.dim_head if model.qk_norm == "head" else q + kv
    eager = _eager_rmsnorm(model, hf_modules)
    return _Rows(
        saved=(Saved("q/k norm inputs", Part.ATTENTION, (3 if eager else 1) * (q + kv)),),
        elementwise=(Elementwise("q/k norm", Part.ATTENTION, (18 if eager else 4) * (q + kv), params=weights),),
    )


def _latent_attention_rows(model: ModelShape, hf_modules: bool) -> _Rows:
    """DeepSeek MLA. The down projections are replicated under tensor parallelism (as in
    Megatron-Core's MLA), the up projections column-parallel. Saved for backward besides q, k, v:
    the normalised query latent and the key/value latent (kv_lora_rank + the shared rotary key:
    what an inference KV cache keeps per token). Megatron-Core's ``mla_up_proj`` recompute
    (``Recompute.MLA_UP_PROJ``: its latent norms are fused into the up projections) drops q, k,
    v and the normalised latents and runs the up projections and rotary again in backward
    (megatron/core/transformer/multi_latent_attention.py ``qkv_up_checkpoint``)."""
    assert model.mla is not None
    h, heads, mla, up = model.hidden_size, model.num_heads, model.mla, Recompute.MLA_UP_PROJ
    qk, nope = model.dim_head, model.dim_head - mla.qk_rope_head_dim
    rows = _Rows()
    if mla.q_lora_rank is None:
        rows += _Rows(gemms=(Gemm("q", Part.ATTENTION, h, heads * qk, TpSplit.COLUMN, recompute=up),))
    else:
        norm, norm_saved = _norm_rows(model, "q latent norm", hf_modules, mla.q_lora_rank, Part.ATTENTION, up)
        rows += _Rows(
            gemms=(
                Gemm("q down", Part.ATTENTION, h, mla.q_lora_rank, TpSplit.NONE),
                Gemm("q up", Part.ATTENTION, mla.q_lora_rank, heads * qk, TpSplit.COLUMN, recompute=up),
            ),
            saved=norm_saved,
            elementwise=(norm,),
        )
    latent = mla.kv_lora_rank + mla.qk_rope_head_dim
    norm, norm_saved = _norm_rows(model, "kv latent norm", hf_modules, mla.kv_lora_rank, Part.ATTENTION, up)
    kv_up = heads * (nope + mla.v_head_dim)
    return rows + _Rows(
        gemms=(
            Gemm("kv down", Part.ATTENTION, h, latent, TpSplit.NONE),
            Gemm("kv up", Part.ATTENTION, mla.kv_lora_rank, kv_up, TpSplit.COLUMN, recompute=up),
            Gemm("o", Part.ATTENTION, heads * mla.v_head_dim, h, TpSplit.ROW),
        ),
        saved=(
            Saved("kv latent", Part.ATTENTION, latent, tp_split=False),
            *norm_saved,
            Saved("q", Part.ATTENTION, heads * qk, recompute=up),
            Saved("k", Part.ATTENTION, heads * qk, cp_gathered=True, recompute=up),
            Saved("v", Part.ATTENTION, heads * mla.v_head_dim, cp_gathered=True, recompute=up),
            Saved("attention output", Part.ATTENTION, heads * mla.v_head_dim),
            Saved("log-sum-exp", Part.ATTENTION, heads, fp32=True),
        ),
        elementwise=(
            norm,
            Elementwise("rotary", Part.OTHER, 10 * (heads + 1) * mla.qk_rope_head_dim, recompute=up),
        ),
    )


def _attention_rows(model: ModelShape, hf_modules: bool) -> _Rows:
    """Multi-head / grouped-query attention, or MLA."""
    if model.mla is not None:
        return _latent_attention_rows(model, hf_modules)
    h, q, kv = model.hidden_size, model.q_size, model.kv_size
    gated = model.attention_output_gate
    # wq, wk, wv share their input and are timed as one GEMM of their total width; then AFMoE's gate
    rows = _Rows(gemms=(Gemm(QKV_GEMM, Part.ATTENTION, h, q + 2 * kv, TpSplit.COLUMN, bias=model.qkv_bias),))
    rows += _output_gate_rows(model) + _Rows(
        gemms=(Gemm("o", Part.ATTENTION, q, h, TpSplit.ROW, bias=model.out_bias),),
        # q, k after rotary, v (SDPA saves them; all-gather CP keeps the whole sequence's K, V),
        # the attention output (saved by SDPA and by o_proj, or by the gate's product), the fp32 LSE.
        saved=(
            Saved("q", Part.ATTENTION, q),
            Saved("k", Part.ATTENTION, kv, cp_gathered=True),
            Saved("v", Part.ATTENTION, kv, cp_gathered=True),
            Saved("attention output", Part.ATTENTION, q, shared_linear_input=not gated),
            Saved("log-sum-exp", Part.ATTENTION, model.num_heads, fp32=True),
        ),
    )
    rows += _qk_norm_rows(model, hf_modules)
    if model.position == "rope":
        rows += _rotary_rows(model)
    if model.attention_sinks:
        # GPT-OSS: one learnt logit per head joins each query's softmax (its denominator only);
        # the kernel folds it into the softmax, no pass of its own.
        rows += _Rows(elementwise=(Elementwise("attention sinks", Part.ATTENTION, 0, params=model.num_heads),))
    return rows


def _output_gate_rows(model: ModelShape) -> _Rows:
    """AFMoE's output gate (transformers' AfmoeAttention): its projection (hidden -> heads x
    head_dim, no bias, column-parallel like q) on the block's normed input; its eager sigmoid (read
    + write) and product with the attention output (two reads, one write), 5 elements moved per
    gated element forward. Backward keeps the sigmoid (for both gradients, with the attention
    output already kept) and the gated product, o_proj's input."""
    if not model.attention_output_gate:
        return _Rows()
    q = model.q_size
    return _Rows(
        gemms=(Gemm("attention gate", Part.ATTENTION, model.hidden_size, q, TpSplit.COLUMN),),
        elementwise=(Elementwise("attention output gate", Part.ATTENTION, 5 * q),),
        saved=(
            Saved("attention gate (sigmoid)", Part.ATTENTION, q),
            Saved("gated attention output", Part.ATTENTION, q, linear_input=True),
        ),
    )


def _rotary_rows(model: ModelShape) -> _Rows:
    """RoPE, ~10 elements moved per rotated q/k element. Partial rotary (Nemotron's
    ``partial_rotary_factor``) rotates ``rotary_dim`` of each head's channels, then concatenates
    them with the rest: one more read + write of every q/k element."""
    heads = model.num_heads + model.num_kv_heads
    rotated = 10 * heads * model.rotary_dim
    split = 2 * heads * model.dim_head if model.rotary_dim < model.dim_head else 0
    eager = model.rope_attention_factor != 1.0  # YaRN's factor: no fused RoPE (ModelShape)
    return _Rows(elementwise=(Elementwise("rotary", Part.OTHER, rotated + split, eager=eager),))


def _mlp_rows(
    model: ModelShape, name: str, width: int, experts: int = 1, active: int = 1, routed: bool = False
) -> _Rows:
    """One (set of) MLP(s): gated (SwiGLU/GeGLU: gate and up, then down) or two matrices (up,
    down) with GeLU or squared ReLU (Nemotron's relu2) between them.
    ``experts`` copies stored, ``active`` of them run per token; ``routed``: their saved tensors
    sit on the rank of the token's expert (``Saved.routed``). Phi-3's fused gate/up is one
    GEMM twice as wide (same parameters and FLOPs). ``name`` prefixes the rows (experts)."""
    h, gated, prefix = model.hidden_size, model.mlp in ("swiglu", "geglu"), f"{name} " if name else ""
    fused = gated and model.fused_projections
    up = Gemm(
        f"{prefix}gate+up" if gated else f"{prefix}up",
        Part.MLP,
        h,
        2 * width if fused else width,
        TpSplit.COLUMN,
        2 if gated and not fused else 1,
        experts=experts,
        active=active,
        bias=model.mlp_bias,
    )
    down = Gemm(f"{prefix}down", Part.MLP, width, h, TpSplit.ROW, experts=experts, active=active, bias=model.mlp_bias)
    act = "SiLU" if model.mlp == "swiglu" else "GeLU"
    if gated:
        names: tuple[str, ...] = (f"gate ({act} input)", f"{act} output", "up", "product (down input)")
        traffic = 5  # the gated activation and the product, ~5 per ffn element
    elif model.mlp == "relu2":
        # relu then square, two eager kernels (read + write each): relu's output, which both
        # backward passes read, and the square (the down input) are kept.
        names, traffic = ("ReLU output (square input)", "squared-ReLU output (fc2 input)"), 4
    else:
        names, traffic = ("fc1 output (GeLU input)", "GeLU output (fc2 input)"), 3
    recompute = Recompute.MOE_ACT if routed else None
    passes: tuple[Elementwise, ...] = (
        Elementwise(f"{prefix}activation", Part.MLP, traffic * width, copies=active, recompute=recompute),
    )
    if gated and model.activation_clamp is not None:  # its own, eager row (CLAMP_TRAFFIC)
        passes += (replace(passes[0], name=f"{prefix}activation clamp", elements=CLAMP_TRAFFIC * width, eager=True),)
    return _Rows(
        gemms=(up, down),
        saved=tuple(
            Saved(
                f"{prefix}{n}",
                Part.MLP,
                width,
                copies=active,
                routed=routed,
                linear_input=n.endswith(("(down input)", "(fc2 input)")),
                fused_glu_output=gated and n == f"{act} output",
            )
            for n in names
        ),
        elementwise=passes,
    )


def _feed_forward_rows(model: ModelShape, dense: bool, hf_modules: bool) -> _Rows:
    """A dense MLP, or routed experts + shared experts + router (MoE blocks). On Hugging Face's
    modules of a family that runs every expert on every token (``hf_experts_dense``) each token's
    copies are all ``num_experts``: their saved tensors and elementwise work (the GEMMs' time:
    ``moe.routed_gemm_time_factor``)."""
    if not model.is_moe or dense:
        width = (model.dense_ffn_hidden_size or model.ffn_hidden_size) if dense else model.ffn_hidden_size
        return _mlp_rows(model, "", width)
    f, h = model.ffn_hidden_size, model.hidden_size
    ept = model.num_experts if hf_modules and model.hf_experts_dense else model.experts_per_token
    rows = _mlp_rows(model, "experts", f, model.num_experts, ept, routed=True)
    if model.shared_experts:
        rows += _mlp_rows(model, "shared experts", f * model.shared_experts)
    if model.shared_experts and model.shared_expert_gate:
        # Qwen2-MoE: sigmoid(h -> 1) scales the shared expert's output (read + write h; the
        # output is kept for the gate's gradient).
        rows += _Rows(
            gemms=(Gemm("shared expert gate", Part.ROUTER, h, 1, TpSplit.NONE),),
            saved=(Saved("shared expert output (gate input)", Part.MLP, h),),
            elementwise=(Elementwise("shared expert gate", Part.ROUTER, 2 * h),),
        )
    if model.mlp_bias:
        # GPT-OSS's biased experts: Megatron-Core adds fc2's bias scaled by each copy's probability
        # in a Python loop over the local experts (moe/experts.py ``_apply_bias``: split, t + b p
        # per expert, cat), ~6 h forward and ~8 h backward (the bias and probability gradients).
        bias_loop = Elementwise("experts' output bias", Part.MLP, EXPERT_BIAS_TRAFFIC * h, copies=ept, eager=True)
        rows += _Rows(elementwise=(bias_loop,))
    return rows + _Rows(
        # The router's h x experts GEMM, timed like the others (a narrow one: eff(E)).
        gemms=(Gemm("router", Part.ROUTER, h, model.num_experts, TpSplit.NONE, bias=model.router_bias),),
        # trainer/moe.py: each routed copy's hidden state as dispatched (the gate/up input) and the
        # expert's output kept by the weighted combine; the router's fp32 softmax probabilities.
        # (Llama 4's HF layer keeps instead each token repeated per expert and that copy scaled by
        # its score, the bmm's input: as many h-wide tensors, E copies each; the bytes agree within
        # 0.3 %, tests/trainer/test_llama4_experts_saved.py.)
        saved=(
            Saved("dispatched tokens (expert input)", Part.MLP, h, copies=ept, routed=True),
            Saved("expert output (combine input)", Part.MLP, h, copies=ept, routed=True),
            Saved("router probabilities", Part.ROUTER, model.num_experts, fp32=True),
        ),
        # Permuting each routed copy into expert order and back (read + write h, twice), and the
        # weighted sum of the k expert outputs (~3 h per copy).
        elementwise=(Elementwise("dispatch, combine", Part.ROUTER, 7 * h, copies=ept),),
    )


def _block_norm_rows(model: ModelShape, hf_modules: bool) -> _Rows:
    """Pre-norm and post-norm blocks have two norms, Gemma's sandwich four."""
    names = {
        "pre": ("attention norm", "mlp norm"),
        "post": ("post-attention norm", "post-mlp norm"),
        "sandwich": ("attention norm", "post-attention norm", "mlp norm", "post-mlp norm"),
    }[model.norm_placement]
    rows = _Rows()
    for name in names:
        # Megatron-Core's "layernorm" recompute covers input_layernorm and pre_mlp_layernorm.
        recompute = Recompute.LAYERNORM if name in ("attention norm", "mlp norm") else None
        pass_, saved = _norm_rows(model, name, hf_modules, recompute=recompute)
        rows += _Rows(saved=saved, elementwise=(pass_,))
    return rows


def block_table(model: ModelShape, hf_modules: bool = False, dense: bool = False) -> BlockTable:
    """``_block_table``, kept per model: scoring asks for it a thousand times a plan (issue 28)."""
    try:
        return _cached_block_table(model, hf_modules, dense)
    except TypeError:  # a model that does not hash (an unhashable field): built each time
        return _block_table(model, hf_modules, dense)


def root_table(model: ModelShape, hf_modules: bool = False) -> RootTable:
    """``_root_table``, kept per model as ``block_table``."""
    try:
        return _cached_root_table(model, hf_modules)
    except TypeError:
        return _root_table(model, hf_modules)


def _block_table(model: ModelShape, hf_modules: bool = False, dense: bool = False) -> BlockTable:
    """The operations of one decoder block of ``model``.

    ``hf_modules``: the block is Hugging Face's eager module (its RMSNorm differs here, and Llama
    4's experts: ``ModelShape.hf_experts_dense``).
    ``dense``: one of a MoE model's dense blocks (DeepSeek's first ``dense_layers``); otherwise
    a MoE model's table is its expert block. Covers Llama-style (SwiGLU, RMSNorm, RoPE, GQA,
    q/k norms, post or sandwich norms), GPT-2/3-style (GeLU, LayerNorm, biases, learned
    positions), Nemotron (squared ReLU, partial rotary), MLA and MoE blocks (routed + shared
    experts, a shared-expert gate, router bias, attention sinks).
    """
    h = model.hidden_size
    attention, mlp = _attention_rows(model, hf_modules), _feed_forward_rows(model, dense, hf_modules)
    norms = _block_norm_rows(model, hf_modules)
    # Two residual adds ~3 h each (read two, write one); a parallel block's
    # ``x + attention + mlp`` is two such adds as PyTorch eager runs it too.
    residual = _Rows(
        elementwise=tuple(Elementwise(f"residual add {i}", Part.OTHER, 3 * h, sequence_split=True) for i in (1, 2))
    )
    rows = attention + mlp + norms + residual
    saved = attention.saved + mlp.saved + norms.saved
    head_dim = model.dim_head
    return BlockTable(
        gemms=rows.gemms,
        attention=AttentionCore(
            model.num_heads, model.num_kv_heads, head_dim, model.mla.v_head_dim if model.mla else head_dim
        ),
        saved=saved,
        checkpoint=Saved("block input", Part.OTHER, h, sequence_split=True),
        elementwise=(*norms.elementwise, *attention.elementwise, *mlp.elementwise, *residual.elementwise),
        parallel=model.parallel_block,
    )


def layer_tables(model: ModelShape, hf_modules: bool = False) -> tuple[tuple[int, BlockTable], ...]:
    """(number of blocks, their table) for each kind of block the model has."""
    if not model.dense_layers:
        return ((model.num_layers, block_table(model, hf_modules)),)
    return (
        (model.dense_layers, block_table(model, hf_modules, dense=True)),
        (model.num_layers - model.dense_layers, block_table(model, hf_modules)),
    )


def mtp_module_params(model: ModelShape) -> int:
    """One DeepSeek-V3 multi-token-prediction module (DeepSeek-V3 report, Sec. 2.2): norms of
    the hidden state and of the next token's embedding, their 2h -> h projection, one block like
    the model's last, and a final norm; embedding and output head are shared with the model."""
    h = model.hidden_size
    return 3 * _norm_params(model) + 2 * h * h + block_table(model).params()


def _root_table(model: ModelShape, hf_modules: bool = False) -> RootTable:
    """Embedding (+ learned positions, + BLOOM's embedding norm), final norm, LM head, and the
    per-token passes around them (Gemma's embedding scaling, the logit soft-cap)."""
    h, v = model.hidden_size, model.vocab_size
    embedding = v * h + (model.max_seq_len * h if model.position == "learned" else 0)
    embedding += _norm_params(model) if model.embedding_norm else 0
    final_norm, final_norm_saved = _norm_rows(model, "final norm", hf_modules)
    elementwise = []
    if model.embedding_scale:
        elementwise.append(Elementwise("embedding scale", Part.OTHER, 2 * h))
    if model.final_softcap is not None:
        elementwise.append(Elementwise("logit soft-cap", Part.OTHER, 3 * 2 * v))  # divide, tanh, multiply
    return RootTable(
        embedding_params=embedding,
        final_norm=final_norm,
        final_norm_saved=final_norm_saved,
        lm_head=Gemm("lm_head", Part.OTHER, h, v, TpSplit.COLUMN, tied=model.tied_embeddings),
        elementwise=tuple(elementwise),
    )


def grown_position_params(model: ModelShape, seq_len):
    """Learned-position parameters the trainer adds past the table's ``max_seq_len`` rows: it
    builds max(max_seq_len, seq_len) rows (trainer/model.py, trainer/hf_model.py), the new ones
    untrained (``context_extension_warning``). 0 for other position schemes (a number or an
    array over ``seq_len``)."""
    if model.position != "learned":
        return np.zeros_like(seq_len, dtype=float)
    return np.maximum(np.asarray(seq_len, dtype=float) - model.max_seq_len, 0.0) * model.hidden_size


# lru_cache is thread-safe (the app's threads); the tables are frozen dataclasses.
_cached_block_table = functools.lru_cache(maxsize=256)(_block_table)
_cached_root_table = functools.lru_cache(maxsize=256)(_root_table)
