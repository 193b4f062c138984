"""How a run is asked to stop: SIGTERM (preemption, or the parent's death: trainer/locks.py) and
SIGINT (Ctrl-C) set a flag the training loop reads at each step boundary (trainer/session.py)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from planner.errors import ExitCode


class PreemptionFlag:
    """SIGTERM (preemption, or the parent's death: trainer/locks.py) and SIGINT (Ctrl-C) set a flag;
    the loop saves at the next step boundary and exits. Installed once the model is built (before
    that, :func:`stop_at_once`)."""

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

    @property
    def by_user(self) -> bool:
        """Ctrl-C (SIGINT), not a scheduler's or the launcher's SIGTERM."""
        return self.signum == signal.SIGINT

    def exit_code(self) -> ExitCode:
        return ExitCode.ABORTED if self.by_user else ExitCode.PREEMPTED

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
def _stop_signals_handled_by(handler) -> Iterator[None]:
    """SIGTERM and SIGINT go to ``handler`` inside the block, in the main thread (Python runs
    handlers only there; elsewhere the caller's own handling stays); the previous ones after it."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, handler) for sig in PreemptionFlag.SIGNALS} if in_main_thread else {}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def signals_interrupt() -> AbstractContextManager[None]:
    """SIGTERM and SIGINT raise :class:`Interrupted` inside the block."""

    def interrupt(signum, frame) -> None:
        del frame
        raise Interrupted(signum)

    return _stop_signals_handled_by(interrupt)


def stop_at_once() -> AbstractContextManager[None]:
    """SIGTERM and SIGINT take their default action inside the block, until a run installs its
    :class:`PreemptionFlag` (trainer/session.py, once the model is built): the kernel ends the worker
    at once, also inside a rendezvous or collective that waits for a peer already gone, where a
    Python handler would wait for the call to return (a rank that set a flag there hung until
    torchrun's SIGKILL, 30 s later). No step has run, so nothing is lost; torchrun's own line says
    that a worker still starting saved nothing. Before, Ctrl-C while torch imported was a
    KeyboardInterrupt traceback from every rank."""
    return _stop_signals_handled_by(signal.SIG_DFL)
