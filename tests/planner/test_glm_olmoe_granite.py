"""GLM-4.5 (``glm4_moe``), OLMoE (``olmoe``) and Granite (``granite``, ``granitemoe``): what
their readers keep beyond the shapes that tests/planner/test_models.py counts against
transformers (the router, rotary, norms, MTP, multipliers)."""

from __future__ import annotations

import json

import pytest
from support import DATA

from planner.catalog.models import get_preset, model_from_hf_config
from planner.errors import RuleViolation
from planner.model.block import block_table, mtp_module_params

FIXTURES = DATA / "hf_configs"


def _read(tmp_path, model_type: str, **changes):
    data = json.loads((FIXTURES / f"{model_type}.json").read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
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
