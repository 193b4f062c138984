"""Fixtures of the browser tests (tests/ui/test_app*_browser.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.browser import CHROMIUM, AppServer


@pytest.fixture(scope="session")
def app_server(tmp_path_factory) -> Iterator[AppServer]:
    """The app's server, one per test process (support/browser.py says why), started by the first
    test that asks for :func:`app_url`."""
    server = AppServer(tmp_path_factory.mktemp("streamlit"))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def app_url(app_server) -> str:
    """The URL of the app served by ``streamlit run app.py`` (skips without Chromium or Playwright)."""
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (run scripts/install_browser.sh)")
    pytest.importorskip("playwright.sync_api", reason="needs the playwright Python package")
    return app_server.url()
