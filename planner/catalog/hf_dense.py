"""The readers of the dense decoders' ``config.json`` (and Mixtral's, Llama's block with
experts): the GPT-2 family, Llama and its relatives, Gemma, Phi-3, OLMo 2, Nemotron, Ministral,
Mistral 3, Granite. Each returns ModelSpec fields; :mod:`planner.catalog.hf_config` dispatches on
``model_type``.
"""

from __future__ import annotations

from planner.catalog.hf_keys import (
    MAX_EXPERTS,
    MAX_FFN,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_POSITIONS,
    HfConfig,
    common_fields,
    decoder_fields,
    fraction,
    granite_multipliers,
    positive_number,
    read_rope_theta,
    text_config,
    window_fields,
)
from planner.errors import RuleCode


def llama_like(cfg: HfConfig, family: str) -> dict:
    """llama, mistral, qwen2 and mixtral: RMSNorm, SwiGLU, RoPE, optional GQA."""
    fields = common_fields(cfg, ("hidden_size",), ("num_hidden_layers",), ("num_attention_heads",))
    # transformers' class defaults when the key is absent: Llama -> MHA, Qwen2 -> 32, others -> 8.
    kv_default = {"llama": fields["num_heads"], "qwen2": 32}.get(family, 8)
    fields.update(
        ffn_hidden_size=cfg.size("intermediate_size", limit=MAX_FFN),
        num_kv_heads=cfg.size("num_key_value_heads", limit=MAX_HEADS, default=kv_default),
        max_seq_len=cfg.size("max_position_embeddings", limit=MAX_POSITIONS, default=2048),
        tied_embeddings=cfg.flag("tie_word_embeddings", False),
    )
    if cfg.data.get("head_dim") is not None:
        head_dim = cfg.size("head_dim", limit=MAX_HIDDEN)
        if head_dim * fields["num_heads"] != fields["hidden_size"]:  # keep specs canonical: None = default
            fields["head_dim"] = head_dim
    if family == "llama":
        attention_bias = cfg.flag("attention_bias", False)
        fields.update(qkv_bias=attention_bias, out_bias=attention_bias, mlp_bias=cfg.flag("mlp_bias", False))
    elif family == "qwen2":
        fields["qkv_bias"] = True
    elif family == "mixtral":
        fields["num_experts"] = cfg.size("num_local_experts", limit=MAX_EXPERTS, default=8)
        fields["experts_per_token"] = cfg.size("num_experts_per_tok", limit=MAX_EXPERTS, default=2)
    return fields | window_fields(cfg, family, fields["num_layers"])


_GELU_LAYERNORM = dict(mlp="gelu", norm="layernorm", norm_bias=True, mlp_bias=True)

# The GPT-2 block (GPT-3 and Megatron GPT keep it): GeLU MLP, biased LayerNorm, learned positions,
# biased projections.
GPT2_ARCHITECTURE = dict(**_GELU_LAYERNORM, position="learned", qkv_bias=True, out_bias=True)


def gpt2(cfg: HfConfig) -> dict:
    fields = common_fields(
        cfg, ("n_embd", "hidden_size"), ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads")
    )
    inner = cfg.size("n_inner", limit=MAX_FFN, default=4 * fields["hidden_size"])
    return dict(
        fields,
        **GPT2_ARCHITECTURE,
        ffn_hidden_size=inner,
        max_seq_len=cfg.size("n_positions", "max_position_embeddings", limit=MAX_POSITIONS, default=1024),
        tied_embeddings=cfg.flag("tie_word_embeddings", True),
    )


