"""How a run is asked to stop: SIGTERM (preemption, or the parent's death: trainer/locks.py) and
SIGINT (Ctrl-C) set a flag the training loop reads at each step boundary (trainer/session.py)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from planner.errors import ExitCode


class PreemptionFlag:
    """SIGTERM (preemption, or the parent's death: trainer/locks.py) and SIGINT (Ctrl-C) set a flag;
    the loop saves at the next step boundary and exits. Installed once, as early as the worker
    starts (``install``), so a signal during start-up is not a traceback either."""

    _installed: PreemptionFlag | None = None
    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}

    @classmethod
    def install(cls) -> PreemptionFlag:
        if cls._installed is None:
            cls._installed = cls()
        return cls._installed

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def _handle(self, signum, frame) -> None:
        del frame
        self.signum = self.signum or signum

    def exit_code(self) -> ExitCode:
        return ExitCode.ABORTED if self.signum == signal.SIGINT else ExitCode.PREEMPTED

    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else "SIGTERM"

    def close(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if PreemptionFlag._installed is self:
            PreemptionFlag._installed = None


class Interrupted(BaseException):
    """SIGTERM or SIGINT during work that has no step boundary to stop at (data preparation): it
    unwinds like KeyboardInterrupt, so ``finally`` and ``except BaseException`` clean up."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`Interrupted` inside the block (in the main thread: Python
    runs handlers only there, and elsewhere the caller's own handling stays)."""

    def interrupt(signum, frame) -> None:
        del frame
        raise Interrupted(signum)

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, interrupt) for sig in PreemptionFlag.SIGNALS} if in_main_thread else {}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
