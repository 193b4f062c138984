"""DeepSeek-V3 runs on the native trainer (trainer/model.py LatentAttention, trainer/moe.py
shared experts and sigmoid router), so the planner may split its experts (ep > 1)."""

from __future__ import annotations

import numpy as np

from planner.api import PlanRequest, plan
from planner.catalog.models import get_preset
from planner.layout import Implementation, Layout
from planner.model.structure import default_implementation, first_structural_problem, native_unsupported

DEEPSEEK = get_preset("deepseek-v3")
_ONE = dict(pp=1, cp=1, seq_len=4096, grad_accum=8, scaleup_domain_size=8, fp8=False, one_f_one_b=True)


def test_deepseek_v3_is_native_and_may_split_its_experts():
    assert native_unsupported(DEEPSEEK) == []
    assert default_implementation(DEEPSEEK) == Implementation.NATIVE
    assert first_structural_problem(DEEPSEEK, tp=1, hf=False, ep=64, shard_group=1024, **_ONE) is None
    # No tensor parallelism of the native MoE block; the HF path has no expert parallelism.
    assert "expert tp" in (first_structural_problem(DEEPSEEK, tp=2, hf=False, **_ONE) or "")
    assert "impl 'native'" in (first_structural_problem(DEEPSEEK, tp=1, hf=True, ep=8, **_ONE) or "")


def test_shared_experts_stay_refused_outside_deepseek():
    shared_mixtral = get_preset("mixtral-8x7b").model_copy(update=dict(shared_experts=1))
    assert native_unsupported(shared_mixtral) == ["num_experts=8"]


def test_plan_for_deepseek_v3_on_2048_h100_uses_expert_parallelism():
    """Issue 14's done-criterion on the preset itself (MLA, dense first layers, shared expert)."""
    chosen = plan(
        PlanRequest(
            model=DEEPSEEK,
            training_tokens=14.8e12,
            gpus={"h100-sxm": 2048},
            seq_len=4096,
            global_batch_tokens=62914560,
            objective="time",
        )
    ).plan
    assert chosen.training.impl == Implementation.NATIVE
    assert chosen.layout.ep > 1 and chosen.num_gpus <= 2048
    mem = chosen.estimate.memory
    assert mem.reserved_gib < mem.capacity_gib * (1 - mem.headroom_fraction)
    assert np.isfinite(chosen.estimate.time.step_s)


def test_deepseek_v3_unsharded_states_with_expert_parallelism_are_positive():
    """ZeRO-1 with ep=64 keeps whole grads of the dense weights and of 1/64 of the experts."""
    from planner.catalog.hardware import load_catalog
    from planner.layout import TrainingConfig
    from planner.model.candidates import single
    from planner.model.stage_params import busiest_stage

    catalog = load_catalog()
    gpu = catalog.gpu("h100-sxm")
    node, net = catalog.node(gpu.default_node), catalog.network(gpu.default_network)
    c = single(
        gpu,
        Layout(dp_shard=1024, ep=64).resolve(1024),
        TrainingConfig(seq_len=4096),
        gpus_per_node=node.gpus_per_node,
        network_bandwidth=net.bandwidth_bytes_per_s_per_gpu,
    )
    stage = busiest_stage(DEEPSEEK, c)
    assert np.all(stage.held > 0), stage.held


def test_chunked_attention_is_not_native_so_never_context_parallel():
    """Llama 4's chunked layers have no mask in the native decoder (trainer/model.py), and context
    parallelism runs on the native decoder only: a Llama-family spec with chunked layers goes to
    impl 'hf', refuses 'native', and so refuses cp > 1 (its ring would attend across chunks)."""
    chunked = get_preset("llama3-8b").model_copy(update=dict(chunked_layers=24, attention_chunk=8192))
    assert native_unsupported(chunked) == ["chunked_layers=24 (attention_chunk=8192)"]
    assert default_implementation(chunked) == Implementation.HF
    values = dict(_ONE, seq_len=65536, grad_accum=8, tp=1, shard_group=8)
    assert "chunked_layers=24" in (first_structural_problem(chunked, hf=False, **values) or "")
    assert "impl 'native'" in (first_structural_problem(chunked, hf=True, **dict(values, cp=4)) or "")


def test_deepseek_v3s_own_row_is_not_called_an_independent_check():
    """Trial s31: its one measured row also sets the efficiency ceiling its estimate is held at, so
    the figure repeats it; the envelope said "validated ... 1 held-out row" and nothing more."""
    from planner.api import build_plan
    from planner.layout import Precision, Sharding, TrainingConfig
    from planner.model.stacks import Stack
    from ui.i18n import Labels
    from ui.messages import envelope_text

    layout = Layout(pp=16, ep=64, sharding=Sharding.ZERO1)
    training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=120, precision=Precision.FP8)
    own = build_plan(
        DEEPSEEK, "h800", layout, training, num_gpus=2048, training_tokens=14.8e12, stack=Stack.DEEPSEEK_V3
    ).estimate
    u = own.uncertainty
    assert own.ceiling.binding and u.validated and u.circular
    # Review s31: not "validated" and "not an independent check" in one sentence.
    assert u.envelope.startswith("not independently validated: ") and "also sets the efficiency ceiling" in u.envelope
    english, chinese = envelope_text(Labels("en"), u), envelope_text(Labels("zh"), u)
    assert english.startswith("Not independently validated") and "Validated:" not in english
    assert chinese.startswith("未经独立验证") and "已验证" not in chinese
    # review s32: the ceiling's own row and source, not the band's 28 rows and their sources
    assert u.exact_sources == ("deepseek-v3",) and "(1, from deepseek-v3)" in english and "mean error" not in english
    other = build_plan(get_preset("llama3-8b"), "h100-sxm", Layout(), TrainingConfig(seq_len=4096), num_gpus=8)
    assert not other.estimate.uncertainty.circular


def test_another_model_under_deepseeks_own_profile_is_warned_of():
    """Trial s31: `--stack deepseek-v3` took a dense Llama without a word."""
    from planner.api import build_plan
    from planner.api.notices import estimate_warnings
    from planner.layout import TrainingConfig
    from planner.model.profiles import own_model_profile
    from planner.model.stacks import Stack

    llama = build_plan(get_preset("llama3-8b"), "h100-sxm", Layout(), TrainingConfig(seq_len=4096), num_gpus=8)
    other = build_plan(
        get_preset("llama3-8b"),
        "h100-sxm",
        Layout(sharding="zero1"),  # the stack's only sharding
        TrainingConfig(seq_len=4096),
        num_gpus=8,
        stack="deepseek-v3",
    )
    assert any("measured on DeepSeek-V3 alone: llama3-8b" in w for w in estimate_warnings(other, None))
    assert not any("DeepSeek-V3 alone" in w for w in estimate_warnings(llama, None))
    assert not own_model_profile(DEEPSEEK, Stack.DEEPSEEK_V3) and own_model_profile(llama.model, Stack.DEEPSEEK_V3)
    # review s31: a family name is not the run's model (Kimi-K2's config reads as deepseek_v3), and a
    # dense bf16 model is not told of DualPipe or an FP8 recipe
    kimi_shaped = DEEPSEEK.model_copy(update={"name": "kimi-k2-shaped", "num_experts": 384})
    assert own_model_profile(kimi_shaped, Stack.DEEPSEEK_V3)
    assert not any("DualPipe" in w or "FP8" in w for w in estimate_warnings(other, None))
    request = PlanRequest(model=get_preset("llama3-8b"), training_tokens=1e10, stack="deepseek-v3")
    assert any("DeepSeek-V3 alone" in w for w in request.warnings)
