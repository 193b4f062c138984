"""Model presets, and ``load_model``: a preset name or a Hugging Face ``config.json``
(read by :mod:`planner.catalog.hf_config`). Both give a :class:`~planner.model.spec.ModelSpec`.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

from planner.catalog.hf_config import MAX_CONFIG_BYTES, SUPPORTED_MODEL_TYPES, model_from_hf_config, model_from_hf_dict
from planner.errors import RuleCode, RuleViolation
from planner.model.spec import ModelSpec

__all__ = [
    "MAX_CONFIG_BYTES",
    "PRESET_CONFIGS",
    "PRESET_DIR",
    "SUPPORTED_MODEL_TYPES",
    "canonical_preset_name",
    "get_preset",
    "list_presets",
    "load_model",
    "model_from_hf_config",
]

# --------------------------------------------------------------------------- presets

# Every preset is a config.json file in presets/ (issues 27 and 31: data, not code), read by the
# same reader as a user's file, so a preset is what its released config.json gives. Only the keys
# the reader uses are listed (the rest default as in transformers); "_source" says where the
# numbers come from. tests/planner/test_models.py checks each against transformers built on the
# meta device; tests/planner/test_family_specs.py the newer families' against their stored files.
PRESET_DIR = Path(__file__).with_name("presets")


def _read_preset_configs() -> dict[str, dict[str, Any]]:
    """Each preset's config.json content by name (the file's stem), in name order."""
    paths = sorted(PRESET_DIR.glob("*.json"), key=lambda path: path.stem)  # not "mistral-7b-v0.1" first
    return {path.stem: json.loads(path.read_text()) for path in paths}


PRESET_CONFIGS: dict[str, dict[str, Any]] = _read_preset_configs()


def _build_presets() -> dict[str, ModelSpec]:
    return {name: model_from_hf_dict(config, name) for name, config in PRESET_CONFIGS.items()}


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
        raise RuleViolation(RuleCode.UNKNOWN_PRESET, {"name": name, "hint": _suggest(name)})
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
    raise RuleViolation(RuleCode.UNKNOWN_MODEL, {"name": name_or_path, "hint": _suggest(name_or_path)})
