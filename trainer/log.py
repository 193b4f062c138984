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


def clipped(text: str, limit: int = 160) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis where it was cut (trial s47: a gloo
    error ended "... This is typically caused by a rem)")."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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


# Records of torch's (and its companions') loggers that advise their developers, not a job's user,
# dropped in every process that logs the trainer's lines: (logger, a part of the message).
LIBRARY_NOTES = (
    # Each rank's DTensor says at start-up that a (dp_shard, tp) redistribution takes two
    # all-reduces: advice about a mesh the trainer builds (trial s25: two such lines per start).
    ("torch.distributed.tensor._redistribute", "flatten mesh dimensions"),
    # torchao 0.18's import registers its Enums as pytree constants, which torch 2.13 deprecates:
    # two lines per rank whenever torchao is imported, by transformers (--impl hf) or fp8
    # (trial s45 L4); torchao's own call, nothing a job can change.
    ("torch.utils._pytree", "is an Enum subclass and is now natively supported"),
    # torchao's optional C++ kernels (mxfp8, cutlass) that fail to load on this build of torch (a
    # CPU torch, another Python): the trainer's float8 is tensor-wise through torch._scaled_mm,
    # which needs none of them.
    ("torchao", "Failed to load "),
)


class DropRecords(logging.Filter):
    """Drops a log record whose message contains one of ``parts``; ``once``: only the first such
    record, so a later one of the same words is said (review s45 L2). ``dropped`` counts them."""

    def __init__(self, *parts: str, once: bool = False) -> None:
        super().__init__()
        self.parts, self.once, self.dropped = parts, once, 0

    def filter(self, record: logging.LogRecord) -> bool:
        if (self.once and self.dropped) or not any(part in record.getMessage() for part in self.parts):
            return True
        self.dropped += 1
        return False


def drop_records(logger_name: str, *parts: str, once: bool = False) -> DropRecords:
    """Add a :class:`DropRecords` for ``parts`` to the logger, in place of an earlier one for the
    same parts (a second start-up in one process, as in the tests, adds no second filter)."""
    logger = logging.getLogger(logger_name)
    for earlier in [f for f in logger.filters if isinstance(f, DropRecords) and f.parts == parts]:
        logger.removeFilter(earlier)
    drop = DropRecords(*parts, once=once)
    logger.addFilter(drop)
    return drop


def setup_logging(level: int = logging.INFO) -> logging.Logger:
    """Give the ``trainer`` logger its console handler (once; later calls only set the level), and
    drop the libraries' notes (``LIBRARY_NOTES``)."""
    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(handler, ConsoleHandler) for handler in logger.handlers):
        handler = ConsoleHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.addFilter(RankZeroFilter())
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    for name, part in LIBRARY_NOTES:
        drop_records(name, part)
    return logger
