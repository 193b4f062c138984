"""trainplan's native decoder: the Llama family (RMSNorm, RoPE, GQA, SwiGLU) with its close
relatives (Qwen3's per-head q/k norms; OLMo 2's post-norm blocks and whole-projection q/k norms;
Phi-3, whose fused qkv and gate/up weights are built as separate projections; a sliding window
on every layer for Mistral v0.1 and Phi-3), Mixtral-style mixture-of-experts blocks
(trainer/moe.py), DeepSeek-V3 (multi-head latent attention, its first dense blocks, then MoE
blocks with shared experts and the sigmoid router; the MTP modules are not built or trained)
and the GPT-2/3 family (LayerNorm, learned positions, GeLU MLP, biases), with
SDPA attention.

The model is built on the meta device, parallelised (TP, pipeline split, FSDP) and only
then materialised (``to_empty``) and initialised shard by shard
(``trainer.parallel.init_parameters`` with :func:`native_init_rule`), so no rank ever
holds all the weights. Blocks live in an ``nn.ModuleDict`` keyed by their global index:
a pipeline stage deletes the blocks it does not own and the remaining parameter names
(``layers.7.attention.wq.weight``) stay the same on every layout, which keeps
checkpoints layout-independent. The vocabulary is padded to a multiple of
``VOCAB_PAD_MULTIPLE`` (planner/model/structure.py; Megatron-LM does the same), so tensor
parallelism can split GPT-3's 50257 tokens; the padding rows never see a label.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from planner.model.shape import GroupRouting
from planner.model.spec import ModelSpec
from planner.model.structure import native_unsupported, padded_vocab_size
from trainer.context_parallel import ContextParallel, context_parallel_attention
from trainer.moe import MoE, reset_router_bias
from trainer.parallel import InitFn
from trainer.sliding_window import sliding_window_attention

ROPE_THETA = 10_000.0
NORM_EPS = 1e-5


@dataclass(frozen=True)
class ModelArgs:
    num_layers: int
    hidden_size: int
    ffn_hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int  # padded (padded_vocab_size)
    seq_len: int  # RoPE table length: the training sequence length
    max_seq_len: int  # learned position table length: the model's context
    tied_embeddings: bool
    qkv_bias: bool
    out_bias: bool = False
    mlp: str = "swiglu"  # swiglu | gelu
    mlp_bias: bool = False
    norm: str = "rmsnorm"  # rmsnorm | layernorm
    norm_bias: bool = False
    position: str = "rope"  # rope | learned
    num_experts: int = 1  # > 1: routed SwiGLU experts (trainer/moe.py)
    experts_per_token: int = 1
    qk_norm: str = "none"  # none | head (RMSNorm over head_dim) | full (over the q / k projections)
    norm_placement: str = "pre"  # pre (norm the sub-layer input) | post (norm its output)
    sliding_window: int | None = None  # every layer attends to the last ``sliding_window`` keys
    rope_theta: float = ROPE_THETA
    norm_eps: float = NORM_EPS
    # DeepSeek-V3: MLA (kv_lora_rank > 0; head_dim = nope + rope), the first dense_layers blocks
    # with a dense_ffn_hidden_size MLP, shared experts, the sigmoid router.
    q_lora_rank: int | None = None
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    dense_layers: int = 0
    dense_ffn_hidden_size: int | None = None
    shared_experts: int = 0
    router: str = "softmax"  # softmax (Mixtral, Qwen3-MoE) | sigmoid (DeepSeek-V3)
    moe_renormalize: bool = True  # top-k weights renormalised (ModelSpec.moe_renormalize)
    routing: GroupRouting | None = None  # the sigmoid router's groups and scale (ModelSpec.group_routing)

    @classmethod
    def from_spec(cls, spec: ModelSpec, seq_len: int) -> ModelArgs:
        """Reject what the native model cannot express; ``--impl hf`` runs the rest."""
        unsupported = native_unsupported(spec)
        if unsupported:
            raise ValueError(
                f"model {spec.name!r}: the native trainer cannot build {', '.join(unsupported)}; use impl 'hf'"
            )
        return cls(
            num_layers=spec.num_layers,
            hidden_size=spec.hidden_size,
            ffn_hidden_size=spec.ffn_hidden_size,
            num_heads=spec.num_heads,
            num_kv_heads=spec.num_kv_heads,
            head_dim=spec.dim_head,
            vocab_size=padded_vocab_size(spec.vocab_size),
            seq_len=seq_len,
            max_seq_len=max(spec.max_seq_len, seq_len),
            tied_embeddings=spec.tied_embeddings,
            qkv_bias=spec.qkv_bias,
            out_bias=spec.out_bias,
            mlp=spec.mlp,
            mlp_bias=spec.mlp_bias,
            norm=spec.norm,
            norm_bias=spec.norm_bias,
            position=spec.position,
            num_experts=spec.num_experts,
            experts_per_token=spec.experts_per_token,
            qk_norm=spec.qk_norm,
            norm_placement=spec.norm_placement,
            # native_unsupported refuses windows on some layers only (Gemma).
            sliding_window=spec.sliding_window if spec.sliding_layers else None,
            rope_theta=spec.rope_theta or ROPE_THETA,
            norm_eps=spec.norm_eps or NORM_EPS,
            **_deepseek_fields(spec),
        )


def _deepseek_fields(spec: ModelSpec) -> dict:
    """The MLA and MoE-block fields of ``ModelArgs`` (dense first blocks, shared experts and the
    router of DeepSeek-V3; the softmax router's renormalisation of the others)."""
    fields = dict(
        dense_layers=spec.dense_layers,
        dense_ffn_hidden_size=spec.dense_ffn_hidden_size,
        shared_experts=spec.shared_experts,
        router="sigmoid" if spec.family == "deepseek_v3" else "softmax",
        moe_renormalize=spec.moe_renormalize,
        routing=spec.group_routing if spec.family == "deepseek_v3" else None,
    )
    if spec.mla is None:
        return fields
    return fields | dict(
        q_lora_rank=spec.mla.q_lora_rank,
        kv_lora_rank=spec.mla.kv_lora_rank,
        qk_rope_head_dim=spec.mla.qk_rope_head_dim,
        v_head_dim=spec.mla.v_head_dim,
    )


def rope_tables(
    head_dim: int, seq_len: int, device: torch.device | None = None, theta: float = ROPE_THETA
) -> torch.Tensor:
    """``[seq, head_dim]``: cos in the first half of the last dim, sin in the second."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    return torch.cat([angles.cos(), angles.sin()], dim=-1)


def apply_rope(x: torch.Tensor, rope: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` ``[batch, seq, heads, head_dim]`` (half-split convention, as in HF Llama)."""
    seq = x.shape[1]
    cos, sin = rope[:seq].to(x.dtype).chunk(2, dim=-1)
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    first, second = x.chunk(2, dim=-1)
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = NORM_EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The fused kernel accumulates in fp32 and saves only its input for backward
        # (the planner's activation model assumes a fused norm for the native trainer).
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def attention_core(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    rope: torch.Tensor | None,
    context_parallel: ContextParallel | None = None,
    window: int | None = None,
) -> torch.Tensor:
    """RoPE (unless positions are learned) + causal SDPA on ``[batch, seq, heads, head_dim]``
    (this rank's tokens under cp), within ``window`` keys when the sequence is longer."""
    if rope is not None:
        q, k = apply_rope(q, rope), apply_rope(k, rope)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    # enable_gqa: the kernel reads each kv head for its query heads, so K and V are saved
    # for backward with kv_heads only (what the planner's activation model counts).
    gqa = k.shape[1] != q.shape[1]
    if context_parallel is not None:
        # planner/model/structure.py refuses cp with a window shorter than the sequence.
        out = context_parallel_attention(q, k, v, context_parallel)
    elif window is not None and q.shape[2] > window:
        out = sliding_window_attention(q, k, v, window, gqa)
    else:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
    return out.transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.head_dim, self.window = args.head_dim, args.sliding_window
        q_size, kv_size = args.num_heads * args.head_dim, args.num_kv_heads * args.head_dim
        self.wq = nn.Linear(args.hidden_size, q_size, bias=args.qkv_bias)
        self.wk = nn.Linear(args.hidden_size, kv_size, bias=args.qkv_bias)
        self.wv = nn.Linear(args.hidden_size, kv_size, bias=args.qkv_bias)
        self.wo = nn.Linear(q_size, args.hidden_size, bias=args.out_bias)
        # q/k RMSNorm before RoPE: per head (Qwen3) or over the whole projection (OLMo 2).
        self.q_norm: RMSNorm | None = None
        self.k_norm: RMSNorm | None = None
        if args.qk_norm != "none":
            per_head = args.qk_norm == "head"
            self.q_norm = RMSNorm(args.head_dim if per_head else q_size, args.norm_eps)
            self.k_norm = RMSNorm(args.head_dim if per_head else kv_size, args.norm_eps)
        self.per_head_norm = args.qk_norm == "head"
        self.context_parallel: ContextParallel | None = None  # set by apply_context_parallel

    def _project(self, x: torch.Tensor, linear: nn.Linear, norm: RMSNorm | None) -> torch.Tensor:
        batch, seq, _ = x.shape
        out = linear(x)
        if norm is not None and not self.per_head_norm:
            out = norm(out)
        # -1 heads: under tensor parallelism each rank holds heads/tp of them.
        out = out.view(batch, seq, -1, self.head_dim)
        return norm(out) if norm is not None and self.per_head_norm else out

    def forward(self, x: torch.Tensor, rope: torch.Tensor | None) -> torch.Tensor:
        batch, seq, _ = x.shape
        q, k = self._project(x, self.wq, self.q_norm), self._project(x, self.wk, self.k_norm)
        v = self._project(x, self.wv, None)
        out = attention_core(q, k, v, rope, self.context_parallel, self.window)
        return self.wo(out.reshape(batch, seq, -1))


# transformers' DeepseekV3RMSNorm default: the q and kv latent norms do not take rms_norm_eps.
LATENT_NORM_EPS = 1e-6


def deinterleave(x: torch.Tensor) -> torch.Tensor:
    """DeepSeek's rotary pairs are adjacent (x0, x1), (x2, x3), ...: evens then odds, so the
    half-split rotation applies (transformers' ``apply_rotary_pos_emb_interleave``, its default
    ``rope_interleave``)."""
    return torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1)


