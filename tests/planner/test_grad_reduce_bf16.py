"""Megatron's --grad-reduce-in-bf16 (``grad_reduce_bf16``; NeMo's and Megatron-Bridge's
``grad_reduce_in_fp32`` off): bf16 gradient buffers, held and reduced, as the validation rows whose
recipes state it are predicted."""

from __future__ import annotations

import pytest

from planner.api import PlanRequest, build_plan, restack
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.errors import RuleCode, RuleViolation
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS
from planner.model.stacks import Stack
from planner.request import run_settings
from planner.rule_codes import FixCode
from planner.stack_rules import grad_bf16_problem
from validation.published import MEGATRON_BRIDGE_RECIPE, NEMO_LAUNCHER_BF16_GRADS, recipe_settings
from validation.published_rows import read_published_runs

MEGATRON = (Stack.MEGATRON_CORE, Stack.MEGATRON_LM)
LLAMA3_70B = get_preset("llama3-70b")
LAYOUT = Layout(tp=4, pp=2, sharding=Sharding.ZERO1)
TRAINING = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=8)


def llama_plan(**kwargs):
    return build_plan(LLAMA3_70B, "h100-sxm", LAYOUT, TRAINING, num_gpus=64, **kwargs)


def test_the_flag_is_the_recipes_gradient_dtype():
    """One rule for the flag and the rows whose recipes state bf16 gradients (S14's Megatron-Bridge
    recipes, S13's NeMo launcher configs for GPT3-175B and Nemotron-340B)."""
    flagged = run_settings(MEGATRON_CORE_SETTINGS, None, False, False, grad_reduce_bf16=True)
    assert flagged == MEGATRON_CORE_SETTINGS.but(grad_bytes=MEGATRON_BRIDGE_RECIPE["grad_bytes"])
    runs, _ = read_published_runs()
    launcher = [r for r in runs if r.source == "S13" and r.model_name in NEMO_LAUNCHER_BF16_GRADS]
    assert launcher and all(
        recipe_settings(r, MEGATRON_CORE_SETTINGS).grad_bytes == flagged.grad_bytes for r in launcher
    )


@pytest.mark.parametrize("stack", MEGATRON)
def test_bf16_gradients_halve_the_buffer_and_are_recorded_in_the_plan(stack):
    plain, flagged = llama_plan(stack=stack), llama_plan(stack=stack, grad_reduce_bf16=True)
    assert flagged.grad_reduce_bf16 and not plain.grad_reduce_bf16
    grads = lambda p: p.estimate.memory.breakdown_gib.grads  # noqa: E731
    assert grads(flagged) == pytest.approx(grads(plain) / 2)
    assert flagged.estimate.time.breakdown_s.dp_comm < plain.estimate.time.breakdown_s.dp_comm


@pytest.mark.parametrize("stack", [s for s in Stack if s not in MEGATRON])
def test_only_megatron_keeps_bf16_gradient_buffers(stack):
    assert all(grad_bf16_problem(s, True) is None for s in MEGATRON)
    assert grad_bf16_problem(stack, False) is None
    refused = grad_bf16_problem(stack, True)
    assert refused is not None and refused.code == RuleCode.STACK_GRAD_BF16
    assert "--stack megatron-core" in str(refused) and f"(not {stack.value})" in str(refused)
    with pytest.raises(RuleViolation, match="--grad-reduce-in-bf16"):
        llama_plan(stack=stack, grad_reduce_bf16=True)
    with pytest.raises(ValueError, match="--grad-reduce-in-bf16"):
        PlanRequest(model=LLAMA3_70B, training_tokens=1e9, stack=stack, grad_reduce_bf16=True)


def test_restack_keeps_bf16_gradients_under_megatron_only():
    flagged = llama_plan(stack=Stack.MEGATRON_CORE, grad_reduce_bf16=True)
    again = restack(flagged, Stack.MEGATRON_LM, catalog=load_catalog())
    assert again.grad_reduce_bf16
    assert again.estimate.memory.breakdown_gib.grads == pytest.approx(flagged.estimate.memory.breakdown_gib.grads)
    assert not restack(flagged, Stack.TORCHTITAN).grad_reduce_bf16


def test_the_memory_fix_names_bf16_gradients_where_they_alone_make_it_fit():
    """Llama 3 70B at TP 4 x PP 2 under ZeRO-1 needs 83.8 GiB with fp32 gradients: Megatron's bf16
    buffers alone fit it (66.7), so the fix names the flag; the flag's own plan fits. Off Megatron,
    or where half the gradients are not enough (TP 2), it is not named."""
    fixes = lambda p: [h.code for h in p.estimate.fix_hints]  # noqa: E731
    plain = llama_plan(stack=Stack.MEGATRON_CORE)
    assert not plain.estimate.feasible and FixCode.BF16_GRADS in fixes(plain)
    assert llama_plan(stack=Stack.MEGATRON_CORE, grad_reduce_bf16=True).estimate.feasible
    assert FixCode.BF16_GRADS not in fixes(llama_plan(stack=Stack.TORCHTITAN))
    narrow = build_plan(
        LLAMA3_70B, "h100-sxm", LAYOUT.model_copy(update={"tp": 2}), TRAINING, num_gpus=64, stack=Stack.MEGATRON_CORE
    )
    assert not narrow.estimate.feasible and FixCode.BF16_GRADS not in fixes(narrow)
