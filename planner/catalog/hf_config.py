"""A reader for Hugging Face ``config.json`` files, one function per ``model_type`` (the dense
decoders' in :mod:`planner.catalog.hf_dense`, the MoE ones' in :mod:`planner.catalog.hf_moe`, the
checked reading of their keys in :mod:`planner.catalog.hf_keys`).

A config file is read strictly as JSON data: nothing is downloaded, no code it names
(``auto_map``) is imported, and keys we do not need are ignored. Optional keys default as in
``transformers``, so a spec counts exactly the parameters that
``AutoModelForCausalLM.from_config`` would build.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.catalog import hf_dense as dense
from planner.catalog import hf_moe as moe
from planner.catalog.hf_keys import HfConfig
from planner.errors import RuleCode, RuleViolation, rule_violation
from planner.fmt import one_line
from planner.limits import read_input
from planner.model.spec import ModelSpec

MAX_CONFIG_BYTES = 1_000_000

# The readers by model_type, in the order errors list them.
# A model_type transformers does not know, read as the family whose architecture it is, and built
# by the trainer's hf path as that family's config (trainer/hf_model.py ``load_hf_config``).
TRANSFORMERS_ALIASES = {"kimi_k2": "deepseek_v3"}

_READERS: dict[str, Callable[[HfConfig], dict]] = {
    "llama": lambda cfg: dense.llama_like(cfg, "llama"),
    "mistral": lambda cfg: dense.llama_like(cfg, "mistral"),
    "qwen2": lambda cfg: dense.llama_like(cfg, "qwen2"),
    "mixtral": lambda cfg: dense.llama_like(cfg, "mixtral"),
    "gpt2": dense.gpt2,
    "gpt_neox": dense.gpt_neox,
    "mpt": dense.mpt,
    "bloom": dense.bloom,
    "qwen3": dense.qwen3,
    "qwen3_moe": moe.qwen3_moe,
    "gemma2": dense.gemma2,
    "gemma3": dense.gemma3,
    "gemma3_text": dense.gemma3_text,
    "phi3": dense.phi3,
    "olmo2": dense.olmo2,
    "deepseek_v3": moe.deepseek_v3,
    "deepseek_v2": moe.deepseek_v2,
    # Kimi K2 is DeepSeek-V3's architecture (its architectures: DeepseekV3ForCausalLM); Moonshot
    # names it apart for inference engines and says to set deepseek_v3 where kimi_k2 is unknown.
    "kimi_k2": lambda cfg: moe.deepseek_v3(cfg) | dict(family=TRANSFORMERS_ALIASES["kimi_k2"]),
    "nemotron": dense.nemotron,
    "gpt_oss": moe.gpt_oss,
    "qwen2_moe": moe.qwen2_moe,
    "ministral": dense.ministral,
    "mistral3": dense.mistral3,
    "llama4": moe.llama4,
    "llama4_text": moe.llama4_text,
    "ministral3": dense.ministral3,
    "afmoe": moe.afmoe,
    "glm4_moe": moe.glm4_moe,
    "olmoe": moe.olmoe,
    "granite": dense.granite,
    "granitemoe": moe.granitemoe,
}
SUPPORTED_MODEL_TYPES = tuple(_READERS)
# The transformers class each reader's family builds (a config's ``architectures``), so a file
# with a model_type we do not read but a class we do can be told which model_type to set.
# tests/planner/test_config_errors.py checks each against transformers' auto mappings.
READ_ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "MixtralForCausalLM": "mixtral",
    "GPT2LMHeadModel": "gpt2",
    "GPTNeoXForCausalLM": "gpt_neox",
    "MptForCausalLM": "mpt",
    "BloomForCausalLM": "bloom",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForConditionalGeneration": "gemma3",
    "Gemma3ForCausalLM": "gemma3_text",
    "Phi3ForCausalLM": "phi3",
    "Olmo2ForCausalLM": "olmo2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "NemotronForCausalLM": "nemotron",
    "GptOssForCausalLM": "gpt_oss",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "MinistralForCausalLM": "ministral",
    "Mistral3ForConditionalGeneration": "mistral3",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4_text",
    "Ministral3ForCausalLM": "ministral3",
    "AfmoeForCausalLM": "afmoe",
    "Glm4MoeForCausalLM": "glm4_moe",
    "OlmoeForCausalLM": "olmoe",
    "GraniteForCausalLM": "granite",
    "GraniteMoeForCausalLM": "granitemoe",
}
# Models that are not decoder-only transformers: state-space (Mamba) layers, alone or beside
# attention, by their model_type or the keys their configs lay the layers out with.
STATE_SPACE_MODEL_TYPES = frozenset({
    "mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "zamba2", "falcon_h1", "nemotron_h", "bamba",
    "granitemoehybrid",
})  # fmt: skip
STATE_SPACE_KEYS = ("layers_block_type", "hybrid_override_pattern")


def _read_json_object(path: Path) -> HfConfig:
    if path.is_dir():
        path = path / "config.json"
    if not path.exists():
        raise RuleViolation(RuleCode.HF_NO_FILE, {"where": str(path)})
    raw = read_input(path, "model config", MAX_CONFIG_BYTES)  # a regular file, capped
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RuleViolation(RuleCode.HF_JSON, {"where": str(path), "error": str(exc)}) from None
    except RecursionError:
        raise RuleViolation(RuleCode.HF_NESTED, {"where": str(path)}) from None
    if not isinstance(data, dict):
        raise RuleViolation(RuleCode.HF_TOP_LEVEL, {"where": str(path), "type": type(data).__name__})
    return HfConfig(path, data)


def _check_heads(cfg: HfConfig, fields: dict) -> None:
    hidden, heads, kv_heads = fields["hidden_size"], fields["num_heads"], fields["num_kv_heads"]
    if "head_dim" not in fields and hidden % heads:
        raise cfg.error(RuleCode.HF_HEADS_HIDDEN, heads=heads, hidden=hidden)
    if heads % kv_heads:
        raise cfg.error(RuleCode.HF_KV_HEADS, kv_heads=kv_heads, heads=heads)
    if fields.get("experts_per_token", 1) > fields.get("num_experts", 1):
        raise cfg.error(RuleCode.HF_EXPERTS_PER_TOKEN)


def model_from_hf_config(path: str | Path) -> ModelSpec:
    """Read a Hugging Face ``config.json`` (or the directory holding it) into a ModelSpec."""
    cfg = _read_json_object(Path(path))
    default_name = cfg.path.parent.name if cfg.path.name == "config.json" else cfg.path.stem
    return _model_from(cfg, default_name)


# The sections of a multimodal config.json beside its language model, which no reader plans.
ENCODER_SECTIONS = ("vision_config", "audio_config", "speech_config")


def encoder_sections(path: str | Path | None) -> tuple[str, ...]:
    """The encoder sections a config.json holds beside the language model (``ENCODER_SECTIONS``),
    which no reader plans; () for a text model, a preset or an unreadable file (its reader answers
    for that)."""
    if path is None:
        return ()
    try:
        cfg = _read_json_object(Path(path))
    except RuleViolation:
        return ()
    return tuple(key for key in ENCODER_SECTIONS if isinstance(cfg.data.get(key), dict))


def encoder_warning(path: str | Path | None) -> str | None:
    """A word on ``encoder_sections`` (trial s28b: Llama 4 Scout's and Mistral Small 3.1's vision
    towers were dropped without one); None where there are none."""
    found = encoder_sections(path)
    if not found or path is None:
        return None
    name = "config.json" if Path(path).is_dir() else Path(path).name
    return (
        f"{name} holds {' and '.join(found)} beside the language model; the plan is the language"
        " model's alone (text-only training): an image or audio run adds the encoders' FLOPs and memory"
    )


def model_from_hf_dict(data: dict[str, Any], name: str) -> ModelSpec:
    """A config.json's content, already parsed (the presets of ``planner.catalog.models``), read
    as ``model_from_hf_config`` reads the file; ``name`` names the spec and its errors."""
    spec = _model_from(HfConfig(Path(f"<{name}>"), dict(data)), name)
    return spec.model_copy(update={"name": name})


def _unsupported(cfg: HfConfig, model_type: Any) -> RuleViolation:
    """The refusal of a model_type no reader reads, naming the next step (trial s52): a model that
    is not a decoder-only transformer says so; a file whose ``architectures`` names a class we read
    is told which model_type to set; any other is pointed to docs/extending.md."""
    if cfg.data.get("is_encoder_decoder") is True:
        return cfg.error(RuleCode.HF_ENCODER_DECODER, model_type=repr(model_type))
    keys = [key for key in cfg.data if key in STATE_SPACE_KEYS or key.startswith("mamba_")]
    if (isinstance(model_type, str) and model_type in STATE_SPACE_MODEL_TYPES) or keys:
        return cfg.error(RuleCode.HF_STATE_SPACE, model_type=repr(model_type))
    architectures = cfg.data.get("architectures")
    for name in architectures if isinstance(architectures, list) else []:
        if isinstance(name, str) and name in READ_ARCHITECTURES:
            family = READ_ARCHITECTURES[name]
            return cfg.error(
                RuleCode.HF_MODEL_TYPE_ARCHITECTURE, model_type=repr(model_type), architecture=name, family=family
            )
    return cfg.error(RuleCode.HF_MODEL_TYPE, model_type=repr(model_type), supported=", ".join(SUPPORTED_MODEL_TYPES))


def _model_from(cfg: HfConfig, default_name: str) -> ModelSpec:
    model_type = cfg.data.get("model_type")
    if model_type is None:
        raise cfg.error(RuleCode.HF_MISSING_KEY, field="model_type")
    if not isinstance(model_type, str) or model_type not in _READERS:
        raise _unsupported(cfg, model_type)
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
        inner = rule_violation(exc)  # ModelSpec's own rule (``rule``, its figures): the app words it
        rule = {} if inner is None else {"rule": inner.code.value, **inner.figures}
        raise cfg.error(RuleCode.HF_DIMENSIONS, detail=one_line(exc, where=False), **rule) from None
