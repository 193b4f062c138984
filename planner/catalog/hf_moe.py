"""The readers of the mixture-of-experts families' ``config.json``: Qwen3-MoE, DeepSeek-V3,
DeepSeek-V2, GPT-OSS, Qwen2-MoE, Llama 4, AFMoE, GLM-4.5, OLMoE, Granite MoE (Mixtral: :mod:`planner.catalog.hf_dense`). Each returns ModelSpec
fields; :mod:`planner.catalog.hf_config` dispatches on ``model_type``.
"""

from __future__ import annotations

from planner.catalog.hf_keys import (
    MAX_EXPERTS,
    MAX_FFN,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_POSITIONS,
    HfConfig,
    decoder_fields,
    fraction,
    granite_multipliers,
    layer_indices,
    layer_kinds,
    positive_number,
    rope_attention_factor,
    text_config,
)
from planner.errors import RuleCode
from planner.model.shape import DEEPSEEK_ROUTED_SCALE, group_routing


def qwen3_moe(cfg: HfConfig) -> dict:
    """Qwen3-MoE: ``num_experts`` experts of ``moe_intermediate_size``; the layers listed in
    ``mlp_only_layers`` or off the ``decoder_sparse_step`` have a dense MLP of ``intermediate_size``."""
    fields = decoder_fields(cfg, "qwen3_moe", 4, None, max_seq_len=32768, rope_theta=1e6) | dict(qk_norm="head")
    dense = _sparse_layers(cfg, fields["num_layers"])
    return fields | dict(
        dense_ffn_hidden_size=fields["ffn_hidden_size"],
        ffn_hidden_size=cfg.size("moe_intermediate_size", limit=MAX_FFN, default=768),
        num_experts=cfg.size("num_experts", limit=MAX_EXPERTS, default=128),
        experts_per_token=cfg.size("num_experts_per_tok", limit=MAX_EXPERTS, default=8),
        dense_layers=dense,
        # transformers' Qwen3MoeConfig default is False; the released configs set True.
        moe_renormalize=cfg.flag("norm_topk_prob", False),
    )


def _layer_count(cfg: HfConfig, key: str, default: int) -> int:
    """A non-negative number of layers (0 is meaningful: no dense layers, no MTP module)."""
    value = cfg.data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LAYERS:
        raise cfg.error(RuleCode.HF_LAYER_COUNT, field=key, limit=MAX_LAYERS, value=repr(value))
    return value


def deepseek_v3(cfg: HfConfig) -> dict:
    """DeepSeek-V3: MLA, ``first_k_dense_replace`` dense blocks, then ``n_routed_experts``
    routed (``num_experts_per_tok`` per token) + ``n_shared_experts`` shared experts of
    ``moe_intermediate_size``; ``num_nextn_predict_layers`` MTP modules (counted apart).
    transformers makes every layer from k on a MoE block (``moe_layer_freq`` is not read). The
    router's ``n_group``, ``topk_group``, ``routed_scaling_factor`` and ``norm_topk_prob`` are
    kept for the trainer (Moonlight: one group, 2.446); ``scoring_func`` is not read, as
    transformers' router is sigmoid whatever it says."""
    fields = _latent_moe(cfg, "deepseek_v3", max_seq_len=4096, dense=3, experts=256, top_k=8, shared=1, width=2048)
    mtp = _layer_count(cfg, "num_nextn_predict_layers", 1)
    return fields | dict(mtp_layers=mtp, **_group_routing(cfg, fields["num_experts"], fields["experts_per_token"]))


