"""The app's TP communication overlap switch (megatron-core's stack options) and the envelope's words
for megatron-core's validated regimes, in both languages (heldout51 H1)."""

from __future__ import annotations

from support.app import EN, ZH, english_sentences, request_for, run_app

from planner.api import build_plan, plan
from planner.catalog.models import get_preset
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model.stacks import Stack
from tests.ui.test_app_stack import headline, shown_card
from ui.messages import envelope_text


def test_the_tp_overlap_switch_is_offered_under_megatron_core_only_and_reaches_the_plan():
    """Ticked by default (the recipes'); unticked, the card is the API's plan with
    --no-tp-comm-overlap. Not offered under trainplan's stack nor the 2021-22 megatron-lm profile."""
    request = request_for(get_preset("llama3-8b"), gpus={"h100-sxm": None}, seq_len=4096, stack=Stack.MEGATRON_CORE)
    on = plan(request).plan
    off = plan(request.model_copy(update={"tp_comm_overlap": False})).plan
    assert on.tp_comm_overlap and not off.tp_comm_overlap and off.estimate.cost_usd > on.estimate.cost_usd
    for tr in (EN, ZH):
        at = run_app(gpus=["h100-sxm"], preset="llama3-8b", seq_len=4096, lang=tr.lang)
        for stack in (Stack.TRAINPLAN, Stack.MEGATRON_LM):
            at.sidebar.selectbox(key="stack").set_value(stack.value).run()
            assert not [c for c in at.sidebar.checkbox if c.key == "tp_comm_overlap"]
        at.sidebar.selectbox(key="stack").set_value(Stack.MEGATRON_CORE.value).run()
        box = next(c for c in at.sidebar.checkbox if c.key == "tp_comm_overlap")
        assert box.label == tr("tp_comm_overlap") and box.value is True
        assert headline(at, tr) == shown_card(on, tr)
        box.uncheck().run()
        assert not at.exception, [e.value for e in at.exception]
        assert headline(at, tr) == shown_card(off, tr) != shown_card(on, tr)


def _llama_tp2(tp_comm_overlap: bool):
    training = TrainingConfig(seq_len=8192, micro_batch=1, grad_accum=64)
    layout = Layout(tp=2, sharding=Sharding.ZERO1)
    return build_plan(
        get_preset("llama3-8b"),
        "h100-sxm",
        layout,
        training,
        num_gpus=16,
        stack=Stack.MEGATRON_CORE,
        tp_comm_overlap=tp_comm_overlap,
    )


def test_the_card_says_what_megatron_core_validated_and_why_off_is_outside_in_both_languages():
    u = _llama_tp2(True).estimate.uncertainty
    assert u is not None and u.validated
    assert EN("envelope_tuned_recipes") in envelope_text(EN, u)
    assert ZH("envelope_tuned_recipes") in envelope_text(ZH, u) and not english_sentences(ZH("envelope_tuned_recipes"))
    off = _llama_tp2(False).estimate.uncertainty
    assert off is not None and not off.validated
    for tr in (EN, ZH):
        said = envelope_text(tr, off)
        assert tr("feature_tp_overlap_off") in said and tr("envelope_tuned_recipes") not in said
