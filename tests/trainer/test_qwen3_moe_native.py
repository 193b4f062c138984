"""The native Qwen3-MoE decoder (Qwen3's attention with per-head q/k norms, every block a routed
SwiGLU MoE under the softmax router) computes what transformers' Qwen3MoeForCausalLM computes
with the same weights (fp32, CPU, tiny dims), with ``norm_topk_prob`` either way, and holds the
planner's parameter count for the released models."""

from __future__ import annotations

import json

import pytest
import torch
from support.native_models import (
    hf_root_and_norms,
    hf_routed_experts,
    matches_transformers,
    parameters_without_gradient,
    tiny_native,
)

from planner.catalog.models import get_preset, model_from_hf_config
from planner.layout import Implementation
from planner.model.structure import default_implementation, native_unsupported
from trainer.model import Transformer, build_native_model
from trainer.moe import MoE

transformers = pytest.importorskip("transformers")

SEQ = 20
_TINY = dict(
    model_type="qwen3_moe",
    hidden_size=64,
    intermediate_size=96,
    moe_intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    num_experts=8,
    num_experts_per_tok=2,
    norm_topk_prob=True,
    decoder_sparse_step=1,
    mlp_only_layers=[],
    vocab_size=256,  # a multiple of 128: the native model pads nothing
    max_position_embeddings=64,
    rope_theta=1e6,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)


def _hf_state_dict(native: Transformer) -> dict[str, torch.Tensor]:
    sd, out = native.state_dict(), hf_root_and_norms(native)
    attention = {"wq": "q_proj", "wk": "k_proj", "wv": "v_proj", "wo": "o_proj", "q_norm": "q_norm", "k_norm": "k_norm"}
    for i in range(native.args.num_layers):
        p, h = f"layers.{i}.", f"model.layers.{i}."
        out |= {f"{h}self_attn.{hf}.weight": sd[f"{p}attention.{ours}.weight"] for ours, hf in attention.items()}
        out |= hf_routed_experts(sd, p, h)
    return out


def _spread(name: str) -> float | None:
    """Well-separated router probabilities (no near-ties in the top k) and experts that move the
    logits, so their weighting shows."""
    return 0.5 if name.endswith("router.weight") else 0.2 if ".experts." in name else None


@pytest.mark.parametrize("norm_topk_prob", [True, False])
def test_native_qwen3_moe_computes_what_transformers_computes(tmp_path, norm_topk_prob):
    data = _TINY | dict(norm_topk_prob=norm_topk_prob)
    native = tiny_native(data, tmp_path, SEQ, _spread)
    assert native.args.moe_renormalize == norm_topk_prob
    assert all(isinstance(layer.feed_forward, MoE) for layer in native.layers.values())
    tokens, theirs = matches_transformers(native, data, _hf_state_dict(native), SEQ)
    # The renormalisation matters: the other setting gives other logits.
    for moe in native.modules():
        if isinstance(moe, MoE):
            moe.renormalize = not norm_topk_prob
    with torch.no_grad():
        assert not torch.allclose(native(tokens), theirs, atol=1e-3)


def test_qwen3_moe_with_dense_blocks_stays_on_transformers(tmp_path):
    """The spec keeps how many blocks are dense, not where (mlp_only_layers): native refuses."""
    (tmp_path / "config.json").write_text(json.dumps(_TINY | dict(mlp_only_layers=[1])))
    spec = model_from_hf_config(tmp_path / "config.json")
    assert native_unsupported(spec) == [
        "dense_layers=1 (the native decoder places dense blocks for mixtral or deepseek_v3 only)"
    ]
    assert default_implementation(spec) == Implementation.HF


@pytest.mark.parametrize("preset", ["qwen3-30b-a3b", "qwen3-235b-a22b"])
def test_native_qwen3_moe_holds_the_planner_count(preset):
    """The released models' native model (meta device) holds exactly the spec's parameters
    (151936 is a multiple of 128: no vocabulary padding), every block an MoE block."""
    spec = get_preset(preset)
    assert native_unsupported(spec) == [] and default_implementation(spec) == Implementation.NATIVE
    model = build_native_model(spec, seq_len=4096)
    assert sum(p.numel() for p in model.parameters()) == spec.num_params()
    assert sum(isinstance(m, MoE) for m in model.modules()) == spec.num_layers


def test_native_qwen3_moe_trains_a_step(tmp_path):
    """Backward reaches every parameter (the router through the weights, the q/k norms, experts)."""
    native = tiny_native(_TINY, tmp_path, SEQ, _spread)
    assert parameters_without_gradient(native, _TINY["vocab_size"], SEQ) == []
