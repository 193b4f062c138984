"""The transformers config keys of each family the planner reads, beyond the shapes every
Llama-style config takes (``trainer/hf_model.py`` ``config_from_spec`` builds the config): what a
preset, which has no config.json, trains with ``impl hf``. A spec keeps counts, not places, for
windowed, dense and chunked blocks; these functions place them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planner.model.spec import ModelSpec


def _window_layer_types(spec: ModelSpec) -> list[str]:
    """``layer_types`` with ``sliding_layers`` windowed blocks. The spec keeps their count, not
    their places: every other block from the first (GPT-OSS's pattern; Qwen2-MoE's below
    max_window_layers), then the rest. The count is what the planner times."""
    order = [*range(0, spec.num_layers, 2), *range(1, spec.num_layers, 2)]
    windowed = set(order[: spec.sliding_layers])
    return ["sliding_attention" if i in windowed else "full_attention" for i in range(spec.num_layers)]


def _spread(count: int, total: int) -> list[int]:
    """``count`` of ``total`` layer indices, evenly spaced and ending at the last: every
    ``total // count``-th from ``total // count - 1`` when it divides (Llama 4's MoE layers by
    ``interleave_moe_layer_step``, its NoPE layers by ``no_rope_layer_interval``)."""
    return [i for i in range(total) if (i + 1) * count // total > i * count // total]


def _qwen3_fields(spec: ModelSpec) -> dict[str, Any]:
    fields: dict[str, Any] = dict(attention_bias=spec.qkv_bias)
    if spec.sliding_layers:
        max_window = spec.num_layers - spec.sliding_layers
        fields |= dict(use_sliding_window=True, max_window_layers=max_window, sliding_window=spec.sliding_window)
    if spec.family == "qwen3_moe":  # dense blocks first (the spec keeps their count, not their places)
        fields |= dict(
            intermediate_size=spec.dense_ffn_hidden_size or spec.ffn_hidden_size,
            moe_intermediate_size=spec.ffn_hidden_size,
            num_experts=spec.num_experts,
            num_experts_per_tok=spec.experts_per_token,
            mlp_only_layers=list(range(spec.dense_layers)),
            norm_topk_prob=spec.moe_renormalize,
        )
    return fields


def _gemma_fields(spec: ModelSpec) -> dict[str, Any]:
    caps = dict(final_logit_softcapping=spec.final_softcap)
    caps |= dict(attn_logit_softcapping=spec.attn_softcap) if spec.family == "gemma2" else {}
    windowed = dict(sliding_window=spec.sliding_window) if spec.sliding_window else {}
    return dict(query_pre_attn_scalar=spec.dim_head, **caps, **windowed)


def _latent_moe_fields(spec: ModelSpec) -> dict[str, Any]:
    """DeepSeek-V2's and V3's weights: MLA, leading dense blocks, routed and shared experts."""
    if spec.mla is None:
        raise ValueError(f"model {spec.name!r}: {spec.family} without latent attention has no transformers config")
    return dict(
        head_dim=spec.mla.qk_rope_head_dim,  # transformers' rotary width
        intermediate_size=spec.dense_ffn_hidden_size or spec.ffn_hidden_size,
        moe_intermediate_size=spec.ffn_hidden_size,
        n_routed_experts=spec.num_experts,
        num_experts_per_tok=spec.experts_per_token,
        n_shared_experts=spec.shared_experts,
        first_k_dense_replace=spec.dense_layers,
        q_lora_rank=spec.mla.q_lora_rank,
        kv_lora_rank=spec.mla.kv_lora_rank,
        qk_nope_head_dim=spec.dim_head - spec.mla.qk_rope_head_dim,
        qk_rope_head_dim=spec.mla.qk_rope_head_dim,
        v_head_dim=spec.mla.v_head_dim,
    )


def _group_router_fields(spec: ModelSpec) -> dict[str, Any]:
    """The grouped router's keys (DeepSeek-V2 / V3, GLM-4.5), from the native router's groups and
    scale (``ModelShape.group_routing``)."""
    routing = spec.group_routing
    return dict(n_group=routing.groups, topk_group=routing.topk_groups, routed_scaling_factor=routing.routed_scale)


def _deepseek_v3_fields(spec: ModelSpec) -> dict[str, Any]:
    return _latent_moe_fields(spec) | _group_router_fields(spec) | dict(norm_topk_prob=spec.moe_renormalize)


def _deepseek_v2_fields(spec: ModelSpec) -> dict[str, Any]:
    """DeepSeek-V2's softmax router: one group is ``greedy``, more ``group_limited_greedy``; it
    never renormalises (the reader refuses a file that does)."""
    method = "greedy" if spec.group_routing.groups == 1 else "group_limited_greedy"
    return _latent_moe_fields(spec) | _group_router_fields(spec) | dict(topk_method=method, norm_topk_prob=False)


def _nemotron_fields(spec: ModelSpec) -> dict[str, Any]:
    """NemotronConfig names its LayerNorm epsilon ``norm_eps``; the reader keeps the MLP kind, not
    which GeLU a config named (the same weights either way)."""
    fields: dict[str, Any] = dict(
        hidden_act="relu2" if spec.mlp == "relu2" else "gelu",
        partial_rotary_factor=spec.partial_rotary_factor,
        attention_bias=spec.qkv_bias,
        mlp_bias=spec.mlp_bias,
    )
    return fields | (dict(norm_eps=spec.norm_eps) if spec.norm_eps else {})


def _gpt_oss_fields(spec: ModelSpec) -> dict[str, Any]:
    windowed = dict(sliding_window=spec.sliding_window) if spec.sliding_window else {}
    return dict(
        num_local_experts=spec.num_experts,
        num_experts_per_tok=spec.experts_per_token,
        attention_bias=spec.qkv_bias,
        layer_types=_window_layer_types(spec),
        **windowed,
    )


def _qwen2_moe_fields(spec: ModelSpec) -> dict[str, Any]:
    if not spec.shared_experts:  # Qwen2MoeSparseMoeBlock always builds its shared expert
        raise ValueError(f"model {spec.name!r}: qwen2_moe without a shared expert has no transformers config")
    windowed = dict(use_sliding_window=True, sliding_window=spec.sliding_window) if spec.sliding_layers else {}
    return dict(
        intermediate_size=spec.dense_ffn_hidden_size or spec.ffn_hidden_size,
        moe_intermediate_size=spec.ffn_hidden_size,
        shared_expert_intermediate_size=spec.shared_experts * spec.ffn_hidden_size,
        num_experts=spec.num_experts,
        num_experts_per_tok=spec.experts_per_token,
        norm_topk_prob=spec.moe_renormalize,
        mlp_only_layers=list(range(spec.dense_layers)),
        qkv_bias=spec.qkv_bias,
        layer_types=_window_layer_types(spec),
        **windowed,
    )


def _llama4_fields(spec: ModelSpec) -> dict[str, Any]:
    """The text model (``llama4_text``): MoE and chunked (RoPE) blocks placed as Llama 4's
    defaults place them when the counts allow, evenly otherwise (the spec keeps counts)."""
    nope = set(_spread(spec.num_layers - spec.chunked_layers, spec.num_layers))
    return dict(
        intermediate_size=spec.ffn_hidden_size,
        intermediate_size_mlp=spec.dense_ffn_hidden_size or spec.ffn_hidden_size,
        num_local_experts=spec.num_experts,
        num_experts_per_tok=spec.experts_per_token,
        moe_layers=_spread(spec.moe_layers, spec.num_layers),
        no_rope_layers=[int(i not in nope) for i in range(spec.num_layers)],
        attention_chunk_size=spec.attention_chunk,
        attention_bias=spec.qkv_bias,
    )


def _afmoe_fields(spec: ModelSpec) -> dict[str, Any]:
    """AFMoE (Trinity): leading dense blocks, routed and shared experts of one width; the gated
    attention, q/k norms and sandwich norms are the family's own modules."""
    windowed = dict(sliding_window=spec.sliding_window) if spec.sliding_window else {}
    return dict(
        intermediate_size=spec.dense_ffn_hidden_size or spec.ffn_hidden_size,
        moe_intermediate_size=spec.ffn_hidden_size,
        num_experts=spec.num_experts,
        num_experts_per_tok=spec.experts_per_token,
        num_shared_experts=spec.shared_experts,
        num_dense_layers=spec.dense_layers,
        route_norm=spec.moe_renormalize,
        layer_types=_window_layer_types(spec),
        **windowed,
    )


