"""Issue 30: the explorer's memory and step-time bars at 800 and 1400 px, in both languages, as a
real headless Chromium draws them (the helpers of tests/ui/test_app_browser.py, the server of
tests/ui/conftest.py)."""

from __future__ import annotations

import os
import shutil

import pytest
from test_app_browser import CHROMIUM, CHROMIUM_ARGS, EN, ZH, Page

pytestmark = pytest.mark.browser

# Each chart of the explorer (the element Streamlit keys by st.plotly_chart's key): the SVG's box,
# the plot area's (Plotly's drag rectangle) and every y tick label's, in page pixels.
BOXES = """() => ['chart_ex_memory', 'chart_ex_step'].map(key => {
  const chart = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  if (!chart) return [key, null, null, []];
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.width]; };
  const drag = chart.querySelector('rect.nsewdrag');
  const labels = [...chart.querySelectorAll('g.ytick text')].map(t => [t.textContent, ...box(t)]);
  return [key, box(chart.querySelector('svg.main-svg')), drag && box(drag), labels];
})"""
MIN_PLOT_PX = 100  # the bars' own width: beside a ~190 px legend, a ~200 px chart had none


def test_explorer_bars_keep_every_label_whole_at_800_and_1400_px(app_url, tmp_path):
    """Every y tick label (the plan: '#1 32x b200' over its layout) lies inside its chart's SVG,
    left of the bars, and the bars keep room of their own; side by side at 800 px they cut the
    label at the left edge ("32x b..." in issue 30). Screenshots kept (TRAINPLAN_SHOTS: a folder)."""
    from playwright.sync_api import sync_playwright

    shots = tmp_path / "shots"
    shots.mkdir()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for width in (800, 1400):
                app = Page(browser.new_page(viewport={"width": width, "height": 1000}), shots)
                app.open(app_url)
                for tr in (EN, ZH):
                    if tr is ZH:
                        app.page.get_by_text("中文", exact=True).click()
                    app.wait_text(tr("plan_card", model="llama3-8b"), 120)
                    app.tab(tr("tab_explorer"))
                    app.page.get_by_text(tr("ex_step"), exact=True).first.wait_for(timeout=60_000)
                    app.page.locator(".st-key-chart_ex_step g.ytick text").first.wait_for(timeout=60_000)
                    app.page.wait_for_timeout(1500)  # the rerun's charts drawn at their final width
                    app.scroll_to("stPlotlyChart")
                    for key, svg, plot, labels in app.page.evaluate(BOXES):
                        where = (width, tr.lang, key)
                        assert svg and plot and labels, where
                        for text, left, right, _ in labels:
                            assert svg[0] - 0.5 <= left and right <= plot[0] + 0.5, (where, text, left, svg)
                        assert plot[2] >= MIN_PLOT_PX, (where, plot)
                    app.check(f"explorer-bars-{width}-{tr.lang}")
                app.page.close()
        finally:
            browser.close()
    keep = os.environ.get("TRAINPLAN_SHOTS")
    if keep:
        os.makedirs(keep, exist_ok=True)
        for shot in shots.glob("*.png"):
            shutil.copy(shot, keep)
