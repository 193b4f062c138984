"""The app's rent choices by price kind (ui/gpu_table.py with_price_kind, issue 28)."""

import pytest
from support.app import CATALOG, EN, ZH, card, planned, request_for, run_app

from planner.api import chosen_dearer, plan_commitment
from planner.catalog.prices import catalog_with_price_kind
from planner.fmt import expected_events
from ui import app_core
from ui.messages import commitment_text, dearer_text, short_duration


def test_spot_rent_plans_at_the_spot_median_of_each_gpu() -> None:
    # Both default GPUs have a spot offer now (A100 80GB: Google Cloud a2-ultragpu-8g Spot), so none is left out.
    at = run_app(pricing="spot")
    spot = catalog_with_price_kind(CATALOG, "spot", ["a100-80gb-sxm", "h100-sxm"])
    assert spot.gpu("a100-80gb-sxm").price_per_gpu_hour_usd == 2.7595
    prices = ", ".join(f"{g} ${spot.gpu(g).price_per_gpu_hour_usd:.2f}" for g in ("a100-80gb-sxm", "h100-sxm"))
    assert EN("price_kind_note", kind="spot", prices=prices, dropped="") in [c.value for c in at.sidebar.caption]
    request = request_for(gpus={"a100-80gb-sxm": None, "h100-sxm": None}, price_kind="spot")
    assert card(at)[EN("card_cost")] == app_core.money(planned(request).plan.estimate.cost_usd)
    g = planned(request).plan.estimate.goodput  # trial s30: the preemptions' wait for capacity, said
    captions = [c.value for c in at.caption]
    assert EN("spot_wait", count=expected_events(g.spot_preemptions), wait="80 min") in captions
    assert any("each waiting 80 min for capacity" in c for c in captions)  # the CLI's '80.0 minutes'


@pytest.mark.parametrize(("seconds", "words"), [(80 * 60, "80 min"), (3 * 3600, "3.0 h"), (3 * 86400, "3.0 days")])
def test_a_wait_reads_in_the_planners_units(seconds, words) -> None:
    """Minutes under two hours, as the CLI's duration_words: not '1.3 h' for its '80.0 minutes'."""
    assert short_duration(EN, seconds) == words


def test_three_year_reserved_rent_plans_at_its_median() -> None:
    # The app offers every price kind the CLI does: the 3-year reserved offers (AWS, Azure RIs; Google CUDs).
    at = run_app(pricing="reserved_3y")
    reserved = catalog_with_price_kind(CATALOG, "reserved-3y", ["a100-80gb-sxm", "h100-sxm"])
    prices = ", ".join(f"{g} ${reserved.gpu(g).price_per_gpu_hour_usd:.2f}" for g in ("a100-80gb-sxm", "h100-sxm"))
    assert EN("price_kind_note", kind="reserved-3y", prices=prices, dropped="") in [c.value for c in at.sidebar.caption]
    request = request_for(gpus={"a100-80gb-sxm": None, "h100-sxm": None}, price_kind="reserved-3y")
    assert card(at)[EN("card_cost")] == app_core.money(planned(request).plan.estimate.cost_usd)


def test_a_price_kind_above_on_demand_is_warned_on_the_card_in_both_languages() -> None:
    # The CLI warns when 1-year reserved H100s cost more than on-demand (the medians come from
    # different providers); the card says the same, from the same record (planner.api.chosen_dearer).
    request = request_for(gpus={"h100-sxm": None}, price_kind="reserved-1y")
    result = planned(request)
    dearer = chosen_dearer(request, CATALOG, result.plan)
    assert dearer is not None and dearer.gpu == "h100-sxm"
    assert dearer.words() in result.warnings  # the CLI's words come from the same record
    for tr in (EN, ZH):
        at = run_app(gpus=["h100-sxm"], pricing="reserved_1y", lang=tr.lang)
        assert dearer_text(tr, dearer) in [w.value for w in at.warning]
    at = run_app(gpus=["h100-sxm"], pricing="reserved_3y")  # cheaper than on-demand: nothing said
    assert not [w for w in at.warning if "on-demand" in w.value]


def test_a_reserved_term_longer_than_the_job_is_warned_in_both_languages() -> None:
    # Before: a 1-year reserved price costed a 2-day job as 2 days of GPU time, without a word
    # that the term bills the whole year.
    request = request_for(gpus={"h100-sxm": None}, price_kind="reserved-3y")
    result = planned(request)
    term = plan_commitment("reserved-3y", result.plan)
    e = result.plan.estimate
    assert term is not None and term.term_years == 3
    assert e.cost_usd and e.time_to_train_h
    # trial s42 H2: the cost now bills that term whole, on the card as in the CLI
    assert term.term_cost_usd == pytest.approx(e.cost_usd) and e.term is not None and e.term.term_h == 3 * 8766
    assert term.words() in result.warnings
    for tr in (EN, ZH):
        at = run_app(gpus=["h100-sxm"], pricing="reserved_3y", lang=tr.lang)
        assert commitment_text(tr, term) in [w.value for w in at.warning]
    assert plan_commitment("on-demand", result.plan) is None and plan_commitment(None, result.plan) is None


def test_a_price_kind_says_on_the_card_which_allowed_types_it_left_out():
    """Trial s39 (app): spot pricing left 21 types out, said in the sidebar's caption only."""
    at = run_app(pricing="spot", gpus=["h100-sxm", "h800"])  # the H800 has no spot offer
    assert not at.exception
    warnings = [w.value for w in at.warning if w.value.startswith("Planned on spot prices")]
    assert warnings == [EN("card_kind_left_out", kind=EN.kind("spot"), gpus="h800")], [w.value for w in at.warning]
    on_demand = run_app(gpus=["h100-sxm", "h800"])
    assert not any(w.value.startswith("Planned on") for w in on_demand.warning)  # nothing left out


