"""What a routed expert's activation costs beyond SwiGLU's own kernels: GPT-OSS's clamps, its
biased experts' per-expert bias loop, and Megatron-Core's ``moe_act`` recompute, which runs the
activation once more in backward (planner/model/block.py ``CLAMP_TRAFFIC``,
``EXPERT_BIAS_TRAFFIC``; docs/model.md). The clamps and the bias loop are eager ops in
Megatron-Core too (``Elementwise.eager``): its fused-kernel factor does not shrink them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from planner.catalog.models import get_preset, model_from_hf_config
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model.block import CLAMP_TRAFFIC, EXPERT_BIAS_TRAFFIC, block_table
from planner.model.block_rows import Recompute
from planner.model.estimate import estimate
from planner.model.moe import EXPERT_BIAS_TRAFFIC_FP32_PROBS
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
OSS = get_preset("gpt-oss-20b")
LAYOUT = Layout(ep=8, sharding=Sharding.ZERO1)
TRAINING = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=8)


def elements(model) -> dict[str, int]:
    return {e.name: e.elements * e.copies for e in block_table(model).elementwise}


def memory_bound_s(model, settings=MEGATRON_CORE_SETTINGS) -> float:
    e = estimate(model, "h100-sxm", LAYOUT, TRAINING, num_gpus=8, settings=settings, trainer_rules=False)
    return e.time.breakdown_s.memory_bound


def test_the_reader_takes_gpt_oss_clamp_and_it_adds_the_clamp_kernels():
    assert model_from_hf_config(CONFIGS / "gpt_oss.json").activation_clamp == 7.0
    unclamped = OSS.model_copy(update={"activation_clamp": None})
    f, k = OSS.ffn_hidden_size, OSS.experts_per_token
    assert elements(OSS)["experts activation"] == elements(unclamped)["experts activation"]
    assert elements(OSS)["experts activation clamp"] == CLAMP_TRAFFIC * f * k
    assert "experts activation clamp" not in elements(unclamped)
    assert memory_bound_s(OSS) > memory_bound_s(unclamped)


def clamp_s(settings) -> float:
    return memory_bound_s(OSS, settings) - memory_bound_s(OSS.model_copy(update={"activation_clamp": None}), settings)


def bias_loop_s(settings) -> float:
    return memory_bound_s(OSS, settings) - memory_bound_s(OSS.model_copy(update={"mlp_bias": False}), settings)


@pytest.mark.parametrize("cost", [clamp_s, bias_loop_s])
def test_the_eager_passes_are_not_shrunk_by_the_stacks_fused_kernels(cost):
    """Megatron-Core's fused-kernel factor (0.5) halves the passes TransformerEngine fuses, not the
    clamps of weighted_bias_quick_geglu_impl nor the _apply_bias loop: their time is the same as
    under a stack that fuses nothing."""
    assert MEGATRON_CORE_SETTINGS.elementwise_fusion_factor < 1.0
    unfused = MEGATRON_CORE_SETTINGS.but(elementwise_fusion_factor=1.0)
    assert cost(MEGATRON_CORE_SETTINGS) == pytest.approx(cost(unfused), rel=1e-9)
    rows = {e.name: e for e in block_table(OSS).elementwise}
    assert rows["experts activation clamp"].eager and rows["experts' output bias"].eager
    assert not rows["experts activation"].eager


def test_fp32_probabilities_make_the_bias_loop_heavier_only_for_biased_experts():
    """The flex dispatcher's fp32 probabilities (``moe_probs_fp32``) move the bias loop from 5 to
    11 h per copy in forward units; unbiased experts (Qwen3) have no loop to slow."""
    fp32 = MEGATRON_CORE_SETTINGS.but(moe_probs_fp32=True)
    added = memory_bound_s(OSS, fp32) - memory_bound_s(OSS)
    ratio = (EXPERT_BIAS_TRAFFIC_FP32_PROBS - EXPERT_BIAS_TRAFFIC) / EXPERT_BIAS_TRAFFIC
    assert added == pytest.approx(ratio * bias_loop_s(MEGATRON_CORE_SETTINGS), rel=1e-6)
    qwen = get_preset("qwen3-30b-a3b")
    assert memory_bound_s(qwen, fp32) == memory_bound_s(qwen)


def test_biased_experts_pay_their_per_expert_bias_pass():
    assert elements(OSS)["experts' output bias"] == EXPERT_BIAS_TRAFFIC * OSS.hidden_size * OSS.experts_per_token
    assert "experts' output bias" not in elements(get_preset("qwen3-30b-a3b"))


def test_moe_act_recompute_runs_the_activation_again_and_saves_its_output():
    """One more forward of the routed activation per block: the memory-bound time grows by the
    activation row's forward traffic, and the saved fc2 input is dropped (memory falls)."""
    again = MEGATRON_CORE_SETTINGS.but(recompute_modules=frozenset({Recompute.MOE_ACT}))
    plain = estimate(
        OSS, "h100-sxm", LAYOUT, TRAINING, num_gpus=8, settings=MEGATRON_CORE_SETTINGS, trainer_rules=False
    )
    redo = estimate(OSS, "h100-sxm", LAYOUT, TRAINING, num_gpus=8, settings=again, trainer_rules=False)
    assert redo.time.breakdown_s.memory_bound > plain.time.breakdown_s.memory_bound
    assert redo.memory.breakdown_gib.activations < plain.memory.breakdown_gib.activations
    # One forward of the whole clamped activation (5 f fused, 6 f of eager clamps per copy)
    # against the clamp's own three passes (3 x 6 f, eager): the same bandwidth.
    recompute_s = redo.time.breakdown_s.memory_bound - plain.time.breakdown_s.memory_bound
    fused = MEGATRON_CORE_SETTINGS.elementwise_fusion_factor
    expected = (fused * 5 + CLAMP_TRAFFIC) / (3 * CLAMP_TRAFFIC)
    assert recompute_s / clamp_s(MEGATRON_CORE_SETTINGS) == pytest.approx(expected)
    rows = {e.name: e for e in block_table(OSS).elementwise}
    assert rows["experts activation"].recompute is Recompute.MOE_ACT
    assert rows["experts activation clamp"].recompute is Recompute.MOE_ACT
    assert rows["dispatch, combine"].recompute is None


