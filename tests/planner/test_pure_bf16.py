"""Pure bf16 (``OptimizerPrecision.pure_bf16``, --pure-bf16): bf16 weights that are the optimizer's
only copy, bf16 gradients and bf16 AdamW moments, on the stacks that train so (trainplan,
torchtitan, hf-trainer): the memory, the optimizer step, the reductions, the checkpoint, the
refusals, the band and the memory fixes."""

from __future__ import annotations

import json

import pytest

from planner.accuracy.bands import widening
from planner.accuracy.memory_band import band_ratios, memory_words
from planner.accuracy.regime import FEATURE_WEIGHTS, Feature
from planner.api import PlanRequest, build_plan, plan, restack
from planner.api.rebuild import dropped_choices
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.errors import RuleCode, RuleViolation
from planner.fix_codes import FixCode
from planner.layout import Layout, Precision, Sharding, TrainingConfig
from planner.model.candidates import single
from planner.model.goodput import checkpoint_bytes_per_param
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.run_choices import RunChoices, run_settings
from planner.model.saved_bytes import reduced_grad_bytes
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.model.stage_params import busiest_stage
from planner.model.state_memory import state_bytes, unsharded_param_bytes
from planner.plan import Plan
from planner.search.score import memory_high_ratios

PURE = OptimizerPrecision(pure_bf16=True)
LLAMA3_8B = get_preset("llama3-8b")
TRAINING = TrainingConfig(seq_len=4096, micro_batch=1, activation_checkpointing="full")


def estimate(layout: Layout, num_gpus: int, stack: Stack = Stack.TRAINPLAN, training=TRAINING, **kwargs):
    return build_plan(LLAMA3_8B, "h100-sxm", layout, training, num_gpus=num_gpus, stack=stack, **kwargs).estimate


def states(
    layout: Layout, num_gpus: int, chosen: OptimizerPrecision, stack: Stack = Stack.TRAINPLAN
) -> dict[str, float]:
    """Bytes per GPU of the weights, gradients, moments (``state_bytes``) and the compute-dtype copies."""
    gpu = load_catalog().gpu("h100-sxm")
    c = single(gpu, layout.resolve(num_gpus), TRAINING, gpus_per_node=8, network_bandwidth=1e9)
    settings = run_settings(STACK_SETTINGS[stack], RunChoices(optimizer_precision=chosen))
    stage = busiest_stage(LLAMA3_8B, c)
    params, grads, moments = (float(x[0]) for x in state_bytes(stage, c, settings))
    copies = float(unsharded_param_bytes(stage, c, settings)[0])
    return {"params": params, "grads": grads, "optimizer": moments, "unsharded_params": copies}


def test_the_stacks_that_offer_it_are_those_whose_code_trains_so():
    offered = {s for s in Stack if s.trains_pure_bf16}
    assert offered == {Stack.TRAINPLAN, Stack.TORCHTITAN, Stack.HF_TRAINER}


def test_fsdp_halves_every_state_and_keeps_the_gathered_copies():
    """Under FSDP the weights, gradients and moments are bf16 shards: 2 + 2 + 4 bytes a parameter
    where mixed precision keeps 4 + 4 + 8; the gathered bf16 blocks are the same."""
    layout = Layout(dp_shard=8)
    mixed, pure = states(layout, 8, OptimizerPrecision()), states(layout, 8, PURE)
    for key in ("params", "grads", "optimizer"):
        assert pure[key] == pytest.approx(mixed[key] / 2)
    assert pure["unsharded_params"] == pytest.approx(mixed["unsharded_params"]) and mixed["unsharded_params"] > 0


