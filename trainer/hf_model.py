"""``--impl hf``: a stock Hugging Face transformers causal LM under the same parallelism.

The model is built from a local ``config.json`` (the plan's ``hf_config_path``) or from a
config derived from the ModelSpec; nothing is downloaded and no code named by a config
(``auto_map``) is ever imported. It is created on the meta device, sharded, then
initialised shard by shard like transformers does; pretrained weights (``hf_weights``,
a local directory of safetensors files) are read on rank 0 only and broadcast into the
shards.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, set_model_state_dict

from planner.model.spec import ModelSpec


def config_from_spec(spec: ModelSpec, seq_len: int):
    """A transformers config with exactly the spec's shapes, for the families presets use."""
    import transformers

    if spec.family == "gpt2":
        return transformers.GPT2Config(
            n_embd=spec.hidden_size,
            n_layer=spec.num_layers,
            n_head=spec.num_heads,
            n_inner=spec.ffn_hidden_size,
            n_positions=max(spec.max_seq_len, seq_len),
            vocab_size=spec.vocab_size,
            tie_word_embeddings=spec.tied_embeddings,
            # No dropout, like the native model (GPT2Config defaults to 0.1).
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            use_cache=False,
        )
    common: dict[str, Any] = dict(
        vocab_size=spec.vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.ffn_hidden_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        head_dim=spec.dim_head,
        max_position_embeddings=max(spec.max_seq_len, seq_len),
        tie_word_embeddings=spec.tied_embeddings,
        use_cache=False,
    )
    swiglu = (
        spec.mlp == "swiglu"
        and spec.norm == "rmsnorm"
        and spec.position == "rope"
        and not spec.norm_bias
        and not spec.embedding_norm
    )
    if swiglu and spec.family == "mixtral" and not (spec.qkv_bias or spec.out_bias or spec.mlp_bias):
        return transformers.MixtralConfig(
            **common, num_local_experts=spec.num_experts, num_experts_per_tok=spec.experts_per_token
        )
    if swiglu and not spec.is_moe and spec.qkv_bias and not spec.out_bias and not spec.mlp_bias:
        return transformers.Qwen2Config(**common)
    if swiglu and not spec.is_moe and spec.qkv_bias == spec.out_bias:
        return transformers.LlamaConfig(attention_bias=spec.qkv_bias, mlp_bias=spec.mlp_bias, **common)
    raise ValueError(
        f"model {spec.name!r} (family {spec.family}) has no built-in transformers config here; "
        f"plan it from its config.json (hf_config_path) to train it with impl 'hf'"
    )


def load_hf_config(spec: ModelSpec, hf_config_path: str | None, seq_len: int):
    if hf_config_path is None:
        return config_from_spec(spec, seq_len)
    from transformers import AutoConfig

    path = Path(hf_config_path)
    try:
        data = json.loads((path / "config.json" if path.is_dir() else path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{hf_config_path}: cannot read the model config ({exc})") from None
    model_type = data.pop("model_type", None)
    if model_type is None:
        raise ValueError(f"{hf_config_path}: config has no model_type")
    data.pop("auto_map", None)  # never import code a config names
    try:
        config = AutoConfig.for_model(model_type, **data)
    except ValueError as exc:
        raise ValueError(
            f"{hf_config_path}: transformers does not know model_type {model_type!r} (custom code is never run): {exc}"
        ) from None
    config.use_cache = False
    return config


def build_hf_model(spec: ModelSpec, hf_config_path: str | None, seq_len: int) -> nn.Module:
    """The causal LM on the meta device (no memory), with SDPA attention."""
    from transformers import AutoModelForCausalLM

    config = load_hf_config(spec, hf_config_path, seq_len)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", trust_remote_code=False)
    return model


def hf_init_rule(model: nn.Module):
    """transformers' default initialisation as a per-parameter rule for ``init_parameters``:
    normal(0, initializer_range) weight matrices (linear, Conv1D, embeddings), zero biases,
    unit norm weights. (Model-specific refinements such as GPT-2's scaled residual
    projections are not reproduced; they matter for training from scratch only.)"""
    std = getattr(model.config, "initializer_range", None) or 0.02

    def rule(name: str, owner: nn.Module):
        leaf = name.rsplit(".", 1)[-1]
        if "Norm" in type(owner).__name__:
            return (lambda t, g: nn.init.ones_(t)) if leaf == "weight" else (lambda t, g: nn.init.zeros_(t))
        if leaf == "bias":
            return lambda t, g: nn.init.zeros_(t)
        if getattr(owner, leaf).ndim >= 2:
            return lambda t, g: nn.init.normal_(t, std=std, generator=g)
        raise ValueError(
            f"{type(model).__name__}: no initialisation rule for parameter {name} of {type(owner).__name__}"
        )

    return rule


@torch.no_grad()
def init_hf_buffers(model: nn.Module) -> None:
    """Recompute non-persistent buffers (RoPE inverse frequencies) after ``to_empty``."""
    for module in model.modules():
        if any(True for _ in module.buffers(recurse=False)):
            cast(Any, model)._init_weights(module)  # an HF PreTrainedModel method, not a Tensor or Module


def _read_safetensors(weights_dir: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    files = sorted(weights_dir.glob("*.safetensors"))
    if not files:
        raise ValueError(f"{weights_dir}: no *.safetensors files (hf_weights must be a local model directory)")
    state: dict[str, torch.Tensor] = {}
    for file in files:
        state.update(load_file(str(file), device="cpu"))
    return state


def _check_keys(model: nn.Module, loaded: dict[str, torch.Tensor], weights_dir: Path) -> None:
    expected = set(get_model_state_dict(model).keys())
    tied = {"lm_head.weight"} if getattr(model.config, "tie_word_embeddings", False) else set()
    missing = sorted(expected - set(loaded) - tied)
    unexpected = sorted(set(loaded) - expected)
    if missing or unexpected:
        raise ValueError(
            f"{weights_dir}: weights do not match the model "
            f"(missing {missing[:3]}{'...' if len(missing) > 3 else ''}, "
            f"unexpected {unexpected[:3]}{'...' if len(unexpected) > 3 else ''})"
        )


def load_hf_weights(model: nn.Module, weights_dir: str) -> None:
    """Read the full state dict on rank 0 and scatter it into every rank's shards."""
    path = Path(weights_dir)
    error: list[str | None] = [None]
    full: dict[str, torch.Tensor] = {}
    if dist.get_rank() == 0:
        try:
            full = _read_safetensors(path)
            _check_keys(model, full, path)
        except ValueError as exc:
            error[0] = str(exc)
    dist.broadcast_object_list(error, src=0)
    if error[0] is not None:
        raise ValueError(error[0])
    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True, strict=False)
    # dict is invariant: a dict[str, Tensor] is a valid state dict that mypy will not accept as one
    set_model_state_dict(model, cast(dict[str, Any], full), options=options)
