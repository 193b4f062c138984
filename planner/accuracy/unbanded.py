"""Validation rows scored held out but kept out of the bands: the AMD Instinct rows, too few and
each architecture's from one source (docs/validation.md "AMD Instinct"). An estimate on their
architecture cites them beside a band read from other architectures' rows (buyer trial s48 M3).

``unbanded_rows.csv`` is written by ``bench/validate_amd.py --write`` (validation/amd_runs.py
``write_unbanded``); the planner only reads it, and ``tests/planner/test_unbanded.py`` checks it
against the harness."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

from planner.accuracy.residuals import source_name
from planner.plan_accuracy import ArchitectureRows

UNBANDED_CSV = Path(__file__).resolve().parent / "unbanded_rows.csv"
UNBANDED_COLUMNS = ("source", "generation", "name", "gpu", "error")


@dataclass(frozen=True)
class UnbandedRow:
    """One scored row that is not a band row: its architecture and held-out tokens/s error."""

    source: str
    generation: str  # the GPU's architecture, as ``GPUSpec.generation`` names it ("CDNA3")
    name: str
    gpu: str
    error: float  # (predicted - measured) / measured tokens/s per GPU


@functools.cache
def load_unbanded_rows(path: Path = UNBANDED_CSV) -> tuple[UnbandedRow, ...]:
    """The stored rows (read once; the file ships with the package)."""
    with path.open(newline="", encoding="utf-8") as f:
        return tuple(
            UnbandedRow(r["source"], r["generation"], r["name"], r["gpu"], float(r["error"])) for r in csv.DictReader(f)
        )


def architecture_rows(generation: str) -> ArchitectureRows | None:
    """The unbanded rows measured on ``generation`` (None: none)."""
    rows = [r for r in load_unbanded_rows() if r.generation == generation]
    if not rows:
        return None
    return ArchitectureRows(
        generation=generation,
        rows=len(rows),
        sources=tuple(sorted({r.source for r in rows})),
        errors=tuple(sorted(r.error for r in rows)),
    )


def architecture_words(rows: ArchitectureRows | None) -> str:
    """'; its architecture's own rows, scored but not band rows: 3 on CDNA3 (...), tokens/s
    predicted -5% to +25% against them, +11.1% on average' ('' for none)."""
    if rows is None:
        return ""
    sources = ", ".join(source_name(s) for s in rows.sources)
    spread = (
        f"{rows.errors[0]:+.0%} against it"
        if rows.rows == 1
        else f"{rows.errors[0]:+.0%} to {rows.errors[-1]:+.0%} against them, {rows.mean_error:+.1%} on average"
    )
    return (
        f"; its architecture's own rows, scored but not band rows: {rows.rows} on {rows.generation} ({sources}),"
        f" tokens/s predicted {spread}"
    )