@pytest.mark.parametrize("sharding", [Sharding.NONE, Sharding.ZERO1, Sharding.ZERO2])
def test_fsdp2_keeps_the_stored_bf16_weights_beside_the_copy_it_computes_with(sharding):
    """review55: below FSDP the pure-bf16 weights were counted whole with no copy beside them (Megatron's
    views of fp32 weights, trial s40), but the stacks that train pure bf16 wrap them in FSDP2, whose
    fully_shard without resharding (zero1, zero2) and replicate (DDP) keep the stored weights, sharded from
    ZeRO-1 on, in storage apart from the gathered copy, cast or not (torch 2.13, two gloo ranks): 2 / dp
    (zero1, zero2) and 2 bytes a parameter (DDP) were missing. As mixed precision's, at 2 bytes a master."""
    layout, params = Layout(sharding=sharding), LLAMA3_8B.num_params()
    mixed, pure = states(layout, 2, OptimizerPrecision()), states(layout, 2, PURE)
    assert pure["params"] == pytest.approx(params * 2 / (1 if sharding == Sharding.NONE else 2))
    assert pure["unsharded_params"] == pytest.approx(mixed["unsharded_params"]) == pytest.approx(params * 2)


def test_hf_trainers_ddp_computes_on_the_whole_bf16_weights_with_no_copy():
    """HF Trainer without FSDP is torch's DistributedDataParallel: the module's own bf16 weights, whole,
    and no copy beside them (the bf16 autocast copy of mixed precision is not there)."""
    layout = Layout(sharding=Sharding.NONE)
    mixed = states(layout, 2, OptimizerPrecision(), Stack.HF_TRAINER)
    pure = states(layout, 2, PURE, Stack.HF_TRAINER)
    assert pure["params"] == pytest.approx(LLAMA3_8B.num_params() * 2)
    assert pure["unsharded_params"] == 0 < mixed["unsharded_params"]


def test_the_memory_band_says_no_measured_peak_ran_pure_bf16_and_widens_as_the_time_band_does():
    """Review55 M3: a pure-bf16 plan's memory band read "from all 26 measured peaks", none of which ran it.
    It now names the feature and widens as a time band widens for one feature its rows lack (the same
    kappa and FEATURE_WEIGHTS: ``bands.widening``), in JSON and in words; a torchtitan plan, whose own
    kind has peaks, is no longer called validated. The search's tie key reads the widened high end."""
    layout = Layout(dp_shard=8)
    mixed, pure = estimate(layout, 8), estimate(layout, 8, optimizer_precision=PURE)
    assert mixed.memory_band.unmeasured_features == () and mixed.memory_band.widened_by == 0.0
    band = pure.memory_band
    assert band.unmeasured_features == ("pure_bf16",)
    assert band.widened_by == pytest.approx(widening(FEATURE_WEIGHTS[Feature.PURE_BF16])) and band.widened_by > 0
    assert "no measured peak ran pure bf16 (--pure-bf16): band widened by 4%" in memory_words(band)
    for stack in (Stack.TRAINPLAN, Stack.TORCHTITAN):
        plain_low, plain_high = band_ratios(stack.value, False, True)
        low, high = band_ratios(stack.value, False, True, features=Feature.PURE_BF16)
        assert low < plain_low and high > plain_high
    titan = estimate(layout, 8, Stack.TORCHTITAN, optimizer_precision=PURE).memory_band
    assert titan.from_own_kind and not titan.validated and estimate(layout, 8, Stack.TORCHTITAN).memory_band.validated
    gpu = load_catalog().gpu("h100-sxm")
    c = single(gpu, layout.resolve(8), TRAINING, gpus_per_node=8, network_bandwidth=1e9)
    assert memory_high_ratios(c, "trainplan", int(Feature.PURE_BF16))[0] > memory_high_ratios(c, "trainplan")[0]


def test_the_optimizer_step_streams_half_the_bytes_and_the_checkpoint_holds_bf16():
    layout = Layout(dp_shard=8)
    mixed, pure = estimate(layout, 8), estimate(layout, 8, optimizer_precision=PURE)
    assert pure.time.breakdown_s.optimizer == pytest.approx(mixed.time.breakdown_s.optimizer / 2)
    settings = run_settings(STACK_SETTINGS[Stack.TRAINPLAN], RunChoices(optimizer_precision=PURE))
    assert (settings.adamw_bytes_per_param, settings.clip_bytes_per_param) == (14.0, 6.0)
    assert (
        checkpoint_bytes_per_param(settings) == 6.0 == checkpoint_bytes_per_param(STACK_SETTINGS[Stack.TRAINPLAN]) / 2
    )


