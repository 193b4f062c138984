"""The run-loss figures in a real headless Chromium (the helpers of tests/ui/test_app_browser.py, the
server of tests/ui/conftest.py): typed into the collapsed sidebar expander, a figure changes the card's
goodput, the card says it, and the downloaded plan.json records it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_app_browser import CHROMIUM, CHROMIUM_ARGS, EN, Page

from planner.model.run_loss_inputs import shown_figure

pytestmark = pytest.mark.browser


def test_a_failure_rate_reaches_the_card_and_the_plan_file(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            app = Page(browser.new_page(viewport={"width": 1500, "height": 1100}, accept_downloads=True), tmp_path)
            page = app.page
            app.open(app_url)
            page.get_by_text(EN("run_losses"), exact=True).click()  # the expander starts collapsed
            app.number(EN("loss_failure_rate_x"), "4")
            app.wait_text(
                EN("card_run_losses", words=EN("loss_words_failure_rate_x", value=shown_figure("failure_rate_x", 4.0))),
                120,
                exact=True,
            )
            app.check("run-losses")
            app.tab(EN("tab_downloads"))
            with page.expect_download() as download:
                page.get_by_role("button", name=EN("download_plan")).first.click()
            plan = json.loads(Path(download.value.path()).read_text())
            assert plan["run_losses"]["failure_rate_x"] == 4 and plan["run_losses"]["data_stall_pct"] is None
        finally:
            browser.close()
