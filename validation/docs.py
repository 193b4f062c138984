"""Refreshing the generated tables of docs/validation.md, each between its own pair of markers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

VALIDATION_DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"


def yes_no(flag: bool | None) -> str:
    """A table cell for a yes/no column ("" where there is no answer)."""
    return "" if flag is None else "yes" if flag else "no"


def replace_marked_block(docs: Path, start: str, end: str, table: str) -> None:
    """Replace what stands between the markers ``start`` and ``end`` of ``docs`` with ``table``."""
    text = docs.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise ValueError(f"{docs}: markers {start} / {end} not found")
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    docs.write_text(f"{head}{start}\n{table}\n{end}{tail}", encoding="utf-8")


def error_summary(errors: Iterable[tuple[str, float]], title: str, order: Sequence[str] = ()) -> list[str]:
    """A markdown table of (group, error) pairs: rows, mean signed, mean abs and worst error in %
    per group; groups whose first word is in ``order`` first, in its order, then by name."""
    groups: dict[str, list[float]] = {}
    for group, error in errors:
        groups.setdefault(group, []).append(error)
    rank = {g: i for i, g in enumerate(order)}
    lines = [f"| {title} | rows | mean signed % | mean abs % | worst % |", "|---|---:|---:|---:|---:|"]
    for group in sorted(groups, key=lambda g: (rank.get(g.split(" ")[0], len(rank)), g)):
        e = np.array(groups[group])
        worst = float(e[np.argmax(np.abs(e))])
        lines.append(
            f"| {group} | {len(e)} | {100 * e.mean():+.1f} | {100 * np.abs(e).mean():.1f} | {100 * worst:+.1f} |"
        )
    return lines


def summary_main(
    argv: list[str],
    doc: str,
    render: Callable[[bool], str],
    marker: str,
    write: tuple[str, Callable[[], Path]] | None = None,
) -> int:
    """A bench script's command line: print ``render(rows)``; ``--write-docs`` puts ``render(False)``
    between docs/validation.md's ``<!-- {marker}:start -->`` and ``<!-- {marker}:end -->``;
    ``write`` (what, how): ``--write`` rebuilds a data file the planner reads, first."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="also print every row")
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the summaries in {VALIDATION_DOCS}")
    if write is not None:
        parser.add_argument("--write", action="store_true", help=f"rebuild {write[0]} from the harness")
    args = parser.parse_args(argv)
    if write is not None and args.write:
        print(f"wrote {write[1]()}", file=sys.stderr)
    print(render(args.rows))
    if args.write_docs:
        replace_marked_block(VALIDATION_DOCS, f"<!-- {marker}:start -->", f"<!-- {marker}:end -->", render(False))
    return 0
