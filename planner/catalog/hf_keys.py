"""Reading a Hugging Face ``config.json``'s keys: each value checked (type, range) and named by
its file when it is wrong, with ``transformers``' default when it is absent, plus the key groups
many families share (shapes, windows, the newer RMSNorm/RoPE decoders' keys, ``text_config``).
The per-family readers are in :mod:`planner.catalog.hf_dense` and :mod:`planner.catalog.hf_moe`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.errors import RuleCode, RuleViolation
from planner.model.shape import GraniteMultipliers, yarn_attention_factor

# Upper bounds far beyond any real model; larger values are typos or corrupt files.
MAX_HIDDEN = 1_000_000
MAX_LAYERS = 10_000
MAX_VOCAB = 10_000_000
MAX_FFN = 10_000_000
MAX_HEADS = 100_000
MAX_EXPERTS = 100_000
MAX_POSITIONS = 1_000_000_000


@dataclass(frozen=True)
class HfConfig:
    """A parsed config.json plus its path, so that every error can name the file."""

    path: Path
    data: dict[str, Any]

    def error(self, code: RuleCode, **figures: int | float | str) -> RuleViolation:
        """The violation of ``code``, its sentence naming this file (``where``)."""
        return RuleViolation(code, {"where": str(self.path), **figures})

    def size(self, *keys: str, limit: int, default: int | None = None) -> int:
        """First present key among ``keys`` (JSON null counts as absent), a positive int."""
        key = next((k for k in keys if self.data.get(k) is not None), None)
        if key is None:
            if default is None:
                raise self.error(RuleCode.HF_MISSING_KEY, field=keys[0])
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(RuleCode.HF_NOT_INTEGER, field=key, value=repr(value))
        if not 0 < value <= limit:
            raise self.error(RuleCode.HF_OUT_OF_RANGE, field=key, value=value, limit=limit)
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(RuleCode.HF_NOT_BOOL, field=key, value=repr(value))
        return value

    def section(self, key: str) -> HfConfig:
        value = self.data.get(key) or {}
        if not isinstance(value, dict):
            raise self.error(RuleCode.HF_NOT_OBJECT, field=key)
        return HfConfig(self.path, value)


def common_fields(cfg: HfConfig, hidden: tuple[str, ...], layers: tuple[str, ...], heads: tuple[str, ...]) -> dict:
    return dict(
        hidden_size=cfg.size(*hidden, limit=MAX_HIDDEN),
        num_layers=cfg.size(*layers, limit=MAX_LAYERS),
        num_heads=cfg.size(*heads, limit=MAX_HEADS),
        vocab_size=cfg.size("vocab_size", limit=MAX_VOCAB),
    )


def layer_kinds(cfg: HfConfig, layers: int) -> list[str] | None:
    """The config's ``layer_types`` list (transformers >= 4.53 writes one), or None."""
    kinds = cfg.data.get("layer_types")
    if kinds is None:
        return None
    # An unknown name was read as full attention (trial s26: a misspelt list doubled a model's
    # attention time at 32K without a word).
    if (
        not isinstance(kinds, list)
        or len(kinds) != layers
        or not all(isinstance(k, str) and k in LAYER_KINDS for k in kinds)
    ):
        raise cfg.error(RuleCode.HF_LAYER_TYPES, layers=layers)
    return kinds


# The attention kinds of transformers' ``layer_types`` the readers time.
LAYER_KINDS = frozenset({"full_attention", "sliding_attention", "chunked_attention"})


def layer_indices(cfg: HfConfig, values: object, field: str, layers: int) -> list[int]:
    """A list of layer indices (``mlp_only_layers``, ``moe_layers``), each in 0..layers-1."""
    if not isinstance(values, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in values
    ):
        raise cfg.error(RuleCode.HF_LAYER_LIST, field=field, last=layers - 1)
    return values


def window_fields(cfg: HfConfig, family: str, layers: int) -> dict:
    """Window size and windowed layer count, as transformers builds them: Mistral, Ministral and
    Phi-3 window every layer when ``sliding_window`` is set (Mistral's default 4096); Qwen windows
    layers from ``max_window_layers`` on (Qwen2-MoE: every other layer below it), only with
    ``use_sliding_window``; Gemma 2 and GPT-OSS (128) every other layer from the first, Gemma 3
    all but every ``sliding_window_pattern``-th (6), AFMoE (1024) all but every
    ``global_attn_every_n_layers``-th (4). A ``layer_types`` list, when present, is
    what counts. ``UNWINDOWED_FAMILIES`` have none, whatever the file says."""
    if family in UNWINDOWED_FAMILIES:
        return {}
    default = {"mistral": 4096, "ministral": 4096, "gemma2": 4096, "gemma3": 4096, "gpt_oss": 128, "afmoe": 1024}.get(
        family
    )
    if family in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe") and not cfg.flag("use_sliding_window", False):
        # The window is unused, whatever it says: transformers 5 saves Qwen2-MoE's as 0 here
        # (``sliding_window if use_sliding_window else 0``; trial s36: a re-saved config was refused).
        return {}
    present = "sliding_window" in cfg.data
    window = cfg.size("sliding_window", limit=MAX_POSITIONS, default=0) if present else default
    if not window:
        return {}
    kinds = layer_kinds(cfg, layers)
    if kinds is not None:
        count = sum(kind == "sliding_attention" for kind in kinds)
    elif family in ("gemma2", "gpt_oss"):
        count = (layers + 1) // 2
    elif family == "qwen2_moe":  # every other layer from the first, below max_window_layers
        count = (min(layers, cfg.size("max_window_layers", limit=MAX_LAYERS, default=28)) + 1) // 2
    elif family == "gemma3":
        count = layers - layers // cfg.size("sliding_window_pattern", limit=MAX_LAYERS, default=6)
    elif family == "afmoe":  # global every n-th layer ((i + 1) % n == 0), the rest windowed
        count = layers - layers // cfg.size("global_attn_every_n_layers", limit=MAX_LAYERS, default=4)
    elif family in ("qwen2", "qwen3", "qwen3_moe"):
        count = layers - min(layers, cfg.size("max_window_layers", limit=MAX_LAYERS, default=28))
    else:
        count = layers
    return dict(sliding_window=window, sliding_layers=count) if count else {}