def _latent_moe(cfg: HfConfig, family: str, *, max_seq_len: int, dense: int, experts: int, top_k: int | None,
                shared: int, width: int) -> dict:  # fmt: skip
    """The weights DeepSeek-V2 and V3 share, with their config class's defaults: MLA (``q_lora_rank``
    absent 1536, null one q projection; ``kv_lora_rank`` 512; q/k heads ``qk_nope_head_dim`` +
    ``qk_rope_head_dim``; values ``v_head_dim``), ``first_k_dense_replace`` dense blocks of
    ``intermediate_size``, then routed + shared experts of ``moe_intermediate_size``. Biases on
    the latent projections (``attention_bias``) are not in the block table: refused."""
    if cfg.flag("attention_bias", False):
        raise cfg.error(RuleCode.HF_DEEPSEEK_BIAS, family=family)
    fields = decoder_fields(cfg, family, None, None, max_seq_len=max_seq_len)
    rope = cfg.size("qk_rope_head_dim", limit=MAX_HIDDEN, default=64)
    nope = cfg.size("qk_nope_head_dim", limit=MAX_HIDDEN, default=128)
    # Absent: transformers' default 1536; an explicit null: one q projection (DeepSeek-V2-Lite).
    q_lora = None if "q_lora_rank" in cfg.data and cfg.data["q_lora_rank"] is None else 1536
    if cfg.data.get("q_lora_rank") is not None:
        q_lora = cfg.size("q_lora_rank", limit=MAX_HIDDEN)
    mla = dict(
        q_lora_rank=q_lora,
        kv_lora_rank=cfg.size("kv_lora_rank", limit=MAX_HIDDEN, default=512),
        qk_rope_head_dim=rope,
        v_head_dim=cfg.size("v_head_dim", limit=MAX_HIDDEN, default=128),
    )
    fields.pop("head_dim", None)
    return fields | dict(
        head_dim=nope + rope,
        num_kv_heads=fields["num_heads"],
        mla=mla,
        dense_ffn_hidden_size=fields["ffn_hidden_size"],
        ffn_hidden_size=cfg.size("moe_intermediate_size", limit=MAX_FFN, default=width),
        num_experts=cfg.size("n_routed_experts", limit=MAX_EXPERTS, default=experts),
        experts_per_token=cfg.size("num_experts_per_tok", limit=MAX_EXPERTS, default=top_k),
        shared_experts=cfg.size("n_shared_experts", limit=MAX_EXPERTS, default=shared),
        dense_layers=min(fields["num_layers"], _layer_count(cfg, "first_k_dense_replace", dense)),
    )


# DeepSeek-V2's ``topk_method`` values transformers' DeepseekV2TopkRouter takes.
_V2_TOPK_METHODS = ("greedy", "group_limited_greedy")


def deepseek_v2(cfg: HfConfig) -> dict:
    """DeepSeek-V2 and V2-Lite (``DeepseekV2ForCausalLM``): V3's weights (``_latent_moe``, with
    DeepseekV2Config's defaults: 64 experts of 1407, 2 shared, no dense block) and its own router,
    which the trainer's hf config takes from the spec: softmax over all experts, the top k
    (``topk_method`` greedy) or the top k within the ``topk_group`` groups of ``n_group`` whose best
    expert scores highest (group_limited_greedy), times ``routed_scaling_factor`` (1.0), never
    renormalised. DeepSeek's own code renormalises instead of scaling where ``norm_topk_prob`` is
    true; transformers 5.25 ignores it, so such a file (no release sets it) is refused, as is a
    ``topk_method`` that router has not. No MTP module, no correction bias."""
    fields = _latent_moe(cfg, "deepseek_v2", max_seq_len=2048, dense=0, experts=64, top_k=None, shared=2, width=1407)
    method = cfg.data.get("topk_method", "greedy")
    if method not in _V2_TOPK_METHODS:
        raise cfg.error(RuleCode.HF_DEEPSEEK_V2_ROUTER, field="topk_method", value=repr(method))
    if cfg.flag("norm_topk_prob", False):
        raise cfg.error(RuleCode.HF_DEEPSEEK_V2_ROUTER, field="norm_topk_prob", value="true")
    limited = method == "group_limited_greedy"
    return fields | dict(
        moe_renormalize=False,
        expert_groups=cfg.size("n_group", limit=MAX_EXPERTS) if limited else 1,
        topk_expert_groups=cfg.size("topk_group", limit=MAX_EXPERTS) if limited else 1,
        routed_scale=positive_number(cfg, "routed_scaling_factor", 1.0),
    )


def _group_routing(cfg: HfConfig, experts: int, experts_per_token: int) -> dict:
    """The DeepSeek-V3 router's keys a config gives; left out where they are what the spec gives
    without them (``group_routing``: DeepSeek-V3's own 8, 4, 2.5), so a spec is canonical, as
    ``head_dim`` is. ``norm_topk_prob`` defaults True as in DeepseekV3Config."""
    given: dict = {}
    for field, key in (("groups", "n_group"), ("topk", "topk_group")):
        if cfg.data.get(key) is not None:
            given[field] = cfg.size(key, limit=MAX_EXPERTS)
    if cfg.data.get("routed_scaling_factor") is not None:
        given["scale"] = positive_number(cfg, "routed_scaling_factor", DEEPSEEK_ROUTED_SCALE)
    fields: dict = dict(moe_renormalize=cfg.flag("norm_topk_prob", True))
    if group_routing(experts, experts_per_token, **given) == group_routing(experts, experts_per_token):
        return fields
    names = dict(groups="expert_groups", topk="topk_expert_groups", scale="routed_scale")
    return fields | {names[key]: value for key, value in given.items()}