def gpt_neox(cfg: HfConfig) -> dict:
    # rotary_pct changes the dataflow, not the weights; use_parallel_residual (transformers'
    # default True) reduces attention and MLP once under tensor parallelism.
    fields = common_fields(cfg, ("hidden_size",), ("num_hidden_layers",), ("num_attention_heads",))
    attention_bias = cfg.flag("attention_bias", True)
    return dict(
        fields,
        **_GELU_LAYERNORM,
        ffn_hidden_size=cfg.size("intermediate_size", limit=MAX_FFN),
        max_seq_len=cfg.size("max_position_embeddings", limit=MAX_POSITIONS, default=2048),
        qkv_bias=attention_bias,
        out_bias=attention_bias,
        tied_embeddings=cfg.flag("tie_word_embeddings", False),
        parallel_block=cfg.flag("use_parallel_residual", True),
    )


def mpt(cfg: HfConfig) -> dict:
    """MosaicML MPT as its own code builds it (transformers' port fixes ffn=4h and no biases)."""
    fields = common_fields(cfg, ("d_model",), ("n_layers",), ("n_heads",))
    hidden, attn = fields["hidden_size"], cfg.section("attn_config")
    if attn.flag("qk_ln", False):
        raise cfg.error(RuleCode.HF_MPT_QK_LN)
    ffn_type = cfg.section("ffn_config").data.get("ffn_type", "mptmlp")
    if ffn_type != "mptmlp":
        raise cfg.error(RuleCode.HF_MPT_FFN_TYPE, value=repr(ffn_type))
    attn_type = attn.data.get("attn_type", "multihead_attention")
    if not isinstance(attn_type, str):
        raise cfg.error(RuleCode.HF_MPT_ATTN_TYPE, type=type(attn_type).__name__)
    kv_heads = {"multihead_attention": fields["num_heads"], "multiquery_attention": 1}.get(attn_type)
    if kv_heads is None:  # grouped_query_attention
        kv_heads = attn.size("kv_n_heads", limit=MAX_HEADS)
    ratio = cfg.data.get("expansion_ratio", 4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio * hidden <= MAX_FFN:
        raise cfg.error(RuleCode.HF_MPT_EXPANSION, value=repr(ratio))
    position = "alibi" if attn.flag("alibi", True) else ("rope" if attn.flag("rope", False) else "learned")
    bias = not cfg.flag("no_bias", True)
    return dict(
        fields,
        mlp="gelu",
        norm="layernorm",
        norm_bias=bias,
        mlp_bias=bias,
        qkv_bias=bias,
        out_bias=bias,
        ffn_hidden_size=int(ratio * hidden),
        num_kv_heads=kv_heads,
        position=position,
        max_seq_len=cfg.size("max_seq_len", limit=MAX_POSITIONS, default=2048),
        tied_embeddings=cfg.flag("tie_word_embeddings", True),
    )


def bloom(cfg: HfConfig) -> dict:
    fields = common_fields(
        cfg, ("n_embed", "hidden_size"), ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads")
    )
    return dict(
        fields,
        **_GELU_LAYERNORM,
        ffn_hidden_size=4 * fields["hidden_size"],
        position="alibi",
        embedding_norm=True,
        qkv_bias=True,
        out_bias=True,
        max_seq_len=cfg.size("seq_length", limit=MAX_POSITIONS, default=2048),
        tied_embeddings=cfg.flag("tie_word_embeddings", True),
    )


def qwen3(cfg: HfConfig) -> dict:
    """Qwen3: Llama with per-head q/k RMSNorm and no qkv bias (transformers' default head_dim 128)."""
    return decoder_fields(cfg, "qwen3", 32, 128, max_seq_len=32768, rope_theta=1e6) | dict(qk_norm="head")


_GEMMA = dict(mlp="geglu", norm_placement="sandwich", embedding_scale=True)


def gemma2(cfg: HfConfig) -> dict:
    """Gemma 2: GeGLU, four norms per block, scaled tied embeddings, alternating local/global
    attention, tanh soft-caps on attention scores (50) and logits (30)."""
    fields = decoder_fields(cfg, "gemma2", 4, 256, max_seq_len=8192, tied=True) | _GEMMA
    caps = {}
    for key, field, default in (
        ("attn_logit_softcapping", "attn_softcap", 50.0),
        ("final_logit_softcapping", "final_softcap", 30.0),
    ):
        value = cfg.data.get(key, default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise cfg.error(RuleCode.HF_NOT_CAP, field=key, value=repr(value))
        caps[field] = None if value is None else float(value)
    return fields | caps


def gemma3_text(cfg: HfConfig) -> dict:
    """Gemma 3 (text): Gemma 2's block with per-head q/k norms instead of the attention soft-cap
    and five local layers per global one."""
    base = decoder_fields(cfg, "gemma3", 4, 256, max_seq_len=131072, tied=True) | _GEMMA | dict(qk_norm="head")
    cap = cfg.data.get("final_logit_softcapping")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap <= 0):
        raise cfg.error(RuleCode.HF_NOT_CAP, field="final_logit_softcapping", value=repr(cap))
    return base | (dict(final_softcap=float(cap)) if cap is not None else {})


def gemma3(cfg: HfConfig) -> dict:
    """Gemma 3 multimodal checkpoints (4B and up): the language model's ``text_config``; the
    vision tower is not planned. The released configs omit the vocabulary (transformers: 262208)."""
    text = text_config(cfg, {"vocab_size": 262208})  # absent or null: names text_config (trial s52)
    return gemma3_text(HfConfig(cfg.path, {k: v for k, v in text.data.items() if v is not None}))


def phi3(cfg: HfConfig) -> dict:
    """Phi-3: Llama's shapes with fused qkv and gate/up weights; a ``sliding_window`` (2047 in
    Phi-3-mini-4k) applies to every layer; RoPE on ``partial_rotary_factor`` of each head (0.75 in
    Phi-4-mini; trial s52: it was dropped, and the native decoder would rotate the whole head)."""
    return decoder_fields(cfg, "phi3", None, None, max_seq_len=4096, norm_eps=1e-5) | dict(
        fused_projections=True, partial_rotary_factor=fraction(cfg, "partial_rotary_factor", 1.0)
    )


def olmo2(cfg: HfConfig) -> dict:
    """OLMo 2: norms after each sub-layer (before the residual add) and RMSNorm over the whole
    q and k projections."""
    return decoder_fields(cfg, "olmo2", None, None, max_seq_len=2048, norm_eps=1e-5) | dict(
        norm_placement="post", qk_norm="full"
    )


# Nemotron's hidden_act values and the MLP they make (both are NemotronMLP's up -> act -> down).
_NEMOTRON_ACTS = {"relu2": "relu2", "gelu": "gelu", "gelu_pytorch_tanh": "gelu", "gelu_new": "gelu"}


def nemotron(cfg: HfConfig) -> dict:
    """NVIDIA Nemotron-3/4 and Minitron: a two-matrix MLP (up, squared ReLU, down: no gate),
    LayerNorm1P (LayerNorm with weight and bias, applied as 1 + weight), RoPE on
    ``partial_rotary_factor`` (0.5) of each head, untied embeddings, no biases by default."""
    fields = common_fields(cfg, ("hidden_size",), ("num_hidden_layers",), ("num_attention_heads",))
    heads, hidden = fields["num_heads"], fields["hidden_size"]
    act = cfg.data.get("hidden_act", "relu2")
    if not isinstance(act, str) or act not in _NEMOTRON_ACTS:
        raise cfg.error(RuleCode.HF_NEMOTRON_ACT, value=repr(act))
    attention_bias = cfg.flag("attention_bias", False)
    mlp_bias = cfg.flag("mlp_bias", False)
    fields.update(
        ffn_hidden_size=cfg.size("intermediate_size", limit=MAX_FFN),
        # NemotronConfig leaves an absent key None (its attention then fails); Megatron's
        # num_query_groups None is multi-head attention, which is what we read.
        num_kv_heads=cfg.size("num_key_value_heads", limit=MAX_HEADS, default=heads),
        max_seq_len=cfg.size("max_position_embeddings", limit=MAX_POSITIONS, default=4096),
        tied_embeddings=cfg.flag("tie_word_embeddings", False),
        mlp=_NEMOTRON_ACTS[act],
        norm="layernorm",
        norm_bias=True,
        qkv_bias=attention_bias,
        out_bias=attention_bias,
        mlp_bias=mlp_bias,
        partial_rotary_factor=fraction(cfg, "partial_rotary_factor", 0.5),
        rope_theta=read_rope_theta(cfg, 10000.0),
        norm_eps=positive_number(cfg, "norm_eps", 1e-5),
    )
    # transformers reads ``head_dim`` only (Megatron's ``kv_channels`` is not a config key there).
    head_dim = cfg.size("head_dim", limit=MAX_HIDDEN, default=hidden // heads)
    if head_dim * heads != hidden:
        fields["head_dim"] = head_dim
    return fields


def ministral(cfg: HfConfig) -> dict:
    """Ministral (Ministral-8B-Instruct-2410): Mistral's block (no biases, GQA, ``head_dim``)
    with a ``sliding_window`` (default 4096) on the layers ``layer_types`` names, every layer
    without a list. The block is Mistral's: ``family`` is ``mistral``."""
    fields = llama_like(cfg, "ministral")
    if cfg.data.get("max_position_embeddings") is None:
        fields["max_seq_len"] = 131072  # MinistralConfig's default
    return fields | dict(family="mistral")


def ministral3(cfg: HfConfig) -> dict:
    """Ministral 3 (Ministral-3-*-2512, Devstral 2: transformers' Ministral3Config, the language model
    of their ``mistral3`` checkpoints or a text-only file): Mistral's block (no biases, GQA,
    ``head_dim``), no window unless ``sliding_window`` is set; its ``rope_parameters`` (YaRN and
    Llama 4's attention temperature) change no weight or FLOP. The block is Mistral's."""
    fields = llama_like(cfg, "ministral3")
    if cfg.data.get("max_position_embeddings") is None:
        fields["max_seq_len"] = 262144  # Ministral3Config's default
    return fields | dict(family="mistral")


def mistral3(cfg: HfConfig) -> dict:
    """Mistral Small 3.1 / 3.2 (``Mistral3ForConditionalGeneration``): only the language model,
    ``text_config`` (a Mistral decoder: ``family`` is ``mistral``), is read and counted; the
    Pixtral vision tower and its projector (about 0.4 B parameters in Mistral Small 3.1) are not
    planned."""
    text = text_config(cfg, {"model_type": "mistral"})
    kind = text.data.get("model_type")
    if kind not in ("mistral", "ministral3"):  # Mistral Small 3.x; Ministral 3 and Devstral 2
        raise cfg.error(RuleCode.HF_MISTRAL3_TEXT, value=repr(kind))
    # transformers >= 5 ties the head when the file has no top-level ``tie_word_embeddings``
    # (Mistral3Config's default true); transformers 4.x read text_config's (Mistral's default
    # false), and the released checkpoints hold a separate lm_head: that is what we count.
    tied = cfg.flag("tie_word_embeddings", text.flag("tie_word_embeddings", False))
    fields = ministral3(text) if kind == "ministral3" else llama_like(text, "mistral")
    return fields | dict(family="mistral", tied_embeddings=tied)


def granite(cfg: HfConfig) -> dict:
    """IBM Granite 3.x dense (``GraniteForCausalLM``): Llama's block (GQA, SwiGLU, RMSNorm, RoPE;
    biases on q/k/v/o with ``attention_bias``, on the MLP with ``mlp_bias``; tied embeddings
    where ``tie_word_embeddings``, as the 3.x releases set) plus muP's multipliers, which change no
    weight and no FLOP (``granite_multipliers``)."""
    fields = decoder_fields(cfg, "granite", None, None, max_seq_len=2048, norm_eps=1e-6)
    return fields | dict(mlp_bias=cfg.flag("mlp_bias", False)) | granite_multipliers(cfg)
