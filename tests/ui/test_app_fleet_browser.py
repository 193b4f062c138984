"""Fleet49: the portfolio's rent-vs-buy view as Chromium draws it, in both languages: no exception or
console error, every metric whole, both charts drawn (the options' totals with their error bars and
the owned jobs' timeline); screenshots kept (the helpers of tests/ui/test_app_browser.py, the server of
tests/ui/conftest.py)."""

from __future__ import annotations

import pytest
from test_app_browser import CHROMIUM, CHROMIUM_ARGS, CUT_OFF, EN, ZH, Page

from planner.catalog.hardware import load_catalog
from ui.app_core import money

pytestmark = pytest.mark.browser

CATALOG = load_catalog()
# The default job (llama3-8b, about 23 days on 8 MI325X) over 30 days: the mixed answer buys MI325X.
BUY = ("h100-sxm", "mi325x")
# Each error bar Plotly drew on the options' chart, and the owned jobs' bars.
ERROR_BARS = "() => document.querySelectorAll('.st-key-chart_fleet_options .errorbar').length"
OWNED_BARS = "() => document.querySelectorAll('.st-key-chart_fleet_owned .bars .point').length"


def pick(app: Page, label: str, option: str) -> None:
    """One more option of the multiselect labelled ``label`` (typing filters its list)."""
    app.page.get_by_label(label, exact=True).click()
    app.page.keyboard.type(option.split(" ")[0])
    app.page.get_by_role("option", name=option, exact=True).click()
    app.page.keyboard.press("Escape")


def test_the_fleet_view_draws_whole_in_both_languages(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            app = Page(browser.new_page(viewport={"width": 1400, "height": 2600}), tmp_path)
            app.open(app_url)
            app.page.get_by_text(EN("portfolio_mode")).click()
            app.page.get_by_role("button", name=EN("add_job")).click()
            app.wait_text(EN("jobs_cost"), 180, exact=True)
            app.radio(EN.option("fleet"))
            app.wait_text(EN("fleet_pick_buy"), 60)
            app.number(EN("fleet_horizon_days"), "30")
            for gpu in BUY:
                price = money(CATALOG.gpu(gpu).purchase_price_usd)
                pick(app, EN("fleet_buy"), EN("fleet_buy_option", gpu=gpu, price=price))
            for tr in (EN, ZH):
                if tr is ZH:
                    app.page.get_by_text("中文", exact=True).click()
                mixed = tr("fleet_total", option=tr("fleet_option_mixed"), risk="p80")
                app.wait_text(mixed, 180, exact=True)
                app.page.wait_for_timeout(2000)  # the rerun's skeletons replaced by the values and charts
                assert app.page.get_by_test_id("stMetricValue").count() == 3  # the three options
                assert app.page.evaluate(CUT_OFF) == [], tr.lang
                app.page.wait_for_function(f"() => ({ERROR_BARS})() == 3", timeout=60_000)
                assert app.page.evaluate(OWNED_BARS) == 1  # the one job, on bought MI325X
                app.page.get_by_text(tr("fleet_break_even_title")).first.wait_for(timeout=10_000)
                app.check(f"fleet-{tr.lang}")
        finally:
            browser.close()
