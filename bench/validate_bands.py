"""Error bands: their held-out coverage, and the rows they are read from.

    python bench/validate_bands.py                 # coverage tables on stdout (seconds)
    python bench/validate_bands.py --write         # rebuild planner/accuracy/residuals.csv (~4 min:
                                                   # the published and H200 sets are re-fitted per fold)
                                                   # and memory_residuals.csv (the memory band's peaks)
    python bench/validate_bands.py --write-docs    # also refresh docs/validation.md

Coverage: each row's 80 % band is read leaving its source out (validation/bands.py); a row is
covered when its held-out error lies inside. Nothing of the band is fitted on this coverage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from planner.accuracy.bands import EXTRAPOLATION_KAPPA, MIN_ROWS, shipped_base
from planner.accuracy.regime import LONG_SEQUENCE_TOKENS
from planner.accuracy.residuals import RESIDUALS_CSV, load_residuals
from validation.bands import BandCheck, ceiling_beaters, coverage, covered, headline_errors
from validation.docs import replace_marked_block

DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
START, END = "<!-- bands-table:start -->", "<!-- bands-table:end -->"
KAPPAS = (0.0, 0.02, 0.03, 0.04, 0.06, 0.08, 0.1)


def _group(checks: Sequence[BandCheck], key: Callable[[BandCheck], str]) -> dict[str, list[BandCheck]]:
    out: dict[str, list[BandCheck]] = {}
    for c in checks:
        out.setdefault(key(c), []).append(c)
    return dict(sorted(out.items()))


def _width(c: BandCheck) -> float:
    lo, hi = c.bounds()
    return float(np.expm1(hi) - np.expm1(lo))


def _table(checks: Sequence[BandCheck], key: Callable[[BandCheck], str], title: str) -> list[str]:
    lines = [
        f"| {title} | rows | covered (80 % band) | median band width | mean abs error |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, group in _group(checks, key).items():
        errors = [abs(float(np.expm1(c.log_error))) for c in group]
        lines.append(
            f"| {name} | {len(group)} | {covered(group):.1%} | {np.median([_width(c) for c in group]):.1%} |"
            f" {np.mean(errors):.1%} |"
        )
    return lines


def _headline_table(checks: Sequence[BandCheck]) -> list[str]:
    """The model's figure against its held-out band's median as a point estimate (why the
    headline is the model's own: ui/render_lines.median_line)."""
    lines = [
        "| set | rows | model's figure: mean abs | signed | band's median: mean abs | signed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    groups = {"all rows": list(checks)} | _group(checks, lambda c: c.row.generation)
    groups |= _group(checks, lambda c: c.row.dataset)
    for name, group in groups.items():
        h = headline_errors(group)
        lines.append(
            f"| {name} | {h.rows} | {h.model_abs:.1%} | {h.model_signed:+.1%} | {h.median_abs:.1%} |"
            f" {h.median_signed:+.1%} |"
        )
    return lines


def _long_context_table(checks: Sequence[BandCheck]) -> list[str]:
    """Issue 26's long-context target: the rows of sequence >= LONG_SEQUENCE_TOKENS, held out, by
    architecture and source, mean abs and signed, with and without context parallelism."""
    long_rows = [c for c in checks if c.row.seq_len >= LONG_SEQUENCE_TOKENS]
    lines = [
        f"| long context (sequence >= {LONG_SEQUENCE_TOKENS // 1024}K) | rows | mean abs error | signed | covered (80 % band) |",
        "|---|---:|---:|---:|---:|",
    ]
    groups = {"all": long_rows} | _group(long_rows, lambda c: f"{c.row.generation} {c.row.source}")
    groups |= _group(long_rows, lambda c: "cp > 1" if c.row.cp > 1 else "cp 1")
    for name, group in groups.items():
        errors = np.expm1([c.log_error for c in group])
        lines.append(
            f"| {name} | {len(group)} | {np.mean(np.abs(errors)):.1%} | {np.mean(errors):+.1%} | {covered(group):.1%} |"
        )
    return lines


def render() -> str:
    checks = coverage()
    base = shipped_base()
    lines = [
        f"**Held-out coverage of the 80 % band** ({len(checks)} rows, each band read leaving its source out;"
        f" kappa {EXTRAPOLATION_KAPPA}, new-source sigma {base.source_sigma:.3f} from all rows, at least"
        f" {MIN_ROWS} rows per band):",
        "",
        *_table(checks, lambda c: "all rows", "set"),
        "",
        "The headline's figure, held out: the model's own against the model moved to its band's median"
        " (each band read leaving the row's source out):",
        "",
        *_headline_table(checks),
        "",
        *_table(checks, lambda c: c.row.generation, "GPU architecture"),
        "",
        *_table(checks, lambda c: "inside the envelope" if c.validated else "outside", "regime"),
        "",
        *_table(checks, lambda c: c.row.dataset, "validation set"),
        "",
        *_table(checks, lambda c: f"{c.row.generation} {c.row.source}", "architecture, source"),
        "",
        *_long_context_table(checks),
        "",
        "Coverage by the extrapolation choice kappa (the rows do not pin it):",
        "",
        "| kappa | " + " | ".join(_group(checks, lambda c: c.row.generation)) + " | all |",
        "|---:|" + "---:|" * (len(_group(checks, lambda c: c.row.generation)) + 1),
    ]
    by_gen = _group(checks, lambda c: c.row.generation)
    for k in KAPPAS:
        cells = [f"{covered(g, k):.1%}" for g in by_gen.values()] + [f"{covered(checks, k):.1%}"]
        lines.append(f"| {k:g} | " + " | ".join(cells) + " |")
    beaten, outside = ceiling_beaters(checks)
    lines += [
        "",
        f"Rows that beat their regime's efficiency ceiling read without their source: {beaten} of {len(checks)};"
        f" a band cut at the ceiling would leave {outside} covered rows outside it"
        f" (coverage {covered(checks):.1%} -> {(covered(checks) * len(checks) - outside) / len(checks):.1%}).",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rebuild {RESIDUALS_CSV.name} from the harness")
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the tables in {DOCS}")
    args = parser.parse_args(argv)
    if args.write:
        from validation.memory_residuals import memory_rows, write_memory_rows
        from validation.residuals import heldout_residuals, write_residuals

        print(f"wrote {write_residuals(heldout_residuals())}", file=sys.stderr)
        print(f"wrote {write_memory_rows(memory_rows())}", file=sys.stderr)
        load_residuals.cache_clear()
        shipped_base.cache_clear()
    table = render()
    print(table)
    if args.write_docs:
        replace_marked_block(DOCS, START, END, table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
