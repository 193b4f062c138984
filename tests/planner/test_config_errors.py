"""The config.json readers refuse with a rule code and its figures (issue 30: the app words them in
中文), and their English sentence is the one the CLI printed before codes, byte for byte."""

from __future__ import annotations

import json
import pickle

import pytest
from support import DATA

from planner.catalog.hf_config import (
    READ_ARCHITECTURES,
    SUPPORTED_MODEL_TYPES,
    model_from_hf_config,
    model_from_hf_dict,
)
from planner.catalog.models import get_preset, load_model
from planner.errors import RuleCode, RuleViolation
from planner.rule_codes import TEMPLATES

_C = RuleCode
FIXTURES = DATA / "hf_configs"
DROP = object()  # a change that removes the key


def fixture(family: str, **changes: object) -> dict:
    data = json.loads((FIXTURES / f"{family}.json").read_text())
    for key, value in changes.items():
        if value is DROP:
            data.pop(key, None)
        else:
            data[key] = value
    return data


# (family, changes, code, the English sentence after "<where>: ")
CASES = [
    ("mistral", dict(num_hidden_layers="40"), _C.HF_NOT_INTEGER, "'num_hidden_layers' must be an integer, got '40'"),
    ("mistral", dict(num_hidden_layers=0), _C.HF_OUT_OF_RANGE, "'num_hidden_layers' = 0 is out of range (1..10000)"),
    ("mistral", dict(vocab_size=DROP), _C.HF_MISSING_KEY, "missing key 'vocab_size'"),
    ("mistral", dict(model_type=DROP), _C.HF_MISSING_KEY, "missing key 'model_type'"),
    (
        "mistral",
        dict(model_type="bert", architectures=["BertForMaskedLM"]),
        _C.HF_MODEL_TYPE,
        f"unsupported model_type 'bert' (supported: {', '.join(SUPPORTED_MODEL_TYPES)}); docs/extending.md says"
        " how to add a reader",
    ),
    # trial s52: a refusal names the next step where the file says what the model is
    ("deepseek_v3", dict(model_type="my_moe"), _C.HF_MODEL_TYPE_ARCHITECTURE,
     "unsupported model_type 'my_moe', but its architectures name DeepseekV3ForCausalLM: set model_type to deepseek_v3"),
    ("mistral", dict(model_type="t5", is_encoder_decoder=True), _C.HF_ENCODER_DECODER,
     "model_type 't5' is an encoder-decoder model (is_encoder_decoder): trainplan plans decoder-only transformers"),
    ("mistral", dict(model_type="jamba", architectures=DROP), _C.HF_STATE_SPACE,
     "model_type 'jamba' has state-space (Mamba) layers: trainplan plans decoder-only transformers"),
    ("mistral", dict(model_type="hybrid", hybrid_override_pattern="M-M*"), _C.HF_STATE_SPACE,
     "model_type 'hybrid' has state-space (Mamba) layers: trainplan plans decoder-only transformers"),
    ("mistral", dict(model_type="hybrid", mamba_d_state=16), _C.HF_STATE_SPACE,
     "model_type 'hybrid' has state-space (Mamba) layers: trainplan plans decoder-only transformers"),
    ("mistral", dict(tie_word_embeddings="no"), _C.HF_NOT_BOOL, "'tie_word_embeddings' must be true or false, got 'no'"),
    ("mistral", dict(num_key_value_heads=5, head_dim=DROP), _C.HF_KV_HEADS, "5 key/value heads do not divide 32 attention heads"),
    ("mistral", dict(num_attention_heads=24, head_dim=DROP), _C.HF_HEADS_HIDDEN, "24 attention heads do not divide hidden size 5120"),
    ("mixtral", dict(num_experts_per_tok=9), _C.HF_EXPERTS_PER_TOKEN, "num_experts_per_tok exceeds num_local_experts"),
    ("qwen3", dict(rope_theta=-1), _C.HF_NOT_POSITIVE, "'rope_theta' must be a positive number, got -1"),
    ("nemotron", dict(partial_rotary_factor=2), _C.HF_NOT_FRACTION, "'partial_rotary_factor' must be a number in (0, 1], got 2"),
    ("nemotron", dict(hidden_act="tanh"), _C.HF_NEMOTRON_ACT, "hidden_act 'tanh' is not supported for nemotron (relu2 or a GeLU)"),
    ("gemma2", dict(attn_logit_softcapping=0), _C.HF_NOT_CAP, "'attn_logit_softcapping' must be a positive number or null, got 0"),
    ("qwen3", dict(layer_types=["full_attention"], use_sliding_window=True, sliding_window=4096), _C.HF_LAYER_TYPES,
     "'layer_types' must list one attention type per layer (36): full_attention, sliding_attention or chunked_attention"),
    # trial s26: an unknown kind was read as full attention, an index past the last layer ignored
    ("gemma2", dict(layer_types=["sliding_attention", "ful_attention"] * 21), _C.HF_LAYER_TYPES,
     "'layer_types' must list one attention type per layer (42): full_attention, sliding_attention or chunked_attention"),
    ("gemma2", dict(layer_types=[["full_attention"]] * 42), _C.HF_LAYER_TYPES,
     "'layer_types' must list one attention type per layer (42): full_attention, sliding_attention or chunked_attention"),
    ("qwen2_moe", dict(mlp_only_layers=[99]), _C.HF_LAYER_LIST, "'mlp_only_layers' must be a list of layer indices, 0 to 23"),
    ("mpt", dict(expansion_ratio="4"), _C.HF_MPT_EXPANSION, "'expansion_ratio' = '4' is not a sensible positive number"),
    ("mpt", dict(ffn_config={"ffn_type": "te_ln_mlp"}), _C.HF_MPT_FFN_TYPE, "ffn_config.ffn_type 'te_ln_mlp' is not supported (only 'mptmlp')"),
    ("mpt", dict(attn_config=[1]), _C.HF_NOT_OBJECT, "'attn_config' must be an object"),
    ("deepseek_v3", dict(attention_bias=True), _C.HF_DEEPSEEK_BIAS, "attention_bias is not supported for deepseek_v3"),
    ("deepseek_v2", dict(norm_topk_prob=True), _C.HF_DEEPSEEK_V2_ROUTER,
     "norm_topk_prob true is not supported for deepseek_v2: transformers' router takes topk_method 'greedy' or"
     " 'group_limited_greedy' and never renormalises (norm_topk_prob false, as released)"),
    ("deepseek_v3", dict(first_k_dense_replace=-1), _C.HF_LAYER_COUNT, "'first_k_dense_replace' must be an integer in 0..10000, got -1"),
    ("qwen2_moe", dict(mlp_only_layers="0"), _C.HF_LAYER_LIST, "'mlp_only_layers' must be a list of layer indices, 0 to 23"),
    ("qwen2_moe", dict(shared_expert_intermediate_size=5000), _C.HF_SHARED_EXPERT,
     "shared_expert_intermediate_size 5000 is not a multiple of moe_intermediate_size 1408"
     " (the shared expert is planned as whole experts)"),
    ("mistral3", dict(text_config=DROP), _C.HF_MISSING_TEXT_CONFIG,
     "missing key 'text_config' (the language model; the vision tower is not planned)"),
    # trial s52: it was refused for "missing key 'hidden_size'"
    ("gemma3", dict(text_config=None), _C.HF_MISSING_TEXT_CONFIG,
     "missing key 'text_config' (the language model; the vision tower is not planned)"),
    ("deepseek_v3", dict(n_group=3), _C.HF_DIMENSIONS,
     "invalid model dimensions: n_group 3 and topk_group 4 cannot route 8 of 256 experts: n_group must split"
     " the experts into groups of two or more (or be 1), and topk_group of them (at most n_group) must hold"
     " the top 8"),
    ("deepseek_v3", dict(n_group=64, topk_group=1), _C.HF_DIMENSIONS,
     "invalid model dimensions: n_group 64 and topk_group 1 cannot route 8 of 256 experts: n_group must split"
     " the experts into groups of two or more (or be 1), and topk_group of them (at most n_group) must hold"
     " the top 8"),
]  # fmt: skip


