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
import warnings
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, set_model_state_dict

from planner.catalog.hf_config import TRANSFORMERS_ALIASES
from planner.model.spec import ModelSpec
from trainer.hf_family_fields import FAMILY_FIELDS, mistral_fields


def _shapes(spec: ModelSpec, seq_len: int) -> dict[str, Any]:
    """The shapes every Llama-style config takes (GPT-2's config names them differently)."""
    return dict(
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


def _family_config(spec: ModelSpec, seq_len: int):
    """A config of the families in ``FAMILY_FIELDS`` (and windowed Mistral)."""
    import transformers

    model_type, fields = FAMILY_FIELDS.get(spec.family, ("mistral", mistral_fields))
    shapes = _shapes(spec, seq_len)
    shapes |= dict(rope_theta=spec.rope_theta) if spec.rope_theta else {}
    shapes |= dict(rms_norm_eps=spec.norm_eps) if spec.norm_eps and spec.family != "nemotron" else {}
    extra = fields(spec)
    return transformers.AutoConfig.for_model(extra.pop("model_type", model_type), **(shapes | extra))


def _gpt2_config(spec: ModelSpec, seq_len: int):
    import transformers

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


def config_from_spec(spec: ModelSpec, seq_len: int):
    """A transformers config with exactly the spec's shapes, for the families presets use."""
    import transformers

    windowed_mistral = spec.family == "mistral" and spec.sliding_layers > 0
    if spec.family in FAMILY_FIELDS or windowed_mistral:
        return _family_config(spec, seq_len)
    if spec.family == "gpt2":
        return _gpt2_config(spec, seq_len)
    common = _shapes(spec, seq_len)
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


# Multimodal configs whose language model (``text_config``) is what the planner reads and counts
# (planner/catalog/hf_dense.py ``mistral3``, ``gemma3``): its model type when the section omits
# it, and whether its head is tied when the file does not say (Mistral 3: separate; Gemma 3:
# tied, like every Gemma). transformers' causal LM for the whole Gemma 3 config is
# Gemma3ForConditionalGeneration, which would build the vision tower the plan did not size.
_LANGUAGE_MODELS = {"mistral3": ("mistral", False), "gemma3": ("gemma3_text", True)}


def _language_model(data: dict[str, Any], model_type: str) -> tuple[str, dict[str, Any]]:
    """The language model of a multimodal config in ``_LANGUAGE_MODELS``, else the config as is."""
    if model_type not in _LANGUAGE_MODELS:
        return model_type, data
    text_type, tied = _LANGUAGE_MODELS[model_type]
    text = dict(data.get("text_config") or {})
    text.setdefault("tie_word_embeddings", data.get("tie_word_embeddings", tied))
    return str(text.pop("model_type", text_type)), text


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
    model_type, data = _language_model(data, model_type)
    # a name the reader aliases to a family transformers builds (kimi_k2); any other unknown one is refused
    model_type = TRANSFORMERS_ALIASES.get(model_type, model_type)
    try:
        config = AutoConfig.for_model(model_type, **data)
    except ValueError as exc:
        raise ValueError(
            f"{hf_config_path}: transformers does not know model_type {model_type!r} (custom code is never run): {exc}"
        ) from None
    config.use_cache = False
    return config


def _check_buildable(spec: ModelSpec, config, attention: str) -> None:
    """transformers' causal LM for ``config`` exists and has ``attention``; refused in one line
    otherwise (transformers' own error is a paragraph). The planner timed and sized impl 'hf'
    with that attention (``ModelSpec.hf_attention_implementation``; GPT-OSS's sinks, BLOOM's and
    MPT's ALiBi have no SDPA path in transformers): another one would not be the planned run."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    version = transformers.__version__
    if type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING:
        raise ValueError(f"model {spec.name!r}: transformers {version} has no causal LM for {config.model_type!r}")
    model_class: Any = MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]  # typed as a tuple of classes
    if attention != "eager" and not getattr(model_class, f"_supports_{attention}", False):
        raise ValueError(
            f"model {spec.name!r}: transformers {version} {model_class.__name__} has no {attention} attention, "
            f"which the plan assumes for impl 'hf'"
        )


def build_hf_model(spec: ModelSpec, hf_config_path: str | None, seq_len: int) -> nn.Module:
    """The causal LM on the meta device (no memory), with SDPA attention where transformers has it."""
    from transformers import AutoModelForCausalLM

    config = load_hf_config(spec, hf_config_path, seq_len)
    # transformers has no SDPA path for soft-capped attention scores (Gemma 2): eager attention,
    # which materialises the scores (the planner times it so: step_time.eager_softcap_attention).
    attention = spec.hf_attention_implementation
    _check_buildable(spec, config, attention)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, attn_implementation=attention, trust_remote_code=False)
    return model


def hf_init_rule(model: nn.Module):
    """transformers' default initialisation as a per-parameter rule for ``init_parameters``:
    normal(0, initializer_range) weight matrices (linear, Conv1D, embeddings, stacked experts)
    and GPT-OSS's attention sinks, zero biases (the experts' ``*_bias`` too), unit norm
    weights. (Model-specific refinements such as GPT-2's scaled residual projections or
    GPT-OSS's normal router bias are not reproduced; they matter for training from scratch only.)"""
    std = getattr(model.config, "initializer_range", None) or 0.02

    def rule(name: str, owner: nn.Module):
        leaf = name.rsplit(".", 1)[-1]
        if "Norm" in type(owner).__name__:
            return (lambda t, g: nn.init.ones_(t)) if leaf == "weight" else (lambda t, g: nn.init.zeros_(t))
        if leaf == "bias" or leaf.endswith("_bias"):
            return lambda t, g: nn.init.zeros_(t)
        if getattr(owner, leaf).ndim >= 2 or leaf == "sinks":
            return lambda t, g: nn.init.normal_(t, std=std, generator=g)
        raise ValueError(
            f"{type(model).__name__}: no initialisation rule for parameter {name} of {type(owner).__name__}"
        )

    return rule


@torch.no_grad()
def init_hf_buffers(model: nn.Module) -> None:
    """Recompute the buffers ``to_empty`` left unset (RoPE inverse frequencies, a router's score
    correction bias) with transformers' own ``_init_weights``. That also redraws such a module's
    parameters (GLM-4.5's and DeepSeek-V3's routers: ``init.normal_`` on the weight) from the global
    RNG, after ``init_parameters`` drew them layout-independently (s54: the one suite warning, DTensor
    random ops on a CPU mesh, was this redraw): they are put back."""
    for module in model.modules():
        if any(True for _ in module.buffers(recurse=False)):
            drawn = [(p, p.detach().clone()) for p in module.parameters(recurse=False)]
            with warnings.catch_warnings():  # the redraw's own, discarded below
                warnings.filterwarnings("ignore", message="DTensor random operators")
                cast(Any, model)._init_weights(module)  # an HF PreTrainedModel method, not a Tensor or Module
            for parameter, value in drawn:
                parameter.copy_(value)


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
