"""A reader for Hugging Face ``config.json`` files, one function per ``model_type``.

A config file is read strictly as JSON data: nothing is downloaded, no code it names
(``auto_map``) is imported, and keys we do not need are ignored. Optional keys default as in
``transformers``, so a spec counts exactly the parameters that
``AutoModelForCausalLM.from_config`` would build.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.fmt import one_line
from planner.limits import read_input
from planner.model.spec import ModelSpec

MAX_CONFIG_BYTES = 1_000_000
# Upper bounds far beyond any real model; larger values are typos or corrupt files.
_MAX_HIDDEN = 1_000_000
_MAX_LAYERS = 10_000
_MAX_VOCAB = 10_000_000
_MAX_FFN = 10_000_000
_MAX_HEADS = 100_000
_MAX_EXPERTS = 100_000
_MAX_POSITIONS = 1_000_000_000


@dataclass(frozen=True)
class _Config:
    """A parsed config.json plus its path, so that every error can name the file."""

    path: Path
    data: dict[str, Any]

    def error(self, problem: str) -> ValueError:
        return ValueError(f"{self.path}: {problem}")

    def size(self, *keys: str, limit: int, default: int | None = None) -> int:
        """First present key among ``keys`` (JSON null counts as absent), a positive int."""
        key = next((k for k in keys if self.data.get(k) is not None), None)
        if key is None:
            if default is None:
                raise self.error(f"missing key {keys[0]!r}")
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"{key!r} must be an integer, got {value!r}")
        if not 0 < value <= limit:
            raise self.error(f"{key!r} = {value} is out of range (1..{limit})")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(f"{key!r} must be true or false, got {value!r}")
        return value

    def section(self, key: str) -> _Config:
        value = self.data.get(key) or {}
        if not isinstance(value, dict):
            raise self.error(f"{key!r} must be an object")
        return _Config(self.path, value)


def _common(cfg: _Config, hidden: tuple[str, ...], layers: tuple[str, ...], heads: tuple[str, ...]) -> dict:
    return dict(
        hidden_size=cfg.size(*hidden, limit=_MAX_HIDDEN),
        num_layers=cfg.size(*layers, limit=_MAX_LAYERS),
        num_heads=cfg.size(*heads, limit=_MAX_HEADS),
        vocab_size=cfg.size("vocab_size", limit=_MAX_VOCAB),
    )


def _llama_like(cfg: _Config, family: str) -> dict:
    """llama, mistral, qwen2 and mixtral: RMSNorm, SwiGLU, RoPE, optional GQA."""
    fields = _common(cfg, ("hidden_size",), ("num_hidden_layers",), ("num_attention_heads",))
    # transformers' class defaults when the key is absent: Llama -> MHA, Qwen2 -> 32, others -> 8.
    kv_default = {"llama": fields["num_heads"], "qwen2": 32}.get(family, 8)
    fields.update(
        ffn_hidden_size=cfg.size("intermediate_size", limit=_MAX_FFN),
        num_kv_heads=cfg.size("num_key_value_heads", limit=_MAX_HEADS, default=kv_default),
        max_seq_len=cfg.size("max_position_embeddings", limit=_MAX_POSITIONS, default=2048),
        tied_embeddings=cfg.flag("tie_word_embeddings", False),
    )
    if cfg.data.get("head_dim") is not None:
        head_dim = cfg.size("head_dim", limit=_MAX_HIDDEN)
        if head_dim * fields["num_heads"] != fields["hidden_size"]:  # keep specs canonical: None = default
            fields["head_dim"] = head_dim
    if family == "llama":
        attention_bias = cfg.flag("attention_bias", False)
        fields.update(qkv_bias=attention_bias, out_bias=attention_bias, mlp_bias=cfg.flag("mlp_bias", False))
    elif family == "qwen2":
        fields["qkv_bias"] = True
    elif family == "mixtral":
        fields["num_experts"] = cfg.size("num_local_experts", limit=_MAX_EXPERTS, default=8)
        fields["experts_per_token"] = cfg.size("num_experts_per_tok", limit=_MAX_EXPERTS, default=2)
    return fields | _sliding_window(cfg, family, fields["num_layers"])


_GELU_LAYERNORM = dict(mlp="gelu", norm="layernorm", norm_bias=True, mlp_bias=True)
# The GPT-2 block (GPT-3 and Megatron GPT keep it): GeLU MLP, biased LayerNorm, learned positions,
# biased projections.
GPT2_ARCHITECTURE = dict(**_GELU_LAYERNORM, position="learned", qkv_bias=True, out_bias=True)


def _gpt2(cfg: _Config) -> dict:
    fields = _common(
        cfg, ("n_embd", "hidden_size"), ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads")
    )
    inner = cfg.size("n_inner", limit=_MAX_FFN, default=4 * fields["hidden_size"])
    return dict(
        fields,
        **GPT2_ARCHITECTURE,
        ffn_hidden_size=inner,
        max_seq_len=cfg.size("n_positions", "max_position_embeddings", limit=_MAX_POSITIONS, default=1024),
        tied_embeddings=cfg.flag("tie_word_embeddings", True),
    )


def _gpt_neox(cfg: _Config) -> dict:
    # use_parallel_residual and rotary_pct change the dataflow, not the weights.
    fields = _common(cfg, ("hidden_size",), ("num_hidden_layers",), ("num_attention_heads",))
    attention_bias = cfg.flag("attention_bias", True)
    return dict(
        fields,
        **_GELU_LAYERNORM,
        ffn_hidden_size=cfg.size("intermediate_size", limit=_MAX_FFN),
        max_seq_len=cfg.size("max_position_embeddings", limit=_MAX_POSITIONS, default=2048),
        qkv_bias=attention_bias,
        out_bias=attention_bias,
        tied_embeddings=cfg.flag("tie_word_embeddings", False),
    )


def _mpt(cfg: _Config) -> dict:
    """MosaicML MPT as its own code builds it (transformers' port fixes ffn=4h and no biases)."""
    fields = _common(cfg, ("d_model",), ("n_layers",), ("n_heads",))
    hidden, attn = fields["hidden_size"], cfg.section("attn_config")
    if attn.flag("qk_ln", False):
        raise cfg.error("attn_config.qk_ln is not supported")
    ffn_type = cfg.section("ffn_config").data.get("ffn_type", "mptmlp")
    if ffn_type != "mptmlp":
        raise cfg.error(f"ffn_config.ffn_type {ffn_type!r} is not supported (only 'mptmlp')")
    attn_type = attn.data.get("attn_type", "multihead_attention")
    if not isinstance(attn_type, str):
        raise cfg.error(f"attn_config.attn_type must be a string, got {type(attn_type).__name__}")
    kv_heads = {"multihead_attention": fields["num_heads"], "multiquery_attention": 1}.get(attn_type)
    if kv_heads is None:  # grouped_query_attention
        kv_heads = attn.size("kv_n_heads", limit=_MAX_HEADS)
    ratio = cfg.data.get("expansion_ratio", 4)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio * hidden <= _MAX_FFN:
        raise cfg.error(f"'expansion_ratio' = {ratio!r} is not a sensible positive number")
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
        max_seq_len=cfg.size("max_seq_len", limit=_MAX_POSITIONS, default=2048),
        tied_embeddings=cfg.flag("tie_word_embeddings", True),
    )


