"""Progress lines for long work before training starts: data preparation's hashing and
tokenising say how far they are, as a long step does (trainer/step.py ``Heartbeat``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from planner.fmt import duration_words
from planner.units import BYTES_PER_MB as MB

log = logging.getLogger(__name__)

# Long work says how far it is this often (trial s43: a CPU step printed nothing for 331 s and
# looked hung; trial s49 M6: a 100 GB corpus would tokenise for ~3.5 h in silence).
HEARTBEAT_S = 30.0


class ByteProgress:
    """'data: tokenising: 410 of 53,500 MB, 8.1 MB/s, about 1.8 hours left' every ``interval_s``
    of ``what``, from the bytes done so far (``done``: an exact count, or an estimate that the
    caller corrects at each file's end)."""

    def __init__(
        self, what: str, total_bytes: int, interval_s: float | None = None, clock: Callable[[], float] = time.monotonic
    ):
        self.what, self.total_bytes, self.clock = what, max(total_bytes, 1), clock
        self.interval_s = HEARTBEAT_S if interval_s is None else interval_s
        self.started = self.said = clock()

    def done(self, done_bytes: int) -> None:
        now = self.clock()
        if now - self.said < self.interval_s:
            return
        self.said = now
        done_bytes = min(done_bytes, self.total_bytes)
        rate = done_bytes / max(now - self.started, 1e-9)
        left = (self.total_bytes - done_bytes) / rate if rate > 0 else float("inf")
        eta = f", about {duration_words(left)} left" if left != float("inf") else ""
        digits = 1 if self.total_bytes < 100 * MB else 0  # "0 of 0 MB" says nothing
        log.info(
            f"data: {self.what}: {done_bytes / MB:,.{digits}f} of {self.total_bytes / MB:,.{digits}f} MB,"
            f" {rate / MB:,.1f} MB/s{eta}"
        )
