"""Command-line arguments the CLI checks before calling the API: ranges, input files, pairs.

Each check raises ValueError with a one-line message; ``ui.cli.main`` turns it into exit 2.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path


def parse_pairs(text: str | None, what: str, cast=float) -> dict:
    """``a=1,b=2`` -> {"a": 1, "b": 2}; a bare id maps to None (no limit)."""
    out: dict = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            out[key.strip()] = None
            continue
        try:
            out[key.strip()] = cast(value)
        except ValueError:
            raise ValueError(f"{what}: '{item}' is not ID=NUMBER") from None
    return out


MAX_GPUS = 1 << 20  # more GPUs than any cluster: a typo, refused before the search
MAX_BATCH_TOKENS = 1 << 40  # tokens per optimizer step
MAX_PRICE_USD = 1e6  # per GPU-hour
MAX_INPUT_BYTES = 16_000_000  # a plan or jobs file is a few KB: refuse /dev/zero before reading it all


def check_range(flag: str, value: float | None, low: float, high: float, *, low_open: bool = False) -> None:
    """``value`` finite and within ``low``..``high`` (``low`` excluded when ``low_open``); None passes."""
    if value is None:
        return
    ok = math.isfinite(value) and (value > low if low_open else value >= low) and value <= high
    if not ok:
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        raise ValueError(f"{flag} must be a finite number {bound} and <= {high:g}, got {value}")


def check_input_file(path: Path) -> Path:
    """Refuse a plan or jobs file over MAX_INPUT_BYTES (``/dev/zero``) before its reader reads it all."""
    from trainer.files import read_capped

    with contextlib.suppress(OSError):  # Plan.load names the file and the error
        read_capped(path, MAX_INPUT_BYTES)
    return path


def load_model_arg(model: str):
    from planner.catalog.models import load_model

    spec = load_model(model)
    path = Path(model)
    hf_path = str(path.resolve()) if path.exists() else None
    return spec, hf_path
