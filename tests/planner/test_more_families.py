"""GLM-4.5 (``glm4_moe``), OLMoE (``olmoe``), Granite (``granite``, ``granitemoe``) and
DeepSeek-V2 (``deepseek_v2``), session 53: what their readers keep beyond the shapes that
tests/planner/test_models.py counts against transformers (routers, rotary, norms, MTP,
multipliers)."""

from __future__ import annotations

import json

import pytest
from support import DATA
from support.presets import changed_fixture

from planner.catalog.models import get_preset, model_from_hf_config
from planner.errors import RuleViolation
from planner.model.block import block_table, mtp_module_params

FIXTURES = DATA / "hf_configs"


def _read(tmp_path, stored: str, **changes):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(changed_fixture(stored, changes)))
    return model_from_hf_config(path)


def test_glm4_moe_reads_its_router_rotary_norms_and_mtp(tmp_path):
    air = model_from_hf_config(FIXTURES / "glm4_moe.json")
    assert (air.qkv_bias, air.out_bias, air.partial_rotary_factor, air.qk_norm) == (True, False, 0.5, "none")
    assert (air.dense_layers, air.shared_experts, air.mtp_layers) == (1, 1, 1)
    # GLM's router defaults are not DeepSeek-V3's 8 / 4 / 2.5: one group, scale 1.0 (Air)
    routing = air.group_routing
    assert (routing.groups, routing.topk_groups, routing.routed_scale) == (1, 1, 1.0)
    assert get_preset("glm4.6").group_routing.routed_scale == 2.5 and get_preset("glm4.6").qk_norm == "head"
    # The MTP module is DeepSeek's: 3 norms, the 2h -> h projection, one MoE block; outside the total
    h = air.hidden_size
    assert air.param_counts().mtp == 3 * h + 2 * h * h + block_table(air).params() == mtp_module_params(air)
    assert _read(tmp_path, "glm4_moe", num_nextn_predict_layers=0).param_counts().mtp == 0
    absent = _read(tmp_path, "glm4_moe", n_group=None, routed_scaling_factor=None, partial_rotary_factor=None)
    assert (absent.group_routing.groups, absent.group_routing.routed_scale, absent.partial_rotary_factor) == (
        1,
        1.0,
        0.5,
    )

    # Glm4MoeAttention takes no window: a stray key must not shorten the attention
    assert _read(tmp_path, "glm4_moe", sliding_window=4096).sliding_layers == 0


def test_glm4_moe_refuses_a_router_that_cannot_route(tmp_path):
    with pytest.raises(RuleViolation, match="group"):
        _read(tmp_path, "glm4_moe", n_group=3)


def test_olmoe_reads_whole_projection_qk_norms_and_an_unrenormalised_router(tmp_path):
    spec = model_from_hf_config(FIXTURES / "olmoe.json")
    assert (spec.qk_norm, spec.moe_renormalize, spec.shared_experts, spec.dense_layers) == ("full", False, 0, 0)
    assert (spec.num_experts, spec.experts_per_token, spec.ffn_hidden_size) == (64, 8, 1024)
    biased = _read(tmp_path, "olmoe", attention_bias=True, norm_topk_prob=True)
    assert biased.qkv_bias and biased.out_bias and biased.moe_renormalize  # OlmoeAttention: o_proj too
    # OlmoeAttention's q/k norms are hidden_size wide: another head_dim would not run there
    with pytest.raises(RuleViolation, match="head_dim 64 must be hidden / heads"):
        _read(tmp_path, "olmoe", head_dim=64)
    assert _read(tmp_path, "olmoe", sliding_window=1024).sliding_layers == 0


