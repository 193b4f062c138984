"""Megatron-Core's --overlap-moe-expert-parallel-comm (``--moe-a2a-overlap``; Megatron-Bridge's
``moe_a2a_overlap``): each micro-batch's expert all-to-alls run under another micro-batch's
compute, as the validation rows whose recipes set it are predicted."""

from __future__ import annotations

import pytest

from planner.api import PlanRequest, build_plan, restack
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.errors import RuleCode, RuleViolation
from planner.layout import Sharding
from planner.model.stacks import Stack
from planner.stack_rules import a2a_overlap_problem
from validation.moe_recipes import A2A_OVERLAP_NOTE, BRIDGE_QWEN3_235B_H100
from validation.moe_runs import QWEN3_235B_RUNS, predict_moe_run

# The Megatron-Bridge DGX-H100 rows of Qwen3-235B-A22B (TP 2 PP 8 VP 4 EP 32, moe_a2a_overlap on).
BRIDGE_ROWS = [r for r in QWEN3_235B_RUNS if r.note == A2A_OVERLAP_NOTE and "ModelZoo" not in r.label]
ROW = BRIDGE_ROWS[-1]


def row_plan(**kwargs):
    return build_plan(ROW.model, ROW.gpu, ROW.layout, ROW.training, num_gpus=ROW.num_gpus, **kwargs)


@pytest.mark.parametrize("row", BRIDGE_ROWS, ids=lambda r: r.label)
def test_the_flag_on_the_recipe_predicts_the_held_out_row_as_the_harness_does(row):
    """One rule (planner/model/stack_profiles.py ``moe_a2a_overlapped``) for the flag and the rows: the
    recipe's settings with --moe-a2a-overlap give the harness's prediction of each row."""
    flagged = build_plan(
        row.model,
        row.gpu,
        row.layout,
        row.training,
        num_gpus=row.num_gpus,
        stack=Stack.MEGATRON_CORE,
        settings=BRIDGE_QWEN3_235B_H100,
        moe_a2a_overlap=True,
    )
    harness = predict_moe_run(row, load_catalog()).predicted_tokens_per_s_per_gpu
    assert flagged.estimate.throughput.tokens_per_s_per_gpu == pytest.approx(harness, rel=1e-9)


def test_the_overlap_hides_the_all_to_all_and_is_recorded_in_the_plan():
    plain = row_plan(stack=Stack.MEGATRON_CORE)
    overlapped = row_plan(stack=Stack.MEGATRON_CORE, moe_a2a_overlap=True)
    assert overlapped.moe_a2a_overlap and not plain.moe_a2a_overlap
    assert overlapped.estimate.time.breakdown_s.ep_comm < plain.estimate.time.breakdown_s.ep_comm
    assert overlapped.estimate.time.step_s < plain.estimate.time.step_s


@pytest.mark.parametrize("stack", [s for s in Stack if s != Stack.MEGATRON_CORE])
def test_only_megatron_core_overlaps_its_all_to_alls(stack):
    assert a2a_overlap_problem(Stack.MEGATRON_CORE, True) is None
    assert a2a_overlap_problem(stack, False) is None
    refused = a2a_overlap_problem(stack, True)
    assert refused is not None and refused.code == RuleCode.STACK_A2A_OVERLAP
    assert "--stack megatron-core" in str(refused) and stack.value in str(refused)
    with pytest.raises(RuleViolation, match="--moe-a2a-overlap"):
        row_plan(stack=stack, moe_a2a_overlap=True)
    with pytest.raises(ValueError, match="--moe-a2a-overlap"):
        PlanRequest(model=get_preset("qwen3-30b-a3b"), training_tokens=1e9, stack=stack, moe_a2a_overlap=True)


