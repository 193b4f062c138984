"""Output-discarding module recompute (``ModelingSettings.recompute_modules``: Megatron-Core's
"layernorm" and "mla_up_proj"; DeepSeek-V3 report sec. 3.2.3) and the shared experts' saved
tensors under a grouped expert MLP."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, Precision, TrainingConfig
from planner.model.block import block_table
from planner.model.block_rows import Part, Recompute
from planner.model.flops import hardware_flops_per_token, recomputed_module_flops_per_token
from planner.model.memory import block_activation_bytes_per_token, native_saved_bytes, recompute_bytes
from planner.model.moe import busiest_rank_load, grouped_mlp_saved_bytes_per_token
from planner.model.settings import MEGATRON_CORE_SETTINGS
from planner.model.step_time import rank_compute_time
from planner.search.candidates import single

DSV3 = get_preset("deepseek-v3")
LLAMA = get_preset("llama3-8b")
BOTH = frozenset({Recompute.LAYERNORM, Recompute.MLA_UP_PROJ})


def _candidates(tp: int = 1, precision: Precision = Precision.BF16):
    catalog = load_catalog()
    gpu = catalog.gpu("h100-sxm")
    layout = Layout(dp_shard=8 // tp, tp=tp).resolve(8)
    training = TrainingConfig(seq_len=4096, precision=precision)
    return single(gpu, layout, training, gpus_per_node=8, network_bandwidth=50e9)


def _saved(model, c, s) -> float:
    return float(sum(block_activation_bytes_per_token(model, c, s).values())[0])


def test_mla_up_projection_recompute_drops_q_k_v_and_the_latent_norm_outputs():
    """MLA's q, k, v and the normalised latents (bf16, tp 1) leave the saved set; the raw latents,
    the attention output and the LSE stay."""
    c, s = _candidates(), MEGATRON_CORE_SETTINGS
    mla = DSV3.mla
    heads, qk, v = DSV3.num_heads, DSV3.dim_head, mla.v_head_dim
    dropped = heads * (2 * qk + v) + mla.q_lora_rank + mla.kv_lora_rank
    up = s.but(recompute_modules=frozenset({Recompute.MLA_UP_PROJ}))
    assert _saved(DSV3, c, s) - _saved(DSV3, c, up) == pytest.approx(2 * dropped)
    kept = {t.name for t in block_table(DSV3).saved if t.part == Part.ATTENTION and t.recompute is None}
    assert {"kv latent", "attention output", "log-sum-exp"} <= kept


def test_layernorm_recompute_drops_the_two_block_norm_outputs_only():
    """Megatron-Core's "layernorm": input_layernorm and pre_mlp_layernorm outputs (h each); the
    norms' inputs and the final norm stay; a dense Llama block saves 2h bytes x 2 less in bf16."""
    c, s = _candidates(), MEGATRON_CORE_SETTINGS
    ln = s.but(recompute_modules=frozenset({Recompute.LAYERNORM}))
    assert _saved(LLAMA, c, s) - _saved(LLAMA, c, ln) == pytest.approx(2 * 2 * LLAMA.hidden_size)
    # Nothing recomputed in a GQA block's attention: mla_up_proj leaves Llama alone.
    up = s.but(recompute_modules=frozenset({Recompute.MLA_UP_PROJ}))
    assert _saved(LLAMA, c, up) == pytest.approx(_saved(LLAMA, c, s))


def test_recomputed_modules_cost_one_more_forward_of_their_gemms_and_passes():
    """The q and kv up projections run forward once more (2 FLOPs per weight per token, every
    block) in the hardware FLOPs; the rank's GEMM time grows, and the backward rebuilds one
    block's q, k, v at a time (the transient ``recompute_bytes`` counts)."""
    c, s = _candidates(), MEGATRON_CORE_SETTINGS
    on = s.but(recompute_modules=BOTH)
    mla = DSV3.mla
    nope = DSV3.dim_head - mla.qk_rope_head_dim
    up_weights = mla.q_lora_rank * DSV3.num_heads * DSV3.dim_head + mla.kv_lora_rank * DSV3.num_heads * (
        nope + mla.v_head_dim
    )
    assert recomputed_module_flops_per_token(DSV3, on) == 2.0 * up_weights * DSV3.num_layers
    assert recomputed_module_flops_per_token(DSV3, s) == 0.0
    extra = hardware_flops_per_token(DSV3, c, on) - hardware_flops_per_token(DSV3, c, s)
    assert extra[0] == pytest.approx(2.0 * up_weights * DSV3.num_layers)
    before, after = (rank_compute_time(DSV3, c, x, np.array([4]), np.array([False])) for x in (s, on))
    assert after["matmul"][0] > before["matmul"][0]
    assert after["memory_bound"][0] > before["memory_bound"][0]
    assert recompute_bytes(DSV3, c, on)[0] > 0.0 == recompute_bytes(DSV3, c, s)[0]


def test_a_grouped_expert_mlp_keeps_the_shared_experts_saved_tensors():
    """DeepSeek-V3 under Megatron-Core's grouped MLP: the MLP part is the grouped routed set at
    the busiest rank's load plus the shared expert's own SwiGLU tensors (local, not routed)."""
    c, s = _candidates(precision=Precision.FP8), MEGATRON_CORE_SETTINGS
    mlp = block_activation_bytes_per_token(DSV3, c, s)[Part.MLP.value][0]
    routed = grouped_mlp_saved_bytes_per_token(DSV3, c, s)[0] * busiest_rank_load(c, s)[0]
    shared = [t for t in block_table(DSV3).saved if t.part == Part.MLP and not t.routed]
    assert shared, "the preset's shared expert has saved rows"
    assert mlp == pytest.approx(routed + native_saved_bytes(tuple(shared), c, s)[0])
    assert mlp > routed
