"""Fleet49: the portfolio's rent-vs-buy view (ui/fleet_view.py), ``trainplan fleet``'s answer on the
page for the jobs in the list: the three options' totals with their 80 % bands (metrics and a bar
chart with error bars), the mixed option's terms and jobs, where buying pays off, the prices' basis
and warnings, and an infeasible answer as the portfolio words its own; in English and Chinese, each
figure the API's for the same jobs."""

from __future__ import annotations

import json

import pytest
from support.app import EN, ZH, english_sentences, request_for, run_app, table
from test_app_views import page_texts

from planner.api.fleet import plan_fleet
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.catalog.prices import PriceBasis
from planner.errors import InfeasiblePlan
from planner.model.settings import DEFAULT_SETTINGS
from planner.search.fleet_plan import FleetPlan
from planner.search.held_warnings import DearerHeldPrice, EstimatedHeldPrice
from planner.search.ownership import TcoAssumptions
from planner.units import SECONDS_PER_DAY
from ui.app_core import Infeasible, money
from ui.app_fleet import FleetAsk, fleet_requests
from ui.fleet_figures import options_figure
from ui.held_price_texts import held_price_text
from ui.infeasible_words import infeasible_text

CATALOG = load_catalog()
H100_USD = CATALOG.gpu("h100-sxm").purchase_price_usd
# one 2T-token llama3-8b job (about 90 days on 32 H100) over a 120-day horizon: buying pays off
JOB = dict(preset="llama3-8b", tokens_mode="absolute", tokens_billions=2000.0, deadline_days=120.0)
HORIZON_DAYS = 120.0


def fleet_page(tr, job=JOB, buy=("h100-sxm",), **state):
    """The portfolio page with one job, "chat", added and the rent-vs-buy answer asked for ``buy``."""
    state.setdefault("fleet_horizon_days", HORIZON_DAYS)
    at = run_app(lang=tr.lang, portfolio_mode=True, **job, **state)
    at.text_input(key="job_name").set_value("chat")
    at.button(key="add_job").click().run()
    at.radio(key="portfolio_answer").set_value("fleet").run()
    at.multiselect(key="fleet_buy").set_value(list(buy)).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def api_fleet(deadline_days=120.0, rents=None):
    """``plan_fleet`` for the page's job, asked directly: the answer the page must show."""
    request = request_for(get_preset("llama3-8b"), training_tokens=2e12, deadline_days=deadline_days)
    if rents:
        request = request.model_copy(update={"price_overrides": rents})
    return plan_fleet({"chat": request}, {"h100-sxm": H100_USD}, HORIZON_DAYS, settings=DEFAULT_SETTINGS,
                      rent_usd_per_gpu_hour=rents)  # fmt: skip


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_fleet_view_shows_the_apis_answer_in_the_pages_language(tr):
    solution = api_fleet()
    assert solution.mixed.purchased == {"h100-sxm": 32}  # the case: the mixed answer buys
    at = fleet_page(tr)
    metrics = {m.label: (m.value, m.delta) for m in at.metric}
    names = {"mixed": "fleet_option_mixed", "rent only": "fleet_option_rent_only", "buy only": "fleet_option_buy_only"}
    for option, p in solution.options():
        lo, hi = p.total_band()
        value, band = metrics[tr("fleet_total", option=tr(names[option]), risk="p80")]
        assert (value, band) == (money(p.total_cost_usd), tr("card_band", lo=money(lo), hi=money(hi)))
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "chart_fleet_options" in c.proto.id]
    bars = chart["data"][0]
    assert bars["y"] == pytest.approx([p.total_cost_usd for _, p in solution.options()])
    assert bars["error_y"]["array"][0] == pytest.approx(solution.mixed.total_band()[1] - solution.mixed.total_cost_usd)
    texts = page_texts(at)
    mixed = solution.mixed
    assert tr("fleet_split_rent", option=tr("fleet_option_mixed"), ownership=money(mixed.ownership_cost_usd),
              power=money(mixed.running_cost_usd), rent=money(mixed.rent_cost_usd),
              total=money(mixed.total_cost_usd)) in texts  # fmt: skip
    (b,) = solution.break_even
    (line,) = [t.removeprefix("- ") for t in texts if t.startswith("- h100-sxm")]
    assert line.startswith(tr("fleet_break_even", gpu="h100-sxm", share=b.break_even_utilisation, rent=5.07))
    basis = tr("fleet_rate", gpu="h100-sxm", rate=5.07, basis=tr("price_basis_catalog"))
    assert tr("fleet_rates", what=tr("fleet_rate_rent"), rates=basis) in texts
    (a,) = mixed.assignments
    schedule = table(at, tr("col_days_at_risk", risk="p80"))
    assert list(schedule[tr("col_held")]) == [tr("held_owned")]
    assert schedule[tr("col_days_at_risk", risk="p80")][0] == pytest.approx((a.end_s - a.start_s) / SECONDS_PER_DAY)
    costs = table(at, tr("col_fleet_cost", risk="p80"))
    assert costs[tr("col_fleet_cost", risk="p80")][0] == pytest.approx(a.cost_usd)
    assert costs[tr("col_cost_p90_usd")][0] == pytest.approx(a.banded(a.cost_usd)[1])
    timeline = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "chart_fleet_owned" in c.proto.id]
    assert [t["y"] for t in timeline[0]["data"]] == [["chat"]]
    if tr is ZH:  # the page's language throughout
        left = [(text, english_sentences(text)) for text in texts if english_sentences(text)]
        assert not left, left[:5]


