"""The newer families' config readers against the transformers models built on the meta device.

For each stored config.json (tests/data/hf_configs, sources in its README) and for variants that
flip the keys which change the weights, the ModelSpec's parameter total equals the transformers
model's, and so does every decoder layer's count (DeepSeek's dense first layers and its MoE
layers, Qwen3-MoE's dense-only layers). Meta tensors hold no memory, so even DeepSeek-V3's
671 B parameters build in about a second.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import transformers
from support import DATA

from planner.catalog.models import model_from_hf_config
from planner.model.spec import ModelSpec

FIXTURES = DATA / "hf_configs"
NEW_FAMILIES = ("qwen3", "qwen3_moe", "gemma2", "gemma3", "gemma3_text", "phi3", "olmo2", "deepseek_v3", "afmoe")


def _hf_model(data: dict) -> torch.nn.Module:
    """The causal LM transformers builds from a config dict (Gemma 3 multimodal: its text model)."""
    fields = {k: v for k, v in data.items() if k not in ("model_type", "auto_map", "quantization_config")}
    with torch.device("meta"):
        if data["model_type"] == "gemma3":
            return transformers.Gemma3ForCausalLM(transformers.Gemma3TextConfig(**fields["text_config"]))
        config = transformers.AutoConfig.for_model(data["model_type"], **fields)
        return transformers.AutoModelForCausalLM.from_config(config)


def _count(module: torch.nn.Module) -> int:
    """Trained parameters (tied weights appear once): AFMoE's router ``expert_bias`` is an
    ``nn.Parameter`` with ``requires_grad=False`` (aux-loss-free balancing), neither trained nor
    held by the optimizer, so not in a spec's count."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _layer_counts(model: torch.nn.Module, num_layers: int) -> list[int]:
    lists = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == num_layers]
    assert len(lists) == 1, "expected exactly one list of decoder layers"
    return sorted(_count(layer) for layer in lists[0])


def _spec_layer_counts(spec: ModelSpec) -> list[int]:
    counts = spec.param_counts()
    return sorted(
        [counts.dense_per_layer] * counts.dense_layers + [counts.per_layer] * (spec.num_layers - counts.dense_layers)
    )


def _check(tmp_path: Path, data: dict) -> ModelSpec:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    spec = model_from_hf_config(path)
    model = _hf_model(data)
    assert spec.num_params() == _count(model)
    assert _spec_layer_counts(spec) == _layer_counts(model, spec.num_layers)
    return spec


@pytest.mark.parametrize("model_type", NEW_FAMILIES)
def test_stored_configs_count_what_transformers_builds(tmp_path, model_type):
    data = json.loads((FIXTURES / f"{model_type}.json").read_text())
    spec = _check(tmp_path, data)
    assert spec.family == model_type


def _small(model_type: str, layers: int = 4, **changes) -> dict:
    """A stored config with fewer layers and keys changed (None removes a key)."""
    data = json.loads((FIXTURES / f"{model_type}.json").read_text())
    target = data["text_config"] if model_type == "gemma3" else data
    target.update(num_hidden_layers=layers, **changes)
    for key in [k for k, v in target.items() if v is None and k in changes]:
        del target[key]
    return data


# Each variant flips a key that changes the weights (or their split over layers).
_VARIANTS = [
    ("qwen3", dict(tie_word_embeddings=True, attention_bias=True, head_dim=64)),
    ("qwen3", dict(head_dim=None, num_key_value_heads=None)),
    ("qwen3_moe", dict(mlp_only_layers=[0, 3], decoder_sparse_step=1)),
    ("qwen3_moe", dict(decoder_sparse_step=2, num_experts=16, num_experts_per_tok=2)),
    ("gemma2", dict(num_key_value_heads=16, head_dim=128, tie_word_embeddings=False)),
    ("gemma3", dict(num_key_value_heads=8, vocab_size=1000)),
    ("gemma3_text", dict(intermediate_size=1000)),
    ("phi3", dict(num_key_value_heads=8, intermediate_size=4096)),
    ("olmo2", dict(num_key_value_heads=8, attention_bias=True, tie_word_embeddings=True)),
    ("deepseek_v3", dict(q_lora_rank=None, n_shared_experts=2, first_k_dense_replace=1, n_routed_experts=16)),
    ("deepseek_v3", dict(first_k_dense_replace=0, kv_lora_rank=256, qk_rope_head_dim=32, v_head_dim=64)),
    # AFMoE: the windowed layers from global_attn_every_n_layers (no layer_types), two shared experts
    ("afmoe", dict(layer_types=None, num_shared_experts=2, num_dense_layers=1, num_key_value_heads=8)),
    ("afmoe", dict(layer_types=None, num_dense_layers=0, head_dim=64, num_experts=16, tie_word_embeddings=True)),
]


@pytest.mark.parametrize("model_type, changes", _VARIANTS)
def test_variants_count_what_transformers_builds(tmp_path, model_type, changes):
    _check(tmp_path, _small(model_type, **changes))
