"""Trial s44 app M6: ``trainplan app``'s launcher (ui/app_server.py) plans the default request before
the server listens, so a fresh server's first visitor reads a plan kept from that run, not one
solved while they wait (17 s on a busy machine). Served as ``trainplan app`` serves it, in Chromium."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import REPO
from support.browser import CHROMIUM, CHROMIUM_ARGS, free_port, stop, wait_healthy
from test_app_browser import EN, Page

pytestmark = pytest.mark.browser

KEPT = "this answer was kept, not solved again"  # the card's footer for an answer from the cache


@pytest.fixture
def launched_url(tmp_path):
    """``python -m ui.app_server run app.py``, the command ``trainplan app`` runs (ui/cli_jobs.py)."""
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (run scripts/install_browser.sh)")
    pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    port, log = free_port(), tmp_path / "server.log"
    argv = [sys.executable, "-m", "ui.app_server", "run", str(REPO / "app.py"), "--server.address", "127.0.0.1"]
    argv += ["--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*argv, "--server.fileWatcherType", "none"],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", server, log, timeout_s=300)  # the warm-up comes first
        yield f"http://127.0.0.1:{port}", log
    finally:
        stop(server)


def test_a_fresh_servers_first_visitor_reads_the_plan_made_at_start_up(launched_url, tmp_path):
    from playwright.sync_api import sync_playwright

    url, log = launched_url
    assert KEPT in EN("card_footer_kept", step=1, kernel="k", candidates=1, feasible=1, solver="s", seconds=1.0)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            app = Page(browser.new_page(viewport={"width": 1500, "height": 1100}), tmp_path)
            app.page.goto(url)
            app.wait_text(EN("plan_card", model="llama3-8b"), 120)
            app.wait_text(KEPT, 30)
            app.check("first-visit")
        finally:
            browser.close()
    said = log.read_text()
    assert "the default page is ready" in said and "config option section" not in said, said[-2000:]
