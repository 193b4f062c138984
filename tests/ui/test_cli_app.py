"""``trainplan app`` (issue #29, cases 11 and 26): bad ports and addresses are one line, a missing
streamlit names the install command, and the server answers only requests whose Host is the
address it is bound to (ui/app_server.py), so DNS rebinding cannot reach its websocket."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest
from support import REPO
from support.app import EN
from support.cli import assert_one_line, call

import ui.app_server as app_server
import ui.cli_jobs as cli_jobs
from ui.i18n import plain


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--port", "99999"], "--port must be a finite number >= 1 and <= 65,535 (got 99999)"),
        (["--port", "-1"], "--port must be a finite number >= 1"),
        (["--address", "no.such.host.invalid"], "--address no.such.host.invalid: cannot resolve it"),
    ],
)
def test_bad_port_or_address_is_one_line(argv, needle, monkeypatch):
    monkeypatch.setattr(cli_jobs, "run_forwarding_signals", lambda argv: pytest.fail(f"started {argv}"))
    code, _, err = call("app", *argv)
    assert_one_line(code, err, needle)


def test_without_streamlit_the_error_says_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "streamlit" else real(name, *a))
    monkeypatch.setattr(cli_jobs, "run_forwarding_signals", lambda argv: pytest.fail(f"started {argv}"))
    code, _, err = call("app")
    assert_one_line(code, err, "pip install 'trainplan[app]'")


def test_the_app_runs_through_the_host_checking_launcher(monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(cli_jobs, "run_forwarding_signals", lambda argv: calls.append(argv) or 0)
    assert call("app", "--port", "8502")[0] == 0
    assert calls[0][1:4] == ["-m", "ui.app_server", "run"]


def _send(scope) -> tuple[list[dict], list[dict]]:
    """One ASGI call through ``HostCheck`` of a server bound to localhost: (what it sent, the
    scopes the wrapped app saw)."""
    sent, reached = [], []

    async def app(scope, receive, send):
        reached.append(scope)

    async def receive():
        return {"type": "websocket.connect"}

    async def send(message):
        sent.append(message)

    asyncio.run(app_server.HostCheck(app, app_server.LOOPBACK)(scope, receive, send))
    return sent, reached


@pytest.mark.parametrize(
    ("kind", "host", "allowed"),
    [
        ("websocket", "evil.example:8501", False),
        ("websocket", "evil.example", False),
        ("http", "rebind.attacker.test:8501", False),
        ("websocket", "", False),
        ("websocket", "localhost:8501", True),
        ("websocket", "127.0.0.1:8501", True),
        ("http", "[::1]:8501", True),
    ],
)
def test_host_header_must_name_the_bound_address(kind, host, allowed):
    scope = {"type": kind, "headers": [(b"host", host.encode())] if host else []}
    sent, reached = _send(scope)
    assert bool(reached) == allowed
    if not allowed:
        first = sent[0]
        assert first == {"type": "websocket.close", "code": 1008} if kind == "websocket" else first["status"] == 403


def test_host_names_and_the_launcher_hook(monkeypatch):
    assert app_server.allowed_hosts("0.0.0.0") is None  # every interface: the user serves any name
    assert app_server.allowed_hosts("10.1.2.3") == {"10.1.2.3"}
    assert app_server.host_name("[::1]:8501") == "::1" and app_server.host_name("Example.org:80") == "example.org"
    import streamlit.web.cli
    import streamlit.web.server.starlette.starlette_server as server

    calls = []
    monkeypatch.setattr(server, "create_starlette_app", lambda runtime: "streamlit's app")
    monkeypatch.setattr(app_server, "warm_default_page", lambda script: calls.append(("warm", script)))
    monkeypatch.setattr(streamlit.web.cli, "main", lambda prog_name: calls.append(("serve", prog_name)))
    monkeypatch.setattr("sys.argv", ["x"])
    app_server.main(["run", "app.py", "--server.address", "localhost"])
    built = server.create_starlette_app(None)
    assert isinstance(built, app_server.HostCheck) and built.app == "streamlit's app"
    assert calls == [("warm", "app.py"), ("serve", "streamlit")]  # the page is planned before the server listens


def test_the_launcher_gives_every_thread_the_main_malloc_arena(monkeypatch):
    # Streamlit reruns the page on a new thread each edit; with an arena per thread a plan took
    # twice as long there (issue 30). The launcher sets glibc's arena limit before any thread.
    calls = []

    class Libc:
        def mallopt(self, parameter, value):
            calls.append((parameter, value))
            return 1

    monkeypatch.setattr(app_server.ctypes, "CDLL", lambda name: Libc())
    app_server.one_malloc_arena.cache_clear()  # an app run in this process set it already
    import streamlit.web.cli

    monkeypatch.setattr(streamlit.web.cli, "main", lambda prog_name: None)
    monkeypatch.setattr(app_server, "warm_default_page", lambda script: None)
    monkeypatch.setattr("sys.argv", ["x"])
    app_server.main(["run", "app.py", "--server.address", "0.0.0.0"])
    assert calls == [(app_server.M_ARENA_MAX, 1)]
    app_server.one_malloc_arena.cache_clear()  # the fake libc's answer is not the process's


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_one_malloc_arena_is_set_on_linux():
    assert app_server.one_malloc_arena() is True


def test_the_default_page_is_planned_before_the_first_visitor(monkeypatch, capsys):
    # Trial s44 app M6: the first visitor of a fresh server waited 17 s, for the process's first plan.
    # After the launcher's warm-up a visitor's first run finds the default plan in st.cache_data.
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from ui import app_core

    st.cache_data.clear()  # what an earlier test in this process planned is not the warm-up's
    assert app_server.warm_default_page(str(REPO / "app.py")) is not None
    assert "the default page is ready" in capsys.readouterr().err

    def solve(*args, **kwargs):
        raise AssertionError("the default request was planned again")

    monkeypatch.setattr(app_core, "solve", solve)
    visitor = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not visitor.exception, [e.value for e in visitor.exception]
    assert [h.value for h in visitor.subheader] == [EN("plan_card", model=plain("llama3-8b"))]


def test_a_page_that_fails_to_warm_does_not_stop_the_server(tmp_path, capsys):
    broken = tmp_path / "app.py"
    broken.write_text("raise RuntimeError('no page today')\n")
    assert app_server.warm_default_page(str(broken)) is None
    assert "not warmed (no page today)" in capsys.readouterr().err


def test_the_config_read_twice_warning_is_dropped_once_only() -> None:
    """Review s45 L2: the filter the warm-up adds for Streamlit's second config read stayed for the
    server's life and would hide a real config change; it drops the first such record only."""
    import logging

    from trainer.log import DropRecords

    words = "An update to the [server] config option section was detected"
    once = DropRecords(words, once=True)
    record = logging.LogRecord("streamlit.config", logging.WARNING, __file__, 1, words + ".", None, None)
    other = logging.LogRecord("streamlit.config", logging.WARNING, __file__, 1, "something else", None, None)
    assert once.filter(other) and not once.filter(record) and once.filter(record)
    always = DropRecords(words)
    assert not always.filter(record) and not always.filter(record)