@pytest.mark.parametrize("tr", [EN, ZH])
def test_an_infeasible_fleet_is_worded_as_the_portfolios_answer(tr):
    """A deadline no fleet meets: the page says the API's answer as the portfolio view says its own
    (``infeasible_text`` of the planner's record), and shows no totals."""
    with pytest.raises(InfeasiblePlan) as caught:
        api_fleet(deadline_days=0.1)
    at = fleet_page(tr, job={**JOB, "deadline_days": 0.1})
    request = request_for(get_preset("llama3-8b"), training_tokens=2e12, deadline_days=0.1)
    assert infeasible_text(tr, Infeasible.of(caught.value), request) in [w.value for w in at.warning]
    assert not at.metric and not at.get("plotly_chart")


def test_under_buy_the_fleet_rents_at_the_tables_rent_not_the_amortised_price():
    """Buy pricing turns the request's prices into owned rates; the fleet still rents at the GPU
    table's $/h (``GpuChoice.rents``), said as the user's price, with the API's totals."""
    at = fleet_page(EN, pricing="bought", prices={"h100-sxm": 3.0})
    solution = api_fleet(rents={"h100-sxm": 3.0})
    assert solution.prices["h100-sxm"].basis is PriceBasis.USER
    basis = EN("fleet_rate", gpu="h100-sxm", rate=3.0, basis=EN("price_basis_user"))
    assert EN("fleet_rates", what=EN("fleet_rate_rent"), rates=basis) in [c.value for c in at.caption]
    label = EN("fleet_total", option=EN("fleet_option_rent_only"), risk="p80")
    assert {m.label: m.value for m in at.metric}[label] == money(solution.rent_only.total_cost_usd)


def test_the_view_asks_for_types_to_buy_before_it_solves():
    at = run_app(portfolio_mode=True)
    at.button(key="add_job").click().run()
    at.radio(key="portfolio_answer").set_value("fleet").run()
    assert EN("fleet_pick_buy") in [i.value for i in at.info] and not at.metric


def test_fleet_requests_run_every_job_on_every_type_at_one_price_basis():
    """Each job may run on each allowed type and each type to buy, with no count, at the ask's rents
    and price kind: its own stored prices replaced (a job added under Buy carried owned rates)."""
    stored = request_for(price_overrides={"h100-sxm": 1.23}, gpus={"h100-sxm": 8})
    ask = FleetAsk(buy=(("b200", 40_000.0),), horizon_days=30.0, num_slots=4, gpus=("h100-sxm",),
                   rents=(("h100-sxm", 2.5),), price_kind="spot", tco=TcoAssumptions())  # fmt: skip
    (request,) = fleet_requests({"a": stored}, ask).values()
    assert request.gpus == {"h100-sxm": None, "b200": None}
    assert (request.price_overrides, request.price_kind) == ({"h100-sxm": 2.5}, "spot")