@pytest.mark.parametrize(
    "name, expected",
    [("qwen3-30b-a3b", ["experts activation"]), ("gpt-oss-20b", ["experts activation", "experts activation clamp"])],
)
def test_only_the_routed_activation_is_tagged(name, expected):
    tagged = [e.name for e in block_table(get_preset(name)).elementwise if e.recompute is Recompute.MOE_ACT]
    assert tagged == expected


def test_yarn_concentration_makes_megatron_cores_rotary_eager():
    """GPT-OSS's YaRN (factor 32, no mscale) scales cos and sin by 0.1 ln 32 + 1; Megatron-Core's
    fused RoPE takes only 1, so its rotary row is eager: the fused-kernel factor leaves it whole."""
    read = model_from_hf_config(CONFIGS / "gpt_oss.json")
    assert read.rope_attention_factor == pytest.approx(0.1 * math.log(32) + 1)
    assert OSS.rope_attention_factor == read.rope_attention_factor
    assert get_preset("qwen3-30b-a3b").rope_attention_factor == 1.0
    rows = {m: {e.name: e for e in block_table(m).elementwise}["rotary"] for m in (OSS, get_preset("qwen3-30b-a3b"))}
    assert rows[OSS].eager and not rows[get_preset("qwen3-30b-a3b")].eager
    plain = OSS.model_copy(update={"rope_attention_factor": 1.0})
    no_rope = memory_bound_s(OSS.model_copy(update={"position": "learned"}))
    # The rotary's time: whole with YaRN's factor, halved by the fused-kernel factor without it.
    fused = MEGATRON_CORE_SETTINGS.elementwise_fusion_factor
    assert memory_bound_s(plain) - no_rope == pytest.approx(fused * (memory_bound_s(OSS) - no_rope), rel=1e-9)


@pytest.mark.parametrize(
    "scaling, expected",
    [
        ({"rope_type": "yarn", "factor": 32.0}, 0.1 * math.log(32) + 1),
        ({"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0}, 1.0),
        ({"rope_type": "yarn", "factor": 4.0, "attention_factor": 1.2}, 1.2),
        ({"rope_type": "linear", "factor": 4.0}, 1.0),
    ],
)
def test_the_reader_takes_yarns_concentration_factor(scaling, expected):
    from planner.catalog.hf_keys import HfConfig, rope_attention_factor

    assert rope_attention_factor(HfConfig(CONFIGS / "gpt_oss.json", {"rope_scaling": scaling})) == pytest.approx(
        expected
    )
    assert rope_attention_factor(HfConfig(CONFIGS / "gpt_oss.json", {})) == 1.0
