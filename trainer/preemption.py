"""How a run is asked to stop: SIGTERM (preemption, or the parent's death: trainer/locks.py) and
SIGINT (Ctrl-C) set a flag the training loop reads at each step boundary (trainer/session.py)."""

from __future__ import annotations

import signal

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
