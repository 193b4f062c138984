"""Presets and the HF config reader, checked against real transformers models built on meta."""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support import DATA, REPO
from support.presets import FIXTURE_CHANGES, changed_fixture

from planner.catalog.models import (
    MAX_CONFIG_BYTES,
    PRESET_CONFIGS,
    SUPPORTED_MODEL_TYPES,
    get_preset,
    list_presets,
    load_model,
    model_from_hf_config,
)
from planner.model.spec import ModelSpec

if TYPE_CHECKING:
    import torch

transformers = pytest.importorskip("transformers")

FIXTURES = DATA / "hf_configs"
CALIBRATION = REPO / "data" / "calibration" / "h200_fsdp2_hf_llama.jsonl"  # the repo's copy of shared/

_SWIGLU_ARCH = dict(mlp="swiglu", norm="rmsnorm", position="rope", norm_bias=False, embedding_norm=False)
_GPT2_ARCH = dict(
    mlp="gelu",
    norm="layernorm",
    position="learned",
    norm_bias=True,
    embedding_norm=False,
    qkv_bias=True,
    out_bias=True,
    mlp_bias=True,
    num_experts=1,
)


# The families hf_config_from_spec builds a config class for itself (trial s29: a new family's
# preset failed there with advice that read like a reader bug).
_BUILT_FAMILIES = ("gpt2", "llama", "qwen2", "mistral", "mixtral")
NEW_FAMILY_HINT = "; a preset of a new family is built from its own config data: add it to _CONFIG_PRESET_FAMILIES"


def _require(spec: ModelSpec, **expected) -> None:
    """The config classes below cannot express anything else; refuse rather than drop a flag."""
    actual = {key: getattr(spec, key) for key in expected}
    hint = "" if spec.family in _BUILT_FAMILIES else NEW_FAMILY_HINT
    assert actual == expected, f"{spec.name}: {actual} is not expressible as {spec.family}{hint}"


# Presets of the newer families are their released config.json files (stored in FIXTURES;
# tests/planner/test_family_specs.py checks that each preset equals its file read).
_FIXTURE_PRESETS = {
    "qwen3-8b": "qwen3",
    "qwen3-30b-a3b": "qwen3_moe",
    "gemma2-9b": "gemma2",
    "phi3-mini": "phi3",
    "olmo2-7b": "olmo2",
    "deepseek-v3": "deepseek_v3",
    "qwen3-235b-a22b": "qwen3_moe",
    "mpt-7b": "mpt",  # trial s44 L3: 209 llm-foundry rows are MPT, and no preset named one
    "mpt-30b": "mpt",
    "bloom-176b": "bloom",  # issue 27's BLOOM commands named a config file: no preset named it
}


def hf_config_from_spec(spec: ModelSpec):
    """The transformers config that builds the model a preset describes."""
    if spec.name in _FIXTURE_PRESETS:
        data = json.loads((FIXTURES / f"{_FIXTURE_PRESETS[spec.name]}.json").read_text())
        return _fixture_hf_config(data | FIXTURE_CHANGES.get(spec.name, {}))
    if spec.family in _CONFIG_PRESET_FAMILIES:  # presets of the newer readers: their config data
        return _language_model_config(PRESET_CONFIGS[spec.name])
    if spec.family == "gpt2":
        _require(spec, **_GPT2_ARCH)
        return transformers.GPT2Config(
            n_embd=spec.hidden_size,
            n_layer=spec.num_layers,
            n_head=spec.num_heads,
            n_inner=spec.ffn_hidden_size,
            n_positions=spec.max_seq_len,
            vocab_size=spec.vocab_size,
            tie_word_embeddings=spec.tied_embeddings,
        )
    _require(spec, **_SWIGLU_ARCH)
    common = dict(
        hidden_size=spec.hidden_size,
        intermediate_size=spec.ffn_hidden_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        head_dim=spec.dim_head,
        vocab_size=spec.vocab_size,
        max_position_embeddings=spec.max_seq_len,
        tie_word_embeddings=spec.tied_embeddings,
    )
    if spec.family == "llama":
        _require(spec, out_bias=spec.qkv_bias, num_experts=1)
        return transformers.LlamaConfig(**common, attention_bias=spec.qkv_bias, mlp_bias=spec.mlp_bias)
    if spec.family == "qwen2":
        _require(spec, qkv_bias=True, out_bias=False, mlp_bias=False, num_experts=1)
        return transformers.Qwen2Config(**common)
    _require(spec, qkv_bias=False, out_bias=False, mlp_bias=False)
    if spec.family == "mistral":
        _require(spec, num_experts=1)
        return transformers.MistralConfig(**common)
    if spec.family == "mixtral":
        return transformers.MixtralConfig(
            **common, num_local_experts=spec.num_experts, num_experts_per_tok=spec.experts_per_token
        )
    raise AssertionError(f"no transformers config for family {spec.family}")