def gpt_oss(cfg: HfConfig) -> dict:
    """OpenAI GPT-OSS: biased q/k/v/o, one learnt attention sink per head, a 128-token window on
    every other layer, ``num_local_experts`` SwiGLU experts of ``intermediate_size`` with biases
    (fused gate/up: same shapes), top ``num_experts_per_tok`` of a biased router (softmax over
    the chosen logits), its SwiGLU inputs clamped to ``swiglu_limit``, YaRN's concentration factor
    on RoPE (``rope_scaling``). The clamp and YaRN change no weights."""
    fields = decoder_fields(
        cfg, "gpt_oss", 8, 64, max_seq_len=131072, rope_theta=150000.0, norm_eps=1e-5, attention_bias=True
    )
    return fields | dict(
        ffn_hidden_size=cfg.size("intermediate_size", limit=MAX_FFN, default=2880),
        num_experts=cfg.size("num_local_experts", limit=MAX_EXPERTS, default=128),
        experts_per_token=cfg.size("num_experts_per_tok", limit=MAX_EXPERTS, default=4),
        mlp_bias=True,
        router_bias=True,
        attention_sinks=True,
        activation_clamp=positive_number(cfg, "swiglu_limit", 7.0),
        rope_attention_factor=rope_attention_factor(cfg),
    )


def _sparse_layers(cfg: HfConfig, layers: int) -> int:
    """Qwen-MoE blocks with a dense MLP: those in ``mlp_only_layers`` or off the
    ``decoder_sparse_step``."""
    step = cfg.size("decoder_sparse_step", limit=MAX_LAYERS, default=1)
    dense_only = layer_indices(cfg, cfg.data.get("mlp_only_layers") or [], "'mlp_only_layers'", layers)
    return sum(1 for i in range(layers) if i in dense_only or (i + 1) % step)


def qwen2_moe(cfg: HfConfig) -> dict:
    """Qwen1.5-MoE / Qwen2-MoE: Qwen2's attention (q/k/v biases, ``qkv_bias``), ``num_experts``
    routed experts of ``moe_intermediate_size`` (top ``num_experts_per_tok``, softmax, not
    renormalised unless ``norm_topk_prob``) plus one shared expert of
    ``shared_expert_intermediate_size`` whose output a sigmoid gate (h -> 1) scales. The spec
    sizes the shared expert in routed-expert widths, so it must be a multiple of them (4 x 1408
    in Qwen1.5-MoE-A2.7B, 8 x 2560 in Qwen2-57B-A14B)."""
    fields = decoder_fields(cfg, "qwen2_moe", 16, None, max_seq_len=32768, rope_theta=10000.0, norm_eps=1e-6)
    qkv_bias = cfg.flag("qkv_bias", True)
    width = cfg.size("moe_intermediate_size", limit=MAX_FFN, default=1408)
    shared = cfg.size("shared_expert_intermediate_size", limit=MAX_FFN, default=5632)
    if shared % width:
        raise cfg.error(RuleCode.HF_SHARED_EXPERT, shared=shared, width=width)
    return fields | dict(
        qkv_bias=qkv_bias,
        out_bias=False,
        dense_ffn_hidden_size=fields["ffn_hidden_size"],
        ffn_hidden_size=width,
        num_experts=cfg.size("num_experts", limit=MAX_EXPERTS, default=60),
        experts_per_token=cfg.size("num_experts_per_tok", limit=MAX_EXPERTS, default=4),
        shared_experts=shared // width,
        shared_expert_gate=True,
        dense_layers=_sparse_layers(cfg, fields["num_layers"]),
        moe_renormalize=cfg.flag("norm_topk_prob", False),
    )


def llama4_text(cfg: HfConfig) -> dict:
    """A text-only Llama 4 file (``Llama4ForCausalLM``, as fine-tunes save it): the keys of
    ``llama4``'s ``text_config`` at the top level."""
    return llama4(HfConfig(cfg.path, {"text_config": dict(cfg.data)})) | dict(family="llama4")


