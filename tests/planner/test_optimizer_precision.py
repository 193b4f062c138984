"""The optimizer's formats a run chooses (``OptimizerPrecision``): Megatron's --grad-reduce-in-bf16
(bf16 gradient buffers, held and reduced) and Megatron-Core's --use-precision-aware-optimizer
(16-bit master remainders), as the validation rows whose recipes state them are predicted."""

from __future__ import annotations

import pytest

from planner.api import PlanRequest, build_plan, restack
from planner.api.rebuild import dropped_choices
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.errors import RuleCode, RuleViolation
from planner.fix_codes import FixCode
from planner.layout import Implementation, Layout, Precision, Sharding, TrainingConfig
from planner.model.attention_kernels import CudnnGeneration
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.run_choices import RunChoices, run_settings
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS
from planner.model.stacks import Stack
from planner.stack_rules import optimizer_precision_problem
from planner.units import BF16_BYTES
from validation.nemo_blackwell import MLPERF_RECIPE
from validation.published import MEGATRON_BRIDGE_FORMATS, NEMO_LAUNCHER_BF16_GRADS, recipe_settings
from validation.published_rows import read_published_runs

MEGATRON = (Stack.MEGATRON_CORE,)  # the megatron-lm profile is 2021-22's, which forced fp32 gradients
BF16_GRADS = OptimizerPrecision(grad_reduce_bf16=True)
REMAINDERS = OptimizerPrecision(param_remainders=True)
LLAMA3_70B = get_preset("llama3-70b")
LAYOUT = Layout(tp=4, pp=2, sharding=Sharding.ZERO1)
TRAINING = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=8)


def llama_plan(**kwargs):
    return build_plan(LLAMA3_70B, "h100-sxm", LAYOUT, TRAINING, num_gpus=64, **kwargs)


def test_the_flags_are_the_recipes_formats():
    """One rule for the flags and the rows whose recipes state the same formats: S14's Megatron-Bridge
    recipes and MLPerf's code (bf16 gradients), S13's NeMo launcher configs (16-bit master
    remainders on every row, bf16 gradients for GPT3-175B and Nemotron-340B)."""
    flagged = run_settings(MEGATRON_CORE_SETTINGS, RunChoices(optimizer_precision=BF16_GRADS))
    assert MEGATRON_BRIDGE_FORMATS == BF16_GRADS and flagged.grad_bytes == BF16_BYTES
    assert MLPERF_RECIPE == BF16_GRADS
    both = OptimizerPrecision(grad_reduce_bf16=True, param_remainders=True)
    runs, _ = read_published_runs()
    launcher = [r for r in runs if r.source == "S13" and r.release.startswith(("24.03", "24.07"))]
    assert {r.model_name for r in launcher} >= NEMO_LAUNCHER_BF16_GRADS
    for r in launcher:
        chosen = both if r.model_name in NEMO_LAUNCHER_BF16_GRADS else REMAINDERS
        flagged = run_settings(MEGATRON_CORE_SETTINGS, RunChoices(optimizer_precision=chosen))
        # apex's optimizer keeps the fp32 gradient copy counted (validation.published.nemo_launcher_settings)
        # ... and the container's cuDNN, 9.1 (validation.published.cudnn_generation_for)
        expected = flagged.but(optimizer_copies_16bit_grads=True, cudnn_generation=CudnnGeneration.CUDNN_9_1)
        assert recipe_settings(r, MEGATRON_CORE_SETTINGS) == expected


@pytest.mark.parametrize("stack", MEGATRON)
def test_bf16_gradients_halve_the_buffer_and_are_recorded_in_the_plan(stack):
    plain, flagged = llama_plan(stack=stack), llama_plan(stack=stack, optimizer_precision=BF16_GRADS)
    assert flagged.optimizer_precision == BF16_GRADS and plain.optimizer_precision == OptimizerPrecision()
    grads = lambda p: p.estimate.memory.breakdown_gib.grads  # noqa: E731
    assert grads(flagged) == pytest.approx(grads(plain) / 2)
    assert flagged.estimate.time.breakdown_s.dp_comm < plain.estimate.time.breakdown_s.dp_comm