def _glm4_moe_fields(spec: ModelSpec) -> dict[str, Any]:
    """GLM-4.5: leading dense blocks, routed and shared experts of one width, DeepSeek-V3's router
    as the spec keeps it (GLM's releases: one group; 1.0 Air, 2.5 GLM-4.5), RoPE on part of each
    head, q/k norms where the spec has them. No MTP module: transformers builds none."""
    return _group_router_fields(spec) | dict(
        intermediate_size=spec.dense_ffn_hidden_size or spec.ffn_hidden_size,
        moe_intermediate_size=spec.ffn_hidden_size,
        n_routed_experts=spec.num_experts,
        num_experts_per_tok=spec.experts_per_token,
        n_shared_experts=spec.shared_experts,
        first_k_dense_replace=spec.dense_layers,
        norm_topk_prob=spec.moe_renormalize,
        attention_bias=spec.qkv_bias,
        partial_rotary_factor=spec.partial_rotary_factor,
        use_qk_norm=spec.qk_norm == "head",
        num_nextn_predict_layers=0,
    )


def _olmoe_fields(spec: ModelSpec) -> dict[str, Any]:
    """OLMoE: every block routed experts of ``intermediate_size``, the softmax router as the spec
    keeps it; its whole-projection q/k norms are the family's own modules."""
    return dict(
        num_experts=spec.num_experts,
        num_experts_per_tok=spec.experts_per_token,
        norm_topk_prob=spec.moe_renormalize,
        attention_bias=spec.qkv_bias,
    )


