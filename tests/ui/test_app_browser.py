"""The app served by ``streamlit run`` and rendered by a real headless Chromium (Playwright).

Skips when Debian's chromium is not installed (``scripts/install_browser.sh`` installs it);
Playwright drives that binary, it never downloads its own browsers.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support import REPO

from ui.i18n import Labels

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EN, ZH = Labels("en"), Labels("zh")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"streamlit exited with {server.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"streamlit did not become healthy in {timeout_s} s: {log.read_text()[-2000:]}")


@pytest.fixture
def app_url(tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (run scripts/install_browser.sh)")
    pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    port = free_port()
    log = tmp_path / "streamlit.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                str(REPO / "app.py"),
                "--server.headless",
                "true",
                "--server.address",
                "127.0.0.1",
                "--server.port",
                str(port),
                "--browser.gatherUsageStats",
                "false",
            ],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server, log)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_app_renders_a_plan_card_in_chromium_and_switches_language(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            page.goto(app_url)
            page.get_by_text(EN("plan_card", model="llama3-8b")).wait_for(timeout=120_000)
            for key in ("card_gpus", "card_time", "card_cost", "card_memory"):
                page.get_by_test_id("stMetricLabel").filter(has_text=EN(key)).first.wait_for(timeout=10_000)
            assert page.get_by_test_id("stException").count() == 0
            page.wait_for_timeout(1500)  # let the Plotly charts draw
            page.screenshot(path=tmp_path / "app.png", full_page=True)
            assert (tmp_path / "app.png").stat().st_size > 50_000

            # A choice made before switching language survives the switch (the browser keys it by label).
            page.get_by_role("radio", name=EN.option("time")).check(force=True)
            page.get_by_test_id("stMetricLabel").filter(has_text=EN("card_time")).first.wait_for(timeout=60_000)
            page.get_by_text("中文", exact=True).click()
            page.get_by_text(ZH("plan_card", model="llama3-8b")).wait_for(timeout=60_000)
            page.get_by_test_id("stMetricLabel").filter(has_text=ZH("card_time")).first.wait_for(timeout=10_000)
            assert page.get_by_role("radio", name=ZH.option("time")).is_checked()
            assert page.get_by_role("radio", name=ZH.option("preset")).is_checked()
            page.screenshot(path=tmp_path / "app_zh.png", full_page=True)
        finally:
            browser.close()