@pytest.mark.parametrize("stack", [s for s in Stack if s not in MEGATRON])
def test_only_megatron_keeps_bf16_gradient_buffers(stack):
    assert all(optimizer_precision_problem(s, BF16_GRADS) is None for s in MEGATRON)
    assert optimizer_precision_problem(stack, OptimizerPrecision()) is None
    refused = optimizer_precision_problem(stack, BF16_GRADS)
    assert refused is not None and refused.code == RuleCode.STACK_GRAD_BF16
    assert "--stack megatron-core" in str(refused) and f"(not {stack.value})" in str(refused)
    with pytest.raises(RuleViolation, match="--grad-reduce-in-bf16"):
        llama_plan(stack=stack, optimizer_precision=BF16_GRADS)
    with pytest.raises(ValueError, match="--grad-reduce-in-bf16"):
        PlanRequest(model=LLAMA3_70B, training_tokens=1e9, stack=stack, optimizer_precision=BF16_GRADS)


@pytest.mark.parametrize("stack", [s for s in Stack if s != Stack.MEGATRON_CORE])
def test_only_megatron_core_keeps_master_remainders(stack):
    assert optimizer_precision_problem(Stack.MEGATRON_CORE, REMAINDERS) is None
    refused = optimizer_precision_problem(stack, REMAINDERS)
    assert refused is not None and refused.code == RuleCode.STACK_PARAM_REMAINDERS
    assert "--stack megatron-core" in str(refused) and f"(not {stack.value})" in str(refused)
    with pytest.raises(ValueError, match="--precision-aware-optimizer"):
        PlanRequest(model=LLAMA3_70B, training_tokens=1e9, stack=stack, optimizer_precision=REMAINDERS)


def test_master_remainders_halve_the_master_weights():
    plain = llama_plan(stack=Stack.MEGATRON_CORE)
    remainders = llama_plan(stack=Stack.MEGATRON_CORE, optimizer_precision=REMAINDERS)
    params = lambda p: p.estimate.memory.breakdown_gib.params  # noqa: E731
    assert params(remainders) == pytest.approx(params(plain) / 2)
    assert remainders.estimate.memory.breakdown_gib.grads == plain.estimate.memory.breakdown_gib.grads


def test_restack_keeps_what_the_new_stack_offers_and_says_what_it_dropped():
    both = OptimizerPrecision(grad_reduce_bf16=True, param_remainders=True)
    flagged = llama_plan(stack=Stack.MEGATRON_CORE, optimizer_precision=both)
    again = restack(flagged, Stack.MEGATRON_CORE, catalog=load_catalog())
    assert again.optimizer_precision == both and not dropped_choices(flagged, again)
    assert again.estimate.memory.breakdown_gib.grads == pytest.approx(flagged.estimate.memory.breakdown_gib.grads)
    other = restack(flagged, Stack.MEGATRON_LM)
    assert other.optimizer_precision == OptimizerPrecision()
    assert [w.split(":")[0] for w in dropped_choices(flagged, other)] == [
        "the plan's --grad-reduce-in-bf16 is dropped",
        "the plan's --precision-aware-optimizer is dropped",
    ]


def test_fp32_weights_stay_whole_under_zero1_and_zero2():
    """Trial s40: fp32 training under ZeRO-1/2 counted the weights as a 1/dp master shard, 11-26 GiB
    short per GPU; they are the optimizer's own parameters, whole on every rank, as under DDP."""
    fp32 = TRAINING.model_copy(update={"precision": Precision.FP32})
    weights = {}
    for sharding in ("none", "zero1", "zero2"):
        layout = LAYOUT.model_copy(update={"sharding": Sharding(sharding)})
        m = build_plan(LLAMA3_70B, "h100-sxm", layout, fp32, num_gpus=64, stack=Stack.MEGATRON_CORE).estimate.memory
        weights[sharding] = m.breakdown_gib.params + m.breakdown_gib.unsharded_params
    assert weights["zero1"] == pytest.approx(weights["none"]) == pytest.approx(weights["zero2"])


FP32_COPY_STACKS = {
    Stack.TRAINPLAN: "fsdp2",
    Stack.TORCHTITAN: "fsdp2",
    Stack.HF_TRAINER: "ddp",
    Stack.DEEPSPEED: "ddp",
}


