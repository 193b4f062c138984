"""The attention kernel as a choice (``--attention``; planner/model/attention_choice.py with_attention)."""

from __future__ import annotations

import pytest

from planner.api import PlanRequest, build_plan, plan
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.model.attention_kernels import FLASH3_OVER_FLASH2, TRITON_OVER_FLASH2, AttentionKernel
from planner.model.stacks import Stack

K = AttentionKernel
MODEL = get_preset("llama3-8b")


def attention_s(kernel=None, gpu="h100-sxm", layout=Layout(), stack=Stack.TRAINPLAN, seq=8192) -> float:
    p = build_plan(
        MODEL, gpu, layout, TrainingConfig(seq_len=seq), num_gpus=8, stack=stack, attention=kernel
    )  # fmt: skip
    return p.estimate.time.breakdown_s.attention


def test_named_kernels_scale_flash_attention_2_or_take_cudnn_rates():
    fa2 = attention_s(K.SDPA_FA2)
    assert attention_s(K.FLASH2) == pytest.approx(fa2)
    assert attention_s(K.FLASH3) == pytest.approx(fa2 / FLASH3_OVER_FLASH2)
    assert attention_s(K.TRITON) == pytest.approx(fa2 / TRITON_OVER_FLASH2)
    assert attention_s(K.CUDNN) == pytest.approx(attention_s(None))  # trainplan's SDPA picks cuDNN on Hopper
    assert attention_s(K.CUDNN) < fa2 / 1.5  # the catalog's cuDNN rate is ~1.9x FA2's on H100


def test_eager_attention_materialises_the_scores():
    flash = build_plan(MODEL, "h100-sxm", Layout(), TrainingConfig(seq_len=2048), num_gpus=8)
    eager = build_plan(MODEL, "h100-sxm", Layout(), TrainingConfig(seq_len=2048), num_gpus=8, attention=K.EAGER)
    assert eager.estimate.time.breakdown_s.attention > flash.estimate.time.breakdown_s.attention
    assert eager.estimate.memory.peak_gib > flash.estimate.memory.peak_gib + 1.0
    assert eager.estimate.time.step_s > flash.estimate.time.step_s


def test_pytorch_context_parallelism_runs_flash_attention_2_and_transformer_engine_runs_cudnn():
    """trainplan's all-gather CP calls SDPA with a lower-right causal mask, which never dispatches to
    cuDNN; TransformerEngine's CP runs its fused (cuDNN) attention."""
    cp = Layout(cp=2)
    assert attention_s(None, layout=cp) == pytest.approx(attention_s(K.SDPA_FA2, layout=cp))
    titan = attention_s(None, layout=cp, stack=Stack.TORCHTITAN)  # its ring's own shapes (cp_ring.py)
    assert titan == pytest.approx(attention_s(K.SDPA_FA2, layout=cp, stack=Stack.TORCHTITAN))
    assert titan == pytest.approx(attention_s(K.CUDNN, layout=cp, stack=Stack.TORCHTITAN))  # flash under its cp
    core = attention_s(None, layout=cp, stack=Stack.MEGATRON_CORE)
    assert core < attention_s(K.SDPA_FA2, layout=cp, stack=Stack.MEGATRON_CORE)


def test_flash_attention_3_runs_on_hopper_only():
    with pytest.raises(ValueError, match="Hopper GPUs only"):
        attention_s(K.FLASH3, gpu="a100-80gb-sxm")
    request = PlanRequest(model=MODEL, training_tokens=1e10, gpus={"a100-80gb-sxm": 8, "h100-sxm": 8}, top_k=2)
    chosen = plan(request.model_copy(update={"attention": K.FLASH3}))
    assert {p.gpu for p in (chosen.plan, *chosen.alternatives)} == {"h100-sxm"}
    assert chosen.plan.attention == K.FLASH3
    with pytest.raises(ValueError, match="Hopper GPUs only"):
        plan(request.model_copy(update={"attention": K.FLASH3, "gpus": {"a100-80gb-sxm": 8}}))


def test_a_plan_assuming_a_named_kernel_is_an_estimate_and_emit_refuses_it(tmp_path):
    pytest.importorskip("torch")
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings

    p = build_plan(MODEL, "h100-sxm", Layout(), TrainingConfig(seq_len=2048), num_gpus=8, attention=K.SDPA_FA2)
    assert not p.emittable and p.attention == K.SDPA_FA2
    with pytest.raises(ValueError, match="assumes --attention sdpa-fa2"):
        emit_job(p, tmp_path / "job", name=None, run=RunSettings())


