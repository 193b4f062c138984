"""The architecture fields of a decoder-only transformer (``ModelShape``): what the block-operations
table (``planner/model/block.py``) reads. ``planner/model/spec.py``'s ``ModelSpec`` adds the
parameter counts derived from that table, so the table and the counts import in one direction.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from planner.errors import RuleCode, RuleViolation
from planner.frozen import FROZEN

# Gated (SiLU / tanh-GeLU gate: gate, up, down), or two matrices (up, down) with GeLU or squared
# ReLU between them (Nemotron-4's relu2: max(x, 0)^2).
MlpKind = Literal["swiglu", "geglu", "gelu", "relu2"]
NormKind = Literal["rmsnorm", "layernorm"]
PositionKind = Literal["rope", "learned", "alibi"]
# RMSNorm of queries and keys before RoPE: none; per head over head_dim (Qwen3, Gemma 3);
# over the whole projection, q_size and kv_size wide (OLMo 2).
QkNormKind = Literal["none", "head", "full"]
# Where each sub-layer's norms sit: pre (Llama: norm the input), post (OLMo 2: norm the output
# before the residual add), sandwich (Gemma 2/3: both, four norms per block).
NormPlacement = Literal["pre", "post", "sandwich"]
# Families whose Hugging Face attention holds q, k and v in one Linear module (transformers'
# modeling_<family>.py): GPT-2's ``c_attn``, GPT-NeoX's and BLOOM's ``query_key_value``, MPT's
# ``Wqkv``, Phi-3's ``qkv_proj``. ZeRO-3 gathers such a weight once per block, not three times.
FUSED_QKV_FAMILIES = frozenset({"gpt2", "gpt_neox", "bloom", "mpt", "phi3"})
# Families whose Hugging Face MoE layer runs every expert on every token (``hf_experts_dense``).
DENSE_EXPERT_FAMILIES = frozenset({"llama4"})
# DeepSeek-V3's router where a config does not say (its released config.json and transformers'
# DeepseekV3Config defaults): 8 groups of experts, the best 4 eligible, routed weights scaled by
# 2.5 after normalisation. A model whose experts do not split into 8 groups of two or more, or
# whose 4 groups cannot hold the top k, routes over one group.
DEEPSEEK_GROUPS = 8
DEEPSEEK_TOPK_GROUPS = 4
DEEPSEEK_ROUTED_SCALE = 2.5


class LatentAttention(BaseModel):
    """DeepSeek's multi-head latent attention (DeepSeek-V2 paper, Sec. 2.1): queries through a
    rank-``q_lora_rank`` bottleneck (None: one projection), keys and values through a shared
    ``kv_lora_rank`` latent plus one ``qk_rope_head_dim`` rotary key for all heads. The
    model's ``head_dim`` is the query/key head size (nope + rope); values are ``v_head_dim``."""

    model_config = FROZEN

    q_lora_rank: int | None = Field(None, ge=1)
    kv_lora_rank: int = Field(ge=1)
    qk_rope_head_dim: int = Field(ge=1)
    v_head_dim: int = Field(ge=1)


class GraniteMultipliers(BaseModel):
    """IBM Granite's muP scalings (transformers' GraniteConfig): the embeddings times
    ``embedding``, each sub-layer's output times ``residual`` before its residual add, attention
    scores times ``attention`` (in place of 1/sqrt(head_dim)), the logits divided by
    ``logits_scaling``. Scalars on tensors the block already computes: no weights, no FLOPs the
    planner counts; the trainer's Hugging Face config takes them, so a preset trains the released
    model's dynamics."""

    model_config = FROZEN

    embedding: float = Field(gt=0)
    residual: float = Field(gt=0)
    attention: float = Field(gt=0)
    logits_scaling: float = Field(gt=0)


class GroupRouting(BaseModel):
    """DeepSeek-V3's group-limited routing (``DeepseekV3TopkRouter``): the experts split into
    ``groups`` equal groups, a group scored by its two best affinities, the top k chosen within
    the ``topk_groups`` best groups, their weights times ``routed_scale``."""

    model_config = FROZEN

    groups: int = Field(ge=1)
    topk_groups: int = Field(ge=1)
    routed_scale: float = Field(gt=0)


