"""Refreshing the generated tables of docs/validation.md, each between its own pair of markers."""

from __future__ import annotations

from pathlib import Path


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
