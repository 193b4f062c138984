"""Expert parallelism (planner/layout.py ep axis, planner/model/moe.py, the search's ep degrees)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from support.rows import h100_row

from planner.api import PlanRequest, build_plan, plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, Precision, Sharding, TrainingConfig
from planner.model import comm
from planner.model.memory import block_activation_bytes_per_token, memory, optimizer_grad_copy_bytes, state_bytes
from planner.model.moe import (
    all_to_all_s,
    expert_launch_s,
    grouped_mlp_saved_bytes_per_token,
    routed_expert_params_per_layer,
)
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.spec import ModelSpec
from planner.model.stack_profiles import DEEPSEEK_V3_SETTINGS, MEGATRON_CORE_SETTINGS
from planner.model.stage_params import busiest_stage
from planner.model.step_comm import comm_times
from planner.model.structure import first_structural_problem

MIXTRAL = get_preset("mixtral-8x7b")
# DeepSeek-V3's routed-expert shape (its technical report, sec. 4.2: 61 layers, hidden 7168,
# 256 experts of width 2048, 8 per token) on a Mixtral-style block; MLA, the shared expert and
# the dense first layers come with the deepseek_v3 preset (another branch).
BIG_MOE = ModelSpec(
    name="synthetic-dsv3",
    family="mixtral",
    num_layers=61,
    hidden_size=7168,
    ffn_hidden_size=2048,
    num_heads=128,
    num_kv_heads=128,
    head_dim=128,
    vocab_size=129280,
    max_seq_len=4096,
    num_experts=256,
    experts_per_token=8,
)


def candidates(layout: Layout, num_gpus: int, model: ModelSpec = MIXTRAL, **training):
    return h100_row(layout, num_gpus, **training)


@pytest.mark.parametrize(
    "layout, world, ok",
    [
        (Layout(ep=8), 8, True),
        (Layout(ep=4, cp=2), 8, True),  # ep borrows all of cp and 2 of dp_shard
        (Layout(ep=2, cp=4), 8, False),  # ep must be a multiple of cp
        (Layout(ep=16), 8, False),  # ep must divide dp_shard * cp
        (Layout(ep=3), 12, True),
        (Layout(ep=3), 8, False),
    ],
)
def test_ep_borrows_data_and_context_parallel_ranks(layout, world, ok):
    if ok:
        resolved = layout.resolve(world)
        assert resolved.world_size == world  # ep adds no ranks
        assert resolved.expert_shard_group * resolved.ep == resolved.shard_group
    else:
        with pytest.raises(ValueError, match="ep="):
            layout.resolve(world)


def test_ep_needs_a_sharded_data_parallel_mesh():
    with pytest.raises(ValueError, match="expert parallelism"):
        Layout(ep=2, sharding=Sharding.NONE)
    assert Layout(ep=2, dp_shard=4).describe() == "fsdp dp_shard=4 ep=2"


def test_structural_rules_for_experts():
    rules = dict(seq_len=4096, grad_accum=1, scaleup_domain_size=8, fp8=False, one_f_one_b=True, pp=1, cp=1)
    assert first_structural_problem(MIXTRAL, tp=1, hf=False, ep=8, shard_group=8, **rules) is None
    assert "not divisible by ep=3" in first_structural_problem(MIXTRAL, tp=1, hf=False, ep=3, shard_group=6, **rules)
    assert "impl 'native'" in first_structural_problem(MIXTRAL, tp=1, hf=True, ep=2, shard_group=8, **rules)
    assert "expert tp" in first_structural_problem(MIXTRAL, tp=2, hf=False, ep=1, shard_group=4, **rules)
    dense = get_preset("llama-350m")
    assert "mixture-of-experts" in first_structural_problem(dense, tp=1, hf=False, ep=2, shard_group=8, **rules)


def test_estimate_json_carries_ep():
    training = TrainingConfig(seq_len=4096, micro_batch=1, activation_checkpointing="full")
    p = build_plan(MIXTRAL, "h100-sxm", Layout(ep=8), training, num_gpus=8)
    assert p.layout.ep == 8
    assert json.loads(p.model_dump_json())["layout"]["ep"] == 8
    assert p.estimate.time.breakdown_s.ep_comm > 0


def test_expert_states_shard_over_all_ranks_and_gather_only_local_experts():
    """Under FSDP the sharded states are total/shard either way; a gathered block holds only the
    ep rank's experts: the unsharded buffers shrink by (1 - 1/ep) of two blocks' experts."""
    plain, ep = (memory(MIXTRAL, candidates(Layout(ep=e), 8), DEFAULT_SETTINGS) for e in (1, 8))
    assert ep.params[0] == pytest.approx(plain.params[0])
    assert ep.optimizer[0] == pytest.approx(plain.optimizer[0])
    experts = routed_expert_params_per_layer(MIXTRAL)
    assert experts == 8 * 3 * 4096 * 14336
    saved = DEFAULT_SETTINGS.fsdp_unsharded_blocks * experts * (1 - 1 / 8) * 2.0
    assert plain.unsharded_params[0] - ep.unsharded_params[0] == pytest.approx(saved)


def test_zero1_holds_the_ep_share_of_expert_gradients():
    """ZeRO-1 keeps whole local gradients: only 1/ep of the experts' with expert parallelism."""
    plain, ep = (candidates(Layout(ep=e, sharding=Sharding.ZERO1), 8) for e in (1, 8))
    grads = [state_bytes(busiest_stage(MIXTRAL, c), c, DEFAULT_SETTINGS)[1][0] for c in (plain, ep)]
    expert_grads = MIXTRAL.num_layers * routed_expert_params_per_layer(MIXTRAL) * 4.0
    assert grads[0] - grads[1] == pytest.approx(expert_grads * (1 - 1 / 8))