def test_the_options_chart_draws_each_total_with_its_80_percent_band():
    solution = api_fleet()
    options: list[tuple[str, FleetPlan]] = [(option.key, p) for option, p in solution.options()]
    (bars,) = options_figure(options, EN, "p80").data
    for i, (_, p) in enumerate(options):
        lo, hi = p.total_band()
        assert bars.y[i] == pytest.approx(p.total_cost_usd)
        assert bars.error_y.array[i] == pytest.approx(hi - p.total_cost_usd)
        assert bars.error_y.arrayminus[i] == pytest.approx(p.total_cost_usd - lo)


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_fleet_says_the_clis_price_warnings_in_the_pages_language(tr):
    """The typed warnings ``with_prices`` gives (planner/search/held_warnings.py): the mixed answer
    renting MI325X at one provider's rate, and H100 reserved-1y above its on-demand median; each
    worded as the portfolio words them (``held_price_text``)."""
    gpus = ["h100-sxm", "mi325x"]
    at = fleet_page(tr, job={"preset": "llama3-8b"}, gpus=gpus, fleet_horizon_days=365.0)
    request = request_for(get_preset("llama3-8b"), gpus=dict.fromkeys(gpus))
    (warning,) = plan_fleet({"chat": request}, {"h100-sxm": H100_USD}, 365.0, settings=DEFAULT_SETTINGS).price_warnings
    assert isinstance(warning, EstimatedHeldPrice) and warning.price.gpu == "mi325x"
    assert held_price_text(tr, warning, "price_fix_table") in [w.value for w in at.warning]
    at = fleet_page(tr, job={"preset": "llama3-8b"}, gpus=["h100-sxm"], pricing="reserved_1y")
    reserved = request_for(get_preset("llama3-8b"), gpus={"h100-sxm": None}, price_kind="reserved-1y")
    solution = plan_fleet({"chat": reserved}, {"h100-sxm": H100_USD}, HORIZON_DAYS, settings=DEFAULT_SETTINGS)
    (dearer,) = solution.price_warnings
    assert isinstance(dearer, DearerHeldPrice) and held_price_text(tr, dearer, "price_fix_table") in [
        w.value for w in at.warning
    ]
    label = tr("fleet_total", option=tr("fleet_option_reserve_only"), risk="p80")  # no rent under a reserved kind
    assert {m.label: m.value for m in at.metric}[label] == money(solution.rent_only.total_cost_usd)


def test_under_spot_the_fleet_buys_a_type_no_spot_offer_rents_as_the_cli_does(tmp_path):
    """app50: under spot (or reserved) pricing the sidebar left out the types without such an offer,
    their purchase prices too, so the page could not buy B200 where `trainplan fleet` buys it."""
    from support.cli import call

    jobs = tmp_path / "fleet.toml"
    jobs.write_text(
        'horizon_days = 365\nbuy = ["b200"]\nrented = ["h100-sxm"]\nprice_kind = "spot"\n'
        '[[jobs]]\nname = "chat"\nmodel = "llama3-8b"\ntokens = 2e12\nseq_len = 2048\ndeadline_days = 120\n'
    )
    code, out, err = call("fleet", str(jobs), "--json")
    assert code == 0, err
    cli_mixed = json.loads(out)["mixed"]
    assert cli_mixed["purchased"] == {
        "b200": 16
    }  # the case: the CLI buys a type spot does not rent (the page: the same job at the page's 2048 tokens)
    at = fleet_page(EN, buy=("b200",), gpus=["h100-sxm", "b200"], pricing="spot", fleet_horizon_days=365.0)
    assert not at.error, [e.value for e in at.error]
    assert at.multiselect(key="fleet_buy").value == ["b200"]
    bought = EN("fleet_bought", gpus="16 × b200", outlay=money(cli_mixed["purchase_usd"]), owned=16,
                busy=cli_mixed["owned_busy_fraction"], days=365)  # fmt: skip
    assert bought in page_texts(at), bought


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_portfolios_title_names_the_answer_picked(tr):
    """app50: "Portfolio: several jobs on one inventory" stood over the rent-vs-buy answer."""
    at = fleet_page(tr)
    titles = [h.value for h in at.subheader]
    assert tr("portfolio_fleet") in titles and tr("portfolio") not in titles
    assert tr("portfolio_fleet_help") in [c.value for c in at.caption]
    at.radio(key="portfolio_answer").set_value("on_inventory").run()
    titles = [h.value for h in at.subheader]
    assert tr("portfolio") in titles and tr("portfolio_fleet") not in titles


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_gpu_tables_counts_can_be_the_gpus_owned(tr):
    """Trial s51 H1: fleet holds GPUs already owned (a jobs file's [inventory]); the page ignored the
    GPU table's counts. Ticked, they are the GPUs owned, and the options are named as the CLI names them."""
    owned = {"h100-sxm": 16}
    request = request_for(get_preset("llama3-8b"), training_tokens=2e12, deadline_days=120.0)
    solution = plan_fleet({"chat": request}, {"h100-sxm": H100_USD}, HORIZON_DAYS, settings=DEFAULT_SETTINGS,
                          owned=owned)  # fmt: skip
    at = fleet_page(tr, inventory={"h100-sxm": 16})
    assert tr("fleet_counts_ignored", gpus="h100-sxm ≤ 16") in page_texts(at)
    at.checkbox(key="fleet_owned").check().run()
    assert not at.exception, [e.value for e in at.exception]
    assert tr("fleet_counts_owned", gpus="h100-sxm ≤ 16") in page_texts(at)
    metrics = {m.label: m.value for m in at.metric}
    for option, p in solution.options():
        assert solution.names_owned(option) is (option.key != "mixed")
        key = f"fleet_option_{'owned_' if solution.names_owned(option) else ''}{option.key}"
        assert metrics[tr("fleet_total", option=tr(key), risk="p80")] == money(p.total_cost_usd)


