"""Model presets, and ``load_model``: a preset name or a Hugging Face ``config.json``
(read by :mod:`planner.catalog.hf_config`). Both give a :class:`~planner.model.spec.ModelSpec`.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from planner.catalog.hf_config import MAX_CONFIG_BYTES, SUPPORTED_MODEL_TYPES, model_from_hf_config, model_from_hf_dict
from planner.model.spec import ModelSpec

__all__ = [
    "MAX_CONFIG_BYTES",
    "PRESET_CONFIGS",
    "SUPPORTED_MODEL_TYPES",
    "canonical_preset_name",
    "get_preset",
    "list_presets",
    "load_model",
    "model_from_hf_config",
]

# --------------------------------------------------------------------------- presets

# Every preset is a config.json's content (issue 31: data, not positional calls), read by the same
# reader as a file, so a preset is what its released config.json gives. Only the keys the reader
# uses are listed (the rest default as in transformers). tests/planner/test_models.py checks each
# against transformers built on the meta device; tests/planner/test_family_specs.py the newer
# families' ones against their stored files (tests/data/hf_configs).


def _llama(layers: int, hidden: int, ffn: int, heads: int, kv: int, vocab: int, positions: int) -> dict[str, Any]:
    """A Llama config.json's dimension keys (the common part of most presets below)."""
    return {
        "model_type": "llama",
        "num_hidden_layers": layers,
        "hidden_size": hidden,
        "intermediate_size": ffn,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "vocab_size": vocab,
        "max_position_embeddings": positions,
    }


def _gpt3(layers: int, hidden: int, heads: int) -> dict[str, Any]:
    """GPT-3 paper (Brown et al. 2020, Table 2.1) on the GPT-2 architecture: ffn 4h, 2048
    positions, the GPT-2 vocabulary, tied embeddings."""
    return {
        "model_type": "gpt2",
        "n_layer": layers,
        "n_embd": hidden,
        "n_head": heads,
        "n_inner": 4 * hidden,
        "n_positions": 2048,
        "vocab_size": 50257,
    }


_UNTIED = {"tie_word_embeddings": False}
_QWEN3 = {"rope_theta": 1e6, "rms_norm_eps": 1e-6, "max_position_embeddings": 40960, "vocab_size": 151936, **_UNTIED}
_GPT_OSS = {
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "vocab_size": 201088,
    "max_position_embeddings": 131072,
    "num_experts_per_tok": 4,
    "sliding_window": 128,
    "attention_bias": True,
    "rope_theta": 150000,
    "rms_norm_eps": 1e-5,
    **_UNTIED,
}
_NEMOTRON4 = {
    "model_type": "nemotron",
    "hidden_act": "relu2",
    "num_key_value_heads": 8,
    "vocab_size": 256000,
    "max_position_embeddings": 4096,
    "partial_rotary_factor": 0.5,
    "rope_theta": 10000.0,
    "norm_eps": 1e-5,
    **_UNTIED,
}
_LLAMA4 = {
    "hidden_size": 5120,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16384,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 202048,
    "num_experts_per_tok": 1,
    "attention_chunk_size": 8192,
    "rope_theta": 500000.0,
    "rms_norm_eps": 1e-5,
    **_UNTIED,
}