def _granite_fields(spec: ModelSpec) -> dict[str, Any]:
    """Granite (dense and MoE): Llama's biases, the experts of ``granitemoe``, and the muP
    multipliers the spec keeps (transformers' 1.0 where it keeps none)."""
    fields: dict[str, Any] = dict(attention_bias=spec.qkv_bias)
    if spec.family == "granite":
        fields["mlp_bias"] = spec.mlp_bias
    else:
        fields |= dict(num_local_experts=spec.num_experts, num_experts_per_tok=spec.experts_per_token)
    m = spec.multipliers
    if m is not None:
        fields |= dict(
            embedding_multiplier=m.embedding,
            residual_multiplier=m.residual,
            attention_multiplier=m.attention,
            logits_scaling=m.logits_scaling,
        )
    return fields


def mistral_fields(spec: ModelSpec) -> dict[str, Any]:
    """Mistral's window on every block; Ministral's ``layer_types`` when only some have it."""
    if spec.sliding_layers == spec.num_layers:
        return dict(sliding_window=spec.sliding_window)
    return dict(model_type="ministral", sliding_window=spec.sliding_window, layer_types=_window_layer_types(spec))


def _phi3_fields(spec: ModelSpec) -> dict[str, Any]:
    """Phi-3's window where it has one, and RoPE on part of each head (Phi-4-mini: 0.75)."""
    fields: dict[str, Any] = dict(sliding_window=spec.sliding_window) if spec.sliding_window else {}
    return fields | (dict(partial_rotary_factor=spec.partial_rotary_factor) if spec.partial_rotary_factor < 1 else {})


# The transformers ``model_type`` (text model only) and its keys beyond the shared shapes, per
# family the planner reads (planner/catalog/hf_config.py). Mistral with a window is here; without
# one it is built as Llama (the same modules), like the other plain SwiGLU decoders.
FAMILY_FIELDS: dict[str, tuple[str, Callable[[ModelSpec], dict[str, Any]]]] = {
    "qwen3": ("qwen3", _qwen3_fields),
    "qwen3_moe": ("qwen3_moe", _qwen3_fields),
    "gemma2": ("gemma2", _gemma_fields),
    "gemma3": ("gemma3_text", _gemma_fields),
    "gemma3_text": ("gemma3_text", _gemma_fields),
    "phi3": ("phi3", lambda spec: _phi3_fields(spec)),
    "olmo2": ("olmo2", lambda spec: dict(attention_bias=spec.qkv_bias)),
    "deepseek_v3": ("deepseek_v3", _deepseek_v3_fields),
    "deepseek_v2": ("deepseek_v2", _deepseek_v2_fields),
    "nemotron": ("nemotron", _nemotron_fields),
    "gpt_oss": ("gpt_oss", _gpt_oss_fields),
    "qwen2_moe": ("qwen2_moe", _qwen2_moe_fields),
    "llama4": ("llama4_text", _llama4_fields),
    "afmoe": ("afmoe", _afmoe_fields),
    "glm4_moe": ("glm4_moe", _glm4_moe_fields),
    "olmoe": ("olmoe", _olmoe_fields),
    "granite": ("granite", _granite_fields),
    "granitemoe": ("granitemoe", _granite_fields),
}
