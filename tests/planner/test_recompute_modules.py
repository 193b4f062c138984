"""Output-discarding module recompute (``ModelingSettings.recompute_modules``: Megatron-Core's
"layernorm" and "mla_up_proj"; DeepSeek-V3 report sec. 3.2.3) and the shared experts' saved
tensors under a grouped expert MLP."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Implementation, Layout, Precision, TrainingConfig
from planner.model.block import block_table
from planner.model.block_rows import Part, Recompute
from planner.model.candidates import single
from planner.model.flops import hardware_flops_per_token, recomputed_module_flops_per_token
from planner.model.memory import block_activation_bytes_per_token, native_saved_bytes, recompute_bytes
from planner.model.moe import busiest_rank_load, grouped_mlp_saved_bytes_per_token
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS
from planner.model.step_time import forward_gemm_time_per_token, rank_compute_time

DSV3 = get_preset("deepseek-v3")
LLAMA = get_preset("llama3-8b")
BOTH = frozenset({Recompute.LAYERNORM, Recompute.MLA_UP_PROJ})
S = MEGATRON_CORE_SETTINGS
ON = S.but(recompute_modules=BOTH)
LAYERS = np.array([4])


def _candidates(tp: int = 1, cp: int = 1, ep: int = 1, **training):
    catalog = load_catalog()
    gpu = catalog.gpu("h100-sxm")
    layout = Layout(dp_shard=8 // (tp * cp), tp=tp, cp=cp, ep=ep).resolve(8)
    config = TrainingConfig(**{"seq_len": 4096, **training})
    return single(gpu, layout, config, gpus_per_node=8, network_bandwidth=50e9)


def _saved(model, c, s) -> float:
    return float(sum(block_activation_bytes_per_token(model, c, s).values())[0])


def _compute(c, s) -> dict[str, float]:
    return {k: float(v[0]) for k, v in rank_compute_time(DSV3, c, s, LAYERS, np.array([False])).items()}


@pytest.mark.parametrize("tp", [1, 2])
def test_mla_up_projection_recompute_drops_q_k_v_and_the_latent_norm_outputs(tp):
    """MLA's q, k, v (split over the heads) and the normalised latents (inputs of the column-
    parallel up projections, which Megatron-Core's sequence parallelism keeps as 1/tp shards:
    ``sp_saves_gathered_inputs`` off), bf16, leave the saved set; the raw latents, the attention
    output and the LSE stay."""
    c = _candidates(tp=tp)
    mla = DSV3.mla
    heads, qk, v = DSV3.num_heads, DSV3.dim_head, mla.v_head_dim
    assert not S.sp_saves_gathered_inputs
    dropped = (heads * (2 * qk + v) + mla.q_lora_rank + mla.kv_lora_rank) / tp
    up = S.but(recompute_modules=frozenset({Recompute.MLA_UP_PROJ}))
    assert _saved(DSV3, c, S) - _saved(DSV3, c, up) == pytest.approx(2 * dropped)
    kept = {t.name for t in block_table(DSV3).saved if t.part == Part.ATTENTION and t.recompute is None}
    assert {"kv latent", "attention output", "log-sum-exp"} <= kept


def test_layernorm_recompute_drops_the_two_block_norm_outputs_only():
    """Megatron-Core's "layernorm": input_layernorm and pre_mlp_layernorm outputs (h each); the
    norms' inputs and the final norm stay; a dense Llama block saves 2h bytes x 2 less in bf16."""
    c = _candidates()
    ln = S.but(recompute_modules=frozenset({Recompute.LAYERNORM}))
    assert _saved(LLAMA, c, S) - _saved(LLAMA, c, ln) == pytest.approx(2 * 2 * LLAMA.hidden_size)
    # Nothing recomputed in a GQA block's attention: mla_up_proj leaves Llama alone.
    up = S.but(recompute_modules=frozenset({Recompute.MLA_UP_PROJ}))
    assert _saved(LLAMA, c, up) == pytest.approx(_saved(LLAMA, c, S))


