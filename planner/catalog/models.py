"""Model presets, and ``load_model``: a preset name or a Hugging Face ``config.json``
(read by :mod:`planner.catalog.hf_config`). Both give a :class:`~planner.model.spec.ModelSpec`.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from planner.catalog.hf_config import GPT2_ARCHITECTURE, MAX_CONFIG_BYTES, SUPPORTED_MODEL_TYPES, model_from_hf_config
from planner.model.spec import ModelSpec

__all__ = [
    "MAX_CONFIG_BYTES",
    "SUPPORTED_MODEL_TYPES",
    "canonical_preset_name",
    "get_preset",
    "list_presets",
    "load_model",
    "model_from_hf_config",
]

# --------------------------------------------------------------------------- presets


def _llama(
    name: str,
    layers: int,
    hidden: int,
    ffn: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    max_seq_len: int,
    tied: bool = False,
    family: str = "llama",
    **extra: Any,
) -> ModelSpec:
    return ModelSpec(
        name=name,
        family=family,
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=ffn,
        num_heads=heads,
        num_kv_heads=kv_heads,
        vocab_size=vocab,
        max_seq_len=max_seq_len,
        tied_embeddings=tied,
        **extra,
    )


def _gpt3(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    """GPT-3 paper (Brown et al. 2020, Table 2.1) on the GPT-2 architecture."""
    return ModelSpec(
        name=name,
        family="gpt2",
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=4 * hidden,
        num_heads=heads,
        num_kv_heads=heads,
        vocab_size=50257,
        max_seq_len=2048,
        tied_embeddings=True,
        **GPT2_ARCHITECTURE,
    )


def _build_presets() -> dict[str, ModelSpec]:
    specs = [
        _llama("tiny", 4, 256, 688, 4, 2, 512, 512),
        # Synthetic Llama models of the H200 calibration runs (shared/calibration).
        _llama("llama-124m", 12, 768, 3072, 12, 12, 50304, 8192, tied=True),
        _llama("llama-350m", 24, 1024, 2816, 16, 16, 32000, 8192),
        _gpt3("gpt3-125m", 12, 768, 12),
        _gpt3("gpt3-350m", 24, 1024, 16),
        _gpt3("gpt3-760m", 24, 1536, 16),
        # The paper lists 24 heads of 128 for d_model 2048, which cannot tile the model
        # width; 16 x 128 (as in Megatron's GPT-3 1.3B recipe) keeps the table's head size.
        _gpt3("gpt3-1.3b", 24, 2048, 16),
        _gpt3("gpt3-2.7b", 32, 2560, 32),
        _gpt3("gpt3-6.7b", 32, 4096, 32),
        _gpt3("gpt3-13b", 40, 5120, 40),  # the paper's "5140" is a typo for 40 x 128
        _gpt3("gpt3-175b", 96, 12288, 96),
        _llama("llama2-7b", 32, 4096, 11008, 32, 32, 32000, 4096),
        _llama("llama2-13b", 40, 5120, 13824, 40, 40, 32000, 4096),
        _llama("llama2-70b", 80, 8192, 28672, 64, 8, 32000, 4096),
        _llama("llama3.2-1b", 16, 2048, 8192, 32, 8, 128256, 131072, tied=True),
        _llama("llama3.2-3b", 28, 3072, 8192, 24, 8, 128256, 131072, tied=True),
        _llama("llama3-8b", 32, 4096, 14336, 32, 8, 128256, 8192),
        _llama("llama3-70b", 80, 8192, 28672, 64, 8, 128256, 8192),
        _llama("llama3.1-405b", 126, 16384, 53248, 128, 8, 128256, 131072),
        _llama("mistral-7b", 32, 4096, 14336, 32, 8, 32000, 32768, family="mistral"),
        # Mistral 7B v0.1: the same weights, every layer attending to the last 4096 keys.
        _llama(
            "mistral-7b-v0.1",
            32,
            4096,
            14336,
            32,
            8,
            32000,
            32768,
            family="mistral",
            sliding_window=4096,
            sliding_layers=32,
        ),
        _llama("qwen2.5-7b", 28, 3584, 18944, 28, 4, 152064, 32768, family="qwen2", qkv_bias=True),
        _llama("qwen2.5-72b", 80, 8192, 29568, 64, 8, 152064, 32768, family="qwen2", qkv_bias=True),
        _llama(
            "mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, 32768, family="mixtral", num_experts=8, experts_per_token=2
        ),
    ]
    presets = {spec.name: spec for spec in specs + _family_presets()}
    # Llama 3.1 has the same weights' shapes as Llama 3; only the context length grew.
    for alias, base in (("llama3.1-8b", "llama3-8b"), ("llama3.1-70b", "llama3-70b")):
        presets[alias] = presets[base].model_copy(update={"name": alias, "max_seq_len": 131072})
    return presets


def _family_presets() -> list[ModelSpec]:
    """The released models of the newer families, as their config.json files read
    (tests/planner/test_family_specs.py checks each against tests/data/hf_configs)."""
    qwen3: dict[str, Any] = dict(family="qwen3", qk_norm="head", rope_theta=1e6, norm_eps=1e-6)
    gemma: dict[str, Any] = dict(
        mlp="geglu", norm_placement="sandwich", embedding_scale=True, head_dim=256, norm_eps=1e-6
    )
    return [
        _llama("qwen3-8b", 36, 4096, 12288, 32, 8, 151936, 40960, **qwen3),
        _llama(
            "qwen3-30b-a3b",
            48,
            2048,
            768,
            32,
            4,
            151936,
            40960,
            **(
                qwen3
                | dict(
                    family="qwen3_moe", head_dim=128, num_experts=128, experts_per_token=8, dense_ffn_hidden_size=6144
                )
            ),
        ),
        _llama(
            "qwen3-235b-a22b",
            94,
            4096,
            1536,
            64,
            4,
            151936,
            40960,
            **(
                qwen3
                | dict(
                    family="qwen3_moe", head_dim=128, num_experts=128, experts_per_token=8, dense_ffn_hidden_size=12288
                )
            ),
        ),
        _llama(
            "gemma2-9b",
            42,
            3584,
            14336,
            16,
            8,
            256000,
            8192,
            tied=True,
            family="gemma2",
            sliding_window=4096,
            sliding_layers=21,
            attn_softcap=50.0,
            final_softcap=30.0,
            rope_theta=10000.0,
            **gemma,
        ),
        _llama(
            "phi3-mini",
            32,
            3072,
            8192,
            32,
            32,
            32064,
            4096,
            family="phi3",
            fused_projections=True,
            sliding_window=2047,
            sliding_layers=32,
            rope_theta=10000.0,
            norm_eps=1e-5,
        ),
        _llama(
            "olmo2-7b",
            32,
            4096,
            11008,
            32,
            32,
            100352,
            4096,
            family="olmo2",
            qk_norm="full",
            norm_placement="post",
            rope_theta=5e5,
            norm_eps=1e-6,
        ),
        _llama(
            "deepseek-v3",
            61,
            7168,
            2048,
            128,
            128,
            129280,
            163840,
            family="deepseek_v3",
            head_dim=192,
            mla=dict(q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, v_head_dim=128),
            num_experts=256,
            experts_per_token=8,
            shared_experts=1,
            dense_layers=3,
            dense_ffn_hidden_size=18432,
            mtp_layers=1,
            rope_theta=10000.0,
            norm_eps=1e-6,
        ),
    ]


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