@pytest.mark.parametrize(("family", "changes", "code", "sentence"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_a_bad_config_is_refused_with_its_code_and_its_sentence(tmp_path, family, changes, code, sentence):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fixture(family, **changes)))
    with pytest.raises(RuleViolation) as refused:
        model_from_hf_config(path)
    assert refused.value.code == code, str(refused.value)
    assert str(refused.value) == f"{path}: {sentence}"
    assert refused.value.figures["where"] == str(path)
    copy = pickle.loads(pickle.dumps(refused.value))  # the app's cache keeps code and figures
    assert (copy.code, copy.figures, str(copy)) == (code, refused.value.figures, str(refused.value))


@pytest.mark.parametrize(
    ("text", "code", "sentence"),
    [
        ("{not json", _C.HF_JSON, "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
        ("[1, 2]", _C.HF_TOP_LEVEL, "top level must be a JSON object, got list"),
        ("[" * 100_000 + "]" * 100_000, _C.HF_NESTED, "nested too deeply, not a model config"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_a_config_object_is_refused_with_its_code(tmp_path, text, code, sentence):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(RuleViolation) as refused:
        model_from_hf_config(path)
    assert (refused.value.code, str(refused.value)) == (code, f"{path}: {sentence}")


def test_a_missing_file_and_an_unknown_name_are_refused_with_their_codes(tmp_path):
    with pytest.raises(RuleViolation) as refused:
        model_from_hf_config(tmp_path)  # a folder without config.json
    assert (refused.value.code, str(refused.value)) == (
        _C.HF_NO_FILE,
        f"{tmp_path / 'config.json'}: no such config file",
    )
    with pytest.raises(RuleViolation) as refused:
        get_preset("llama3-8c")
    assert refused.value.code == _C.UNKNOWN_PRESET
    assert str(refused.value).startswith("unknown model preset 'llama3-8c'; did you mean ")
    with pytest.raises(RuleViolation) as refused:
        load_model("no-such-model-anywhere")
    assert refused.value.code == _C.UNKNOWN_MODEL
    assert str(refused.value).startswith(
        "'no-such-model-anywhere' is neither a model preset nor an existing config path"
    )


def test_invalid_dimensions_keep_modelspecs_sentence():
    data = fixture("mistral", head_dim=127)  # ModelSpec refuses an odd head dimension (RoPE)
    with pytest.raises(RuleViolation) as refused:
        model_from_hf_dict(data, "odd")
    assert refused.value.code == _C.HF_DIMENSIONS
    assert str(refused.value) == (
        "<odd>: invalid model dimensions: head_dim 127 is odd: RoPE needs an even head dimension"
    )


def test_every_config_code_has_a_template_naming_the_file():
    """Each reader's sentence starts with the file it refuses (the app swaps in the upload's name)."""
    codes = [code for code in RuleCode if code.name.startswith("HF_") and code is not _C.HF_TP]
    assert len(codes) == 35
    assert all(TEMPLATES[code].startswith("{where}: ") for code in codes)


def test_the_architectures_hint_names_classes_transformers_builds_for_the_family():
    """READ_ARCHITECTURES: each class is what transformers' auto mappings give for its model_type,
    so "set model_type to X" names the reader that builds the class the file names."""
    auto = pytest.importorskip("transformers.models.auto.modeling_auto")
    built = {**auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, **auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES}
    for name, family in READ_ARCHITECTURES.items():
        assert name in {built.get(family)}, (name, family, built.get(family))
    assert set(READ_ARCHITECTURES.values()) == set(SUPPORTED_MODEL_TYPES) - {"kimi_k2"}
