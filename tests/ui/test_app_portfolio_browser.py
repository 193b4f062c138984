"""Trial s44 app L6: the portfolio's jobs table ran past its page ("days, 80 % b..." cut off behind a
horizontal scroll bar) at 1500 px. As Chromium draws them, the schedule and cost tables fit their
page in both languages, and (app53 M5) the job controls' words are whole at 1,280 and 800 px (the
helpers of tests/ui/test_app_browser.py, the server of tests/ui/conftest.py)."""

from __future__ import annotations

import pytest
from test_app_browser import CHROMIUM, CHROMIUM_ARGS, EN, ZH, Page

pytestmark = pytest.mark.browser

# Each table of the main area (the jobs, the schedule, the costs; the sidebar's GPU table scrolls
# by design): the width of what its scroll area (Glide's scroller) holds and of what shows.
WIDTHS = """() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stDataFrame]')].map(table => {
  const scroller = table.querySelector('.dvn-scroller');
  return [table.innerText.split('\\n')[0], scroller && scroller.scrollWidth, scroller && scroller.clientWidth];
})"""


# The job controls' words the page cuts with an ellipsis or behind the box's edge: a button's
# label ("Add …", "Rem…" at 800 px) or a box's value ("10.0(" at 1,280 px; app53 M5).
CONTROLS_CUT = """() => [...document.querySelectorAll(
    "[data-testid=stMain] [data-testid=stButton] [data-testid=stMarkdownContainer], [data-testid=stMain] input")]
  .filter(e => e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0)
  .map(e => e.value || e.textContent)"""


def add_job_after(app: Page, first: str, start_after_days: str) -> None:
    """Add the sidebar's job again, after ``first``; then type a start day into the emptied box."""
    app.page.get_by_label(EN("job_after"), exact=True).click()
    app.page.get_by_role("option", name=first, exact=True).click()
    app.page.keyboard.press("Escape")
    app.page.wait_for_timeout(1500)
    app.page.get_by_role("button", name=EN("add_job")).click()
    app.page.wait_for_function(  # the name box offers the next name once the job is in
        "() => [...document.querySelectorAll('input')].some(box => box.value == 'job-3')", timeout=120_000
    )
    app.number(EN("job_start_after"), start_after_days)


def test_the_portfolio_tables_and_controls_fit_the_page_at_1280_and_800_px(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            app = Page(browser.new_page(viewport={"width": 1280, "height": 1100}), tmp_path)
            app.open(app_url)
            app.radio(EN.option("bought"))  # as in the trial: Buy, one job
            app.page.get_by_text(EN("portfolio_mode")).click()
            app.page.get_by_role("button", name=EN("add_job")).click()
            for tr in (EN, ZH):
                if tr is ZH:
                    app.page.get_by_text("中文", exact=True).click()
                app.wait_text(tr("jobs_cost"), 120, exact=True)
                app.page.wait_for_timeout(2000)  # the rerun's skeletons replaced by the tables
                widths = app.page.evaluate(WIDTHS)
                assert all(held is not None and held <= shown for _, held, shown in widths), (tr.lang, widths)
                assert len(widths) == 3, widths  # the jobs, the schedule and the costs
                app.check(f"portfolio-{tr.lang}")
            app.page.get_by_text("English", exact=True).click()
            app.wait_text(EN("jobs_cost"), 120, exact=True)
            add_job_after(app, "job-1", "10")  # the trial's second job, its start day typed in
            for width, tr in ((1280, EN), (800, EN), (800, ZH)):
                app.page.set_viewport_size({"width": width, "height": 1100})
                if tr is ZH:
                    app.page.get_by_text("中文", exact=True).click()
                app.wait_text(tr("jobs_cost"), 120, exact=True)
                app.page.wait_for_timeout(2000)  # the rerun's skeletons replaced by the controls
                assert app.page.evaluate(CONTROLS_CUT) == [], (width, tr.lang)
                app.check(f"portfolio-controls-{width}-{tr.lang}")
        finally:
            browser.close()


# Each label of the portfolio's Gantt chart: its text, its SVG transform and its box.
BAR_TEXTS = """() => [...document.querySelectorAll('.st-key-chart_portfolio .bartext')].map(t => {
  const box = t.getBoundingClientRect();
  return [t.textContent, t.getAttribute('transform') || '', box.width, box.height];
})"""


def test_the_gantt_labels_stay_horizontal_and_whole_on_a_short_bar(app_url, tmp_path):
    """App trial s45 L5: a 1.5-day job beside a 23-day one had its "4x mi325x" rotated into its sliver
    of a bar, unreadable; now every label is level and at full size, inside its bar or after it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            app = Page(browser.new_page(viewport={"width": 1500, "height": 1100}), tmp_path)
            app.open(app_url)
            app.page.get_by_text(EN("portfolio_mode")).click()
            app.page.get_by_role("button", name=EN("add_job")).click()  # llama3-8b, ~23 days
            app.wait_text(EN("jobs_cost"), 120, exact=True)
            app.select(EN("preset"), "llama3.2-1b")  # ~1 day
            app.page.get_by_role("button", name=EN("add_job")).click()
            app.scroll_to("stPlotlyChart")
            app.page.wait_for_function(
                "() => document.querySelectorAll('.st-key-chart_portfolio .bartext').length == 2", timeout=120_000
            )
            labels = app.page.evaluate(BAR_TEXTS)
            app.check("portfolio-gantt")
            assert len(labels) == 2, labels
            for text, transform, width, height in labels:
                assert text.endswith("x mi325x"), labels  # the GPUs of each job
                assert "rotate" not in transform and "scale" not in transform, labels
                assert width > height and height >= 10, labels  # level and whole
        finally:
            browser.close()