def test_trainplan_reduces_the_bf16_gradients_in_bf16_and_torchtitan_in_fp32():
    """trainplan's trainer casts nothing (an empty MixedPrecisionPolicy); torchtitan's
    mixed_precision_reduce admits only float32, so its reductions move fp32 whatever it holds."""
    gpu = load_catalog().gpu("h100-sxm")
    c = single(gpu, Layout(dp_shard=8).resolve(8), TRAINING, gpus_per_node=8, network_bandwidth=1e9)
    reduced = {
        stack: float(
            reduced_grad_bytes(c, run_settings(STACK_SETTINGS[stack], RunChoices(optimizer_precision=PURE)))[0]
        )
        for stack in (Stack.TRAINPLAN, Stack.HF_TRAINER, Stack.TORCHTITAN)
    }
    assert reduced == {Stack.TRAINPLAN: 2.0, Stack.HF_TRAINER: 2.0, Stack.TORCHTITAN: 4.0}
    layout = Layout(dp_shard=8)
    for stack, cheaper in ((Stack.TRAINPLAN, True), (Stack.TORCHTITAN, False)):
        mixed, pure = estimate(layout, 8, stack), estimate(layout, 8, stack, optimizer_precision=PURE)
        assert (pure.time.breakdown_s.dp_comm < mixed.time.breakdown_s.dp_comm) is cheaper


@pytest.mark.parametrize("stack", [s for s in Stack if not s.trains_pure_bf16])
def test_the_other_stacks_refuse_it(stack):
    with pytest.raises(RuleViolation) as refused:
        estimate(Layout(sharding=Sharding.ZERO1), 8, stack, optimizer_precision=PURE)
    assert refused.value.code == RuleCode.STACK_PURE_BF16


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"precision": Precision.FP16}, RuleCode.PURE_BF16_PRECISION),
        ({"precision": Precision.FP8}, RuleCode.PURE_BF16_PRECISION),
        ({"precision": Precision.FP32}, RuleCode.PURE_BF16_PRECISION),
        ({"offload": True}, RuleCode.PURE_BF16_OFFLOAD),
    ],
)
def test_it_needs_bf16_weights_and_no_host_offload(changes, code):
    with pytest.raises(RuleViolation) as refused:
        estimate(Layout(dp_shard=8), 8, training=TRAINING.model_copy(update=changes), optimizer_precision=PURE)
    assert refused.value.code == code


def test_the_search_offers_no_offload_and_refuses_another_precision_in_one_line():
    """A request's rows share its precision: pure bf16 at fp8 is refused before the search (trial
    bf16pure55: the empty table failed "cannot reshape array of size 0"); so is offload, which the
    search filtered away unsaid (review55 L3)."""
    ask = dict(model=LLAMA3_8B, training_tokens=1e10, gpus={"h100-sxm": 8}, seq_len=4096, optimizer_precision=PURE)
    answer = plan(PlanRequest(**ask, top_k=10))
    rows = [answer.plan, *answer.alternatives]
    assert len(rows) > 1 and not any(p.training.offload for p in rows)
    assert answer.plan.optimizer_precision == PURE
    with pytest.raises(ValueError, match=r"drop --allow-offload \(or --pure-bf16\)"):
        PlanRequest(**ask, allow_offload=True)
    with pytest.raises(ValueError, match=r"--pure-bf16 trains bf16 weights: use --precision bf16 \(now fp8\)"):
        PlanRequest(**ask, precision=Precision.FP8)


def test_a_pure_bf16_estimate_is_outside_the_envelope_with_a_wider_band():
    layout = Layout(dp_shard=8)
    mixed, pure = estimate(layout, 8), estimate(layout, 8, optimizer_precision=PURE)
    assert pure.uncertainty is not None and mixed.uncertainty is not None
    assert "pure_bf16" in pure.uncertainty.regime_features and "pure_bf16" not in mixed.uncertainty.regime_features
    assert not pure.uncertainty.validated and pure.uncertainty.widened_by > mixed.uncertainty.widened_by
    assert "pure bf16 (--pure-bf16)" in pure.uncertainty.envelope


