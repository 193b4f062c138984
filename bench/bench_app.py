"""App speed (issue 30): first load and one edit at a time, headless (Streamlit's AppTest).

Runs app.py in this process as a browser session would: the first run (cold caches: catalog,
plan, frontier), the same page again (warm), then one edit per row (a changed request, a language
switch, a tab opened) and the seconds each rerun takes. docs/app.md promises about a second per
edit on a warm cache; the planner's own speed is bench/bench_plan.py. Prints a table; asserts
nothing (shared machines are noisy: read the least of --repeat runs).

``--served N`` (trial s44 app M6) also starts a real server N times each way, ``trainplan app``'s
launcher (``python -m ui.app_server run app.py``: it plans the default page before it listens) and
plain ``streamlit run app.py`` (it does not), and opens the page in headless Chromium (Playwright;
scripts/install_browser.sh): seconds from start to healthy, from opening the page to the plan
card, and the solve time the card's footer states. Prints the median and the least of N.
Run: .venv/bin/python bench/bench_app.py [--repeat N] [--served N]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import streamlit as st
from streamlit.testing.v1 import AppTest

from ui.app_server import one_malloc_arena

APP = str(Path(__file__).resolve().parent.parent / "app.py")
EDIT_TARGET_S = 1.0  # docs/app.md: an edit answers in about a second on a warm cache


def rerun(at: AppTest, change: Callable[[AppTest], object] | None = None) -> float:
    """Seconds of one rerun after ``change`` (None: the same page again)."""
    start = time.perf_counter()
    if change is None:
        at.run()
    else:
        change(at)
    assert not at.exception, [e.value for e in at.exception]
    return time.perf_counter() - start


EDITS: tuple[tuple[str, Callable[[AppTest], object]], ...] = (
    ("deadline 30 days", lambda at: at.sidebar.number_input(key="deadline_days").set_value(30.0).run()),
    ("objective time", lambda at: at.sidebar.radio(key="objective").set_value("time").run()),
    ("preset llama3-70b", lambda at: at.sidebar.selectbox(key="preset").set_value("llama3-70b").run()),
    ("language 中文", lambda at: at.sidebar.radio(key="lang").set_value("zh").run()),
    ("deadline back to none", lambda at: at.sidebar.number_input(key="deadline_days").set_value(0.0).run()),
)


def session(repeat: int) -> list[tuple[str, float]]:
    """The least seconds per step over ``repeat`` sessions (the first one's caches are cold)."""
    best: dict[str, float] = {}
    for attempt in range(repeat):
        # Every session's edits are new requests: answers cached by an earlier session would time
        # the cache, not the edit (the catalog and the other shared resources stay warm).
        st.cache_data.clear()
        at = AppTest.from_file(APP, default_timeout=600)
        steps = [("first load" if attempt == 0 else "first load (warm process)", rerun(at))]
        steps.append(("same page again", rerun(at)))
        steps += [(name, rerun(at, change)) for name, change in EDITS]
        for name, seconds in steps:
            best[name] = min(best.get(name, float("inf")), seconds)
    return list(best.items())


LAUNCHERS = {  # how each way starts the server (trainplan app adds the same flags: ui/cli_jobs.py)
    "trainplan app (ui.app_server)": ["-m", "ui.app_server", "run", APP],
    "streamlit run app.py": ["-m", "streamlit", "run", APP],
}
FOOTER = re.compile(r"candidates, [\d,]+ feasible · \w+ (?:in )?([\d.]+) s( when first asked)?")
CHROMIUM = "/usr/bin/chromium"


def start_server(launcher: list[str]) -> tuple[subprocess.Popen, str, float]:
    """The server, its address and the seconds until it answered /_stcore/health."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    flags = ["--server.address", "127.0.0.1", "--server.port", str(port), "--server.headless", "true"]
    flags += ["--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, *launcher, *flags],
        cwd=Path(APP).parent,
        env={k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"},  # the server's own threads
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    while server.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                if answer.read().strip() == b"ok":
                    return server, url, time.perf_counter() - started
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{launcher} exited with {server.returncode}")


def first_visit(launcher: list[str], browser) -> tuple[float, float, float, bool]:
    """Seconds to healthy, from opening the page to the card's footer, the solve the footer states,
    and whether it says the answer was kept (planned before this visit)."""
    server, url, healthy_s = start_server(launcher)
    try:
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        opened = time.perf_counter()
        page.goto(url)
        footer = page.get_by_text(FOOTER).first
        footer.wait_for(timeout=300_000)
        card_s = time.perf_counter() - opened
        found = FOOTER.search(footer.inner_text())
        assert found is not None
        page.close()
        return healthy_s, card_s, float(found.group(1)), found.group(2) is not None
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)


def served(times: int) -> None:
    """The cold first visit, each way to start the server, ``times`` times (a table)."""
    from playwright.sync_api import sync_playwright

    print(f"\n| served cold, first visit ({times} starts) | start to healthy s | page to card s | card's solve s |")
    print("|---|---:|---:|---:|")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        for name, launcher in LAUNCHERS.items():
            runs = [first_visit(launcher, browser) for _ in range(times)]
            cells = [f"{statistics.median(c):.1f} (least {min(c):.1f})" for c in list(zip(*runs, strict=True))[:3]]
            kept = " kept at start-up" if all(r[3] for r in runs) else ""
            print(f"| {name} | {cells[0]} | {cells[1]} | {cells[2]}{kept} |")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="sessions; the least seconds per step")
    parser.add_argument("--served", type=int, default=0, help="also time N cold servers' first visit (Chromium)")
    args = parser.parse_args()
    one_malloc_arena()  # as `trainplan app` does before the server starts its threads
    print(f"| step | seconds (least of {args.repeat}) | target |")
    print("|---|---:|---|")
    for name, seconds in session(args.repeat):
        target = "" if name.startswith("first load") else f"<= {EDIT_TARGET_S:.0f} s (warm)"
        print(f"| {name} | {seconds:,.2f} | {target} |")
    if args.served:
        served(args.served)


if __name__ == "__main__":
    main()