def _build_on_meta(hf_config) -> torch.nn.Module:
    torch = pytest.importorskip("torch")  # here, not at the top: the planner tests collect without torch
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(hf_config)


def _count(model: torch.nn.Module) -> int:
    """Trained parameters, tied weights once (AFMoE's router ``expert_bias`` is not trained)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _decoder_layers(model: torch.nn.Module, num_layers: int) -> torch.nn.ModuleList:
    import torch

    lists = [m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == num_layers]
    assert len(lists) == 1, "expected exactly one list of decoder layers"
    return lists[0]


@functools.cache
def _preset_model(name: str) -> torch.nn.Module:
    return _build_on_meta(hf_config_from_spec(get_preset(name)))


def _fixture_hf_config(data: dict):
    fields = {k: v for k, v in data.items() if k not in ("model_type", "quantization_config")}
    return transformers.AutoConfig.for_model(data["model_type"], **fields)


def _write_config(tmp_path: Path, data: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


# --------------------------------------------------------------------------- presets


@pytest.mark.parametrize("name", list_presets())
def test_preset_counts_match_transformers(name):
    spec = get_preset(name)
    model = _preset_model(name)
    assert spec.num_params() == _count(model)
    layer = _decoder_layers(model, spec.num_layers)[0]
    counts = spec.param_counts()  # DeepSeek's first layers are dense
    assert (counts.dense_per_layer if counts.dense_layers else counts.per_layer) == _count(layer)


@pytest.mark.parametrize(
    "name, total",
    [
        ("llama3-8b", 8_030_261_248),
        ("llama3.1-8b", 8_030_261_248),
        ("llama2-7b", 6_738_415_616),
        ("mistral-7b", 7_241_732_096),
        ("llama-124m", 151_898_880),
        ("llama-350m", 373_867_520),
        ("llama3.2-3b", 3_212_749_824),
        ("llama3.2-1b", 1_235_814_400),
    ],
)
def test_published_totals(name, total):
    assert get_preset(name).num_params() == total


@pytest.mark.parametrize("name", [n for n in list_presets() if n.startswith("gpt3-")])
def test_gpt3_sizes_match_paper_names(name):
    number, unit = re.fullmatch(r"gpt3-([\d.]+)([mb])", name).groups()
    nominal = float(number) * (1e6 if unit == "m" else 1e9)
    assert get_preset(name).num_params() == pytest.approx(nominal, rel=0.025)


def test_mixtral_active_params():
    spec = get_preset("mixtral-8x7b")
    assert (spec.num_experts, spec.experts_per_token) == (8, 2)
    assert spec.num_active_params() == pytest.approx(12.9e9, rel=0.01)  # "12.9B active" per Mistral AI
    assert get_preset("llama3-8b").num_active_params() == get_preset("llama3-8b").num_params()


def test_calibration_models_match_measured_rows():
    rows = [json.loads(line) for line in CALIBRATION.read_text().splitlines()[1:] if line.strip()]
    assert rows
    for row in rows:
        spec = get_preset(row["model"])
        dims = (
            spec.num_layers,
            spec.hidden_size,
            spec.ffn_hidden_size,
            spec.num_heads,
            spec.num_kv_heads,
            spec.vocab_size,
            spec.tied_embeddings,
        )
        assert dims == tuple(row[k] for k in ("layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "tied"))
        assert spec.num_params() == row["n_params"]
        assert spec.max_seq_len >= row["seq"]


def test_tiny_is_small_and_llama_style():
    spec = get_preset("tiny")
    assert 1e6 < spec.num_params() < 1e7
    assert spec.family == "llama" and spec.num_kv_heads < spec.num_heads and spec.max_seq_len >= 256


def test_unknown_preset_suggests_close_names():
    with pytest.raises(ValueError, match="llama3-8b"):
        get_preset("llama3-8")
    with pytest.raises(ValueError, match="unknown model preset"):
        get_preset("zzzz")


@pytest.mark.parametrize(
    ("spelling", "preset"),
    [
        ("llama3-405b", "llama3.1-405b"),
        ("llama-3-405b", "llama3.1-405b"),
        ("Llama-3.1-405B", "llama3.1-405b"),
        ("meta-llama/Llama-3.1-405B", "llama3.1-405b"),
        ("Meta-Llama-3.1-70B", "llama3.1-70b"),
        ("llama_3.1_8b", "llama3.1-8b"),
        ("Llama-3-8B", "llama3-8b"),
        ("llama-2-7b", "llama2-7b"),
    ],
)
def test_common_spellings_resolve_to_presets(spelling, preset):
    assert get_preset(spelling) == get_preset(preset)
    assert load_model(spelling).name == preset


def test_load_model_accepts_presets_files_and_directories(tmp_path):
    assert load_model("mistral-7b") == get_preset("mistral-7b")
    data = json.loads((FIXTURES / "llama.json").read_text())
    config_dir = tmp_path / "Llama-3.2-1B"
    config_dir.mkdir()
    _write_config(config_dir, data)
    from_dir = load_model(str(config_dir))
    from_file = load_model(str(config_dir / "config.json"))
    assert from_dir == from_file and from_dir.name == "Llama-3.2-1B"
    preset = get_preset("llama3.2-1b")
    assert from_dir.model_copy(update={"name": preset.name}) == preset
    with pytest.raises(ValueError, match="neither a model preset nor"):
        load_model(str(tmp_path / "missing"))


# ------------------------------------------------------------------ HF config reader


def test_every_supported_type_has_a_fixture():
    assert sorted(p.stem for p in FIXTURES.glob("*.json")) == sorted(SUPPORTED_MODEL_TYPES)


# Variants flip the keys that change the weights, so each mapping is checked both ways.
_VARIANTS = [
    ("llama", {}),
    ("llama", {"attention_bias": True, "mlp_bias": True, "tie_word_embeddings": False}),
    ("llama", {"head_dim": None, "num_key_value_heads": None}),
    ("mistral", {}),
    ("mistral", {"head_dim": None, "tie_word_embeddings": True}),
    ("qwen2", {}),
    ("qwen2", {"tie_word_embeddings": False}),
    ("mixtral", {}),
    ("mixtral", {"num_local_experts": 4, "num_experts_per_tok": 1}),
    ("gpt2", {}),
    ("gpt2", {"n_inner": 2000, "tie_word_embeddings": False, "n_positions": 512}),
    ("gpt_neox", {}),
    ("gpt_neox", {"attention_bias": False, "tie_word_embeddings": True}),
    ("mpt", {}),
    ("bloom", {}),
    ("bloom", {"hidden_size": None, "n_embed": 512, "tie_word_embeddings": False}),
]


@pytest.mark.parametrize("model_type, overrides", _VARIANTS)
def test_hf_config_round_trip_matches_transformers(tmp_path, model_type, overrides):
    data = changed_fixture(model_type, overrides)
    spec = model_from_hf_config(_write_config(tmp_path, data))
    assert spec.family == model_type
    model = _build_on_meta(_fixture_hf_config(data))
    assert spec.num_params() == _count(model)
    assert spec.param_counts().per_layer == _count(_decoder_layers(model, spec.num_layers)[0])


@pytest.mark.parametrize(
    "model_type, total",
    [
        ("gpt2", 124_439_808),
        ("gpt_neox", 162_322_944),
        ("bloom", 559_214_592),
        ("qwen2", 494_032_768),
        ("mpt", 6_649_286_656),
    ],
)
def test_fixture_totals_match_published_counts(model_type, total):
    assert model_from_hf_config(FIXTURES / f"{model_type}.json").num_params() == total


def test_mpt_keys_the_transformers_port_ignores(tmp_path):
    data = json.loads((FIXTURES / "mpt.json").read_text())
    data.update(expansion_ratio=2, no_bias=False)
    data["attn_config"].update(alibi=False, attn_type="grouped_query_attention", kv_n_heads=8)
    spec = model_from_hf_config(_write_config(tmp_path, data))
    assert (spec.ffn_hidden_size, spec.num_kv_heads, spec.position) == (8192, 8, "learned")
    assert spec.qkv_bias and spec.mlp_bias and spec.norm_bias


_LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 100,
}


def _llama_with(**changes) -> dict:
    """The small Llama config with keys changed; a value of None removes the key."""
    data = {**_LLAMA, **changes}
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe\x00", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (_llama_with(model_type="t5", architectures=None), r"unsupported model_type 't5' \(supported: llama"),
        (_llama_with(model_type=["llama"]), "unsupported model_type"),
        (_llama_with(model_type=None), "missing key 'model_type'"),
        (_llama_with(hidden_size=None), "missing key 'hidden_size'"),
        (_llama_with(hidden_size=0), "out of range"),
        (_llama_with(num_hidden_layers=-2), "out of range"),
        (_llama_with(hidden_size=2_000_000), "out of range"),
        (_llama_with(num_hidden_layers=10_001), "out of range"),
        (_llama_with(vocab_size=20_000_000), "out of range"),
        (_llama_with(hidden_size="64"), "must be an integer"),
        (_llama_with(hidden_size=64.0), "must be an integer"),
        (_llama_with(num_hidden_layers=True), "must be an integer"),
        (_llama_with(tie_word_embeddings="yes"), "must be true or false"),
        (_llama_with(num_attention_heads=3), "do not divide hidden size 64"),
        (_llama_with(num_key_value_heads=3), "3 key/value heads do not divide"),
        (
            _llama_with(model_type="mixtral", num_key_value_heads=4, num_local_experts=2, num_experts_per_tok=4),
            "exceeds",
        ),
        (
            {
                "model_type": "mpt",
                "d_model": 64,
                "n_heads": 4,
                "n_layers": 2,
                "vocab_size": 100,
                "attn_config": {"qk_ln": True},
            },
            "qk_ln is not supported",
        ),
        (_llama_with(padding="x" * MAX_CONFIG_BYTES), "over 1000000 bytes"),
    ],
)
def test_bad_configs_raise_one_line_errors_naming_the_file(tmp_path, content, problem):
    path = tmp_path / "config.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    with pytest.raises(ValueError, match=problem) as info:
        model_from_hf_config(path)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message


def test_directory_without_config_names_the_path(tmp_path):
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "config.json"))):
        model_from_hf_config(tmp_path)


def test_remote_code_keys_are_ignored_and_never_run(tmp_path):
    sentinel = tmp_path / "code_ran"
    (tmp_path / "evil_modeling.py").write_text(f"open({str(sentinel)!r}, 'w').close()\n")
    data = {
        **_LLAMA,
        "trust_remote_code": True,
        "auto_map": {"AutoConfig": "evil_modeling.EvilConfig", "AutoModelForCausalLM": "evil_modeling.Evil"},
    }
    _write_config(tmp_path, data)
    spec = load_model(str(tmp_path))
    plain = model_from_hf_config(_write_config(tmp_path, _LLAMA, name="plain.json"))
    assert spec.model_copy(update={"name": plain.name}) == plain
    assert not sentinel.exists() and "evil_modeling" not in sys.modules


# ------------------------------------------- Nemotron, GPT-OSS, Qwen2-MoE, Mistral 3, Llama 4

_CONFIG_PRESET_FAMILIES = (
    "nemotron",
    "gpt_oss",
    "qwen2_moe",
    "llama4",
    "afmoe",
    "glm4_moe",
    "olmoe",
    "granite",
    "deepseek_v2",
)
_NEW_TYPES = (
    "nemotron", "gpt_oss", "qwen2_moe", "ministral", "mistral3", "llama4", "llama4_text", "ministral3", "glm4_moe", "olmoe", "granite",
    "granitemoe", "deepseek_v2",
)  # fmt: skip


def _language_model_config(data: dict):
    """The transformers config of a config.json's language model: the file's own class, or for
    the multimodal ones (Llama 4, Mistral 3) the text model alone, which is what the reader
    counts. Mistral 3's head is tied as the reader reads it (see _mistral3: transformers >= 5
    would tie a file without a top-level ``tie_word_embeddings``; the checkpoints do not)."""
    if data["model_type"] not in ("llama4", "mistral3"):
        return _fixture_hf_config(data)
    text = {k: v for k, v in data["text_config"].items() if k != "model_type"}
    text.setdefault("tie_word_embeddings", data.get("tie_word_embeddings", False))
    if data["model_type"] == "llama4":
        return transformers.Llama4TextConfig(**text)
    return transformers.MistralConfig(**text)


def _layer_counts(model: torch.nn.Module, num_layers: int) -> list[int]:
    return sorted(_count(layer) for layer in _decoder_layers(model, num_layers))


def _spec_layer_counts(spec: ModelSpec) -> list[int]:
    counts = spec.param_counts()
    dense, moe = counts.dense_layers, spec.num_layers - counts.dense_layers
    return sorted([counts.dense_per_layer] * dense + [counts.per_layer] * moe)


def _check_against_transformers(tmp_path: Path, data: dict) -> ModelSpec:
    spec = model_from_hf_config(_write_config(tmp_path, data))
    model = _build_on_meta(_language_model_config(data))
    assert spec.num_params() == _count(model)
    assert _spec_layer_counts(spec) == _layer_counts(model, spec.num_layers)
    return spec


def _stored(stored: str, layers: int | None = None, **changes) -> dict:
    """A stored config (tests/data/hf_configs) with keys changed, in its text_config for the
    multimodal ones; None removes a key, ``layers`` shortens it (and its layer_types)."""
    data = json.loads((FIXTURES / f"{stored}.json").read_text())
    target = data.get("text_config", data)
    if layers is not None:
        target["num_hidden_layers"] = layers
        if "layer_types" in target:
            target["layer_types"] = target["layer_types"][:layers]
    for key, value in changes.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
    return data


@pytest.mark.parametrize("model_type", _NEW_TYPES)
def test_new_family_configs_count_what_transformers_builds(tmp_path, model_type):
    spec = _check_against_transformers(tmp_path, _stored(model_type))
    families = {"ministral": "mistral", "mistral3": "mistral", "ministral3": "mistral", "llama4_text": "llama4"}
    assert spec.family == families.get(model_type, model_type)


# Each variant flips keys that change the weights or their split over layers.
_NEW_VARIANTS = [
    ("nemotron", dict(attention_bias=True, mlp_bias=True, tie_word_embeddings=True)),
    # Minitron-8B's shape (huggingface.co/nvidia/Minitron-8B-Base: width 4096, 48 heads of 128,
    # ffn 16384): head_dim differs from hidden / heads.
    ("nemotron", dict(hidden_size=4096, intermediate_size=16384, head_dim=128)),
    ("nemotron", dict(hidden_act="gelu", partial_rotary_factor=1.0, num_key_value_heads=48)),
    ("gpt_oss", dict(layers=4, num_local_experts=8, attention_bias=False, head_dim=32)),
    ("gpt_oss", dict(layers=3, layer_types=None, sliding_window=None, num_key_value_heads=64)),
    ("qwen2_moe", dict(layers=4, mlp_only_layers=[0], decoder_sparse_step=2)),
    ("qwen2_moe", dict(layers=2, shared_expert_intermediate_size=2816, qkv_bias=False, num_key_value_heads=4)),
    ("qwen2_moe", dict(layers=2, norm_topk_prob=True, use_sliding_window=True, tie_word_embeddings=True)),
    ("ministral", dict(layers=4, layer_types=["sliding_attention", "full_attention"] * 2, head_dim=64)),
    ("ministral", dict(layers=2, tie_word_embeddings=True, num_key_value_heads=None)),
    ("mistral3", dict(layers=2, head_dim=None, num_key_value_heads=32)),
    ("llama4", dict(layers=4, interleave_moe_layer_step=2, num_local_experts=4)),
    ("llama4", dict(layers=6, moe_layers=[0, 5], intermediate_size_mlp=4096, attention_chunk_size=None)),
    ("llama4", dict(layers=4, num_experts_per_tok=2, use_qk_norm=False, head_dim=64)),
    # GLM-4.5's q/k norms and three dense blocks; no q/k/v biases, two shared experts, no dense block
    ("glm4_moe", dict(layers=4, use_qk_norm=True, first_k_dense_replace=3, n_routed_experts=16)),
    ("glm4_moe", dict(layers=3, attention_bias=False, n_shared_experts=2, first_k_dense_replace=0)),
    (
        "glm4_moe",
        dict(layers=2, head_dim=None, num_attention_heads=32, num_key_value_heads=32, tie_word_embeddings=True),
    ),
]


@pytest.mark.parametrize("model_type, changes", _NEW_VARIANTS)
def test_new_family_variants_count_what_transformers_builds(tmp_path, model_type, changes):
    _check_against_transformers(tmp_path, _stored(model_type, **changes))


# Model cards: huggingface.co/mistralai/Mistral-Small-3.1-24B-Base-2503 ("24 billion
# parameters"); huggingface.co/meta-llama/Llama-4-Scout-17B-16E ("17B active, 109B total").
@pytest.mark.parametrize("model_type, card", [("mistral3", 24e9), ("llama4", 109e9)])
def test_multimodal_configs_count_the_language_model_only(tmp_path, model_type, card):
    """Llama 4 and Mistral 3 ship a vision tower beside the language model: the spec is the
    language model, what the whole transformers model has less the tower and its projector. The
    cards count the whole model (the language model alone is 1.8 % / 1.1 % under them)."""
    data = _stored(model_type)
    data["tie_word_embeddings"] = False  # the checkpoints' separate lm_head (see _language_model_config)
    fields = {k: v for k, v in data.items() if k != "model_type"}
    with torch_meta():
        whole = transformers.AutoModelForImageTextToText.from_config(
            transformers.AutoConfig.for_model(model_type, **fields)
        )
    vision = sum(
        _count(module) for name, module in whole.named_modules() if name.endswith(("vision_tower", "vision_model"))
    )
    projector = _count(next(m for name, m in whole.named_modules() if name.endswith("multi_modal_projector")))
    assert model_from_hf_config(FIXTURES / f"{model_type}.json").num_params() == _count(whole) - vision - projector
    assert _count(whole) == pytest.approx(card, rel=0.01)


def torch_meta():
    torch = pytest.importorskip("torch")
    return torch.device("meta")


def test_gpt_oss_reader_matches_the_validation_spec():
    """validation/moe_recipes.py's GPT_OSS_120B (written by hand from the same config.json)
    leaves out the router bias (128 per layer) and the attention sinks (64 per layer): the reader
    counts them, as transformers does, and agrees with it on every other field."""
    from validation.moe_recipes import GPT_OSS_120B

    read = model_from_hf_config(FIXTURES / "gpt_oss.json")
    assert read == get_preset("gpt-oss-120b").model_copy(update={"name": read.name})
    assert read.num_params() - GPT_OSS_120B.num_params() == 36 * (128 + 64)
    same = read.model_copy(
        update=dict(
            name=GPT_OSS_120B.name,
            family=GPT_OSS_120B.family,
            router_bias=False,
            attention_sinks=False,
            rope_theta=None,
            norm_eps=None,
        )
    )
    assert same == GPT_OSS_120B


@pytest.mark.parametrize(
    "model_type, changes, problem",
    [
        ("qwen2_moe", dict(shared_expert_intermediate_size=5000), "not a multiple of moe_intermediate_size 1408"),
        ("mistral3", dict(model_type="qwen2"), r"text_config.model_type 'qwen2' is not supported"),
        ("nemotron", dict(hidden_act="silu"), "hidden_act 'silu' is not supported"),
        ("nemotron", dict(partial_rotary_factor=1.5), r"must be a number in \(0, 1\]"),
        ("llama4", dict(no_rope_layers=[1, 0]), "one flag per layer"),
        ("llama4", dict(num_local_experts=1), "without expert layers"),
    ],
)
def test_new_family_bad_configs_raise_one_line_errors(tmp_path, model_type, changes, problem):
    path = _write_config(tmp_path, _stored(model_type, **changes))
    with pytest.raises(ValueError, match=problem) as info:
        model_from_hf_config(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_mistral3_without_text_config_names_what_is_missing(tmp_path):
    path = _write_config(tmp_path, {"model_type": "mistral3", "vision_config": {}})
    with pytest.raises(ValueError, match="missing key 'text_config'"):
        model_from_hf_config(path)


def test_presets_are_their_config_data():
    """Issue 31: every preset is config.json data read by the reader (no positional calls);
    tests/data/preset_specs.json keeps the specs the earlier positional presets built, which
    the data must still give field for field."""
    before = json.loads((DATA / "preset_specs.json").read_text())
    for name, fields in before.items():
        assert get_preset(name) == ModelSpec(**fields), name
    assert set(PRESET_CONFIGS) == set(list_presets()) >= set(before)


def test_gpt_neox_parallel_residual_is_read(tmp_path):
    """use_parallel_residual (transformers' default True) sets the parallel block: one tp
    reduction per block (planner/model/block_rows.py ``tp_reductions``)."""
    data = json.loads((FIXTURES / "gpt_neox.json").read_text())
    assert model_from_hf_config(_write_config(tmp_path, data)).parallel_block
    data["use_parallel_residual"] = False
    assert not model_from_hf_config(_write_config(tmp_path, data)).parallel_block