@pytest.mark.parametrize("tp", [1, 2])
def test_recomputed_modules_cost_one_more_forward_of_their_gemms(tp):
    """The q and kv up projections run forward once more: 2 FLOPs per weight per token in every
    block for the hardware FLOPs, and exactly their forward GEMM time on the rank."""
    c = _candidates(tp=tp)
    mla = DSV3.mla
    nope = DSV3.dim_head - mla.qk_rope_head_dim
    up_weights = DSV3.num_heads * (mla.q_lora_rank * DSV3.dim_head + mla.kv_lora_rank * (nope + mla.v_head_dim))
    assert recomputed_module_flops_per_token(DSV3, ON) == 2.0 * up_weights * DSV3.num_layers
    assert recomputed_module_flops_per_token(DSV3, S) == 0.0
    extra = hardware_flops_per_token(DSV3, c, ON) - hardware_flops_per_token(DSV3, c, S)
    assert extra[0] == pytest.approx(2.0 * up_weights * DSV3.num_layers)
    tokens = float(c.micro_batch[0] * c.seq_len[0])
    one_more = float(forward_gemm_time_per_token(DSV3, c, ON, recomputed_only=True)[0]) * LAYERS[0] * tokens
    assert one_more > 0.0
    assert _compute(c, ON)["matmul"] - _compute(c, S)["matmul"] == pytest.approx(one_more)
    assert _compute(c, ON)["memory_bound"] > _compute(c, S)["memory_bound"]


def test_a_checkpointed_block_already_recomputes_its_modules():
    """Full activation checkpointing re-runs every block whole: no extra module work, and the
    backward rebuilds the whole unfiltered set (what the modules dropped included)."""
    c = _candidates(activation_checkpointing=ActivationCheckpointing.FULL)
    assert _compute(c, ON) == pytest.approx(_compute(c, S))
    assert hardware_flops_per_token(DSV3, c, ON)[0] == pytest.approx(hardware_flops_per_token(DSV3, c, S)[0])
    assert recompute_bytes(DSV3, c, ON)[0] == pytest.approx(recompute_bytes(DSV3, c, S)[0])


def test_the_rebuilt_transient_is_what_the_modules_dropped():
    """Without checkpointing the backward rebuilds one block's dropped tensors, sized by the same
    rules as the drop: all-gather context parallelism keeps the whole sequence's K and V."""
    c = _candidates(cp=2)
    gather_cp = ON.but(cp_ring_attention=False)
    for s in (ON, gather_cp):
        tokens = float(c.micro_batch[0] * c.seq_len[0] / c.cp[0])
        dropped = _saved(DSV3, c, s.but(recompute_modules=frozenset())) - _saved(DSV3, c, s)
        assert dropped > 0.0
        assert recompute_bytes(DSV3, c, s)[0] == pytest.approx(dropped * tokens)
    assert recompute_bytes(DSV3, c, S)[0] == 0.0


def test_hugging_face_blocks_recompute_no_modules():
    """The recompute is Megatron-Core's: Hugging Face modules save everything and run nothing twice."""
    c = _candidates(impl=Implementation.HF)
    assert _saved(DSV3, c, ON) == pytest.approx(_saved(DSV3, c, S))
    assert _compute(c, ON) == pytest.approx(_compute(c, S))
    assert hardware_flops_per_token(DSV3, c, ON)[0] == pytest.approx(hardware_flops_per_token(DSV3, c, S)[0])
    assert recompute_bytes(DSV3, c, ON)[0] == 0.0


def test_a_grouped_expert_mlp_keeps_the_shared_experts_saved_tensors_unscaled():
    """DeepSeek-V3 under Megatron-Core's grouped MLP at ep 8: the MLP part is the grouped routed
    set at the busiest rank's load (above 1) plus the shared expert's own SwiGLU tensors, local
    to the token's rank and so not scaled by that load."""
    c = _candidates(ep=8, precision=Precision.FP8)
    load = busiest_rank_load(c, S)[0]
    assert load > 1.0
    mlp = block_activation_bytes_per_token(DSV3, c, S)[Part.MLP.value][0]
    routed = grouped_mlp_saved_bytes_per_token(DSV3, c, S)[0] * load
    shared = [t for t in block_table(DSV3).saved if t.part == Part.MLP and not t.routed]
    assert shared, "the preset's shared expert has saved rows"
    assert mlp == pytest.approx(routed + native_saved_bytes(tuple(shared), c, S)[0])