def _bloom(cfg: _Config) -> dict:
    fields = _common(
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
        max_seq_len=cfg.size("seq_length", limit=_MAX_POSITIONS, default=2048),
        tied_embeddings=cfg.flag("tie_word_embeddings", True),
    )


def _layer_count(cfg: _Config, key: str, default: int) -> int:
    """A non-negative number of layers (0 is meaningful: no dense layers, no MTP module)."""
    value = cfg.data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_LAYERS:
        raise cfg.error(f"{key!r} must be an integer in 0..{_MAX_LAYERS}, got {value!r}")
    return value


def _layer_kinds(cfg: _Config, layers: int) -> list[str] | None:
    """The config's ``layer_types`` list (transformers >= 4.53 writes one), or None."""
    kinds = cfg.data.get("layer_types")
    if kinds is None:
        return None
    if not isinstance(kinds, list) or len(kinds) != layers or not all(isinstance(k, str) for k in kinds):
        raise cfg.error(f"'layer_types' must list one attention type per layer ({layers})")
    return kinds


def _sliding_window(cfg: _Config, family: str, layers: int) -> dict:
    """Window size and windowed layer count, as transformers builds them: Mistral, Ministral and
    Phi-3 window every layer when ``sliding_window`` is set (Mistral's default 4096); Qwen windows
    layers from ``max_window_layers`` on (Qwen2-MoE: every other layer below it), only with
    ``use_sliding_window``; Gemma 2 and GPT-OSS (128) every other layer from the first, Gemma 3
    all but every ``sliding_window_pattern``-th (6). A ``layer_types`` list, when present, is
    what counts."""
    default = {"mistral": 4096, "ministral": 4096, "gemma2": 4096, "gemma3": 4096, "gpt_oss": 128}.get(family)
    present = "sliding_window" in cfg.data
    window = cfg.size("sliding_window", limit=_MAX_POSITIONS, default=0) if present else default
    if family in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe") and not cfg.flag("use_sliding_window", False):
        window = None
    if not window:
        return {}
    kinds = _layer_kinds(cfg, layers)
    if kinds is not None:
        count = sum(kind == "sliding_attention" for kind in kinds)
    elif family in ("gemma2", "gpt_oss"):
        count = (layers + 1) // 2
    elif family == "qwen2_moe":  # every other layer from the first, below max_window_layers
        count = (min(layers, cfg.size("max_window_layers", limit=_MAX_LAYERS, default=28)) + 1) // 2
    elif family == "gemma3":
        count = layers - layers // cfg.size("sliding_window_pattern", limit=_MAX_LAYERS, default=6)
    elif family in ("qwen2", "qwen3", "qwen3_moe"):
        count = layers - min(layers, cfg.size("max_window_layers", limit=_MAX_LAYERS, default=28))
    else:
        count = layers
    return dict(sliding_window=window, sliding_layers=count) if count else {}


