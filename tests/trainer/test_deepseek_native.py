"""The native DeepSeek-V3 decoder (MLA, dense first blocks, MoE blocks with shared experts and
the group-limited sigmoid router) computes what transformers' DeepseekV3ForCausalLM computes
with the same weights (fp32, CPU, tiny dims), and holds the planner's parameter count."""

from __future__ import annotations

import pytest
import torch
from support.native_models import (
    SWIGLU,
    hf_root_and_norms,
    hf_routed_experts,
    matches_transformers,
    parameters_without_gradient,
    tiny_native,
)

from planner.catalog.models import get_preset
from planner.model.structure import native_unsupported
from trainer.model import Transformer, build_native_model
from trainer.moe import MoE

transformers = pytest.importorskip("transformers")

SEQ = 20
_TINY = dict(
    model_type="deepseek_v3",
    hidden_size=64,
    intermediate_size=96,
    moe_intermediate_size=32,
    num_hidden_layers=3,
    first_k_dense_replace=1,
    num_attention_heads=4,
    num_key_value_heads=4,
    q_lora_rank=32,
    kv_lora_rank=16,
    qk_nope_head_dim=16,
    qk_rope_head_dim=8,
    v_head_dim=12,
    n_routed_experts=16,  # 8 groups of 2, the best 4 groups eligible (DeepSeek-V3's routing)
    num_experts_per_tok=4,
    n_shared_experts=2,
    n_group=8,
    topk_group=4,
    routed_scaling_factor=2.5,
    norm_topk_prob=True,
    vocab_size=256,  # a multiple of 128: the native model pads nothing
    max_position_embeddings=64,
    rope_theta=10000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)


def _attention_weights(sd: dict[str, torch.Tensor], p: str, h: str) -> dict[str, torch.Tensor]:
    names = {
        "wq": "q_proj",
        "wq_a": "q_a_proj",
        "q_norm": "q_a_layernorm",
        "wq_b": "q_b_proj",
        "wkv_a": "kv_a_proj_with_mqa",
        "kv_norm": "kv_a_layernorm",
        "wkv_b": "kv_b_proj",
        "wo": "o_proj",
    }
    return {
        f"{h}self_attn.{hf}.weight": sd[f"{p}attention.{ours}.weight"]
        for ours, hf in names.items()
        if f"{p}attention.{ours}.weight" in sd
    }


def _mlp_weights(native: Transformer, sd: dict[str, torch.Tensor], i: int, p: str, h: str) -> dict[str, torch.Tensor]:
    moe = native.layers[str(i)].feed_forward
    if not isinstance(moe, MoE):
        return {f"{h}mlp.{hf}.weight": sd[f"{p}feed_forward.{ours}.weight"] for ours, hf in SWIGLU}
    out = hf_routed_experts(sd, p, h) | {f"{h}mlp.gate.e_score_correction_bias": moe.e_score_correction_bias}
    return out | {
        f"{h}mlp.shared_experts.{hf}.weight": sd[f"{p}feed_forward.shared.{ours}.weight"] for ours, hf in SWIGLU
    }


def _hf_state_dict(native: Transformer) -> dict[str, torch.Tensor]:
    sd, out = native.state_dict(), hf_root_and_norms(native)
    for i in range(native.args.num_layers):
        p, h = f"layers.{i}.", f"model.layers.{i}."
        out |= _attention_weights(sd, p, h) | _mlp_weights(native, sd, i, p, h)
    return out


def _native(data: dict, tmp_path) -> Transformer:
    # Well-separated affinities: no near-ties in the top k.
    native = tiny_native(data, tmp_path, SEQ, lambda name: 0.5 if name.endswith("router.weight") else None)
    gen = torch.Generator().manual_seed(4)
    for moe in native.modules():
        if isinstance(moe, MoE):  # the correction bias steers the choice, not the weights
            moe.e_score_correction_bias.normal_(0.0, 0.3, generator=gen)
    return native


@pytest.mark.parametrize("q_lora_rank", [32, None])
def test_native_deepseek_v3_computes_what_transformers_computes(tmp_path, q_lora_rank):
    data = _TINY | dict(q_lora_rank=q_lora_rank)
    native = _native(data, tmp_path)
    assert isinstance(native.layers["1"].feed_forward, MoE) and not isinstance(native.layers["0"].feed_forward, MoE)
    tokens, theirs = matches_transformers(native, data, _hf_state_dict(native), SEQ)
    # The correction bias matters (it picks other experts): without it the logits differ.
    for moe in native.modules():
        if isinstance(moe, MoE):
            moe.e_score_correction_bias.zero_()
    with torch.no_grad():
        assert not torch.allclose(native(tokens), theirs, atol=1e-3)


# Moonlight-16B-A3B's router (n_group 1, topk_group 1, 2.446) and a grouping without
# renormalisation: trial s52 found the native router on 8 groups, top 4, times 2.5 whatever the file said.
@pytest.mark.parametrize(
    "router",
    [
        dict(n_group=1, topk_group=1, routed_scaling_factor=2.446),
        dict(n_group=4, topk_group=2, routed_scaling_factor=1.5, norm_topk_prob=False),
    ],
    ids=["moonlight", "four-groups-unnormalised"],
)
def test_native_router_is_built_as_the_config_says(tmp_path, router):
    data = _TINY | router
    native = _native(data, tmp_path)
    routing = native.layers["1"].feed_forward.routing
    assert (routing.groups, routing.topk_groups, routing.routed_scale) == (
        router["n_group"],
        router["topk_group"],
        router["routed_scaling_factor"],
    )
    matches_transformers(native, data, _hf_state_dict(native), SEQ)


def test_native_deepseek_v3_trains_a_step(tmp_path):
    """Backward reaches every parameter (router through the weights, shared experts, MLA)."""
    assert parameters_without_gradient(_native(_TINY, tmp_path), _TINY["vocab_size"], SEQ) == []


def test_native_deepseek_v3_holds_the_planner_count():
    """The preset's native model (meta device: no memory) holds exactly the spec's parameters
    (129280 is a multiple of 128: no vocabulary padding); the MTP module is not built."""
    spec = get_preset("deepseek-v3")
    assert native_unsupported(spec) == []
    model = build_native_model(spec, seq_len=4096)
    assert sum(p.numel() for p in model.parameters()) == spec.num_params()
    assert sum(isinstance(m, MoE) for m in model.modules()) == spec.num_layers - spec.dense_layers