def test_a_job_past_its_deadline_at_its_bands_slow_end_is_said_in_both_languages():
    """Trial s51 M5: the CLI's warning, worded by the fleet and portfolio views."""
    from planner.search.late_band import LateAtBandEnd
    from ui.portfolio_view import late_text

    late = LateAtBandEnd("pretrain-70b", 9.3, 332.3, 330.0)
    assert late_text(EN, late).rstrip(".") == late.words().replace("-", "\\-")  # plain(): no markdown list
    chinese = late_text(ZH, late)
    assert "332.3" in chinese and "330" in chinese and not english_sentences(chinese)


def test_the_fleet_ask_carries_the_jobs_release_days_to_the_answer():
    """review51 M2: start_after_days (trial s51 H4) reaches the page's fleet answer."""
    from ui.app_fleet import solve_fleet

    request = request_for(get_preset("llama3-8b"), training_tokens=2e11, deadline_days=120.0)
    ask = FleetAsk(buy=(("h100-sxm", H100_USD),), horizon_days=HORIZON_DAYS, num_slots=12, gpus=("h100-sxm",),
                   release_days=(("chat", 30.0),))  # fmt: skip
    outcome = solve_fleet({"chat": request}, ask, settings=DEFAULT_SETTINGS, catalog=CATALOG)
    assert outcome.solution is not None and dict(outcome.solution.release_days) == {"chat": 30.0}
    (job,) = [a for a in outcome.solution.mixed.assignments if a.job == "chat"]
    assert job.start_s >= 30.0 * SECONDS_PER_DAY


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_break_even_line_gives_the_rent_below_which_renting_wins_and_the_offers(tr):
    """fleetmore51 (trial s51 M4) on the page: beside where buying pays off, the break-even rent r* =
    F_g / (u H) + v_g at the mixed option's busy share (``FleetSolution.break_even_rents``) and the
    catalog's on-demand offers (``rent_offers``), the CLI's figures, in the page's language."""
    solution = api_fleet()
    (b,) = solution.break_even
    (rent,) = solution.break_even_rents()
    hours = HORIZON_DAYS * 24
    assert rent.usd_per_gpu_hour == pytest.approx(
        b.owned_fixed_usd / (rent.busy_fraction * hours) + b.owned_usd_per_busy_hour
    )  # by hand, and below the rent: the mixed answer buys
    assert rent.usd_per_gpu_hour < b.rent_usd_per_gpu_hour
    offers = solution.rent_offers["h100-sxm"]
    assert offers.count > 1 and offers.low_usd_per_gpu_hour < offers.high_usd_per_gpu_hour
    at = fleet_page(tr)
    (line,) = [t.removeprefix("- ") for t in page_texts(at) if t.startswith("- h100-sxm")]
    said = tr("fleet_break_even_rent", rent=rent.usd_per_gpu_hour, option=tr("fleet_option_mixed"),
              busy=rent.busy_fraction)  # fmt: skip
    span = tr("fleet_offers", count=offers.count, kind=tr.kind("on-demand"), low=offers.low_usd_per_gpu_hour,
              high=offers.high_usd_per_gpu_hour)  # fmt: skip
    assert said in line and span in line, line
    assert f"${rent.usd_per_gpu_hour:,.2f}" in said and f"{rent.busy_fraction:.0%}" in said
    if tr is ZH:
        assert not english_sentences(line), line