def test_granite_reads_its_multipliers_which_change_no_weight_or_flop(tmp_path):
    spec = model_from_hf_config(FIXTURES / "granite.json")
    assert spec.tied_embeddings and spec.multipliers is not None
    m = spec.multipliers
    assert (m.embedding, m.residual, m.attention, m.logits_scaling) == (12.0, 0.22, 0.0078125, 16.0)
    plain = spec.model_copy(update={"multipliers": None})
    assert block_table(plain) == block_table(spec) and plain.num_params() == spec.num_params()
    # all four at transformers' 1.0: no multipliers kept (a spec is canonical)
    ones = dict(embedding_multiplier=1, residual_multiplier=None, attention_multiplier=1.0, logits_scaling=1.0)
    assert _read(tmp_path, "granite", **ones).multipliers is None
    with pytest.raises(RuleViolation, match="residual_multiplier"):
        _read(tmp_path, "granite", residual_multiplier=0)


def test_granitemoe_matches_its_card_and_granitemoeshared_is_refused(tmp_path):
    # Granite 3.0 report (IBM, 2024) and card: 3B-A800M "3.3B total, 800M active". Ours 3.299 B
    # (-0.04 %); active without the (tied) embedding 0.807 B (+0.9 %).
    spec = model_from_hf_config(FIXTURES / "granitemoe.json")
    assert spec.num_params() == pytest.approx(3.3e9, rel=0.01)
    assert spec.num_active_params() - spec.param_counts().embedding == pytest.approx(0.8e9, rel=0.02)
    assert (spec.num_experts, spec.experts_per_token, spec.shared_experts, spec.moe_renormalize) == (40, 8, 0, True)
    # GraniteMoeShared adds a shared expert: another model_type, which no reader reads
    with pytest.raises(RuleViolation, match="unsupported model_type 'granitemoeshared'"):
        _read(tmp_path, "granitemoe", model_type="granitemoeshared", architectures=["GraniteMoeSharedForCausalLM"])


def test_deepseek_v2_reads_its_own_router_and_no_mtp(tmp_path):
    # DeepSeek-V2 paper (arXiv 2405.04434): "236B total parameters, of which 21B are activated";
    # ours 235.74 B (-0.1 %), 20.85 B without the embedding lookup (-0.7 %), as DeepSeek counts
    spec = model_from_hf_config(FIXTURES / "deepseek_v2.json")
    assert spec.num_params() == pytest.approx(236e9, rel=0.01)
    assert spec.num_active_params() - spec.param_counts().embedding == pytest.approx(21e9, rel=0.01)
    assert (spec.family, spec.mtp_layers, spec.param_counts().mtp, spec.moe_renormalize) == ("deepseek_v2", 0, 0, False)
    routing = spec.group_routing  # group_limited_greedy: 3 of 8 groups, times 16
    assert (routing.groups, routing.topk_groups, routing.routed_scale) == (8, 3, 16.0)
    greedy = _read(tmp_path, "deepseek_v2", topk_method="greedy", routed_scaling_factor=None).group_routing
    assert (greedy.groups, greedy.topk_groups, greedy.routed_scale) == (1, 1, 1.0)
    # an absent topk_method is DeepseekV2Config's greedy, whatever n_group says
    assert _read(tmp_path, "deepseek_v2", topk_method=None).group_routing.groups == 1
    # not native (V3's sigmoid router is the native one): it runs on transformers' DeepseekV2
    from planner.model.structure import native_unsupported

    assert "family='deepseek_v2'" in native_unsupported(spec)


def test_deepseek_v2_refuses_a_router_transformers_would_not_build_as_the_file_says(tmp_path):
    with pytest.raises(RuleViolation, match="topk_method 'noaux_tc' is not supported for deepseek_v2"):
        _read(tmp_path, "deepseek_v2", topk_method="noaux_tc")
    with pytest.raises(RuleViolation, match="norm_topk_prob true is not supported for deepseek_v2"):
        _read(tmp_path, "deepseek_v2", norm_topk_prob=True)
    with pytest.raises(RuleViolation, match="attention_bias is not supported for deepseek_v2"):
        _read(tmp_path, "deepseek_v2", attention_bias=True)
