"""What trainplan accepts from a user, once for every entry point: the numeric bounds of the
CLI's flags, the plan file and the jobs files of ``portfolio``/``fleet`` (ui/inputs.py,
planner/plan.py, planner/request.py, ui/portfolio_file.py), and the one reader of user input
files (``read_input``): a regular file of bounded size, never a device, a FIFO or a directory.
Its refusals are ``RuleViolation``s (a ValueError) with an ``INPUT_*`` code and the figures their
sentence cites (planner/rule_codes.py), so the app words them in the page's language.

Only the standard library and planner/errors.py (standard library only) are imported here, so
every layer can use it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from planner.errors import RuleCode, RuleViolation

MAX_GPUS = 1 << 20  # more GPUs than any cluster: a typo, refused before the search
MAX_BATCH_TOKENS = 1 << 40  # tokens per optimizer step
MAX_TRAINING_TOKENS = 1e18  # a thousand times the largest published pre-training run
MAX_PRICE_USD = 1e6  # per GPU-hour
MAX_PURCHASE_USD = 1e9  # per GPU
MAX_BUDGET_USD = 1e13  # a whole job
MAX_DAYS = 36_525  # deadlines and horizons: a century
MAX_SLOTS = 64  # start-time slots a portfolio's horizon is cut into
# The fewest start slots fleet runs (trial s27: 1 slot bought and rented where 12 ran the jobs back
# to back for 26 % less): a jobs file's or --num-slots' fewer is raised to it, said; the app's box starts there.
MIN_FLEET_SLOTS = 2
# Ownership inputs (a fleet file's, the app's boxes): past these a figure is a typo (trial s40: the
# app took a PUE of 1e6 and an electricity price whose owned rate broke the price bound).
MAX_LIFETIME_YEARS = 100.0
MAX_PUE = 10.0
MAX_ELECTRICITY_USD_PER_KWH = 100.0
MAX_HOSTING_USD_PER_GPU_MONTH = 100_000.0  # hosting and staff per GPU (an H100's is ~$150-500)
MAX_SEQ_LEN = 1 << 24  # tokens per sequence (16M, beyond any model's context)
MIN_SEQ_LEN = 16  # shorter is a typo (no model trains on fewer tokens per sequence), refused by plan and estimate alike
MAX_CHINCHILLA_MULTIPLE = 10_000  # 200,000 tokens per parameter (Llama 3 8B: ~1,900; SmolLM3 3B: ~3,700)
# GPU types x pipeline splits x expert-parallel degrees one search may try (planner/request.py): every
# published model on every catalog GPU (Qwen1.5-MoE's 240 per type, the most, x 25 types = 6,000)
# passes; 10,000 layers x 100,000 experts on all types (5 min 20 s, 7.7 GB) does not.
MAX_SEARCH_BREADTH = 12_800
MAX_JOBS = 32  # jobs in one portfolio or fleet file (100 took 37 s and 1.5 GB; 1,000 ran out of memory)
MAX_INPUT_BYTES = 16_000_000  # a plan, jobs or calibration file is a few KB
MAX_TOKENIZER_BYTES = 200_000_000  # a tokenizer.json (the largest common ones are ~35 MB)

_KINDS = (
    (stat.S_ISDIR, RuleCode.INPUT_DIRECTORY),
    (stat.S_ISFIFO, RuleCode.INPUT_FIFO),
    (stat.S_ISCHR, RuleCode.INPUT_CHAR_DEVICE),
    (stat.S_ISBLK, RuleCode.INPUT_BLOCK_DEVICE),
    (stat.S_ISSOCK, RuleCode.INPUT_SOCKET),
)


def _open_regular(path: Path, what: str, limit: int, os_errors: bool = False) -> int:
    """A read-only descriptor of ``path`` once it is known to be a regular file of at most
    ``limit`` bytes; RuleViolation naming the file otherwise (``os_errors``: an OSError of ``open``
    as it is raised). O_NONBLOCK: a FIFO opens at once (and is then refused) instead of waiting
    for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if os_errors:
            raise
        error = str(exc.strerror)  # as the f-string of the sentence wrote it, None included
        raise RuleViolation(RuleCode.INPUT_UNREADABLE, {"where": str(path), "what": what, "error": error}) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            code = next((code for test, code in _KINDS if test(info.st_mode)), RuleCode.INPUT_NOT_REGULAR)
            raise RuleViolation(code, {"where": str(path), "what": what})
        if info.st_size > limit:
            raise RuleViolation(
                RuleCode.INPUT_TOO_LARGE,
                {"where": str(path), "what": what, "size_bytes": info.st_size, "limit_bytes": limit},
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_input(path: str | Path, what: str, limit: int = MAX_INPUT_BYTES) -> Path:
    """``path`` when it is a regular file of at most ``limit`` bytes (read later by another
    reader, e.g. the trainer's tokenizer); RuleViolation naming it otherwise."""
    os.close(_open_regular(Path(path), what, limit))
    return Path(path)


def read_input(path: str | Path, what: str, limit: int = MAX_INPUT_BYTES, *, os_errors: bool = False) -> bytes:
    """The bytes of the user's ``what`` at ``path``: a regular file of at most ``limit`` bytes
    (never more than ``limit + 1`` are read, should it grow); RuleViolation (a ValueError) naming it
    otherwise (``os_errors``: a missing or unreadable file raises ``open``'s OSError instead)."""
    path = Path(path)
    with os.fdopen(_open_regular(path, what, limit, os_errors), "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise RuleViolation(RuleCode.INPUT_GREW, {"where": str(path), "what": what, "limit_bytes": limit})
    return data


def read_input_text(path: str | Path, what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """``read_input`` decoded as UTF-8; RuleViolation naming the file when it is not (UTF-16, binary)."""
    data = read_input(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuleViolation(RuleCode.INPUT_NOT_UTF8, {"where": str(path), "what": what, "byte": exc.start}) from None


def unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """``json.loads``' ``object_pairs_hook``: an object whose keys are unique (``json`` would keep
    the last of a duplicate silently); ValueError naming the key."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key '{key}'")
        out[key] = value
    return out