def test_the_search_and_an_estimate_place_the_pure_regime_alike():
    """One rule (``feature_bits``) for a candidate row and an estimate's regime (``run_feature_bits``)."""
    from planner.accuracy import _key_parts, _regime_keys, regime_for, run_feature_bits

    gpu = load_catalog().gpu("h100-sxm")
    layout = Layout(dp_shard=8).resolve(8)
    c = single(gpu, layout, TRAINING, gpus_per_node=8, network_bandwidth=1e9)
    for pure in (True, False):
        run = run_feature_bits(Stack.TRAINPLAN, True, pure)
        _, bits, _ = _key_parts(int(_regime_keys(c, False, "trainplan", "", run)[0]))
        regime = regime_for("trainplan", gpu, layout, TRAINING, False, "", 8, run_features=run)
        assert bits == regime.features and bool(bits & Feature.PURE_BF16) is pure


def test_it_is_named_as_a_memory_fix_where_it_alone_fits_and_never_with_offload():
    """llama3-8b on 2 H100 at ZeRO-1 keeps whole fp32 weights and gradients: in pure bf16 they halve
    and it fits (the fix names it); a pure-bf16 run is never told to offload, which it refuses."""
    layout, short = Layout(sharding=Sharding.ZERO1), TRAINING.model_copy(update={"seq_len": 1024})
    mixed = estimate(layout, 2, training=short)
    assert not mixed.feasible and FixCode.PURE_BF16 in [h.code for h in mixed.fix_hints]
    assert "(--pure-bf16)" in mixed.fix
    assert estimate(layout, 2, training=short, optimizer_precision=PURE).feasible
    seventy = get_preset("llama3-70b")
    big = [
        build_plan(seventy, "h100-sxm", Layout(dp_shard=8), TRAINING, num_gpus=8, optimizer_precision=chosen).estimate
        for chosen in (OptimizerPrecision(), PURE)
    ]
    assert [e.feasible for e in big] == [False, False]
    assert [FixCode.OFFLOAD in [h.code for h in e.fix_hints] for e in big] == [True, False]
    core = estimate(layout, 2, Stack.MEGATRON_CORE, training=short)
    assert FixCode.PURE_BF16 not in [h.code for h in core.fix_hints]


def test_another_stack_drops_it_and_says_so():
    pure = build_plan(LLAMA3_8B, "h100-sxm", Layout(dp_shard=8), TRAINING, num_gpus=8, optimizer_precision=PURE)
    core = restack(pure, Stack.MEGATRON_CORE)
    assert core.optimizer_precision == OptimizerPrecision()
    assert dropped_choices(pure, core) == (
        "the plan's --pure-bf16 is dropped: megatron-core does not offer it (estimated without it)",
    )
    titan = restack(pure, Stack.TORCHTITAN)
    assert titan.optimizer_precision == PURE and dropped_choices(pure, titan) == ()


def test_plan_files_round_trip_and_old_ones_load_without_it(tmp_path):
    pure = build_plan(LLAMA3_8B, "h100-sxm", Layout(dp_shard=8), TRAINING, num_gpus=8, optimizer_precision=PURE)
    path = pure.save(tmp_path / "pure.json")
    assert Plan.load(path) == pure
    raw = json.loads(path.read_text())
    del raw["optimizer_precision"]["pure_bf16"]  # a plan file written before the format existed
    (tmp_path / "old.json").write_text(json.dumps(raw))
    assert Plan.load(tmp_path / "old.json").optimizer_precision == OptimizerPrecision()


def test_a_hand_edited_pure_bf16_fp32_plan_is_refused_on_load(tmp_path):
    """The trainer casts the weights on the file's word: a pure-bf16 plan of another precision or
    stack is inconsistent (``Plan.check``)."""
    pure = build_plan(LLAMA3_8B, "h100-sxm", Layout(dp_shard=8), TRAINING, num_gpus=8, optimizer_precision=PURE)
    raw = json.loads(pure.to_json())
    raw["training"]["precision"] = "fp32"
    (tmp_path / "edited.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=r"inconsistent plan.*--pure-bf16 trains bf16 weights"):
        Plan.load(tmp_path / "edited.json")
