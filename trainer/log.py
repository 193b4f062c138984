"""The trainer's console output: ``logging`` with a rank-0 filter, printed as ``print`` would.

Every module logs to its own ``logging.getLogger(__name__)`` under the ``trainer`` logger;
:func:`setup_logging` (called at start-up by ``trainer.train`` and ``trainer.launch``) gives that
logger one handler:

- **Rank 0 only.** A record passes on global rank 0 (``torch.distributed``'s rank once it is
  initialised, else torchrun's ``RANK``, else 0), so no call site needs an ``if rank == 0`` guard.
  A record logged with ``extra=ALL_RANKS`` passes on every rank: for what differs per rank.
- **The message as it is**: no level, logger name or time; a newline; flushed (``print(..., flush=True)``).
- **stdout below WARNING, stderr from WARNING up**; ``extra=ON_STDOUT`` keeps a warning or error
  on stdout where it interrupts the progress line (which is on stdout).

The streams are looked up at each record, so pytest's ``capsys`` (which swaps ``sys.stdout``)
sees the output. The ``trainer`` logger does not propagate: an application that configures the
root logger does not print the trainer's lines twice.
"""

from __future__ import annotations

import logging
import os
import sys

LOGGER_NAME = "trainer"
ALL_RANKS = {"all_ranks": True}  # extra= for a record every rank shows
ON_STDOUT = {"on_stdout": True}  # extra= for a warning or error that belongs in the progress output


def global_rank() -> int:
    """This process's global rank; reads ``torch.distributed`` only when something imported it."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get("RANK", "0"))


class RankZeroFilter(logging.Filter):
    """Passes records on global rank 0, and records marked ``ALL_RANKS`` on every rank."""

    def filter(self, record: logging.LogRecord) -> bool:
        return bool(getattr(record, "all_ranks", False)) or global_rank() == 0


class ConsoleHandler(logging.Handler):
    """The formatted message and a newline, to the current ``sys.stdout`` (below WARNING, or
    marked ``ON_STDOUT``) or ``sys.stderr``; flushed at once."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            to_stdout = record.levelno < logging.WARNING or getattr(record, "on_stdout", False)
            stream = sys.stdout if to_stdout else sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


REDISTRIBUTE_LOGGER = "torch.distributed.tensor._redistribute"


def setup_logging(level: int = logging.INFO) -> logging.Logger:
    """Give the ``trainer`` logger its console handler (once; later calls only set the level)."""
    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(handler, ConsoleHandler) for handler in logger.handlers):
        handler = ConsoleHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.addFilter(RankZeroFilter())
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    # Each rank's DTensor warns at start-up that a (dp_shard, tp) redistribution takes two
    # all-reduces ("flatten mesh dimensions"): advice to torch's users about a mesh the trainer
    # builds, not something a job's user can act on (trial s25: two such lines per start).
    redistribute = logging.getLogger(REDISTRIBUTE_LOGGER)
    if not any(isinstance(f, _FlattenMeshNote) for f in redistribute.filters):
        redistribute.addFilter(_FlattenMeshNote())
    return logger


class _FlattenMeshNote(logging.Filter):
    """Drops only DTensor's "flatten mesh dimensions" note; its other records pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "flatten mesh dimensions" not in record.getMessage()
