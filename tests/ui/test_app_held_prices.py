"""App49: the portfolio view shows the price warnings ``trainplan portfolio`` prints (a job rented on
one provider's rate, a price kind above on-demand), in the page's language, from the planner's
records (planner/search/held_warnings.py) as the CLI's words are."""

from __future__ import annotations

import pytest
from support.app import EN, ZH, request_for, run_app

from planner.catalog.hardware import load_catalog
from planner.catalog.prices import PRICE_BASIS_WORDS, PriceBasis
from planner.model.settings import DEFAULT_SETTINGS
from planner.search.fleet_plan import Holding
from planner.search.held_warnings import DearerHeldPrice, EstimatedHeldPrice, ManyJobAnswer
from ui.app_portfolio import solve_jobs
from ui.held_price_texts import held_price_text
from ui.messages import dearer_text

CATALOG = load_catalog()


def portfolio_page(tr, gpu: str, **state):
    """The portfolio page with one job, "small", added on ``gpu`` (rented: it has no count)."""
    at = run_app(lang=tr.lang, portfolio_mode=True, gpus=[gpu], **state)
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def warnings_of(gpu: str, **changes):
    """What the app's portfolio solve gives for the page's job: its prices' warnings."""
    request = request_for(gpus={gpu: None}, **changes)
    outcome = solve_jobs(
        {"small": request}, {gpu: 4096}, objective="cost", horizon_days=None, num_slots=1,
        settings=DEFAULT_SETTINGS, rented=frozenset({gpu}),
    )  # fmt: skip
    return outcome.price_warnings


@pytest.mark.parametrize("tr", [EN, ZH])
def test_a_portfolio_rented_on_one_providers_rate_is_warned_in_the_pages_language(tr):
    """Trial s48 H1's case (MI325X at TensorWave's one rate): the CLI warned, the page did not."""
    (warning,) = warnings_of("mi325x")
    assert isinstance(warning, EstimatedHeldPrice) and warning.price.basis is PriceBasis.ONE_OFFER
    assert (warning.answer, warning.holding, warning.jobs) == (ManyJobAnswer.PORTFOLIO, Holding.RENTED, ("small",))
    text = held_price_text(tr, warning, "price_fix_job")
    rate = f"${CATALOG.gpu('mi325x').price_per_gpu_hour_usd:,.2f}"
    if tr is EN:
        assert text.startswith(
            f"The portfolio rents mi325x at {rate}/GPU-h ({PRICE_BASIS_WORDS[PriceBasis.ONE_OFFER]})"
        )
    else:  # the page's language throughout: no English words but the GPU's and the job's names
        assert text.startswith(f"该组合以每 GPU 小时 {rate}（{ZH('price_basis_one_offer')}）租用 mi325x，用于 small")
        assert "rents" not in text and "provider" not in text
    at = portfolio_page(tr, "mi325x")
    assert text in [w.value for w in at.warning]


@pytest.mark.parametrize("tr", [EN, ZH])
def test_a_portfolio_reserved_above_on_demand_is_warned_as_the_card_warns(tr):
    """Trial s48 M4: H100 reserved-1y above its on-demand median, said as the single-job card says
    it (``dearer_text``); 3-year terms are cheaper than on-demand, and nothing is said."""
    (warning,) = warnings_of("h100-sxm", price_kind="reserved-1y")
    assert isinstance(warning, DearerHeldPrice) and warning.gpu == "h100-sxm"
    assert held_price_text(tr, warning, "price_fix_job") == dearer_text(tr, warning.dearer, "price_fix_job")
    at = portfolio_page(tr, "h100-sxm", pricing="reserved_1y")
    text = dearer_text(tr, warning.dearer, "price_fix_job")
    assert text in [w.value for w in at.warning]
    # app50: a portfolio's job keeps the prices it was added with: the fix says to update the jobs,
    # by the button's own name; the provider "market index" in the page's language
    assert text.endswith(tr("price_fix_job", button=tr("update_job"))) and tr("update_job") in text
    assert "market index" in warning.dearer.providers
    assert tr.provider("market index") in text
    if tr is ZH:
        assert "market index" not in text and "市场指数" in text
    assert warnings_of("h100-sxm", price_kind="reserved-3y") == ()
