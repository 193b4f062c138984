"""Number boxes in a real headless Chromium (the helpers of tests/ui/test_app_browser.py, the server of
tests/ui/conftest.py): emptied, or given a number out of range, a box shows its last value again
and the page says so in words. Before, an emptied box took its minimum unsaid, and the browser
itself refused an out-of-range number: the typed number stayed in the box under a red outline, the
server never saw it, and the page went on showing the old value's answer."""

from __future__ import annotations

import pytest
from test_app_browser import CHROMIUM, CHROMIUM_ARGS, EN, Page

from planner.limits import MAX_GPUS
from planner.search.space import DEFAULT_MAX_GPUS

pytestmark = pytest.mark.browser

KEPT = f"{DEFAULT_MAX_GPUS:,}"


def refused(app: Page, label_key: str, typed: str, warning: str, kept: str) -> None:
    """Type ``typed`` into the box and press Enter: ``warning`` under it, the box back at ``kept``,
    no red outline, and the page's figures as they were."""
    box = app.page.get_by_label(EN(label_key), exact=True)
    app.page.get_by_test_id("stMetricValue").first.wait_for(timeout=60_000)  # drawn after the card's title
    app.page.get_by_test_id("stStatusWidget").first.wait_for(state="hidden", timeout=60_000)  # no run going
    figures = app.page.get_by_test_id("stMetricValue").all_inner_texts()
    box.fill(typed)
    box.press("Enter")
    app.wait_text(warning, 60, exact=True)
    assert box.input_value() == kept and box.get_attribute("aria-invalid") != "true"
    assert app.page.get_by_test_id("stMetricValue").all_inner_texts() == figures


def test_a_refused_number_is_said_in_words(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            app = Page(browser.new_page(viewport={"width": 1500, "height": 1100}), tmp_path)
            app.open(app_url)
            assert app.page.get_by_label(EN("max_gpus"), exact=True).input_value() == str(DEFAULT_MAX_GPUS)
            emptied = EN("number_emptied", label=EN("max_gpus"), value=KEPT)
            refused(app, "max_gpus", "", emptied, str(DEFAULT_MAX_GPUS))
            high = EN("number_range", low="1", high=f"{MAX_GPUS:,}")
            words = dict(label=EN("max_gpus"), range=high, kept=KEPT)
            for typed in ("0", str(MAX_GPUS + 1)):
                warning = EN("number_out_of_range", **words, value=f"{int(typed):,}")
                refused(app, "max_gpus", typed, warning, str(DEFAULT_MAX_GPUS))
            app.check("number-box-sidebar")

            app.tab(EN("tab_explorer"))  # a box whose on_change keeps its value (explorer.KEPT)
            app.page.get_by_text(EN("ex_fits")).first.wait_for(timeout=60_000)
            micro = app.page.get_by_label(EN("ex_micro_batch"), exact=True).input_value()
            refused(app, "ex_micro_batch", "", EN("number_emptied", label=EN("ex_micro_batch"), value=micro), micro)
            words = dict(label=EN("ex_micro_batch"), range=EN("number_range_low", low="1"), value="0", kept=micro)
            refused(app, "ex_micro_batch", "0", EN("number_out_of_range", **words), micro)
            tp = dict(label=EN("ex_tp"), range=high, value="0", kept="1")
            refused(app, "ex_tp", "0", EN("number_out_of_range", **tp), "1")
            warning = app.page.get_by_text(EN("number_out_of_range", **tp), exact=True).bounding_box()
            box = app.page.get_by_label(EN("ex_tp"), exact=True).bounding_box()
            assert warning and box and warning["width"] > 3 * box["width"]  # under the row, not in its sixth
            accum = app.page.get_by_label(EN("ex_grad_accum"), exact=True)
            accum.fill(str(int(accum.input_value()) + 1))
            accum.press("Enter")  # a later run: the warning gone, the value still kept
            app.page.get_by_text(EN("number_out_of_range", **words)).wait_for(state="detached", timeout=60_000)
            assert app.page.get_by_label(EN("ex_micro_batch"), exact=True).input_value() == micro
            app.check("number-box-explorer")
        finally:
            browser.close()