@pytest.mark.parametrize(
    ("stack", "sharding"),
    [
        (stack, sharding)
        for stack in FP32_COPY_STACKS
        for sharding in (Sharding.NONE, Sharding.ZERO1, Sharding.ZERO2)
        if stack.has_zero1 or sharding is not Sharding.ZERO1  # torchtitan has no ZeRO-1
    ],
)
def test_fp32_keeps_a_copy_beside_the_stored_weights_where_the_code_makes_one(stack, sharding):
    """bf16rest56 (review55 M1): s40's rule above is Megatron's, whose distributed optimizer steps views of
    the fp32 weights. FSDP2's replicate and fully_shard without resharding keep the stored fp32 weights
    (sharded from ZeRO-1 on) apart from the unsharded copy they compute with (torch 2.13 on gloo ranks,
    trainplan's own apply_data_parallel at fp32), and DeepSpeed's ZeRO-1/2 steps a clone of the rank's
    partition beside the whole module: 4 + 4/dp bytes a parameter, where 4 were counted (llama3.2-1b DDP on
    8 GPUs: 4.6 GiB short). torch's DDP (HF Trainer, DeepSpeed's stage 0) computes on the weights: 4."""
    layout = LAYOUT.model_copy(update={"sharding": sharding, "pp": 1, "tp": 1})
    fp32 = TRAINING.model_copy(update={"precision": Precision.FP32, "impl": stack.modules or Implementation.NATIVE})
    m = build_plan(LLAMA3_70B, "h100-sxm", layout, fp32, num_gpus=64, stack=stack).estimate.memory.breakdown_gib
    whole = LLAMA3_70B.num_params() * 4 / 2**30
    copy = FP32_COPY_STACKS[stack] == "fsdp2" or sharding is not Sharding.NONE
    stored = whole / (1 if sharding is Sharding.NONE else 64)
    assert (m.params, m.unsharded_params) == pytest.approx((stored, whole) if copy else (whole, 0.0), rel=1e-3)


def test_the_host_keeps_fp32_masters_whatever_the_gpu_would():
    """Review s40: with the remainders, offload's host copy shrank by 2 bytes a parameter; the CPU
    optimizer keeps fp32 masters."""
    from planner.model.candidates import on_default_node
    from planner.model.host import host_need_bytes

    catalog = load_catalog()
    layout = LAYOUT.resolve(64)
    c = on_default_node(catalog.gpu("h100-sxm"), catalog, layout, TRAINING.model_copy(update={"offload": True}), 64)
    need = host_need_bytes(LLAMA3_70B, c, MEGATRON_CORE_SETTINGS)
    assert need[0] > 0 and need == pytest.approx(
        host_need_bytes(LLAMA3_70B, c, REMAINDERS.applied(MEGATRON_CORE_SETTINGS))
    )


def test_the_memory_fix_names_bf16_gradients_where_they_alone_make_it_fit():
    """Llama 3 70B at TP 4 x PP 2 under ZeRO-1 needs 83.8 GiB with fp32 gradients: Megatron's bf16
    buffers alone fit it (66.7), so the fix names the flag; the flag's own plan fits. Off Megatron,
    or where half the gradients are not enough (TP 2), it is not named."""
    fixes = lambda p: [h.code for h in p.estimate.fix_hints]  # noqa: E731
    plain = llama_plan(stack=Stack.MEGATRON_CORE)
    assert not plain.estimate.feasible and FixCode.BF16_GRADS in fixes(plain)
    assert llama_plan(stack=Stack.MEGATRON_CORE, optimizer_precision=BF16_GRADS).estimate.feasible
    assert FixCode.BF16_GRADS not in fixes(llama_plan(stack=Stack.TRAINPLAN))
    narrow = build_plan(
        LLAMA3_70B, "h100-sxm", LAYOUT.model_copy(update={"tp": 2}), TRAINING, num_gpus=64, stack=Stack.MEGATRON_CORE
    )
    assert not narrow.estimate.feasible and FixCode.BF16_GRADS not in fixes(narrow)


def test_the_precision_aware_optimizer_makes_no_fp32_gradient_copy():
    """Review s40: Megatron's distributed optimizer casts a bf16 gradient shard to fp32 at the step
    (``shard_model_grad.float()``); its precision-aware one hands TE FusedAdam the shard itself
    (``.decoupled_grad``), so no copy is counted there."""
    from planner.model.candidates import on_default_node
    from planner.model.memory import optimizer_grad_copy_bytes
    from planner.model.stage_params import busiest_stage

    catalog = load_catalog()
    c = on_default_node(catalog.gpu("h100-sxm"), catalog, LAYOUT.resolve(64), TRAINING, 64)
    stage = busiest_stage(LLAMA3_70B, c)
    both = OptimizerPrecision(grad_reduce_bf16=True, param_remainders=True)
    copy = lambda chosen: float(optimizer_grad_copy_bytes(stage, c, chosen.applied(MEGATRON_CORE_SETTINGS))[0])  # noqa: E731
    assert copy(BF16_GRADS) > 0 and copy(both) == 0 and copy(OptimizerPrecision()) == 0