def test_imbalance_setting_scales_routed_activations_and_all_to_all():
    c = candidates(Layout(ep=8), 8)
    balanced = DEFAULT_SETTINGS.but(moe_token_imbalance=1.0)
    skewed = DEFAULT_SETTINGS.but(moe_token_imbalance=2.0)
    assert comm_times(MIXTRAL, c, skewed).ep[0] > 1.8 * comm_times(MIXTRAL, c, balanced).ep[0]
    assert memory(MIXTRAL, c, skewed).activations[0] > memory(MIXTRAL, c, balanced).activations[0]
    # ep = 1: every rank runs all experts on its own tokens, no imbalance, no all-to-all.
    plain = candidates(Layout(), 8)
    assert comm_times(MIXTRAL, plain, skewed).ep[0] == 0.0
    assert memory(MIXTRAL, plain, skewed).activations[0] == memory(MIXTRAL, plain, balanced).activations[0]


def test_all_to_all_uses_nvlink_inside_a_node_and_the_nic_beyond():
    """Pairwise exchange: (n-1) steps of S/n; the off-node share goes over the rank's NIC."""
    s = DEFAULT_SETTINGS
    inside, across = candidates(Layout(ep=8), 16), candidates(Layout(ep=16), 16)
    size = 64e6
    t_in = comm.all_to_all_s(inside, size, inside.ep, inside.tp, s)[0]
    nvlink = inside.scaleup_bandwidth[0] * s.scaleup_bandwidth_fraction
    expected = s.collective_base_latency_s + 7 * s.latency_scaleup_s + 7 / 8 * size / nvlink
    assert t_in == pytest.approx(expected)
    t_out = comm.all_to_all_s(across, size, across.ep, across.tp, s)[0]
    nic = across.network_bandwidth[0] * s.network_bandwidth_fraction
    assert t_out == pytest.approx(s.collective_base_latency_s + 15 * s.latency_network_s + 8 / 16 * size / nic)
    assert t_out > 5 * t_in


