"""--no-tp-comm-overlap: Megatron-Core without its recipes' TP overlap (userbuffers), judged outside
the validated envelope; megatron-core's validated regimes say they are tuned recipes (heldout51 H1)."""

from __future__ import annotations

import pytest

from planner.accuracy.residuals import load_residuals
from planner.api import build_plan
from planner.api.rebuild import dropped_choices, restack
from planner.catalog.models import get_preset
from planner.errors import RuleCode
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model.settings import DEFAULT_SETTINGS, DTENSOR_TP_COMM_OVERLAP
from planner.model.stack_profiles import MEGATRON_CORE_TP_COMM_OVERLAP, UNBUFFERED_TP_COMM_OVERLAP
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.request import PlanRequest, request_settings
from planner.stack_rules import RunChoices

TRAINING = TrainingConfig(seq_len=8192, micro_batch=1, grad_accum=64)


def _flagperf_like(tp_comm_overlap: bool, num_gpus: int = 16, stack: Stack = Stack.MEGATRON_CORE):
    """FlagPerf's Llama3-8B TP2 job on 2 x 8 H100 (data/validation/fresh_runs.csv F09)."""
    layout = Layout(tp=2, sharding=Sharding.ZERO1)
    model = get_preset("llama3-8b")
    return build_plan(
        model, "h100-sxm", layout, TRAINING, num_gpus=num_gpus, stack=stack, tp_comm_overlap=tp_comm_overlap
    )


def test_off_hides_tp_traffic_as_the_named_default_does_not_the_fitted_share():
    """Off is the named unbuffered share (0.3, trainplan's default until session 52), not a new
    number; the recipe's 0.5 stays the profile's; trainplan's own DTensor TP hides none."""
    request = PlanRequest(  # planner tests import no app (test_floors)
        model=get_preset("llama3-8b"), training_tokens=1e10, stack=Stack.MEGATRON_CORE, tp_comm_overlap=False
    )
    assert request_settings(request).tp_comm_overlap == UNBUFFERED_TP_COMM_OVERLAP == 0.3
    assert DEFAULT_SETTINGS.tp_comm_overlap == DTENSOR_TP_COMM_OVERLAP == 0.0
    on = request.model_copy(update={"tp_comm_overlap": True})
    assert request_settings(on).tp_comm_overlap == MEGATRON_CORE_TP_COMM_OVERLAP == 0.5
    assert STACK_SETTINGS[Stack.MEGATRON_CORE].tp_comm_overlap == MEGATRON_CORE_TP_COMM_OVERLAP


def test_off_is_slower_and_outside_the_envelope_with_a_wider_band():
    on, off = _flagperf_like(True), _flagperf_like(False)
    assert off.estimate.time.breakdown_s.tp_comm > on.estimate.time.breakdown_s.tp_comm
    assert off.estimate.throughput.tokens_per_s < on.estimate.throughput.tokens_per_s
    u_on, u_off = on.estimate.uncertainty, off.estimate.uncertainty
    assert u_on is not None and u_off is not None
    assert u_on.validated and not u_off.validated
    assert "tp_overlap_off" in u_off.regime_features and "tp_overlap_off" not in u_on.regime_features
    assert "TP comm overlap off" in u_off.envelope and u_off.envelope.startswith("outside the validated envelope")
    low_on, high_on = u_on.tokens_per_s
    low_off, high_off = u_off.tokens_per_s
    width = lambda low, high, mid: (high - low) / mid  # noqa: E731
    assert width(low_off, high_off, off.estimate.throughput.tokens_per_s) > width(
        low_on, high_on, on.estimate.throughput.tokens_per_s
    )
    assert off.tp_overlap_off and not on.tp_overlap_off


def test_off_at_tp_1_changes_nothing_there_being_no_tp_traffic():
    layout = Layout(pp=2, sharding=Sharding.ZERO1)
    model, training = get_preset("llama3-8b"), TrainingConfig(seq_len=8192, micro_batch=1, grad_accum=128)
    plans = [
        build_plan(model, "h100-sxm", layout, training, num_gpus=8, stack=Stack.MEGATRON_CORE, tp_comm_overlap=on)
        for on in (True, False)
    ]
    assert plans[0].estimate.time.step_s == plans[1].estimate.time.step_s
    assert plans[0].estimate.uncertainty.envelope == plans[1].estimate.uncertainty.envelope


def test_no_band_row_is_marked_with_the_feature():
    """The bands' rows are unchanged: no row is placed in the off regime, so a plan that keeps the
    overlap reads the same evidence as before the switch (bench/validate_bands.py unchanged)."""
    from planner.accuracy.bands import row_regime
    from planner.accuracy.regime import Feature

    assert not any(row_regime(r).features & Feature.TP_OVERLAP_OFF for r in load_residuals())


@pytest.mark.parametrize("stack", [Stack.TRAINPLAN, Stack.MEGATRON_LM, Stack.MEGATRON_DEEPSPEED, Stack.DEEPSEEK_V3])
def test_off_is_refused_where_the_profile_has_no_tp_overlap_to_drop(stack):
    with pytest.raises(ValueError) as refused:
        _flagperf_like(False, stack=stack)
    assert getattr(refused.value, "code", None) == RuleCode.STACK_TP_OVERLAP
    assert _flagperf_like(True, stack=stack).tp_comm_overlap  # on: the stack's own, never refused


def test_restacking_drops_the_choice_and_says_so():
    off = _flagperf_like(False)
    again = restack(off, Stack.MEGATRON_LM)
    assert again.tp_comm_overlap and not again.tp_overlap_off
    assert any("--no-tp-comm-overlap" in w for w in dropped_choices(off, again))
    assert (
        RunChoices(False, False, off.optimizer_precision, False).kept_under(Stack.MEGATRON_CORE).tp_comm_overlap
        is False
    )


def test_validated_megatron_core_says_its_rows_are_tuned_recipes():
    u = _flagperf_like(True).estimate.uncertainty
    assert u is not None and u.validated
    assert "tuned NeMo / Megatron-Bridge / MLPerf recipes (TP comm overlap, cuDNN attention)" in u.envelope
    other = build_plan(get_preset("llama3.2-1b"), "h100-sxm", Layout(), TrainingConfig(seq_len=2048), num_gpus=1)
    assert other.estimate.uncertainty is not None and "tuned NeMo" not in other.estimate.uncertainty.envelope


def test_the_search_and_an_estimate_place_the_off_regime_alike():
    """One rule (``feature_bits``) for a candidate row of the search and an estimate's regime."""
    from planner.accuracy import _key_parts, _regime_keys, regime_for, run_feature_bits
    from planner.accuracy.regime import Feature
    from planner.catalog.hardware import load_catalog
    from planner.model.candidates import single

    gpu = load_catalog().gpu("h100-sxm")
    layout = Layout(tp=2, sharding=Sharding.ZERO1).resolve(16)
    c = single(gpu, layout, TRAINING, gpus_per_node=8, network_bandwidth=1e9)
    for off in (True, False):
        run = run_feature_bits(Stack.MEGATRON_CORE, not off, False)
        _, bits, _ = _key_parts(int(_regime_keys(c, False, "megatron-core", "", run)[0]))
        regime = regime_for("megatron-core", gpu, layout, TRAINING, False, "", 8, run_features=run)
        assert bits == regime.features and bool(bits & Feature.TP_OVERLAP_OFF) is off
