"""Buyer trial s50's CLI answers on the app's single-job card, in both languages (parity50): the offers
behind a price (M8), one provider's rate on a multi-node plan (H1), spot capacity past the traced scale
(H3), what a fixed budget trains (M7) and the model size's default batch (M6)."""

from __future__ import annotations

import pickle

import pytest
from support.app import EN, ZH, english_sentences, planned, request_for, run_app

from planner.api import plan
from planner.api.price_notices import SPOT_WAIT_TRACED_GPUS, one_offer_rent, spot_beyond_traces
from planner.catalog.models import get_preset
from planner.catalog.prices import offers_span
from planner.errors import InfeasiblePlan
from planner.fmt import count_short
from planner.request import default_global_batch_tokens
from ui.card_notices import one_offer_rent_text, spot_beyond_traces_text

BOTH = pytest.mark.parametrize("tr", [EN, ZH], ids=["en", "zh"])


def price_line(at, tr) -> str:
    (line,) = [c.value for c in at.caption if c.value.startswith(tr("card_price").split("{")[0])]
    return line


@BOTH
def test_the_cost_line_names_the_offers_behind_its_median(tr):
    at = run_app(lang=tr.lang)
    span = offers_span(planned(request_for()).plan.price_offers)
    assert span is not None and span.provider is None and span.first_date != span.last_date
    said = (
        f"({span.count} offers, {span.first_date} to {span.last_date})"
        if tr is EN
        else f"（{span.count} 个报价，{span.first_date} 至 {span.last_date}）"
    )
    assert said in price_line(at, tr)


# the fastest plan on MI325X, priced at one TensorWave rate: many nodes at once
ONE_OFFER = dict(gpus={"mi325x": None}, objective="time")


@BOTH
def test_one_providers_rate_is_named_and_its_assumption_warned(tr):
    at = run_app(gpus=["mi325x"], objective="time", lang=tr.lang)
    result = planned(request_for(**ONE_OFFER))
    rent = one_offer_rent(result.plan)
    assert rent is not None and result.plan.num_nodes > 1
    assert rent.words() in result.warnings  # the CLI's warning, from the same record
    provider, date = rent.offer.provider, rent.offer.date
    assert (f"({provider}, {date})" if tr is EN else f"（{provider}，{date}）") in price_line(at, tr)
    text = one_offer_rent_text(tr, rent)
    assert text in [w.value for w in at.warning]
    billed = f"{result.plan.billed_gpus:,}"
    assert (f"rents {billed} of them" if tr is EN else f"出租全部 {billed} 块") in text and provider in text
    if tr is ZH:
        assert not english_sentences(text)
    # one node: the cost line names the offer, and nothing is warned (the CLI's rule)
    small = planned(request_for(gpus={"mi325x": 8}))
    assert small.plan.num_nodes == 1 and one_offer_rent(small.plan) is None


# an 8B model's 1T tokens in 5 days on spot H100: 512 GPUs
SPOT_APP = dict(preset="llama3-8b", tokens_mode="absolute", tokens_billions=1000.0, seq_len=4096, deadline_days=5.0)


@BOTH
def test_spot_capacity_past_the_traced_gpus_is_warned(tr):
    at = run_app(gpus=["h100-sxm"], pricing="spot", lang=tr.lang, **SPOT_APP)
    model = get_preset("llama3-8b")
    fields = dict(training_tokens=1e12, seq_len=4096, deadline_days=5.0, gpus={"h100-sxm": None}, price_kind="spot")
    result = planned(request_for(model, **fields))
    spot = spot_beyond_traces(result.plan)
    assert spot is not None and spot.gpus == result.plan.num_gpus > SPOT_WAIT_TRACED_GPUS
    assert spot.words() in result.warnings
    text = spot_beyond_traces_text(tr, spot)
    assert text in [w.value for w in at.warning]
    assert f"{spot.gpus:,}" in text and f"1 {'to' if tr is EN else '至'} {SPOT_WAIT_TRACED_GPUS}" in text
    if tr is ZH:
        assert not english_sentences(text)


@BOTH
def test_a_budget_answer_says_what_the_budget_trains(tr):
    request = request_for(budget_usd=1.0)
    with pytest.raises(InfeasiblePlan) as caught:
        plan(request)
    answer = caught.value
    assert answer.required and answer.available == 1.0
    trains = request.training_tokens * 1.0 / answer.required
    assert answer.tokens_within_budget == pytest.approx(trains)
    # kept across pickling (process pools) and by ``but`` (with_batch_fix runs after it)
    assert pickle.loads(pickle.dumps(answer)).tokens_within_budget == answer.tokens_within_budget
    assert answer.but(fix="x").tokens_within_budget == answer.tokens_within_budget
    assert f"train about {count_short(trains)} tokens within it" in answer.fix  # the CLI's words
    at = run_app(budget_usd=1.0, lang=tr.lang)
    (said,) = [w.value for w in at.warning if tr("infeasible").split("{")[0] in w.value]
    assert tr("why_budget_tokens", tokens=count_short(trains)) in said


@BOTH
def test_the_batch_says_when_it_is_the_model_sizes_default(tr):
    tokens = default_global_batch_tokens(request_for().model)
    assert planned(request_for()).plan.estimate.global_batch_tokens == tokens
    (batch,) = [m for m in run_app(lang=tr.lang).metric if m.label == tr("card_batch")]
    assert batch.delta == tr("card_batch_default", tokens=tokens)
    assert f"{tokens:,}" in batch.delta and ("default" if tr is EN else "默认") in batch.delta
    assert tr("global_batch") in batch.help
    (chosen,) = [m for m in run_app(lang=tr.lang, global_batch=tokens).metric if m.label == tr("card_batch")]
    assert chosen.delta == tr("card_batch_tokens", tokens=tokens)
    assert ("default" if tr is EN else "默认") not in chosen.delta