def test_expert_parallelism_speeds_up_small_expert_batches():
    """Without ep each expert sees N k / E tokens: DeepSeek-V3's 8 of 256 experts leave 128 rows
    per expert GEMM; ep=64 gathers 64x more (the grouped-GEMM shape factor)."""
    from planner.model.moe import routed_gemm_time_factor

    s = DEFAULT_SETTINGS.but(moe_token_imbalance=1.0)
    plain, ep = (routed_gemm_time_factor(BIG_MOE, candidates(Layout(ep=e), 64, BIG_MOE), s)[0] for e in (1, 64))
    assert plain == pytest.approx((128 + s.matmul_half_dim) / 128)
    assert ep == pytest.approx((8192 + s.matmul_half_dim) / 8192)


def test_plan_for_a_deepseek_v3_sized_moe_on_2048_h100_uses_expert_parallelism():
    result = plan(
        PlanRequest(
            model=BIG_MOE,
            training_tokens=14.8e12,
            gpus={"h100-sxm": 2048},
            seq_len=4096,
            global_batch_tokens=2**24,
            objective="time",
        )
    )
    chosen = result.plan
    assert chosen.layout.ep > 1
    assert chosen.num_gpus <= 2048
    mem = chosen.estimate.memory
    assert mem.reserved_gib < mem.capacity_gib * (1 - mem.headroom_fraction)
    assert np.isfinite(chosen.estimate.time.step_s)


def test_published_moe_runs_are_predicted_with_their_stated_layouts():
    """The held-out MoE rows (validation/moe_runs.py): every layout is valid and scored; no bound
    on the error (docs/validation.md reports it)."""
    from validation.moe_recipes import GPT_OSS_120B
    from validation.moe_runs import compare_moe_runs, predict_moe_run

    comparisons = compare_moe_runs()
    assert len(comparisons) == 41
    for c in comparisons:
        assert c.run.layout.ep > 1 and np.isfinite(c.error) and 0 <= c.ep_comm_share < 1
        # They ran: the memory model must let them fit.
        assert c.fits, c.run.label
    # Qwen3-235B-A22B's EP 32 over 16 data-parallel ranks needs ep to borrow the tp ranks (expert tp 1).
    wide = [
        c.run for c in comparisons if c.run.layout.tp > 1 and c.run.layout.ep > c.run.layout.resolve(c.run.num_gpus).dp
    ]
    assert len(wide) == 8 and all(not run.layout.expert_tp for run in wide)
    with pytest.raises(ValueError, match="ep=32"):
        Layout(**{**dict(wide[0].layout), "expert_tp": True}).resolve(wide[0].num_gpus)
    # DeepSeek-V3's row is the preset itself (MLA, the shared expert, the dense first layers), and
    # it fits only because the report's recompute of the norms and MLA up projections is modelled.
    (deepseek,) = (c.run for c in comparisons if c.run.label == "DeepSeek-V3 pre-training")
    assert deepseek.model.mla is not None and deepseek.model.dense_layers == 3
    assert deepseek.settings.recompute_modules
    without = predict_moe_run(
        replace(deepseek, settings=deepseek.settings.but(recompute_modules=frozenset())), load_catalog()
    )
    assert not without.fits
    # GPT-OSS-120B as built from its config.json: OpenAI's model card states 116.83B parameters.
    assert GPT_OSS_120B.num_params() == pytest.approx(116.83e9, rel=1e-4)


def test_grouped_mlp_saves_fc1_input_fc1_output_fc2_input_and_fp8_linear_inputs():
    """Megatron-Core's TEGroupedMLP per routed copy: h + 2f + f elements and one fp32 probability;
    under FP8 the two linear inputs are one byte each."""

    h, f, k = MIXTRAL.hidden_size, MIXTRAL.ffn_hidden_size, MIXTRAL.experts_per_token
    bf16 = candidates(Layout(ep=8), 8)
    fp8 = candidates(Layout(ep=8), 8, precision=Precision.FP8)
    s = MEGATRON_CORE_SETTINGS
    assert grouped_mlp_saved_bytes_per_token(MIXTRAL, bf16, s)[0] == k * (2 * (h + 3 * f) + 4)
    assert grouped_mlp_saved_bytes_per_token(MIXTRAL, fp8, s)[0] == k * (h + 2 * 2 * f + f + 4)
    # DeepSeek-V3: FP8 fc1 input and SwiGLU input, SwiGLU output recomputed.
    assert grouped_mlp_saved_bytes_per_token(MIXTRAL, fp8, DEEPSEEK_V3_SETTINGS)[0] == k * (h + 2 * f + 4)
    # It replaces the MLP rows of MoE blocks only.
    grouped = block_activation_bytes_per_token(MIXTRAL, bf16, s)["mlp"][0]
    assert grouped == k * (2 * (h + 3 * f) + 4) * s.moe_token_imbalance
    dense = get_preset("llama-350m")
    c = candidates(Layout(), 8, model=dense)
    assert memory(dense, c, s).device_total[0] == memory(dense, c, s.but(moe_grouped_mlp=False)).device_total[0]


