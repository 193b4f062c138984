"""``trainplan app``'s server: ``streamlit run`` with every request's Host header checked against
the address it is bound to, so that a web page whose name was re-pointed at 127.0.0.1 (DNS
rebinding) cannot open the app's websocket or pages from the user's browser.

``python -m ui.app_server run app.py --server.address A ...`` takes ``streamlit run``'s
arguments. Streamlit (1.67 here) serves through Starlette and uvicorn; the Starlette app it builds
(``create_starlette_app``) is wrapped in ``HostCheck``, an ASGI middleware. Bound to every
interface (``0.0.0.0``, ``::``) the check is off: the user chose to serve any name.

Before it serves, it runs the page once headless (``warm_default_page``), so that the first
visitor finds the default request planned (trial s44 app M6).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import logging
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from trainer.log import DropRecords

SERVER_MODULE = "streamlit.web.server.starlette.starlette_server"
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
EVERY_INTERFACE = frozenset({"", "0.0.0.0", "::"})
INSTALL_HINT = "pip install 'trainplan[app]'"

Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def allowed_hosts(address: str) -> frozenset[str] | None:
    """The host names a request to a server bound to ``address`` may carry; None: any."""
    address = address.strip().lower().strip("[]")
    if address in EVERY_INTERFACE:
        return None
    return LOOPBACK if address in LOOPBACK else frozenset({address})


def host_name(header: str) -> str:
    """The name in a Host header, without its port: ``[::1]:8501`` -> ``::1``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class HostCheck:
    """ASGI middleware: HTTP requests and websocket upgrades whose Host is not one of ``allowed``
    get 403 (a websocket closed before it is accepted is answered 403 by uvicorn)."""

    def __init__(self, app: Asgi, allowed: frozenset[str]) -> None:
        self.app, self.allowed = app, allowed

    async def __call__(self, scope: Scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = dict(scope.get("headers") or ())
            if host_name(headers.get(b"host", b"").decode("latin-1")) not in self.allowed:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                else:
                    await send(
                        {"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]}
                    )
                    await send({"type": "http.response.body", "body": b"Host not allowed\n"})
                return
        await self.app(scope, receive, send)


def check_installed() -> None:
    """ValueError with the install command when streamlit, or the server this module hooks, is missing."""
    if importlib.util.find_spec("streamlit") is None:
        raise ValueError(f"the app needs streamlit, which is not installed: {INSTALL_HINT}")
    if importlib.util.find_spec(SERVER_MODULE) is None:
        raise ValueError(
            "this streamlit has no Starlette server, which trainplan app needs to check Host headers:"
            " pip install -U streamlit"
        )


# glibc's mallopt parameter for the most malloc arenas (malloc.h: M_ARENA_MAX = -8).
M_ARENA_MAX = -8


@functools.cache  # once per process: app.py runs on every rerun
def one_malloc_arena() -> bool:
    """Have every thread allocate from glibc's main arena (True where that was set).

    Streamlit runs each rerun of the page on a new thread, which glibc gives an arena of its own;
    the planner's arrays (tens of MB per request) then fault their pages in afresh on every edit:
    a plan took 2.0-2.5 s there against 1.0-1.2 s on the main thread (issue 30,
    bench/bench_app.py). One arena keeps those pages warm across reruns; numpy allocates too
    rarely for its lock to matter. Without glibc (macOS, musl) nothing changes.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_ARENA_MAX, 1))
    except (OSError, AttributeError):
        return False


def _option(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv[:-1] else default


WARM_TIMEOUT_S = 300  # the default request solves in seconds; a stuck warm-up still lets the server start


# Said because the warm-up read Streamlit's config before `streamlit run` read its flags: the server
# has not started, and starts on the flags' options (the second read is forced), so nothing needs a restart.
CONFIG_READ_TWICE = DropRecords("An update to the [server] config option section was detected", once=True)
# AppTest's own calls on the main thread, outside a page run (its docs: "can be ignored").
NO_RUN_CONTEXT = DropRecords("Thread 'MainThread': missing ScriptRunContext")


def warm_default_page(script: str) -> float | None:
    """Run the page once, headless, before the server listens; the seconds it took (None: it failed).

    A fresh process's first plan costs about twice a later one (trial s44 app M6, docs/app.md
    "Speed"): the app's modules are imported, the accuracy bands' per-process tables are built and
    some 130k pages of a new heap are faulted in, on top of the solve. Running the page as a first
    visitor would (Streamlit's AppTest, the same code path) pays that here and leaves the default
    request's plan in ``st.cache_data``, which is global: the first browser finds it there.
    """
    from streamlit.testing.v1 import AppTest

    print("trainplan app: planning the default request before serving ...", file=sys.stderr, flush=True)
    logging.getLogger("streamlit.config").addFilter(CONFIG_READ_TWICE)
    context_log = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    context_log.addFilter(NO_RUN_CONTEXT)
    started = time.perf_counter()
    try:
        page = AppTest.from_file(str(Path(script).resolve()), default_timeout=WARM_TIMEOUT_S).run()
        failed = [str(e.value) for e in page.exception]
    except Exception as exc:  # only a head start: the page shows any error to its own visitor
        failed = [f"{type(exc).__name__}: {exc}"]
    finally:
        context_log.removeFilter(NO_RUN_CONTEXT)
    if failed:
        print(f"trainplan app: the default page was not warmed ({failed[0].splitlines()[0]})", file=sys.stderr)
        return None
    seconds = time.perf_counter() - started
    print(f"trainplan app: the default page is ready ({seconds:.1f} s)", file=sys.stderr, flush=True)
    return seconds


def main(argv: list[str] | None = None) -> None:
    """Run ``streamlit`` with ``argv`` and the Host check for its ``--server.address``."""
    argv = sys.argv[1:] if argv is None else argv
    one_malloc_arena()  # before Streamlit starts any thread
    if argv[:1] == ["run"] and len(argv) > 1:
        warm_default_page(argv[1])  # before the server listens: its first visitor finds the plan made
    allowed = allowed_hosts(_option(argv, "--server.address", "localhost"))
    if allowed is not None:
        import streamlit.web.server.starlette.starlette_server as server

        build = server.create_starlette_app
        server.create_starlette_app = lambda runtime: HostCheck(build(runtime), allowed)  # type: ignore[assignment, return-value]
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", *argv]
    streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    main()