def llama4(cfg: HfConfig) -> dict:
    """Llama 4 (Scout, Maverick): the language model (``text_config``) only, not the vision
    tower. MoE blocks (``moe_layers``, default every ``interleave_moe_layer_step``-th from
    step - 1) hold ``num_local_experts`` SwiGLU experts of ``intermediate_size``, top
    ``num_experts_per_tok`` by a sigmoid router, plus one shared expert as wide; the other blocks
    a dense MLP of ``intermediate_size_mlp``. RoPE layers (all but every
    ``no_rope_layer_interval``-th) attend within ``attention_chunk_size`` chunks. The spec keeps
    the number of dense and chunked blocks, not their places; the weightless L2 q/k norm
    (``use_qk_norm``) and the NoPE layers' missing rotary are not in the block table."""
    text = text_config(cfg, {"vocab_size": 202048})
    fields = decoder_fields(text, "llama4", 8, 128, max_seq_len=131072, rope_theta=500000.0, norm_eps=1e-5)
    fields["tied_embeddings"] = cfg.flag("tie_word_embeddings", text.flag("tie_word_embeddings", False))
    layers = fields["num_layers"]
    step = text.size("interleave_moe_layer_step", limit=MAX_LAYERS, default=1)
    moe = text.data.get("moe_layers")
    if moe is None:
        moe = list(range(step - 1, layers, step))
    moe = layer_indices(cfg, moe, "text_config.moe_layers", layers)
    dense = layers - len(set(moe))
    fields |= dict(
        dense_ffn_hidden_size=text.size("intermediate_size_mlp", limit=MAX_FFN, default=16384),
        num_experts=text.size("num_local_experts", limit=MAX_EXPERTS, default=16),
        experts_per_token=text.size("num_experts_per_tok", limit=MAX_EXPERTS, default=1),
        shared_experts=1,
        dense_layers=dense,
        moe_renormalize=False,
    )
    if fields["num_experts"] == 1 or dense == layers:
        raise cfg.error(RuleCode.HF_LLAMA4_NO_EXPERTS)
    chunk = text.data.get("attention_chunk_size", 8192)
    if chunk is None:
        return fields
    chunk = text.size("attention_chunk_size", limit=MAX_POSITIONS, default=8192)
    kinds = layer_kinds(text, layers)
    if kinds is not None:
        chunked = sum(kind == "chunked_attention" for kind in kinds)
    else:
        rope = text.data.get("no_rope_layers") or []  # 1 = a RoPE layer; empty: the interval's pattern
        if not isinstance(rope, list) or (rope and len(rope) != layers):
            raise cfg.error(RuleCode.HF_NO_ROPE_LAYERS, layers=layers)
        interval = text.size("no_rope_layer_interval", limit=MAX_LAYERS, default=4)
        chunked = sum(map(bool, rope)) if rope else sum(1 for i in range(layers) if (i + 1) % interval)
    return fields | (dict(attention_chunk=chunk, chunked_layers=chunked) if chunked else {})


def afmoe(cfg: HfConfig) -> dict:
    """Arcee's AFMoE (Trinity Nano, Mini, Large): ``num_dense_layers`` leading blocks with a dense
    SwiGLU of ``intermediate_size``, then ``num_experts`` routed experts of
    ``moe_intermediate_size`` (top ``num_experts_per_tok`` by sigmoid scores, renormalised with
    ``route_norm``) plus ``num_shared_experts`` shared ones as wide; per-head q/k RMSNorm, four
    norms per block (before and after attention and MLP), and the attention output gated by
    sigmoid(x W_g) (``gate_proj``, hidden -> heads x head_dim); sliding-window layers with all
    but every ``global_attn_every_n_layers``-th (transformers 5.25 AfmoeConfig / AfmoeModel). The
    router's ``expert_bias`` is not trained (aux-loss-free balancing): no parameter here. The
    global layers' missing rotary (NoPE) and muP's scalings are not in the block table."""
    fields = decoder_fields(cfg, "afmoe", None, 128, max_seq_len=16384, rope_theta=10000.0, norm_eps=1e-5)
    dense = min(fields["num_layers"], _layer_count(cfg, "num_dense_layers", 1))
    return fields | dict(
        dense_ffn_hidden_size=fields["ffn_hidden_size"],
        ffn_hidden_size=cfg.size("moe_intermediate_size", limit=MAX_FFN, default=1408),
        num_experts=cfg.size("num_experts", limit=MAX_EXPERTS, default=64),
        experts_per_token=cfg.size("num_experts_per_tok", limit=MAX_EXPERTS, default=6),
        shared_experts=cfg.size("num_shared_experts", limit=MAX_EXPERTS, default=2),
        dense_layers=dense,
        moe_renormalize=cfg.flag("route_norm", True),
        qk_norm="head",
        norm_placement="sandwich",
        attention_output_gate=True,
    )


