"""Held-out tokens/s error per GPU generation and per source (the headline of docs/validation.md).

    python bench/validate_heldout.py                # markdown tables on stdout
    python bench/validate_heldout.py --write-docs   # also refresh docs/validation.md

Published rows: the settings fitted on published rows are re-fitted leaving out the generation
scored (validation.heldout). H200 runs: leave-one-run-out of the H200-fitted settings (``H200_GRID``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from validation.docs import replace_marked_block
from validation.heldout import (
    GENERATION_ORDER,
    H200_GRID,
    HeldOut,
    h200_leave_one_out,
    published_leave_one_generation_out,
    summarise,
)
from validation.published_rows import read_published_runs

DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
START, END = "<!-- heldout-table:start -->", "<!-- heldout-table:end -->"


def _table(items: list[HeldOut], key, title: str, fitted: bool = False) -> list[str]:
    order = {g: i for i, g in enumerate(GENERATION_ORDER)}
    rows = sorted(summarise(items, key, fitted), key=lambda s: (order.get(s.group.split(" ")[0], 9), s.group))
    lines = [f"| {title} | rows | mean signed % | mean abs % | worst % |", "|---|---:|---:|---:|---:|"]
    lines += [
        f"| {s.group} | {s.rows} | {100 * s.mean_signed:+.1f} | {100 * s.mean_abs:.1f} | {100 * s.worst:+.1f} |"
        for s in rows
    ]
    return lines


def same_model_across_generations(items: list[HeldOut]) -> list[HeldOut]:
    """The published rows of models measured on more than one GPU generation: the same recipe
    across GPUs separates a per-generation bias from a per-model one."""
    published = [i for i in items if i.source != "calibration"]
    generations: dict[str, set[str]] = {}
    for item in published:
        generations.setdefault(item.model, set()).add(item.generation)
    return [i for i in published if len(generations[i.model]) > 1]


def render() -> str:
    runs, _ = read_published_runs()
    items = published_leave_one_generation_out(runs) + h200_leave_one_out()
    fits = sorted({f"{i.generation}: " + ", ".join(f"{k}={v:g}" for k, v in i.fit.items()) for i in items if i.fit})
    lines = ["**Held-out** (no setting fitted on the generation scored):", ""]
    lines += _table(items, lambda i: i.generation, "GPU generation")
    lines += ["", *_table(items, lambda i: f"{i.generation} {i.source}", "generation, source")]
    shared = same_model_across_generations(items)
    lines += ["", "The same model on more than one generation:", ""]
    lines += _table(shared, lambda i: f"{i.generation} {i.model}", "generation, model")
    lines += ["", "Settings re-fitted without the generation scored:", ""]
    lines += [f"- {f}" for f in fits if not f.startswith("H200")]
    lines += [
        f"- H200: the {len(H200_GRID)} H200 settings re-fitted on the other runs for each run (bench/crossval_h200.py)"
    ]
    lines += ["", "**Fitted** (the shipped settings, fitted on all rows; not a held-out figure):", ""]
    lines += _table(items, lambda i: i.generation, "GPU generation", fitted=True)
    return "\n".join(lines)


def write_docs(table: str, docs: Path = DOCS) -> None:
    replace_marked_block(docs, START, END, table)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the tables in {DOCS}")
    args = parser.parse_args(argv)
    table = render()
    print(table)
    if args.write_docs:
        write_docs(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