class LatentAttention(nn.Module):
    """DeepSeek's multi-head latent attention (DeepSeek-V2 paper, sec. 2.1; transformers'
    ``DeepseekV3Attention``): queries through a normed ``q_lora_rank`` latent (or one projection),
    keys and values up-projected from a normed ``kv_lora_rank`` latent, each head's key ending in
    one rotary key shared by all heads. Softmax scale 1/sqrt(nope + rope), SDPA's default for the
    192-wide q/k heads (no YaRN: the planned pre-training runs at the RoPE base length)."""

    def __init__(self, args: ModelArgs):
        super().__init__()
        self.heads, self.rope_dim, self.v_dim = args.num_heads, args.qk_rope_head_dim, args.v_head_dim
        self.nope_dim, self.kv_rank = args.head_dim - args.qk_rope_head_dim, args.kv_lora_rank
        h, q_size = args.hidden_size, args.num_heads * args.head_dim
        self.wq: nn.Linear | None = None
        self.wq_a: nn.Linear | None = None
        self.q_norm: RMSNorm | None = None
        self.wq_b: nn.Linear | None = None
        if args.q_lora_rank is None:
            self.wq = nn.Linear(h, q_size, bias=False)
        else:
            self.wq_a = nn.Linear(h, args.q_lora_rank, bias=False)
            self.q_norm = RMSNorm(args.q_lora_rank, LATENT_NORM_EPS)
            self.wq_b = nn.Linear(args.q_lora_rank, q_size, bias=False)
        self.wkv_a = nn.Linear(h, args.kv_lora_rank + args.qk_rope_head_dim, bias=False)
        self.kv_norm = RMSNorm(args.kv_lora_rank, LATENT_NORM_EPS)
        self.wkv_b = nn.Linear(args.kv_lora_rank, args.num_heads * (self.nope_dim + args.v_head_dim), bias=False)
        self.wo = nn.Linear(args.num_heads * args.v_head_dim, h, bias=False)
        self.context_parallel: ContextParallel | None = None  # set by apply_context_parallel

    def _queries(self, x: torch.Tensor) -> torch.Tensor:
        if self.wq is not None:
            return self.wq(x)
        assert self.wq_a is not None and self.q_norm is not None and self.wq_b is not None
        return self.wq_b(self.q_norm(self.wq_a(x)))

    def forward(self, x: torch.Tensor, rope: torch.Tensor | None) -> torch.Tensor:
        assert rope is not None, "MLA has rotary positions"
        batch, seq, _ = x.shape
        q = self._queries(x).view(batch, seq, self.heads, self.nope_dim + self.rope_dim)
        q_nope, q_rot = q.split([self.nope_dim, self.rope_dim], dim=-1)
        latent, k_rot = self.wkv_a(x).split([self.kv_rank, self.rope_dim], dim=-1)
        kv = self.wkv_b(self.kv_norm(latent)).view(batch, seq, self.heads, self.nope_dim + self.v_dim)
        k_nope, v = kv.split([self.nope_dim, self.v_dim], dim=-1)
        q_rot = apply_rope(deinterleave(q_rot), rope)
        k_rot = apply_rope(deinterleave(k_rot).unsqueeze(2), rope).expand(-1, -1, self.heads, -1)
        q, k = torch.cat([q_nope, q_rot], dim=-1), torch.cat([k_nope, k_rot], dim=-1)
        out = attention_core(q, k, v, None, self.context_parallel)
        return self.wo(out.reshape(batch, seq, -1))


