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


def _family_fields(spec: ModelSpec) -> dict[str, Any]:
    """transformers keys of the newer families beyond the Llama ones (``config_from_spec``)."""
    windowed = dict(sliding_window=spec.sliding_window) if spec.sliding_window else {}
    if spec.family in ("qwen3", "qwen3_moe"):
        fields: dict[str, Any] = dict(attention_bias=spec.qkv_bias)
        if spec.sliding_layers:
            fields |= dict(use_sliding_window=True, max_window_layers=spec.num_layers - spec.sliding_layers, **windowed)
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
    if spec.family in ("gemma2", "gemma3", "gemma3_text"):
        caps = dict(final_logit_softcapping=spec.final_softcap)
        caps |= dict(attn_logit_softcapping=spec.attn_softcap) if spec.family == "gemma2" else {}
        return dict(query_pre_attn_scalar=spec.dim_head, **caps, **windowed)
    if spec.family == "phi3":
        return windowed
    if spec.family == "olmo2":
        return dict(attention_bias=spec.qkv_bias)
    if spec.family == "deepseek_v3" and spec.mla is not None:
        groups = 8 if spec.num_experts % 8 == 0 else 1  # group-limited routing: 8 groups, top 4
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
            n_group=groups,
            topk_group=min(4, groups),
        )
    raise ValueError(f"model {spec.name!r}: no transformers config for family {spec.family}")


FAMILY_CONFIGS = ("qwen3", "qwen3_moe", "gemma2", "gemma3", "gemma3_text", "phi3", "olmo2", "deepseek_v3")


def config_from_spec(spec: ModelSpec, seq_len: int):
    """A transformers config with exactly the spec's shapes, for the families presets use."""
    import transformers

    # The shapes every Llama-style config takes (GPT-2's config names them differently).
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
    if spec.family in FAMILY_CONFIGS:
        family = "gemma3_text" if spec.family == "gemma3" else spec.family  # the text model only
        shapes = dict(common)
        shapes |= dict(rope_theta=spec.rope_theta) if spec.rope_theta else {}
        shapes |= dict(rms_norm_eps=spec.norm_eps) if spec.norm_eps else {}
        return transformers.AutoConfig.for_model(family, **(shapes | _family_fields(spec)))
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
    """The causal LM on the meta device (no memory), with SDPA attention where transformers has it."""
    from transformers import AutoModelForCausalLM

    config = load_hf_config(spec, hf_config_path, seq_len)
    # transformers has no SDPA path for soft-capped attention scores (Gemma 2): eager attention,
    # which materialises the scores (the planner times it so: step_time.eager_softcap_attention).
    attention = spec.hf_attention_implementation
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, attn_implementation=attention, trust_remote_code=False)
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