def test_node_limited_routing_cuts_only_the_network_share_of_the_all_to_all():
    across = candidates(Layout(ep=64), 64, model=BIG_MOE)  # 8 nodes
    within = candidates(Layout(ep=8), 8, model=BIG_MOE)  # NVLink only
    limited = DEFAULT_SETTINGS.but(moe_max_nodes_per_token=4)
    assert (
        all_to_all_s(BIG_MOE, across, limited, 2.0)[0] < 0.6 * all_to_all_s(BIG_MOE, across, DEFAULT_SETTINGS, 2.0)[0]
    )
    assert all_to_all_s(BIG_MOE, within, limited, 2.0)[0] == all_to_all_s(BIG_MOE, within, DEFAULT_SETTINGS, 2.0)[0]


def test_per_expert_launches_scale_with_the_experts_a_rank_holds():
    s = MEGATRON_CORE_SETTINGS
    per_launch = s.moe_launch_s * s.moe_gemm_launches_per_local_expert
    for ep in (1, 8):
        c = candidates(Layout(ep=ep), 8)
        assert expert_launch_s(MIXTRAL, c, s)[0] == pytest.approx(MIXTRAL.num_experts / ep * per_launch)
    assert expert_launch_s(MIXTRAL, candidates(Layout(ep=8), 8), DEFAULT_SETTINGS)[0] == 0.0


def test_bf16_gradients_halve_the_gradient_buffer_and_add_the_optimizers_fp32_shard():
    """Megatron-Core's distributed optimizer with bf16 gradients: 2 bytes per held parameter for
    the gradient buffer and an fp32 gradient shard (4/d) at the step (its dist_optimizer.md)."""
    c = candidates(Layout(dp_shard=8, ep=8, sharding=Sharding.ZERO1), 8)
    stage = busiest_stage(MIXTRAL, c)
    bf16 = DEFAULT_SETTINGS.but(grad_bytes=2.0)
    fp32_grads = state_bytes(stage, c, DEFAULT_SETTINGS)[1][0]
    assert state_bytes(stage, c, bf16)[1][0] == pytest.approx(fp32_grads / 2)
    assert optimizer_grad_copy_bytes(stage, c, bf16)[0] == pytest.approx(stage.total[0] / 8 * 4.0)
    assert optimizer_grad_copy_bytes(stage, c, DEFAULT_SETTINGS)[0] == 0.0


def test_a2a_overlap_recipes_hide_the_all_to_all_under_the_other_micro_batch():
    """moe_a2a_overlap rows (validation/moe_recipes.py ``a2a_overlapped``): the all-to-all is exposed
    only beyond the compute, so the row predicts faster than the same recipe without it."""
    from validation.moe_recipes import A2A_OVERLAP_NOTE
    from validation.moe_runs import QWEN3_235B_RUNS, predict_moe_run

    (run, *_) = (r for r in QWEN3_235B_RUNS if r.note == A2A_OVERLAP_NOTE)
    assert run.settings.ep_comm_overlap == 1.0
    hidden = predict_moe_run(run, load_catalog())
    exposed = predict_moe_run(replace(run, settings=run.settings.but(ep_comm_overlap=0.0)), load_catalog())
    assert hidden.ep_comm_share < exposed.ep_comm_share
    assert hidden.predicted_tokens_per_s_per_gpu > exposed.predicted_tokens_per_s_per_gpu