def test_the_break_even_rent_is_the_clis_for_the_same_job(tmp_path):
    """``trainplan fleet FILE --json`` for the page's job: the break-even rent, its busy share and
    option, and the offers the page says (``api_fleet``'s, above)."""
    from support.cli import call

    jobs = tmp_path / "fleet.toml"
    jobs.write_text(
        f'horizon_days = {HORIZON_DAYS}\nbuy = ["h100-sxm"]\n[[jobs]]\nname = "chat"\nmodel = "llama3-8b"\n'
        "tokens = 2e12\nseq_len = 2048\ndeadline_days = 120\n"
    )
    code, out, err = call("fleet", str(jobs), "--json")
    assert code == 0, err
    (cli,) = json.loads(out)["break_even"]
    solution = api_fleet()
    (rent,) = solution.break_even_rents()
    offers = solution.rent_offers["h100-sxm"]
    assert cli["break_even_rent_usd_per_gpu_hour"] == pytest.approx(rent.usd_per_gpu_hour)
    assert cli["break_even_rent_busy_fraction"] == pytest.approx(rent.busy_fraction)
    assert cli["break_even_rent_option"] == rent.option.json_key == "mixed"
    assert (cli["rent_offers"]["count"], cli["rent_offers"]["low_usd_per_gpu_hour"]) == (
        offers.count,
        offers.low_usd_per_gpu_hour,
    )


@pytest.mark.parametrize("tr", [EN, ZH])
def test_a_type_no_option_buys_and_one_listed_offer_are_said(tr):
    """``break_even_rents`` gives no rent for a type neither mixed nor buy only buys; a catalog of
    one offer has no range (the CLI's "no option buys it" and "the catalog's one ... offer")."""
    from planner.catalog.prices import OffersRange
    from ui.fleet_view import break_even_rent_text, offers_text

    solution = api_fleet()
    assert break_even_rent_text(tr, solution, None) == tr("fleet_no_option_buys")
    one = offers_text(tr, OffersRange("spot", 1, 2.5, 2.5))
    assert one == tr("fleet_offer_one", kind=tr.kind("spot"), low=2.5) and "$2.50" in one
    assert offers_text(tr, None) == ""
    if tr is ZH:
        assert not english_sentences(one) and not english_sentences(tr("fleet_no_option_buys"))


@pytest.mark.parametrize("tr", [EN, ZH])
def test_a_missing_rent_only_option_says_why_in_the_pages_language(tr):
    """chain52: the page dropped a rent-only option that a chain made late without a word; the CLI
    says why (ui/render_fleet.py rent_only_late_words)."""
    from planner.search.late_band import LateOnRentRows
    from ui.fleet_view import rent_only_late_text

    late = LateOnRentRows("chat-70b", ("chat-8b",), 64.6, 60.0, "deadline_days")
    text = rent_only_late_text(tr, late)
    text = text.replace("\\-", "-")  # plain(): no markdown list
    assert "chat-70b" in text and "chat-8b" in text and "64.6" in text and "60" in text and "deadline_days" in text
    assert tr is EN or not english_sentences(text.replace("deadline_days", ""))


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_slot_caption_shows_only_where_an_option_holds_a_job(tr):
    """app53 M7: "the solver starts jobs on held GPUs at one of 12 slots" stood under an answer whose
    options rented every job; in 中文 a release day read "已释放" (freed, as of GPUs)."""
    from dataclasses import replace

    from planner.search.fleet_plan import Holding
    from ui.fleet_view import holds_a_job

    solution = api_fleet()
    assert holds_a_job(solution)  # the mixed answer buys 32 H100 for the job
    rented = replace(
        solution.mixed, assignments=tuple(replace(a, holding=Holding.RENTED) for a in solution.mixed.assignments)
    )
    assert not holds_a_job(replace(solution, mixed=rented, buy_only=None))
    slots = tr("fleet_slots", slots=12, days=HORIZON_DAYS / 12).split("12")[0]
    assert any(slots in text for text in page_texts(fleet_page(tr, fleet_num_slots=12)))
    assert "已释放" not in ZH("fleet_slots", slots=12, days=10.0) and "最早开始日" in ZH(
        "fleet_slots", slots=12, days=10.0
    )