# Families whose transformers attention takes no window: a ``sliding_window`` key in their file
# (copied over from another family's config) changes nothing, so it must not shorten the FLOPs.
UNWINDOWED_FAMILIES = frozenset({"glm4_moe", "olmoe", "granite", "granitemoe"})


def positive_number(cfg: HfConfig, key: str, default: float) -> float:
    value = cfg.data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise cfg.error(RuleCode.HF_NOT_POSITIVE, field=key, value=repr(value))
    return float(value)


def rope_attention_factor(cfg: HfConfig) -> float:
    """YaRN's concentration factor from ``rope_scaling`` (``rope_parameters`` in transformers >= 5):
    its ``attention_factor`` where stated, else ``yarn_attention_factor`` of its ``factor`` and
    ``mscale`` / ``mscale_all_dim``; 1 for any other scaling or none."""
    scaling = cfg.section("rope_scaling") if cfg.data.get("rope_scaling") else cfg.section("rope_parameters")
    if (scaling.data.get("rope_type") or scaling.data.get("type")) != "yarn":
        return 1.0
    if scaling.data.get("attention_factor") is not None:
        return positive_number(scaling, "attention_factor", 1.0)
    mscale, all_dim = (positive_number(scaling, key, 0.0) or None for key in ("mscale", "mscale_all_dim"))
    return yarn_attention_factor(positive_number(scaling, "factor", 1.0), mscale, all_dim)


def fraction(cfg: HfConfig, key: str, default: float) -> float:
    """A number in (0, 1], read at the top level or in ``rope_parameters`` (transformers >= 5)."""
    value = cfg.data.get(key)
    if value is None:
        value = cfg.section("rope_parameters").data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise cfg.error(RuleCode.HF_NOT_FRACTION, field=key, value=repr(value))
    return float(value)


def read_rope_theta(cfg: HfConfig, default: float) -> float:
    nested = cfg.section("rope_parameters")
    if cfg.data.get("rope_theta") is None and nested.data.get("rope_theta") is not None:
        return positive_number(nested, "rope_theta", default)
    return positive_number(cfg, "rope_theta", default)


def decoder_fields(
    cfg: HfConfig, family: str, kv_default: int | None, head_dim_default: int | None, **defaults
) -> dict:
    """The keys the newer RMSNorm/RoPE decoders share (Qwen3, Gemma, Phi-3, OLMo 2, DeepSeek);
    ``defaults`` are the family's transformers defaults for absent optional keys."""
    fields = common_fields(cfg, ("hidden_size",), ("num_hidden_layers",), ("num_attention_heads",))
    heads, hidden = fields["num_heads"], fields["hidden_size"]
    head_dim = cfg.size("head_dim", limit=MAX_HIDDEN, default=head_dim_default or hidden // heads)
    bias = cfg.flag("attention_bias", defaults.get("attention_bias", False))
    fields.update(
        ffn_hidden_size=cfg.size("intermediate_size", limit=MAX_FFN),
        num_kv_heads=cfg.size("num_key_value_heads", limit=MAX_HEADS, default=kv_default or heads),
        max_seq_len=cfg.size("max_position_embeddings", limit=MAX_POSITIONS, default=defaults["max_seq_len"]),
        tied_embeddings=cfg.flag("tie_word_embeddings", defaults.get("tied", False)),
        qkv_bias=bias,
        out_bias=bias,
        rope_theta=positive_number(cfg, "rope_theta", defaults.get("rope_theta", 10000.0)),
        norm_eps=positive_number(cfg, "rms_norm_eps", defaults.get("norm_eps", 1e-6)),
    )
    if head_dim * heads != hidden:  # keep specs canonical: None = hidden / heads
        fields["head_dim"] = head_dim
    return fields | window_fields(cfg, family, fields["num_layers"])


# Granite's multiplier keys (GraniteConfig / GraniteMoeConfig, each 1.0 when absent) and the fields
# of GraniteMultipliers they set.
_GRANITE_MULTIPLIERS = (
    ("embedding_multiplier", "embedding"),
    ("residual_multiplier", "residual"),
    ("attention_multiplier", "attention"),
    ("logits_scaling", "logits_scaling"),
)


def granite_multipliers(cfg: HfConfig) -> dict:
    """``multipliers`` where the config sets any of Granite's scalings; {} where all are 1, so a
    spec is canonical (as ``head_dim`` is)."""
    values = {field: positive_number(cfg, key, 1.0) for key, field in _GRANITE_MULTIPLIERS}
    if all(value == 1.0 for value in values.values()):
        return {}
    return dict(multipliers=GraniteMultipliers(**values))


def text_config(cfg: HfConfig, defaults: dict[str, Any]) -> HfConfig:
    """A multimodal config's language model (``text_config``), transformers' defaults for its
    absent keys; the vision tower beside it is not read."""
    text = cfg.section("text_config")
    if not text.data:
        raise cfg.error(RuleCode.HF_MISSING_TEXT_CONFIG)
    data = dict(text.data)
    for key, value in defaults.items():
        if data.get(key) is None:
            data[key] = value
    return HfConfig(cfg.path, data)
