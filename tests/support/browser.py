"""The app served by ``streamlit run app.py`` for the browser tests (tests/ui/test_app*_browser.py).

One server per test process (tests/ui/conftest.py ``app_url``): a fresh server's first page
imports the app's modules and solves the default request (about 6 s of CPU on the 2-core machine,
and as much of the test's wall time, measured), and each of the eight tests started its own. A
server keeps no visitor's state beyond its caches (``st.cache_data``, keyed on each request: the
same answer, only sooner); each test's browser opens sessions of its own. The first visit of a
fresh server as ``trainplan app`` serves it is test_app_warm_browser.py's, on a server of its own.
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


def stop(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


class AppServer:
    """``streamlit run app.py`` on a free port, started at the first :meth:`url` and again after
    it died (a test that crashed it leaves the next one a fresh server, not a dead port)."""

    def __init__(self, folder: Path):
        self.folder, self.process, self.started = folder, None, 0
        self.port = 0

    def url(self) -> str:
        if self.process is None or self.process.poll() is not None:
            self._start()
        return f"http://127.0.0.1:{self.port}"

    def _start(self) -> None:
        self.started += 1
        self.port, log = free_port(), self.folder / f"streamlit-{self.started}.log"
        argv = [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.headless", "true"]
        argv += ["--server.address", "127.0.0.1", "--server.port", str(self.port)]
        argv += ["--browser.gatherUsageStats", "false"]
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_healthy(f"http://127.0.0.1:{self.port}", self.process, log)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            stop(self.process)