def group_routing(
    experts: int, experts_per_token: int, groups: int | None = None, topk: int | None = None, scale: float | None = None
) -> GroupRouting:
    """A config's router values where it gave them, else ``DEEPSEEK_GROUPS`` groups where the
    experts split into them (two or more each, the top k within ``DEEPSEEK_TOPK_GROUPS`` of
    them), else one group; the scale ``DEEPSEEK_ROUTED_SCALE``."""
    if groups is None:
        per_group = experts // DEEPSEEK_GROUPS
        splits = experts % DEEPSEEK_GROUPS == 0 and per_group >= 2
        groups = DEEPSEEK_GROUPS if splits and DEEPSEEK_TOPK_GROUPS * per_group >= experts_per_token else 1
    topk = min(DEEPSEEK_TOPK_GROUPS, groups) if topk is None else topk
    return GroupRouting(groups=groups, topk_groups=topk, routed_scale=DEEPSEEK_ROUTED_SCALE if scale is None else scale)


class ModelShape(BaseModel):
    """Decoder-only transformer dimensions. ``head_dim`` defaults to hidden/heads. ``ModelSpec``
    adds the parameter counts, which the block-operations table derives from these fields."""

    model_config = FROZEN

    name: str
    family: str = "llama"  # the config's model_type: llama, mistral, qwen2, mixtral, gpt2, nemotron, ...
    num_layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    ffn_hidden_size: int = Field(ge=1)  # per expert for MoE; gate/up width for SwiGLU
    num_heads: int = Field(ge=1)
    num_kv_heads: int = Field(ge=1)
    head_dim: int | None = Field(None, ge=1)
    vocab_size: int = Field(ge=1)
    max_seq_len: int = Field(2048, ge=1)
    tied_embeddings: bool = False
    mlp: MlpKind = "swiglu"
    norm: NormKind = "rmsnorm"
    position: PositionKind = "rope"
    qkv_bias: bool = False  # q/k/v projection biases (gpt2, neox, bloom, qwen2)
    out_bias: bool = False  # attention output projection bias
    mlp_bias: bool = False
    norm_bias: bool = False  # LayerNorm with a bias term
    embedding_norm: bool = False  # BLOOM's word_embeddings_layernorm
    num_experts: int = Field(1, ge=1)  # MoE: routed experts per layer
    experts_per_token: int = Field(1, ge=1)
    shared_experts: int = Field(0, ge=0)  # always-on experts, one MLP shared_experts x ffn wide
    # Qwen2-MoE: the shared expert's output scaled by sigmoid(h -> 1 linear) per token.
    shared_expert_gate: bool = False
    router_bias: bool = False  # GPT-OSS: the router's linear has a bias (one per expert)
    dense_layers: int = Field(0, ge=0)  # MoE models: blocks with a dense MLP (DeepSeek: the first k)
    dense_ffn_hidden_size: int | None = Field(None, ge=1)  # their MLP width (None: ffn_hidden_size)
    mtp_layers: int = Field(0, ge=0)  # DeepSeek-V3 multi-token-prediction modules (counted apart)
    # DeepSeek-V3's router as a config gives it (n_group, topk_group, routed_scaling_factor); None:
    # the defaults of ``group_routing``. GLM-4.5 (V3's router, its own defaults) and DeepSeek-V2
    # (its softmax router; one group is greedy) always set them. The trainer's; no planner effect.
    expert_groups: int | None = Field(None, ge=1)
    topk_expert_groups: int | None = Field(None, ge=1)
    routed_scale: float | None = Field(None, gt=0)
    # Softmax routing: the top-k probabilities renormalised to sum to one (Mixtral; Qwen3-MoE's
    # norm_topk_prob, true in its releases) or used as they are. The trainer's; no planner effect.
    moe_renormalize: bool = True
    qk_norm: QkNormKind = "none"
    norm_placement: NormPlacement = "pre"
    sliding_window: int | None = Field(None, ge=1)  # local attention span, in tokens
    sliding_layers: int = Field(0, ge=0)  # how many blocks attend within the window
    # Llama 4: blocks whose queries attend only within their own ``attention_chunk``-token chunk.
    attention_chunk: int | None = Field(None, ge=1)
    chunked_layers: int = Field(0, ge=0)
    # Fraction of each q/k head RoPE rotates (Nemotron: 0.5): int(head_dim x it) channels.
    partial_rotary_factor: float = Field(1.0, gt=0, le=1)
    attention_sinks: bool = False  # GPT-OSS: one learnt softmax logit per head (``sinks``)
    # AFMoE (Arcee Trinity): the attention output times sigmoid(x W_g) before o_proj, W_g hidden ->
    # heads x head_dim (transformers' AfmoeAttention ``gate_proj``; planner/model/block.py).
    attention_output_gate: bool = False
    # GPT-OSS: the gated activation's inputs clamped to +-limit (``swiglu_limit``), eager kernels
    # before the activation (planner/model/block.py ``CLAMP_TRAFFIC``).
    activation_clamp: float | None = Field(None, gt=0)
    attn_softcap: float | None = Field(None, gt=0)  # Gemma 2: tanh cap of attention scores
    final_softcap: float | None = Field(None, gt=0)  # Gemma 2: tanh cap of the logits
    embedding_scale: bool = False  # Gemma: embeddings multiplied by sqrt(hidden)
    fused_projections: bool = False  # Phi-3: one qkv and one gate/up weight (same shapes in sum)
    # GPT-J, GPT-NeoX (use_parallel_residual), Falcon (parallel_attn), PaLM: attention and MLP read
    # the same input and their outputs add into one residual, so under tensor parallelism the two
    # row-parallel partial sums are reduced once (planner/model/block_rows.py ``tp_reductions``).
    parallel_block: bool = False
    mla: LatentAttention | None = None
    # Granite's multipliers where a config sets any (None: all 1, transformers' defaults). The
    # trainer's; no planner effect.
    multipliers: GraniteMultipliers | None = None
    # RoPE base and norm epsilon for the native trainer (None: its defaults, 10000 and 1e-5);
    # read from the config by the newer families' readers. No effect on the planner's figures.
    rope_theta: float | None = Field(None, gt=0)
    norm_eps: float | None = Field(None, gt=0)
    # YaRN's attention (concentration) factor on RoPE's cos and sin (``yarn_attention_factor``; 1:
    # none). Megatron-Core's fused RoPE takes only 1 (megatron/core/models/common/embeddings/
    # rope_utils.py l.279-284 at d7288711), so another value runs its rotary as eager ops
    # (planner/model/block.py ``_rotary_rows``).
    rope_attention_factor: float = Field(1.0, gt=0)

    @model_validator(mode="after")
    def _check(self) -> ModelShape:
        heads, kv_heads, layers = self.num_heads, self.num_kv_heads, self.num_layers
        if heads % kv_heads:
            raise RuleViolation(RuleCode.HEADS_KV, {"heads": heads, "kv_heads": kv_heads})
        if self.head_dim is None and self.hidden_size % heads:
            raise RuleViolation(RuleCode.HIDDEN_HEADS, {"hidden": self.hidden_size, "heads": heads})
        if self.experts_per_token > self.num_experts:
            figures = {"experts_per_token": self.experts_per_token, "experts": self.num_experts}
            raise RuleViolation(RuleCode.EXPERTS_PER_TOKEN, figures)
        if self.dense_layers > layers or self.sliding_layers + self.chunked_layers > layers:
            raise RuleViolation(RuleCode.LAYER_COUNTS, {"layers": layers})
        if self.sliding_layers and self.sliding_window is None:
            raise RuleViolation(RuleCode.SLIDING_WITHOUT_WINDOW, {"sliding_layers": self.sliding_layers})
        if self.chunked_layers and self.attention_chunk is None:
            raise RuleViolation(RuleCode.CHUNKED_WITHOUT_CHUNK, {"chunked_layers": self.chunked_layers})
        if self.dense_layers and not self.is_moe:
            raise RuleViolation(RuleCode.DENSE_LAYERS_NOT_MOE, {"dense_layers": self.dense_layers})
        if self.expert_groups is not None or self.topk_expert_groups is not None:
            self._check_group_routing()
        if self.position == "rope" and self.rotary_dim % 2:
            # RoPE rotates pairs of channels: the trainer cannot build an odd rotary dimension.
            if self.rotary_dim == self.dim_head:
                raise RuleViolation(RuleCode.HEAD_DIM_ODD, {"head_dim": self.dim_head})
            raise RuleViolation(RuleCode.ROTARY_DIM_ODD, {"rotary_dim": self.rotary_dim})
        return self

    def _check_group_routing(self) -> None:
        """transformers' router views the experts as ``groups`` rows and takes each row's best two;
        the top k must lie within the eligible groups."""
        routing, experts, k = self.group_routing, self.num_experts, self.experts_per_token
        per_group = experts // routing.groups
        if (
            experts % routing.groups
            or (routing.groups > 1 and per_group < 2)
            or routing.topk_groups > routing.groups
            or routing.topk_groups * per_group < k
        ):
            figures = dict(groups=routing.groups, topk_groups=routing.topk_groups, experts=experts, experts_per_token=k)
            raise RuleViolation(RuleCode.EXPERT_GROUPS, figures)

    @property
    def windowed_layers(self) -> int | None:
        """The blocks that attend within a window, as the JSON outputs name them (None: none)."""
        return self.sliding_layers or None

    @property
    def window_tokens(self) -> int | None:
        """Their window, tokens (None: no windowed block)."""
        return self.sliding_window if self.sliding_layers else None

    @property
    def group_routing(self) -> GroupRouting:
        """The DeepSeek-V3 router's groups and scale (``group_routing``): the native trainer and the
        Hugging Face config both build this."""
        return group_routing(
            self.num_experts, self.experts_per_token, self.expert_groups, self.topk_expert_groups, self.routed_scale
        )

    @property
    def dim_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads

    @property
    def rotary_dim(self) -> int:
        """Channels of each q/k head RoPE rotates (transformers: ``int(head_dim * factor)``)."""
        return int(self.dim_head * self.partial_rotary_factor)

    @property
    def q_size(self) -> int:
        return self.num_heads * self.dim_head

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.dim_head

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def fused_qkv(self) -> bool:
        """Whether Hugging Face modules hold q, k and v as one weight (``FUSED_QKV_FAMILIES``)."""
        return self.fused_projections or self.family in FUSED_QKV_FAMILIES

    @property
    def hf_experts_dense(self) -> bool:
        """Whether Hugging Face's MoE layer runs every expert on every token: Llama 4's
        ``Llama4TextMoe`` repeats each token once per expert, scales the copies by the router's
        scores (0 for the experts not picked) and runs one batched GEMM over all experts
        (transformers 5.25 ``modeling_llama4.py``, trial s36); the other families' modules run
        each expert on its routed tokens only."""
        return self.family in DENSE_EXPERT_FAMILIES

    @property
    def hf_expert_work_factor(self) -> float:
        """E / k: the expert GEMMs Hugging Face's modules run per token over the routed ones, where
        every expert runs on every token (``hf_experts_dense``); 1 otherwise."""
        dense = self.hf_experts_dense and self.is_moe
        return self.num_experts / max(self.experts_per_token, 1) if dense else 1.0

    @property
    def hf_attention_implementation(self) -> str:
        """The ``attn_implementation`` the trainer builds Hugging Face modules with: SDPA (flash
        kernels), except where transformers has no SDPA path and runs attention eager, the
        scores materialised (transformers 5.24, ``_supports_sdpa = False``): soft-capped scores
        (Gemma 2: "sdpa does not support softcapping"), attention sinks (GPT-OSS's learnt
        logit per head, ``GptOssPreTrainedModel``) and ALiBi (``BloomForCausalLM``,
        ``MptForCausalLM``: the bias is added to the materialised scores)."""
        eager = self.attn_softcap is not None or self.attention_sinks or self.position == "alibi"
        return "eager" if eager else "sdpa"

    @property
    def moe_layers(self) -> int:
        """Blocks with experts (all of them for Mixtral / Qwen3-MoE, L - k for DeepSeek)."""
        return self.num_layers - self.dense_layers if self.is_moe else 0


def yarn_attention_factor(factor: float, mscale: float | None = None, mscale_all_dim: float | None = None) -> float:
    """YaRN's concentration factor for a context stretched ``factor`` times: 0.1 ln(factor) + 1
    (times ``mscale``), over the same for ``mscale_all_dim`` where a config gives both
    (transformers' ``_compute_yarn_parameters``; Megatron-Core's ``_yarn_get_concentration_factor``,
    yarn_rotary_pos_embedding.py l.252-271 at d7288711)."""

    def mscale_of(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if mscale and mscale_all_dim:
        return mscale_of(factor, mscale) / mscale_of(factor, mscale_all_dim)
    return mscale_of(factor)