def test_a_reserved_term_filled_by_other_work_bills_the_job_less_as_the_cli_does() -> None:
    """Review s43: the CLI's --term-filled had no input in the app, so its reserved plans billed the
    whole term. The slider shows under a reserved kind only and bills as the CLI's flag does."""
    whole = planned(request_for(gpus={"h100-sxm": None}, price_kind="reserved-3y")).plan.estimate
    half = planned(request_for(gpus={"h100-sxm": None}, price_kind="reserved-3y", term_filled=0.5)).plan.estimate
    assert half.cost_usd < whole.cost_usd
    at = run_app(gpus=["h100-sxm"], pricing="reserved_3y", term_filled_pct=50)
    assert [s.label for s in at.sidebar.slider if s.key == "term_filled_pct"] == [EN("term_filled")]
    assert card(at)[EN("card_cost")] == app_core.money(half.cost_usd) != app_core.money(whole.cost_usd)
    # trial s44 (app) L1: the whole term's cost does not move with the job's time: no "$X–$X" band
    from ui.messages import band_text

    assert band_text(EN, (142160.0, 142160.2), app_core.money) is None
    assert band_text(EN, (1.0, 2.0), str) == EN("card_band", lo="1.0", hi="2.0")
    # trial s44 (app) H1: the warning said "the whole term" at 50 %; it says what the cost counts
    term = plan_commitment(
        "reserved-3y", planned(request_for(gpus={"h100-sxm": None}, price_kind="reserved-3y", term_filled=0.5)).plan
    )
    assert term is not None and term.filled == 0.5
    for tr in (EN, ZH):
        words = commitment_text(tr, term)
        assert "50%" in words and tr("commitment_rest_whole") not in words
        shown = [
            w.value for w in run_app(gpus=["h100-sxm"], pricing="reserved_3y", term_filled_pct=50, lang=tr.lang).warning
        ]
        assert words in shown, shown
    spot = run_app(gpus=["h100-sxm"], pricing="spot", term_filled_pct=50)  # no term: no input, no refusal
    assert not [s for s in spot.sidebar.slider if s.key == "term_filled_pct"]


def test_a_kind_priced_at_one_offer_is_said_as_that_offer_in_both_languages() -> None:
    """Trial s48 L2: "the median of 1 offers" (spot H200, one Google Cloud offer); the card says one
    offer, naming its provider, as the CLI does."""
    from planner.catalog.prices import DearerKind

    one = DearerKind("spot", "h200-sxm", 6.26, 5.45, 1, ("Google Cloud",))
    en = dearer_text(EN, one)
    assert "one offer (Google Cloud)" in en and "median of 1" not in en and "one offer (Google Cloud)" in one.words()
    assert "单一报价：Google Cloud" in dearer_text(ZH, one) and "1 个报价" not in dearer_text(ZH, one)
    two = DearerKind("spot", "h200-sxm", 6.26, 5.45, 2, ("AWS", "Google Cloud"))
    assert "the median of 2 offers" in dearer_text(EN, two)


def test_a_side_plan_priced_above_on_demand_is_warned_on_the_card_as_by_the_cli() -> None:
    """Review s48: the CLI warned of every plan the answer prices (PlanResult.priced_plans), the card
    only of the Top plans' rows; with one row shown, the knee on spot H200 (one offer, above its
    on-demand median) went unwarned on the page."""
    from planner.api.notices import gpu_dearer

    request = request_for(gpus={"a100-80gb-sxm": None, "h200-sxm": None}, price_kind="spot", top_k=1)
    result = planned(request)
    assert result.knee_plan is not None and result.knee_plan.gpu == "h200-sxm"
    assert "h200-sxm" not in {p.gpu for p in (result.plan, *result.alternatives)}
    assert result.knee_plan in result.priced_plans
    dearer = gpu_dearer(request, CATALOG, "h200-sxm")
    assert dearer is not None and dearer.words() in result.warnings
    at = run_app(gpus=["a100-80gb-sxm", "h200-sxm"], pricing="spot", top_k=1)
    assert dearer_text(EN, dearer) in [w.value for w in at.warning]


@pytest.mark.parametrize("tr", [EN, ZH], ids=["en", "zh"])
def test_a_typed_rent_plans_a_type_without_an_offer_of_the_kind(tr):
    """app50 (left): under spot the H800 (no spot offer) was dropped with its typed $/h, and with it
    alone ticked the sidebar refused; the CLI's --price h800=2.5 --price-kind spot plans it."""
    at = run_app(gpus=["h800"], pricing="spot", prices={"h800": 2.5}, lang=tr.lang)
    assert not at.error, [e.value for e in at.error]
    result = planned(request_for(gpus={"h800": None}, price_overrides={"h800": 2.5}, price_kind="spot"))
    assert result.plan.price_per_gpu_hour_usd == 2.5
    assert card(at)[tr("card_cost")] == app_core.money(result.plan.estimate.cost_usd)
    assert tr("price_yours", gpu="h800", price=2.5) in " ".join(c.value for c in at.sidebar.caption)
    # with no typed rent it is still refused, and the error says a typed rent would do
    refused = run_app(gpus=["h800"], pricing="spot", lang=tr.lang)
    (error,) = [e.value for e in refused.error]
    assert error == tr("no_kind_offers", kind=tr.kind("spot"), gpus="h800") and "$/" in error