def glm4_moe(cfg: HfConfig) -> dict:
    """GLM-4.5 / 4.6 (``glm4_moe``): GQA with q/k/v biases (``attention_bias``; o_proj has none),
    RoPE on ``partial_rotary_factor`` (0.5) of each head, per-head q/k RMSNorm with
    ``use_qk_norm``; ``first_k_dense_replace`` (1) dense blocks of ``intermediate_size``, then
    ``n_routed_experts`` (128) experts of ``moe_intermediate_size`` (top ``num_experts_per_tok``,
    8) and ``n_shared_experts`` (1) as wide; DeepSeek-V3's sigmoid router with a correction bias
    (a buffer: no parameter), whose ``n_group`` / ``topk_group`` / ``routed_scaling_factor``
    default to 1 / 1 / 1.0 here (Glm4MoeConfig), so they are always kept; ``num_nextn_predict_layers``
    (1) MTP modules, counted apart as DeepSeek's (transformers 5.25 builds none)."""
    fields = decoder_fields(cfg, "glm4_moe", 8, None, max_seq_len=131072, norm_eps=1e-5)
    experts = cfg.size("n_routed_experts", limit=MAX_EXPERTS, default=128)
    experts_per_token = cfg.size("num_experts_per_tok", limit=MAX_EXPERTS, default=8)
    return fields | dict(
        out_bias=False,
        partial_rotary_factor=fraction(cfg, "partial_rotary_factor", 0.5),
        qk_norm="head" if cfg.flag("use_qk_norm", False) else "none",
        dense_ffn_hidden_size=fields["ffn_hidden_size"],
        ffn_hidden_size=cfg.size("moe_intermediate_size", limit=MAX_FFN, default=1408),
        num_experts=experts,
        experts_per_token=experts_per_token,
        shared_experts=cfg.size("n_shared_experts", limit=MAX_EXPERTS, default=1),
        dense_layers=min(fields["num_layers"], _layer_count(cfg, "first_k_dense_replace", 1)),
        mtp_layers=_layer_count(cfg, "num_nextn_predict_layers", 1),
        moe_renormalize=cfg.flag("norm_topk_prob", True),
        expert_groups=cfg.size("n_group", limit=MAX_EXPERTS, default=1),
        topk_expert_groups=cfg.size("topk_group", limit=MAX_EXPERTS, default=1),
        routed_scale=positive_number(cfg, "routed_scaling_factor", 1.0),
    )


def olmoe(cfg: HfConfig) -> dict:
    """OLMoE (OLMoE-1B-7B): pre-norm blocks with RMSNorm over the whole q and k projections (as
    OLMo 2: ``qk_norm`` full), biases on q/k/v/o with ``attention_bias``, every block ``num_experts``
    (64) SwiGLU experts of ``intermediate_size``, top ``num_experts_per_tok`` (8) by softmax, not
    renormalised unless ``norm_topk_prob``; no shared expert, no dense block. ``clip_qkv`` clamps
    q, k and v (no weights, elementwise). Its q/k norms are ``hidden_size`` wide whatever
    ``head_dim`` says (transformers' OlmoeAttention), so a ``head_dim`` other than hidden / heads,
    which that model cannot run, is refused."""
    fields = decoder_fields(cfg, "olmoe", None, None, max_seq_len=4096, norm_eps=1e-5)
    if "head_dim" in fields:
        detail = f"olmoe's q/k norms are hidden_size wide: head_dim {fields['head_dim']} must be hidden / heads"
        raise cfg.error(RuleCode.HF_DIMENSIONS, detail=detail)
    return fields | dict(
        qk_norm="full",
        num_experts=cfg.size("num_experts", limit=MAX_EXPERTS, default=64),
        experts_per_token=cfg.size("num_experts_per_tok", limit=MAX_EXPERTS, default=8),
        moe_renormalize=cfg.flag("norm_topk_prob", False),
    )


def granitemoe(cfg: HfConfig) -> dict:
    """IBM Granite 3.x MoE (``GraniteMoeForCausalLM``; 1B-A400M, 3B-A800M): Granite's attention
    and multipliers, every block ``num_local_experts`` (8) SwiGLU experts of ``intermediate_size``
    without biases, top ``num_experts_per_tok`` (2) by a softmax over the chosen logits
    (renormalised); no shared expert (``granitemoeshared`` is another model_type, not read)."""
    fields = decoder_fields(cfg, "granitemoe", None, None, max_seq_len=2048, norm_eps=1e-6)
    return (
        fields
        | granite_multipliers(cfg)
        | dict(
            num_experts=cfg.size("num_local_experts", limit=MAX_EXPERTS, default=8),
            experts_per_token=cfg.size("num_experts_per_tok", limit=MAX_EXPERTS, default=2),
        )
    )