def test_restack_keeps_the_overlap_under_megatron_core_only():
    overlapped = row_plan(stack=Stack.MEGATRON_CORE, moe_a2a_overlap=True)
    again = restack(overlapped, Stack.MEGATRON_CORE, catalog=load_catalog())  # re-estimated, same stack
    assert again.moe_a2a_overlap and again.estimate.time.step_s == pytest.approx(overlapped.estimate.time.step_s)
    assert not restack(overlapped, Stack.DEEPSEEK_V3).moe_a2a_overlap  # DualPipe: its own overlap
    sharded = ROW.layout.model_copy(update={"sharding": Sharding.FSDP})  # torchtitan has no ZeRO-1
    fsdp = build_plan(ROW.model, ROW.gpu, sharded, ROW.training, num_gpus=ROW.num_gpus, stack=Stack.MEGATRON_CORE)
    assert not restack(fsdp.model_copy(update={"moe_a2a_overlap": True}), Stack.TORCHTITAN).moe_a2a_overlap


def test_an_exposed_all_to_all_under_megatron_core_is_said_in_both_interfaces():
    """Trial s31: without the flag the estimate still reads "validated" by rows that ran it on; the
    CLI and the card now say the all-to-alls are timed exposed, and name the flag."""
    from planner.api.notices import a2a_exposed_under_megatron, estimate_warnings
    from ui.i18n import Labels

    exposed = row_plan(stack=Stack.MEGATRON_CORE)
    hidden = row_plan(stack=Stack.MEGATRON_CORE, moe_a2a_overlap=True)
    assert a2a_exposed_under_megatron(exposed) and not a2a_exposed_under_megatron(hidden)
    (words,) = [w for w in estimate_warnings(exposed, None, None) if "all-to-alls are timed exposed" in w]
    assert f"({exposed.estimate.time.breakdown_s.ep_comm:,.1f} s of the" in words and "--moe-a2a-overlap" in words
    assert not [w for w in estimate_warnings(hidden, None, None) if "timed exposed" in w]
    assert "all-to-all" in Labels("zh")("a2a_exposed") and "sidebar" in Labels("en")("a2a_exposed")
    assert "Qwen3-235B" in words and "host cost is not modelled" in words


def test_no_exposed_all_to_all_warning_where_the_all_to_alls_are_a_small_share():
    """Review s31: the warning fired on "0.0 s of the 1.5 s step" (experts within one node)."""
    from planner.api.notices import A2A_EXPOSED_WARNING_SHARE, a2a_exposed_under_megatron

    exposed = row_plan(stack=Stack.MEGATRON_CORE)
    e, t = exposed.estimate, exposed.estimate.time

    def with_ep_comm(seconds: float):
        time = t.model_copy(update={"breakdown_s": t.breakdown_s.model_copy(update={"ep_comm": seconds})})
        return exposed.model_copy(update={"estimate": e.model_copy(update={"time": time})})

    assert a2a_exposed_under_megatron(with_ep_comm(1.01 * A2A_EXPOSED_WARNING_SHARE * t.step_s))
    assert not a2a_exposed_under_megatron(with_ep_comm(0.99 * A2A_EXPOSED_WARNING_SHARE * t.step_s))
    assert not a2a_exposed_under_megatron(with_ep_comm(0.0))


