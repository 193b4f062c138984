"""fleetmore51 (trial s51 M1) on the page: a portfolio with a horizon and GPUs held shows, beside the
idle cost, what holding the owned GPUs idle to the horizon costs, their busy share of it and the bill
to it (``HorizonHolding``), the CLI's figures, in English and Chinese."""

from __future__ import annotations

import json

import pytest
from support.app import EN, ZH, card, english_sentences, request_for, run_app
from support.cli import call

from planner.api.explore import plan_portfolio
from planner.api.portfolio import horizon_holding, job_figures, portfolio_bands
from planner.catalog.models import get_preset
from planner.model.settings import DEFAULT_SETTINGS
from ui.portfolio_view import money_and_band

HORIZON_DAYS = 1.0  # the jobs take about 0.12 days: a busy share with a band
INVENTORY = {"h100-sxm": 8}


def portfolio_page(tr, horizon_days=HORIZON_DAYS, **state):
    """Two jobs, "small" (gpt3-125m) and "larger" (gpt3-350m), on 8 H100 held under Buy pricing."""
    at = run_app(lang=tr.lang, portfolio_mode=True, gpus=["h100-sxm"], inventory=INVENTORY, pricing="bought",
                 horizon_days=horizon_days, **state)  # fmt: skip
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    at.sidebar.selectbox(key="preset").set_value("gpt3-350m")
    at.text_input(key="job_name").set_value("larger")
    at.button(key="add_job").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def api_holding():
    """The API's answer for the page's jobs: ``horizon_holding`` as ``trainplan portfolio`` computes it."""
    requests = {
        "small": request_for(gpus=INVENTORY),
        "larger": request_for(model=get_preset("gpt3-350m"), gpus=INVENTORY),
    }
    solution = plan_portfolio(requests, INVENTORY, horizon_days=HORIZON_DAYS, settings=DEFAULT_SETTINGS)
    figures = [job_figures(a) for a in solution.assignments]
    return solution, horizon_holding(solution, figures, portfolio_bands(solution, figures))


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_holding_busy_share_and_bill_to_the_horizon_are_the_apis(tr):
    solution, held = api_holding()
    assert held is not None and held.holding_usd > 0 and held.holding_band_usd is not None  # the case
    at = portfolio_page(tr)
    metrics = {m.label: (m.value, m.delta) for m in at.metric}
    assert metrics[tr("idle_cost")][0] == money_and_band(tr, "card_band", solution.idle_cost_usd, None)[0]
    day = dict(day=HORIZON_DAYS)
    holding = money_and_band(tr, "card_band", held.holding_usd, held.holding_band_usd)
    assert metrics[tr("holding_to_horizon", **day)] == holding and holding[1] is not None
    busy, band = metrics[tr("owned_busy_to_horizon", **day)]
    assert band, "the case: a band of the busy share"
    assert busy == f"{held.owned_busy_fraction:.0%}"
    low, high = held.owned_busy_fraction_band
    assert band == tr("card_band", lo=f"{low:.0%}", hi=f"{high:.0%}")
    # the bill to the horizon: what the portfolio bills, plus the holding after the last job ends
    assert held.billed_usd == pytest.approx(solution.billed_usd + held.holding_usd)
    assert metrics[tr("billed_to_horizon", **day)][0] == money_and_band(tr, "card_band", held.billed_usd, None)[0]
    if tr is ZH:
        labels = [tr(k, **day) for k in ("holding_to_horizon", "owned_busy_to_horizon", "billed_to_horizon")]
        helps = [tr("holding_to_horizon_help"), tr("billed_to_horizon_help")]
        assert not [t for t in labels + helps if english_sentences(t)]


def test_without_a_horizon_or_a_held_gpu_no_holding_is_shown():
    at = portfolio_page(EN, horizon_days=0.0)  # 0: none
    assert EN("idle_cost") in card(at)
    assert not [label for label in card(at) if label.startswith(("Owned GPUs held idle", "Billed to day"))]
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory=INVENTORY, horizon_days=HORIZON_DAYS)  # rented
    at.button(key="add_job").click().run()
    assert not at.exception
    assert EN("holding_to_horizon", day=HORIZON_DAYS) not in card(at) and EN("jobs_cost") in card(at)


def test_the_cli_gives_the_same_holding_for_the_same_jobs(tmp_path):
    """``trainplan portfolio FILE --json`` for the page's two jobs on 8 owned H100: the figures the
    page shows (the API's, above)."""
    jobs = tmp_path / "p.toml"
    lines = [f"horizon_days = {HORIZON_DAYS}", "[inventory]", "h100-sxm = 8"]
    for name, model in (("small", "gpt3-125m"), ("larger", "gpt3-350m")):
        tokens = 20 * get_preset(model).num_params()  # the page's default tokens
        lines += ["[[jobs]]", f'name = "{name}"', f'model = "{model}"', f"tokens = {tokens}", "seq_len = 2048"]
    jobs.write_text("\n".join(lines) + "\n")
    code, out, err = call("portfolio", str(jobs), "--json")
    assert code == 0, err
    cli = json.loads(out)
    _, held = api_holding()
    assert cli["holding_to_horizon_usd"] == pytest.approx(held.holding_usd)
    assert cli["holding_to_horizon_band_usd"] == pytest.approx(list(held.holding_band_usd))
    assert cli["owned_busy_fraction"] == pytest.approx(held.owned_busy_fraction)
    assert cli["billed_to_horizon_usd"] == pytest.approx(held.billed_usd)
