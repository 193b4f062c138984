"""The native decoder for the Llama relatives (Qwen3, OLMo 2, Phi-3, Mistral v0.1's window)
computes what transformers' own model computes with the same weights (fp32, CPU, tiny dims)."""

from __future__ import annotations

import pytest
import torch
from support.native_models import hf_root, matches_transformers, tiny_native

from planner.catalog.models import model_from_hf_config
from planner.model.structure import native_unsupported
from trainer.model import Transformer

transformers = pytest.importorskip("transformers")

SEQ = 24
_TINY = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=256,  # a multiple of 128: the native model pads nothing
    max_position_embeddings=64,
    tie_word_embeddings=False,
    pad_token_id=0,  # Phi-3's defaults (32000) lie outside the tiny vocabulary
    bos_token_id=1,
    eos_token_id=2,
)

# (config.json keys, native -> HF norm names). Phi-3's fused weights are split below.
FAMILIES = {
    "qwen3": (
        {"head_dim": 16, "rope_theta": 1e6, "rms_norm_eps": 1e-6},
        ("input_layernorm", "post_attention_layernorm"),
    ),
    "olmo2": ({"rope_theta": 5e5, "rms_norm_eps": 1e-6}, ("post_attention_layernorm", "post_feedforward_layernorm")),
    "phi3": ({"sliding_window": 8}, ("input_layernorm", "post_attention_layernorm")),
    "mistral": ({"sliding_window": 8, "head_dim": 16}, ("input_layernorm", "post_attention_layernorm")),
}


def _hf_state_dict(native: Transformer, model_type: str, norms: tuple[str, str]) -> dict[str, torch.Tensor]:
    """Native weights under transformers' names (Phi-3: q/k/v and gate/up concatenated)."""
    sd = native.state_dict()
    out = hf_root(sd)
    for i in range(native.args.num_layers):
        p, h = f"layers.{i}.", f"model.layers.{i}."
        w = {name: sd[p + name + ".weight"] for name in ("attention.wq", "attention.wk", "attention.wv")}
        if model_type == "phi3":
            out[h + "self_attn.qkv_proj.weight"] = torch.cat(list(w.values()))
            gate_up = [sd[p + f"feed_forward.{n}.weight"] for n in ("w1", "w3")]
            out[h + "mlp.gate_up_proj.weight"] = torch.cat(gate_up)
        else:
            for native_name, hf_name in zip(w, ("q_proj", "k_proj", "v_proj"), strict=True):
                out[h + f"self_attn.{hf_name}.weight"] = w[native_name]
            out[h + "mlp.gate_proj.weight"] = sd[p + "feed_forward.w1.weight"]
            out[h + "mlp.up_proj.weight"] = sd[p + "feed_forward.w3.weight"]
        out[h + "self_attn.o_proj.weight"] = sd[p + "attention.wo.weight"]
        out[h + "mlp.down_proj.weight"] = sd[p + "feed_forward.w2.weight"]
        for native_name, hf_name in zip(("attention_norm", "ffn_norm"), norms, strict=True):
            out[h + f"{hf_name}.weight"] = sd[p + f"{native_name}.weight"]
        for qk in ("q_norm", "k_norm"):
            if p + f"attention.{qk}.weight" in sd:
                out[h + f"self_attn.{qk}.weight"] = sd[p + f"attention.{qk}.weight"]
    return out


@pytest.mark.parametrize("model_type", list(FAMILIES))
def test_native_family_computes_what_transformers_computes(tmp_path, model_type):
    keys, norms = FAMILIES[model_type]
    data = {"model_type": model_type, **_TINY, **keys}
    native = tiny_native(data, tmp_path, SEQ, lambda name: None)
    tokens, theirs = matches_transformers(native, data, _hf_state_dict(native, model_type, norms), SEQ)
    if native.args.sliding_window is not None:  # the window matters: without it the logits differ
        native.layers["0"].attention.window = None
        with torch.no_grad():
            assert not torch.allclose(native(tokens), theirs, atol=1e-3)


def test_gemma_runs_through_transformers():
    """(DeepSeek-V3 and Qwen3-MoE are native: tests/trainer/test_deepseek_native.py and
    tests/trainer/test_qwen3_moe_native.py.)"""
    from support import DATA

    for model_type in ("gemma2", "gemma3_text"):
        spec = model_from_hf_config(DATA / "hf_configs" / f"{model_type}.json")
        assert native_unsupported(spec), model_type
    assert native_unsupported(model_from_hf_config(DATA / "hf_configs" / "deepseek_v3.json")) == []


# (GPT-OSS: tests/trainer/test_hf_families.py, since transformers has no SDPA path for it.)
HF_PRESETS = ["qwen3-8b", "qwen3-30b-a3b", "gemma2-9b", "phi3-mini", "olmo2-7b", "deepseek-v3"]
HF_PRESETS += ["nemotron4-15b", "qwen1.5-moe-a2.7b", "llama4-scout", "ministral-8b", "mistral-small-3.1-24b"]
HF_PRESETS += ["trinity-large", "glm4.5-air", "glm4.6", "olmoe-1b-7b", "granite-3.3-8b", "deepseek-v2-lite"]


@pytest.mark.parametrize("preset", HF_PRESETS)
def test_hf_builds_the_family_presets(preset):
    """``impl hf`` for a preset (no config.json): transformers builds exactly the spec's weights."""
    from planner.catalog.models import get_preset
    from trainer.hf_model import build_hf_model

    spec = get_preset(preset)
    model = build_hf_model(spec, None, seq_len=4096)
    # trained weights (AFMoE's router expert_bias is an untrained nn.Parameter)
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == spec.num_params()
    # The attention the planner times (step_time.eager_softcap_attention): eager for Gemma 2.
    assert model.config._attn_implementation == spec.hf_attention_implementation


@pytest.mark.parametrize("preset", ["qwen3-8b", "phi3-mini", "olmo2-7b"])
def test_native_builds_the_family_presets(preset):
    """The native model of a released config holds the spec's parameters (+ vocabulary padding)."""
    from planner.catalog.models import get_preset
    from planner.model.structure import padded_vocab_size
    from trainer.model import build_native_model

    spec = get_preset(preset)
    model = build_native_model(spec, seq_len=4096)
    padding = (padded_vocab_size(spec.vocab_size) - spec.vocab_size) * spec.hidden_size * 2  # embedding + head
    assert sum(p.numel() for p in model.parameters()) == spec.num_params() + padding