def test_the_overlap_runs_only_where_megatron_core_takes_it():
    """Review s31: Megatron-Core asserts ep > 1, vpp under a pipeline and no full or block recompute
    for --overlap-moe-expert-parallel-comm; the planner timed such layouts overlapped."""
    from planner.layout import ActivationCheckpointing, TrainingConfig
    from planner.model.stack_profiles import a2a_overlap_refused

    refused = {
        "pp without vpp": (ROW.layout.model_copy(update={"vpp": 1}), ROW.training),
        "full recompute": (
            ROW.layout,
            ROW.training.model_copy(update={"activation_checkpointing": ActivationCheckpointing.FULL}),
        ),
        "ep 1": (ROW.layout.model_copy(update={"ep": 1, "expert_tp": True}), ROW.training),
    }
    for name, (layout, training) in refused.items():
        with pytest.raises(RuleViolation) as caught:
            build_plan(ROW.model, ROW.gpu, layout, training, num_gpus=ROW.num_gpus, stack=Stack.MEGATRON_CORE,
                       moe_a2a_overlap=True)  # fmt: skip
        assert caught.value.code == RuleCode.STACK_A2A_LAYOUT, name
    with pytest.raises(RuleViolation):
        build_plan(get_preset("llama3-8b"), "h100-sxm", ROW.layout.model_copy(update={"ep": 1, "pp": 1, "vpp": 1,
                   "tp": 1, "expert_tp": True}), TrainingConfig(seq_len=4096), num_gpus=8, stack=Stack.MEGATRON_CORE,
                   moe_a2a_overlap=True)  # fmt: skip
    request = PlanRequest(
        model=get_preset("qwen3-30b-a3b"), training_tokens=1e11, gpus={"h100-sxm": 64}, stack="megatron-core",
        moe_a2a_overlap=True, top_k=8,
    )  # fmt: skip
    from planner.api import plan
    from planner.model.candidates import code

    result = plan(request)
    for p in (result.plan, *result.alternatives):
        assert not a2a_overlap_refused(
            p.layout.ep, p.layout.pp, p.layout.vpp, code(p.training.activation_checkpointing)
        )


def test_the_unpaired_share_is_the_schedules_warm_up_and_cool_down():
    """combined_1f1b.py without a pipeline, 4 micro-batches in 5 phases: the first forward and the
    last backward run alone (1/4); interleaved, rank 0's warm-up is (pp - 1) x 2 + (vpp - 1) x pp
    chunks and the one the overlap adds (schedules.py), of m x vpp (Megatron-LM d98e8a6)."""
    from planner.model.moe import a2a_unpaired_share

    assert a2a_unpaired_share(1, 1, 4) == pytest.approx(1 / 4)
    assert a2a_unpaired_share(1, 1, 1) == 1.0
    assert a2a_unpaired_share(8, 4, 128) == pytest.approx((7 * 2 + 3 * 8 + 1) / (128 * 4))
    assert a2a_unpaired_share(8, 4, 8) == 1.0  # all in warm-up


def test_one_micro_batch_has_no_partner_to_hide_its_all_to_alls_under():
    """Review s31: qwen3-30b-a3b on 16 H100 at ep 16 and one micro-batch ran 2.93 s plain and 1.72 s
    'overlapped', though the combined 1F1B schedule has nothing to pair it with."""
    from planner.layout import Layout, TrainingConfig

    model = get_preset("qwen3-30b-a3b")
    layout, training = Layout(ep=16), TrainingConfig(seq_len=4096, micro_batch=4, grad_accum=1)

    def step(grad_accum: int, overlap: bool) -> float:
        t = training.model_copy(update={"grad_accum": grad_accum})
        plan = build_plan(model, "h100-sxm", layout, t, num_gpus=16, stack=Stack.MEGATRON_CORE, moe_a2a_overlap=overlap)
        return plan.estimate.time.step_s

    assert step(1, True) == pytest.approx(step(1, False), rel=1e-9)
    assert step(8, True) < step(8, False)


def test_the_exposed_all_to_all_advice_is_not_given_where_the_overlap_would_hide_nothing():
    """Review s32: the notice named --moe-a2a-overlap for one micro-batch (the same 2.93 s step with
    it) and for layouts Megatron-Core refuses it on (full recompute)."""
    from planner.api.notices import a2a_exposed_under_megatron
    from planner.layout import ActivationCheckpointing, Layout, TrainingConfig

    model = get_preset("qwen3-30b-a3b")

    def advised(grad_accum: int, ac: ActivationCheckpointing = ActivationCheckpointing.NONE) -> bool:
        t = TrainingConfig(seq_len=4096, micro_batch=4, grad_accum=grad_accum, activation_checkpointing=ac)
        plan = build_plan(model, "h100-sxm", Layout(ep=16), t, num_gpus=16, stack=Stack.MEGATRON_CORE)
        return a2a_exposed_under_megatron(plan)

    assert advised(8)
    assert not advised(1)
    assert not advised(8, ActivationCheckpointing.FULL)