def _positive_number(cfg: _Config, key: str, default: float) -> float:
    value = cfg.data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise cfg.error(f"{key!r} must be a positive number, got {value!r}")
    return float(value)


def _decoder(cfg: _Config, family: str, kv_default: int | None, head_dim_default: int | None, **defaults) -> dict:
    """The keys the newer RMSNorm/RoPE decoders share (Qwen3, Gemma, Phi-3, OLMo 2, DeepSeek);
    ``defaults`` are the family's transformers defaults for absent optional keys."""
    fields = _common(cfg, ("hidden_size",), ("num_hidden_layers",), ("num_attention_heads",))
    heads, hidden = fields["num_heads"], fields["hidden_size"]
    head_dim = cfg.size("head_dim", limit=_MAX_HIDDEN, default=head_dim_default or hidden // heads)
    bias = cfg.flag("attention_bias", defaults.get("attention_bias", False))
    fields.update(
        ffn_hidden_size=cfg.size("intermediate_size", limit=_MAX_FFN),
        num_kv_heads=cfg.size("num_key_value_heads", limit=_MAX_HEADS, default=kv_default or heads),
        max_seq_len=cfg.size("max_position_embeddings", limit=_MAX_POSITIONS, default=defaults["max_seq_len"]),
        tied_embeddings=cfg.flag("tie_word_embeddings", defaults.get("tied", False)),
        qkv_bias=bias,
        out_bias=bias,
        rope_theta=_positive_number(cfg, "rope_theta", defaults.get("rope_theta", 10000.0)),
        norm_eps=_positive_number(cfg, "rms_norm_eps", defaults.get("norm_eps", 1e-6)),
    )
    if head_dim * heads != hidden:  # keep specs canonical: None = hidden / heads
        fields["head_dim"] = head_dim
    return fields | _sliding_window(cfg, family, fields["num_layers"])


def _qwen3(cfg: _Config) -> dict:
    """Qwen3: Llama with per-head q/k RMSNorm and no qkv bias (transformers' default head_dim 128)."""
    return _decoder(cfg, "qwen3", 32, 128, max_seq_len=32768, rope_theta=1e6) | dict(qk_norm="head")


def _qwen3_moe(cfg: _Config) -> dict:
    """Qwen3-MoE: ``num_experts`` experts of ``moe_intermediate_size``; the layers listed in
    ``mlp_only_layers`` or off the ``decoder_sparse_step`` have a dense MLP of ``intermediate_size``."""
    fields = _decoder(cfg, "qwen3_moe", 4, None, max_seq_len=32768, rope_theta=1e6) | dict(qk_norm="head")
    dense = _sparse_layers(cfg, fields["num_layers"])
    return fields | dict(
        dense_ffn_hidden_size=fields["ffn_hidden_size"],
        ffn_hidden_size=cfg.size("moe_intermediate_size", limit=_MAX_FFN, default=768),
        num_experts=cfg.size("num_experts", limit=_MAX_EXPERTS, default=128),
        experts_per_token=cfg.size("num_experts_per_tok", limit=_MAX_EXPERTS, default=8),
        dense_layers=dense,
        # transformers' Qwen3MoeConfig default is False; the released configs set True.
        moe_renormalize=cfg.flag("norm_topk_prob", False),
    )


_GEMMA = dict(mlp="geglu", norm_placement="sandwich", embedding_scale=True)


def _gemma2(cfg: _Config) -> dict:
    """Gemma 2: GeGLU, four norms per block, scaled tied embeddings, alternating local/global
    attention, tanh soft-caps on attention scores (50) and logits (30)."""
    fields = _decoder(cfg, "gemma2", 4, 256, max_seq_len=8192, tied=True) | _GEMMA
    caps = {}
    for key, field, default in (
        ("attn_logit_softcapping", "attn_softcap", 50.0),
        ("final_logit_softcapping", "final_softcap", 30.0),
    ):
        value = cfg.data.get(key, default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise cfg.error(f"{key!r} must be a positive number or null, got {value!r}")
        caps[field] = None if value is None else float(value)
    return fields | caps


def _gemma3_text(cfg: _Config) -> dict:
    """Gemma 3 (text): Gemma 2's block with per-head q/k norms instead of the attention soft-cap
    and five local layers per global one."""
    base = _decoder(cfg, "gemma3", 4, 256, max_seq_len=131072, tied=True) | _GEMMA | dict(qk_norm="head")
    cap = cfg.data.get("final_logit_softcapping")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap <= 0):
        raise cfg.error(f"'final_logit_softcapping' must be a positive number or null, got {cap!r}")
    return base | (dict(final_softcap=float(cap)) if cap is not None else {})


def _gemma3(cfg: _Config) -> dict:
    """Gemma 3 multimodal checkpoints (4B and up): the language model's ``text_config``; the
    vision tower is not planned. The released configs omit the vocabulary (transformers: 262208)."""
    text = cfg.section("text_config")
    data = {"vocab_size": 262208, **{k: v for k, v in text.data.items() if v is not None}}
    return _gemma3_text(_Config(cfg.path, data))


def _phi3(cfg: _Config) -> dict:
    """Phi-3: Llama's shapes with fused qkv and gate/up weights; a ``sliding_window`` (2047 in
    Phi-3-mini-4k) applies to every layer."""
    return _decoder(cfg, "phi3", None, None, max_seq_len=4096, norm_eps=1e-5) | dict(fused_projections=True)


def _olmo2(cfg: _Config) -> dict:
    """OLMo 2: norms after each sub-layer (before the residual add) and RMSNorm over the whole
    q and k projections."""
    return _decoder(cfg, "olmo2", None, None, max_seq_len=2048, norm_eps=1e-5) | dict(
        norm_placement="post", qk_norm="full"
    )


def _deepseek_v3(cfg: _Config) -> dict:
    """DeepSeek-V3: MLA, ``first_k_dense_replace`` dense blocks, then ``n_routed_experts``
    routed (``num_experts_per_tok`` per token) + ``n_shared_experts`` shared experts of
    ``moe_intermediate_size``; ``num_nextn_predict_layers`` MTP modules (counted apart).
    transformers makes every layer from k on a MoE block (``moe_layer_freq`` is not read)."""
    if cfg.flag("attention_bias", False):
        raise cfg.error("attention_bias is not supported for deepseek_v3")
    fields = _decoder(cfg, "deepseek_v3", None, None, max_seq_len=4096)
    rope = cfg.size("qk_rope_head_dim", limit=_MAX_HIDDEN, default=64)
    nope = cfg.size("qk_nope_head_dim", limit=_MAX_HIDDEN, default=128)
    # Absent: transformers' default 1536; an explicit null: one q projection (DeepSeek-V2-Lite).
    q_lora = None if "q_lora_rank" in cfg.data and cfg.data["q_lora_rank"] is None else 1536
    if cfg.data.get("q_lora_rank") is not None:
        q_lora = cfg.size("q_lora_rank", limit=_MAX_HIDDEN)
    mla = dict(
        q_lora_rank=q_lora,
        kv_lora_rank=cfg.size("kv_lora_rank", limit=_MAX_HIDDEN, default=512),
        qk_rope_head_dim=rope,
        v_head_dim=cfg.size("v_head_dim", limit=_MAX_HIDDEN, default=128),
    )
    dense = min(fields["num_layers"], _layer_count(cfg, "first_k_dense_replace", 3))
    fields.pop("head_dim", None)
    mtp = _layer_count(cfg, "num_nextn_predict_layers", 1)
    return fields | dict(
        head_dim=nope + rope,
        num_kv_heads=fields["num_heads"],
        mla=mla,
        dense_ffn_hidden_size=fields["ffn_hidden_size"],
        ffn_hidden_size=cfg.size("moe_intermediate_size", limit=_MAX_FFN, default=2048),
        num_experts=cfg.size("n_routed_experts", limit=_MAX_EXPERTS, default=256),
        experts_per_token=cfg.size("num_experts_per_tok", limit=_MAX_EXPERTS, default=8),
        shared_experts=cfg.size("n_shared_experts", limit=_MAX_EXPERTS, default=1),
        dense_layers=dense,
        mtp_layers=mtp,
    )


def _fraction(cfg: _Config, key: str, default: float) -> float:
    """A number in (0, 1], read at the top level or in ``rope_parameters`` (transformers >= 5)."""
    value = cfg.data.get(key)
    if value is None:
        value = cfg.section("rope_parameters").data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise cfg.error(f"{key!r} must be a number in (0, 1], got {value!r}")
    return float(value)


def _rope_theta(cfg: _Config, default: float) -> float:
    nested = cfg.section("rope_parameters")
    if cfg.data.get("rope_theta") is None and nested.data.get("rope_theta") is not None:
        return _positive_number(nested, "rope_theta", default)
    return _positive_number(cfg, "rope_theta", default)


# Nemotron's hidden_act values and the MLP they make (both are NemotronMLP's up -> act -> down).
_NEMOTRON_ACTS = {"relu2": "relu2", "gelu": "gelu", "gelu_pytorch_tanh": "gelu", "gelu_new": "gelu"}


def _nemotron(cfg: _Config) -> dict:
    """NVIDIA Nemotron-3/4 and Minitron: a two-matrix MLP (up, squared ReLU, down: no gate),
    LayerNorm1P (LayerNorm with weight and bias, applied as 1 + weight), RoPE on
    ``partial_rotary_factor`` (0.5) of each head, untied embeddings, no biases by default."""
    fields = _common(cfg, ("hidden_size",), ("num_hidden_layers",), ("num_attention_heads",))
    heads, hidden = fields["num_heads"], fields["hidden_size"]
    act = cfg.data.get("hidden_act", "relu2")
    if not isinstance(act, str) or act not in _NEMOTRON_ACTS:
        raise cfg.error(f"hidden_act {act!r} is not supported for nemotron (relu2 or a GeLU)")
    attention_bias = cfg.flag("attention_bias", False)
    mlp_bias = cfg.flag("mlp_bias", False)
    fields.update(
        ffn_hidden_size=cfg.size("intermediate_size", limit=_MAX_FFN),
        # NemotronConfig leaves an absent key None (its attention then fails); Megatron's
        # num_query_groups None is multi-head attention, which is what we read.
        num_kv_heads=cfg.size("num_key_value_heads", limit=_MAX_HEADS, default=heads),
        max_seq_len=cfg.size("max_position_embeddings", limit=_MAX_POSITIONS, default=4096),
        tied_embeddings=cfg.flag("tie_word_embeddings", False),
        mlp=_NEMOTRON_ACTS[act],
        norm="layernorm",
        norm_bias=True,
        qkv_bias=attention_bias,
        out_bias=attention_bias,
        mlp_bias=mlp_bias,
        partial_rotary_factor=_fraction(cfg, "partial_rotary_factor", 0.5),
        rope_theta=_rope_theta(cfg, 10000.0),
        norm_eps=_positive_number(cfg, "norm_eps", 1e-5),
    )
    # transformers reads ``head_dim`` only (Megatron's ``kv_channels`` is not a config key there).
    head_dim = cfg.size("head_dim", limit=_MAX_HIDDEN, default=hidden // heads)
    if head_dim * heads != hidden:
        fields["head_dim"] = head_dim
    return fields


def _gpt_oss(cfg: _Config) -> dict:
    """OpenAI GPT-OSS: biased q/k/v/o, one learnt attention sink per head, a 128-token window on
    every other layer, ``num_local_experts`` SwiGLU experts of ``intermediate_size`` with biases
    (fused gate/up: same shapes), top ``num_experts_per_tok`` of a biased router (softmax over
    the chosen logits). Its clamped SwiGLU (``swiglu_limit``) and YaRN change no weights."""
    fields = _decoder(
        cfg, "gpt_oss", 8, 64, max_seq_len=131072, rope_theta=150000.0, norm_eps=1e-5, attention_bias=True
    )
    return fields | dict(
        ffn_hidden_size=cfg.size("intermediate_size", limit=_MAX_FFN, default=2880),
        num_experts=cfg.size("num_local_experts", limit=_MAX_EXPERTS, default=128),
        experts_per_token=cfg.size("num_experts_per_tok", limit=_MAX_EXPERTS, default=4),
        mlp_bias=True,
        router_bias=True,
        attention_sinks=True,
    )


def _sparse_layers(cfg: _Config, layers: int) -> int:
    """Qwen-MoE blocks with a dense MLP: those in ``mlp_only_layers`` or off the
    ``decoder_sparse_step``."""
    step = cfg.size("decoder_sparse_step", limit=_MAX_LAYERS, default=1)
    dense_only = cfg.data.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or not all(isinstance(i, int) for i in dense_only):
        raise cfg.error("'mlp_only_layers' must be a list of layer indices")
    return sum(1 for i in range(layers) if i in dense_only or (i + 1) % step)


def _qwen2_moe(cfg: _Config) -> dict:
    """Qwen1.5-MoE / Qwen2-MoE: Qwen2's attention (q/k/v biases, ``qkv_bias``), ``num_experts``
    routed experts of ``moe_intermediate_size`` (top ``num_experts_per_tok``, softmax, not
    renormalised unless ``norm_topk_prob``) plus one shared expert of
    ``shared_expert_intermediate_size`` whose output a sigmoid gate (h -> 1) scales. The spec
    sizes the shared expert in routed-expert widths, so it must be a multiple of them (4 x 1408
    in Qwen1.5-MoE-A2.7B, 8 x 2560 in Qwen2-57B-A14B)."""
    fields = _decoder(cfg, "qwen2_moe", 16, None, max_seq_len=32768, rope_theta=10000.0, norm_eps=1e-6)
    qkv_bias = cfg.flag("qkv_bias", True)
    width = cfg.size("moe_intermediate_size", limit=_MAX_FFN, default=1408)
    shared = cfg.size("shared_expert_intermediate_size", limit=_MAX_FFN, default=5632)
    if shared % width:
        raise cfg.error(
            f"shared_expert_intermediate_size {shared} is not a multiple of moe_intermediate_size {width} "
            "(the shared expert is planned as whole experts)"
        )
    return fields | dict(
        qkv_bias=qkv_bias,
        out_bias=False,
        dense_ffn_hidden_size=fields["ffn_hidden_size"],
        ffn_hidden_size=width,
        num_experts=cfg.size("num_experts", limit=_MAX_EXPERTS, default=60),
        experts_per_token=cfg.size("num_experts_per_tok", limit=_MAX_EXPERTS, default=4),
        shared_experts=shared // width,
        shared_expert_gate=True,
        dense_layers=_sparse_layers(cfg, fields["num_layers"]),
        moe_renormalize=cfg.flag("norm_topk_prob", False),
    )


def _ministral(cfg: _Config) -> dict:
    """Ministral (Ministral-8B-Instruct-2410): Mistral's block (no biases, GQA, ``head_dim``)
    with a ``sliding_window`` (default 4096) on the layers ``layer_types`` names, every layer
    without a list. The block is Mistral's: ``family`` is ``mistral``."""
    fields = _llama_like(cfg, "ministral")
    if cfg.data.get("max_position_embeddings") is None:
        fields["max_seq_len"] = 131072  # MinistralConfig's default
    return fields | dict(family="mistral")


def _text_config(cfg: _Config, defaults: dict[str, Any]) -> _Config:
    """A multimodal config's language model (``text_config``), transformers' defaults for its
    absent keys; the vision tower beside it is not read."""
    text = cfg.section("text_config")
    if not text.data:
        raise cfg.error("missing key 'text_config' (the language model; the vision tower is not planned)")
    data = dict(text.data)
    for key, value in defaults.items():
        if data.get(key) is None:
            data[key] = value
    return _Config(cfg.path, data)


def _mistral3(cfg: _Config) -> dict:
    """Mistral Small 3.1 / 3.2 (``Mistral3ForConditionalGeneration``): only the language model,
    ``text_config`` (a Mistral decoder: ``family`` is ``mistral``), is read and counted; the
    Pixtral vision tower and its projector (about 0.4 B parameters in Mistral Small 3.1) are not
    planned."""
    text = _text_config(cfg, {"model_type": "mistral"})
    if text.data.get("model_type") != "mistral":
        kind = text.data.get("model_type")
        raise cfg.error(f"text_config.model_type {kind!r} is not supported for mistral3 (only 'mistral')")
    # transformers >= 5 ties the head when the file has no top-level ``tie_word_embeddings``
    # (Mistral3Config's default true); transformers 4.x read text_config's (Mistral's default
    # false), and the released checkpoints hold a separate lm_head: that is what we count.
    tied = cfg.flag("tie_word_embeddings", text.flag("tie_word_embeddings", False))
    return _llama_like(text, "mistral") | dict(family="mistral", tied_embeddings=tied)


def _llama4(cfg: _Config) -> dict:
    """Llama 4 (Scout, Maverick): the language model (``text_config``) only, not the vision
    tower. MoE blocks (``moe_layers``, default every ``interleave_moe_layer_step``-th from
    step - 1) hold ``num_local_experts`` SwiGLU experts of ``intermediate_size``, top
    ``num_experts_per_tok`` by a sigmoid router, plus one shared expert as wide; the other blocks
    a dense MLP of ``intermediate_size_mlp``. RoPE layers (all but every
    ``no_rope_layer_interval``-th) attend within ``attention_chunk_size`` chunks. The spec keeps
    the number of dense and chunked blocks, not their places; the weightless L2 q/k norm
    (``use_qk_norm``) and the NoPE layers' missing rotary are not in the block table."""
    text = _text_config(cfg, {"vocab_size": 202048})
    fields = _decoder(text, "llama4", 8, 128, max_seq_len=131072, rope_theta=500000.0, norm_eps=1e-5)
    fields["tied_embeddings"] = cfg.flag("tie_word_embeddings", text.flag("tie_word_embeddings", False))
    layers = fields["num_layers"]
    step = text.size("interleave_moe_layer_step", limit=_MAX_LAYERS, default=1)
    moe = text.data.get("moe_layers")
    if moe is None:
        moe = list(range(step - 1, layers, step))
    if not isinstance(moe, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in moe):
        raise cfg.error("text_config.moe_layers must be a list of layer indices")
    dense = layers - len({i for i in moe if 0 <= i < layers})
    fields |= dict(
        dense_ffn_hidden_size=text.size("intermediate_size_mlp", limit=_MAX_FFN, default=16384),
        num_experts=text.size("num_local_experts", limit=_MAX_EXPERTS, default=16),
        experts_per_token=text.size("num_experts_per_tok", limit=_MAX_EXPERTS, default=1),
        shared_experts=1,
        dense_layers=dense,
        moe_renormalize=False,
    )
    if fields["num_experts"] == 1 or dense == layers:
        raise cfg.error("a Llama 4 text model without expert layers is not supported")
    chunk = text.data.get("attention_chunk_size", 8192)
    if chunk is None:
        return fields
    chunk = text.size("attention_chunk_size", limit=_MAX_POSITIONS, default=8192)
    kinds = _layer_kinds(text, layers)
    if kinds is not None:
        chunked = sum(kind == "chunked_attention" for kind in kinds)
    else:
        rope = text.data.get("no_rope_layers") or []  # 1 = a RoPE layer; empty: the interval's pattern
        if not isinstance(rope, list) or (rope and len(rope) != layers):
            raise cfg.error(f"text_config.no_rope_layers must list one flag per layer ({layers})")
        interval = text.size("no_rope_layer_interval", limit=_MAX_LAYERS, default=4)
        chunked = sum(map(bool, rope)) if rope else sum(1 for i in range(layers) if (i + 1) % interval)
    return fields | (dict(attention_chunk=chunk, chunked_layers=chunked) if chunked else {})


_READERS: dict[str, Callable[[_Config], dict]] = {
    "llama": lambda cfg: _llama_like(cfg, "llama"),
    "mistral": lambda cfg: _llama_like(cfg, "mistral"),
    "qwen2": lambda cfg: _llama_like(cfg, "qwen2"),
    "mixtral": lambda cfg: _llama_like(cfg, "mixtral"),
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "mpt": _mpt,
    "bloom": _bloom,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma2": _gemma2,
    "gemma3": _gemma3,
    "gemma3_text": _gemma3_text,
    "phi3": _phi3,
    "olmo2": _olmo2,
    "deepseek_v3": _deepseek_v3,
    "nemotron": _nemotron,
    "gpt_oss": _gpt_oss,
    "qwen2_moe": _qwen2_moe,
    "ministral": _ministral,
    "mistral3": _mistral3,
    "llama4": _llama4,
}
SUPPORTED_MODEL_TYPES = tuple(_READERS)


def _read_json_object(path: Path) -> _Config:
    if path.is_dir():
        path = path / "config.json"
    if not path.exists():
        raise ValueError(f"{path}: no such config file")
    raw = read_input(path, "model config", MAX_CONFIG_BYTES)  # a regular file, capped
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply, not a model config") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level must be a JSON object, got {type(data).__name__}")
    return _Config(path, data)


def _check_heads(cfg: _Config, fields: dict) -> None:
    hidden, heads, kv_heads = fields["hidden_size"], fields["num_heads"], fields["num_kv_heads"]
    if "head_dim" not in fields and hidden % heads:
        raise cfg.error(f"{heads} attention heads do not divide hidden size {hidden}")
    if heads % kv_heads:
        raise cfg.error(f"{kv_heads} key/value heads do not divide {heads} attention heads")
    if fields.get("experts_per_token", 1) > fields.get("num_experts", 1):
        raise cfg.error("num_experts_per_tok exceeds num_local_experts")


def model_from_hf_config(path: str | Path) -> ModelSpec:
    """Read a Hugging Face ``config.json`` (or the directory holding it) into a ModelSpec."""
    cfg = _read_json_object(Path(path))
    default_name = cfg.path.parent.name if cfg.path.name == "config.json" else cfg.path.stem
    return _model_from(cfg, default_name)


def model_from_hf_dict(data: dict[str, Any], name: str) -> ModelSpec:
    """A config.json's content, already parsed (the presets of ``planner.catalog.models``), read
    as ``model_from_hf_config`` reads the file; ``name`` names the spec and its errors."""
    spec = _model_from(_Config(Path(f"<{name}>"), dict(data)), name)
    return spec.model_copy(update={"name": name})


def _model_from(cfg: _Config, default_name: str) -> ModelSpec:
    model_type = cfg.data.get("model_type")
    if model_type is None:
        raise cfg.error("missing key 'model_type'")
    if not isinstance(model_type, str) or model_type not in _READERS:
        raise cfg.error(f"unsupported model_type {model_type!r} (supported: {', '.join(SUPPORTED_MODEL_TYPES)})")
    fields = _READERS[model_type](cfg)
    family = fields.pop("family", model_type)  # mistral3 / ministral: their decoder is Mistral's
    fields.setdefault("num_kv_heads", fields["num_heads"])
    _check_heads(cfg, fields)
    name = cfg.data.get("_name_or_path") or default_name or model_type
    # Printed by estimate/explain: no terminal escape sequences or control characters from a file.
    name = "".join(ch for ch in str(name) if ch.isprintable())[:200] or model_type
    try:
        return ModelSpec(name=str(name), family=family, **fields)
    except ValidationError as exc:
        raise cfg.error(f"invalid model dimensions: {one_line(exc, where=False, keep_prefix=True)}") from None