@pytest.mark.parametrize(
    ("gpu", "stack", "cp", "words"),
    [
        ("h100-sxm", Stack.TRAINPLAN, 1, "cuDNN"),
        ("h100-sxm", Stack.TRAINPLAN, 2, "FlashAttention-2 (cuDNN without cp"),
        ("h100-sxm", Stack.MEGATRON_CORE, 2, "cuDNN"),
        ("a100-80gb-sxm", Stack.TRAINPLAN, 1, "FlashAttention-2"),
        # SDPA's rule names sm100 exactly; TransformerEngine's takes every datacenter Blackwell.
        ("b300", Stack.TRAINPLAN, 1, "FlashAttention-2"),
        ("b300", Stack.MEGATRON_CORE, 1, "cuDNN"),
        ("h20", Stack.TRAINPLAN, 1, "cuDNN"),
    ],
)
def test_the_estimate_names_the_kernel_it_timed(gpu, stack, cp, words):
    training = TrainingConfig(seq_len=16384, micro_batch=1)
    p = build_plan(MODEL, gpu, Layout(cp=cp), training, num_gpus=8, stack=stack)
    assert p.estimate.attention_kernel is not None and p.estimate.attention_kernel.startswith(words)
    if words == "FlashAttention-2":
        assert p.estimate.attention_kernel == words
    # trial s31: the torch a stack's SDPA needs for cuDNN is said (not Megatron-Core's TransformerEngine),
    # as a typed flag beside the kernel's words (review s31; tests/ui render it)
    assert p.estimate.sdpa_picks_cudnn == (words == "cuDNN" and stack == Stack.TRAINPLAN)
    assert "torch" not in p.estimate.attention_kernel


def test_a_b300_under_megatron_core_times_cudnn_attention_and_is_not_slower_than_a_b200():
    """Trial s24: Megatron-Core on a B300 (sm103) took FlashAttention-2's rates by SDPA's rule."""
    layout, training = Layout(tp=8, sharding="zero1"), TrainingConfig(seq_len=8192, micro_batch=1, grad_accum=8)
    step = {
        gpu: build_plan(
            get_preset("llama3-70b"), gpu, layout, training, num_gpus=64, stack=Stack.MEGATRON_CORE
        ).estimate.time.step_s
        for gpu in ("b200", "b300")
    }
    assert step["b300"] <= step["b200"] * 1.01


def test_naming_sdpas_own_flash_backend_keeps_an_sdpa_stack_validated():
    """Review s31: the cuDNN note sends users of torch before 2.11 to --attention sdpa-fa2, their
    SDPA's own pick and what the measured rows ran; it had cost them "validated" as a named kernel."""
    from planner.model.profiles import is_kernel_choice

    assert not is_kernel_choice(Stack.TORCHTITAN, AttentionKernel.SDPA_FA2)
    assert is_kernel_choice(Stack.TORCHTITAN, AttentionKernel.FLASH3)
    assert is_kernel_choice(Stack.MEGATRON_CORE, AttentionKernel.SDPA_FA2)  # TransformerEngine, not SDPA
    training = TrainingConfig(seq_len=4096, micro_batch=1)
    plain = build_plan(MODEL, "h100-sxm", Layout(), training, num_gpus=8, stack=Stack.TORCHTITAN)
    named = build_plan(
        MODEL, "h100-sxm", Layout(), training, num_gpus=8, stack=Stack.TORCHTITAN, attention=AttentionKernel.SDPA_FA2
    )
    assert plain.estimate.uncertainty.validated == named.estimate.uncertainty.validated
    assert plain.estimate.sdpa_picks_cudnn and not named.estimate.sdpa_picks_cudnn


def test_megatron_deepspeeds_flash_attention_flag_is_its_own_switch():
    """Review s32: Lucie-Training's rows ran Megatron-DeepSpeed's --use-flash-attn-v2 and validate the
    stack; naming that kernel read "outside the validated envelope"."""
    from planner.model.profiles import is_kernel_choice

    assert not is_kernel_choice(Stack.MEGATRON_DEEPSPEED, AttentionKernel.FLASH2)
    assert is_kernel_choice(Stack.MEGATRON_DEEPSPEED, AttentionKernel.CUDNN)
    training = TrainingConfig(seq_len=4096, micro_batch=2, grad_accum=8)
    layout = Layout(tp=2, pp=2, sharding="zero1")
    flash = build_plan(
        get_preset("llama2-7b"), "a100-80gb-sxm", layout, training, num_gpus=128,
        stack=Stack.MEGATRON_DEEPSPEED, network="opa-4x100-per-8", attention=AttentionKernel.FLASH2,
    )  # fmt: skip
    assert flash.estimate.uncertainty.validated