PRESET_CONFIGS: dict[str, dict[str, Any]] = {
    "tiny": _llama(4, 256, 688, 4, 2, 512, 512),
    # Synthetic Llama models of the H200 calibration runs (shared/calibration).
    "llama-124m": _llama(12, 768, 3072, 12, 12, 50304, 8192) | {"tie_word_embeddings": True},
    "llama-350m": _llama(24, 1024, 2816, 16, 16, 32000, 8192),
    "gpt3-125m": _gpt3(12, 768, 12),
    "gpt3-350m": _gpt3(24, 1024, 16),
    "gpt3-760m": _gpt3(24, 1536, 16),
    # The paper lists 24 heads of 128 for d_model 2048, which cannot tile the model
    # width; 16 x 128 (as in Megatron's GPT-3 1.3B recipe) keeps the table's head size.
    "gpt3-1.3b": _gpt3(24, 2048, 16),
    "gpt3-2.7b": _gpt3(32, 2560, 32),
    "gpt3-6.7b": _gpt3(32, 4096, 32),
    "gpt3-13b": _gpt3(40, 5120, 40),  # the paper's "5140" is a typo for 40 x 128
    "gpt3-175b": _gpt3(96, 12288, 96),
    "llama2-7b": _llama(32, 4096, 11008, 32, 32, 32000, 4096),
    "llama2-13b": _llama(40, 5120, 13824, 40, 40, 32000, 4096),
    "llama2-70b": _llama(80, 8192, 28672, 64, 8, 32000, 4096),
    "llama3.2-1b": _llama(16, 2048, 8192, 32, 8, 128256, 131072) | {"tie_word_embeddings": True},
    "llama3.2-3b": _llama(28, 3072, 8192, 24, 8, 128256, 131072) | {"tie_word_embeddings": True},
    "llama3-8b": _llama(32, 4096, 14336, 32, 8, 128256, 8192),
    "llama3-70b": _llama(80, 8192, 28672, 64, 8, 128256, 8192),
    "llama3.1-405b": _llama(126, 16384, 53248, 128, 8, 128256, 131072),
    "mistral-7b": _llama(32, 4096, 14336, 32, 8, 32000, 32768) | {"model_type": "mistral", "sliding_window": None},
    # Mistral 7B v0.1: the same weights, every layer attending to the last 4096 keys.
    "mistral-7b-v0.1": _llama(32, 4096, 14336, 32, 8, 32000, 32768) | {"model_type": "mistral", "sliding_window": 4096},
    "qwen2.5-7b": _llama(28, 3584, 18944, 28, 4, 152064, 32768) | {"model_type": "qwen2", **_UNTIED},
    "qwen2.5-72b": _llama(80, 8192, 29568, 64, 8, 152064, 32768) | {"model_type": "qwen2", **_UNTIED},
    "mixtral-8x7b": _llama(32, 4096, 14336, 32, 8, 32000, 32768)
    | {"model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2},
    # The released models of the newer families, as their config.json files read.
    "qwen3-8b": {
        "model_type": "qwen3",
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        **_QWEN3,
    },
    "qwen3-30b-a3b": {
        "model_type": "qwen3_moe",
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "moe_intermediate_size": 768,
        "num_hidden_layers": 48,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "norm_topk_prob": True,
        **_QWEN3,
    },
    "qwen3-235b-a22b": {
        "model_type": "qwen3_moe",
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "moe_intermediate_size": 1536,
        "num_hidden_layers": 94,
        "num_attention_heads": 64,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "norm_topk_prob": True,
        **_QWEN3,
    },
    "gemma2-9b": {
        "model_type": "gemma2",
        "hidden_size": 3584,
        "intermediate_size": 14336,
        "num_hidden_layers": 42,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "vocab_size": 256000,
        "max_position_embeddings": 8192,
        "sliding_window": 4096,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
        "rope_theta": 10000.0,
        "rms_norm_eps": 1e-6,
    },
    "phi3-mini": _llama(32, 3072, 8192, 32, 32, 32064, 4096)
    | {"model_type": "phi3", "sliding_window": 2047, "rope_theta": 10000.0, "rms_norm_eps": 1e-5},
    "olmo2-7b": _llama(32, 4096, 11008, 32, 32, 100352, 4096)
    | {"model_type": "olmo2", "rope_theta": 500000, "rms_norm_eps": 1e-6},
    "deepseek-v3": {
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "vocab_size": 129280,
        "max_position_embeddings": 163840,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "first_k_dense_replace": 3,
        "num_nextn_predict_layers": 1,
        "rope_theta": 10000,
        "rms_norm_eps": 1e-6,
    },
    # NVIDIA Nemotron-4 (arXiv 2402.16819 Table 1; arXiv 2406.11704 Table 1; NeMo's
    # Nemotron4Config15B / Nemotron4Config340B): squared-ReLU MLP, LayerNorm1P, half-rotary RoPE.
    "nemotron4-15b": _NEMOTRON4
    | {"hidden_size": 6144, "intermediate_size": 24576, "num_hidden_layers": 32, "num_attention_heads": 48},
    "nemotron4-340b": _NEMOTRON4
    | {"hidden_size": 18432, "intermediate_size": 73728, "num_hidden_layers": 96, "num_attention_heads": 96},
    # openai/gpt-oss-20b and openai/gpt-oss-120b config.json.
    "gpt-oss-20b": _GPT_OSS
    | {"num_hidden_layers": 24, "num_local_experts": 32, "layer_types": ["sliding_attention", "full_attention"] * 12},
    "gpt-oss-120b": _GPT_OSS
    | {"num_hidden_layers": 36, "num_local_experts": 128, "layer_types": ["sliding_attention", "full_attention"] * 18},
    # Qwen/Qwen1.5-MoE-A2.7B and Qwen/Qwen2-57B-A14B config.json.
    "qwen1.5-moe-a2.7b": _llama(24, 2048, 5632, 16, 16, 151936, 8192)
    | {
        "model_type": "qwen2_moe",
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "rope_theta": 1e6,
        "rms_norm_eps": 1e-6,
        **_UNTIED,
    },
    "qwen2-57b-a14b": _llama(28, 3584, 18944, 28, 4, 151936, 131072)
    | {
        "model_type": "qwen2_moe",
        "moe_intermediate_size": 2560,
        "shared_expert_intermediate_size": 20480,
        "num_experts": 64,
        "num_experts_per_tok": 8,
        "rope_theta": 1e6,
        "rms_norm_eps": 1e-6,
        **_UNTIED,
    },
    # mistralai/Mistral-Small-3.1-24B-Base-2503 (the language model; the vision tower is not
    # planned) and mistralai/Ministral-8B-Instruct-2410.
    "mistral-small-3.1-24b": {
        "model_type": "mistral3",
        "text_config": _llama(40, 5120, 32768, 32, 8, 131072, 131072)
        | {"model_type": "mistral", "head_dim": 128, "sliding_window": None, "rope_theta": 1e9, "rms_norm_eps": 1e-5},
    },
    "ministral-8b": _llama(36, 4096, 12288, 32, 8, 131072, 32768)
    | {"model_type": "ministral", "head_dim": 128, "sliding_window": 32768, "rope_theta": 1e8, "rms_norm_eps": 1e-5},
    # meta-llama/Llama-4-Scout-17B-16E and Llama-4-Maverick-17B-128E (language models only).
    "llama4-scout": {
        "model_type": "llama4",
        "text_config": _LLAMA4 | {"num_local_experts": 16, "max_position_embeddings": 10485760},
    },
    "llama4-maverick": {
        "model_type": "llama4",
        "text_config": _LLAMA4
        | {"num_local_experts": 128, "interleave_moe_layer_step": 2, "max_position_embeddings": 1048576},
    },
}


def _build_presets() -> dict[str, ModelSpec]:
    presets = {name: model_from_hf_dict(config, name) for name, config in PRESET_CONFIGS.items()}
    # Llama 3.1 has the same weights' shapes as Llama 3; only the context length grew.
    for alias, base in (("llama3.1-8b", "llama3-8b"), ("llama3.1-70b", "llama3-70b")):
        presets[alias] = presets[base].model_copy(update={"name": alias, "max_seq_len": 131072})
    return presets


_PRESETS = _build_presets()


def list_presets() -> list[str]:
    return list(_PRESETS)


# Spellings of the Llama 3.1 sizes that name no other preset: there is no Llama 3 405B, and
# "llama3.1-405b" is what people mean by any of these.
_ALIASES = {"llama3-405b": "llama3.1-405b", "llama31-405b": "llama3.1-405b"}


def canonical_preset_name(name: str) -> str | None:
    """The preset a common spelling names, or None: case, a ``meta-llama/`` or ``meta-`` prefix,
    ``llama-3.1``/``llama_3.1``/``Llama-3.1-405B`` and ``llama3-405b`` all resolve
    (``Meta-Llama-3.1-405B`` -> ``llama3.1-405b``)."""
    if name in _PRESETS:
        return name
    key = name.strip().lower().replace("_", "-")
    key = key.removeprefix("meta-llama/").removeprefix("meta-")
    key = re.sub(r"^llama-(\d)", r"llama\1", key)  # llama-3.1-8b -> llama3.1-8b
    key = _ALIASES.get(key, key)
    return key if key in _PRESETS else None


def get_preset(name: str) -> ModelSpec:
    canonical = canonical_preset_name(name)
    if canonical is None:
        raise ValueError(f"unknown model preset {name!r}{_suggest(name)}")
    return _PRESETS[canonical]


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, list_presets(), n=3, cutoff=0.5)
    return f"; did you mean {', '.join(close)}?" if close else f"; presets: {', '.join(list_presets())}"


def load_model(name_or_path: str) -> ModelSpec:
    """A preset name, or a path to a ``config.json`` (or a directory holding one)."""
    if name_or_path in _PRESETS:
        return _PRESETS[name_or_path]
    if Path(name_or_path).exists():
        return model_from_hf_config(name_or_path)
    canonical = canonical_preset_name(name_or_path)
    if canonical is not None:
        return _PRESETS[canonical]
    raise ValueError(f"{name_or_path!r} is neither a model preset nor an existing config path{_suggest(name_or_path)}")