class FeedForward(nn.Module):
    """SwiGLU (w1 gate, w3 up, w2 down) or GeLU (w1 up, w2 down; GPT-2's tanh approximation),
    ``width`` wide (default ``ffn_hidden_size``)."""

    def __init__(self, args: ModelArgs, width: int | None = None):
        super().__init__()
        self.swiglu = args.mlp == "swiglu"
        width = width or args.ffn_hidden_size
        self.w1 = nn.Linear(args.hidden_size, width, bias=args.mlp_bias)
        if self.swiglu:
            self.w3 = nn.Linear(args.hidden_size, width, bias=args.mlp_bias)
        self.w2 = nn.Linear(width, args.hidden_size, bias=args.mlp_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.swiglu:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.w2(F.gelu(self.w1(x), approximate="tanh"))


def build_norm(args: ModelArgs) -> nn.Module:
    if args.norm == "layernorm":
        return nn.LayerNorm(args.hidden_size, eps=args.norm_eps, bias=args.norm_bias)
    return RMSNorm(args.hidden_size, args.norm_eps)


class TransformerBlock(nn.Module):
    """Pre-norm (norm each sub-layer's input) or post-norm (OLMo 2: norm its output before the
    residual add); the norms keep their names either way, so TP plans and checkpoints match."""

    def __init__(self, args: ModelArgs, index: int = 0):
        super().__init__()
        self.post_norm = args.norm_placement == "post"
        self.attention_norm = build_norm(args)
        self.attention: nn.Module = LatentAttention(args) if args.kv_lora_rank else Attention(args)
        self.ffn_norm = build_norm(args)
        self.feed_forward: nn.Module = (
            MoE(
                args.hidden_size,
                args.ffn_hidden_size,
                args.num_experts,
                args.experts_per_token,
                shared_experts=args.shared_experts,
                router=args.router,
                renormalize=args.moe_renormalize,
                routing=args.routing,
            )
            if args.num_experts > 1 and index >= args.dense_layers  # DeepSeek: the first k are dense
            else FeedForward(args, args.dense_ffn_hidden_size if args.num_experts > 1 else None)
        )

    def forward(self, x: torch.Tensor, rope: torch.Tensor | None) -> torch.Tensor:
        if self.post_norm:
            h = x + self.attention_norm(self.attention(x, rope))
            return h + self.ffn_norm(self.feed_forward(h))
        h = x + self.attention(self.attention_norm(x), rope)
        return h + self.feed_forward(self.ffn_norm(h))


class PositionEmbedding(nn.Module):
    """Learned absolute positions (GPT-2/3), added to the token embeddings of stage 0."""

    def __init__(self, max_seq_len: int, hidden_size: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(max_seq_len, hidden_size))

    def forward(self, h: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return h + F.embedding(positions, self.weight)


class Transformer(nn.Module):
    """Decoder-only LM. On a pipeline stage some of embedding/norm/output are ``None``."""

    def __init__(self, args: ModelArgs, layer_ids: Iterable[int] | None = None):
        super().__init__()
        self.args = args
        self.tok_embeddings: nn.Embedding | None = nn.Embedding(args.vocab_size, args.hidden_size)
        self.pos_embeddings: PositionEmbedding | None = (
            PositionEmbedding(args.max_seq_len, args.hidden_size) if args.position == "learned" else None
        )
        ids = range(args.num_layers) if layer_ids is None else layer_ids  # a pipeline stage: its blocks only
        self.layers = nn.ModuleDict({str(i): TransformerBlock(args, i) for i in ids})
        self.norm: nn.Module | None = build_norm(args)
        self.output: nn.Linear | None = nn.Linear(args.hidden_size, args.vocab_size, bias=False)
        if args.tied_embeddings:
            self.output.weight = self.tok_embeddings.weight
        # Not persistent: recomputed by init_buffers, never checkpointed.
        self.register_buffer("rope", self._rope_table(), persistent=False)
        self.context_parallel: ContextParallel | None = None  # set by apply_context_parallel
        # Set by trainer.loss.detach_head: the forward ends at the final norm and the chunked
        # loss applies ``output`` itself (no full-vocabulary logits).
        self.skip_head = False

    def _rope_table(self, device: torch.device | None = None) -> torch.Tensor | None:
        if self.args.position != "rope":
            return None
        rotary = self.args.qk_rope_head_dim or self.args.head_dim  # MLA: the rotary key's width
        return rope_tables(rotary, self.args.seq_len, device=device, theta=self.args.rope_theta)

    def positions(self, num_local_tokens: int, device: torch.device) -> torch.Tensor:
        """Global positions of this rank's tokens: all of the sequence, or its two chunks of it
        under context parallelism."""
        if self.context_parallel is not None:
            return self.context_parallel.positions(num_local_tokens * self.context_parallel.size, device)
        return torch.arange(num_local_tokens, device=device)

    def forward(self, tokens_or_hidden: torch.Tensor) -> torch.Tensor:
        """Token ids -> logits (final-norm outputs with ``skip_head``); a middle pipeline stage
        maps hidden states to hidden states."""
        h = tokens_or_hidden
        if self.tok_embeddings is not None:
            h = self.tok_embeddings(h)
            if self.pos_embeddings is not None:
                h = self.pos_embeddings(h, self.positions(h.shape[1], h.device))
        rope = self.rope
        if rope is not None and self.context_parallel is not None:
            # Rotate by global position. (Under sequence parallelism h holds 1/tp of the local
            # tokens here, so take them from the packed training sequence instead.)
            rope = rope.index_select(0, self.context_parallel.positions(self.args.seq_len, rope.device))
        for block in self.layers.values():
            h = block(h, rope)
        if self.norm is not None:
            h = self.norm(h)
        if self.output is not None and not self.skip_head:
            h = self.output(h)
        return h

    def init_buffers(self, device: torch.device) -> None:
        """Recompute the RoPE table after ``to_empty`` (it is not a parameter, never sharded);
        zero DeepSeek's router correction biases."""
        self.rope = self._rope_table(device)
        reset_router_bias(self)


# The projections that write into the residual stream (their init shrinks with depth).
_RESIDUAL_OUTPUTS = ("attention.wo.weight", "feed_forward.w2.weight", "feed_forward.experts.w2", "shared.w2.weight")


def native_init_rule(args: ModelArgs) -> Callable[[str, nn.Module], InitFn]:
    """How each parameter (by its name) is initialised: Llama-style truncated normals,
    residual-branch outputs scaled down with depth (GPT-2 practice), norms at one."""
    out_std = 0.02 / math.sqrt(2 * args.num_layers)
    head_std = args.hidden_size**-0.5
    embed_std = 0.02 if args.tied_embeddings else 1.0

    def normal(std: float) -> InitFn:
        return lambda t, g: nn.init.trunc_normal_(t, std=std, a=-3 * std, b=3 * std, generator=g)

    def rule(name: str, owner: nn.Module) -> InitFn:
        del owner  # the native model's parameter names say everything
        if name.endswith("norm.weight"):
            return lambda t, g: nn.init.ones_(t)
        if name.endswith(".bias"):
            return lambda t, g: nn.init.zeros_(t)
        if name == "tok_embeddings.weight":
            return lambda t, g: nn.init.normal_(t, std=embed_std, generator=g)
        if name == "output.weight":
            return normal(head_std)
        if name.endswith(_RESIDUAL_OUTPUTS):
            return normal(out_std)
        return normal(0.02)

    return rule


def build_native_model(spec: ModelSpec, seq_len: int, layer_ids: Iterable[int] | None = None) -> Transformer:
    """The model on the meta device (no memory); with ``layer_ids`` only those blocks (global indices)."""
    args = ModelArgs.from_spec(spec, seq_len)
    with torch.device("meta"):
        return Transformer(args, layer_ids)
