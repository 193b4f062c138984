"""Held-out tokens/s error on published NeMo / Megatron-Bridge / DGX Cloud rows on GB200, B200 and H100.

    python bench/validate_blackwell.py           # summaries per GPU, source, precision, container
    python bench/validate_blackwell.py --rows    # and every row
    python bench/validate_blackwell.py --write-docs   # refresh the summaries in docs/validation.md

Nothing is fitted on these rows and nothing is fitted here: the script only reports
(validation/nemo_blackwell.py; rows and how each was read: data/validation/nemo_blackwell_runs_sources.md).
Error = (predicted - measured) / measured tokens/s per GPU. Rows that repeat a calibration row
(data/calibration/published_runs.csv) are listed, not scored; rows that cannot be built are
listed with their reason. The FLOP check divides each row's published model TFLOP/s by its
tokens/s and compares it with the non-causal and causal model FLOPs per token of the built model.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from validation.docs import replace_marked_block
from validation.nemo_blackwell import (
    BlackwellComparison,
    BlackwellRows,
    FlopCheck,
    compare_nemo_blackwell,
    flop_check,
    read_nemo_blackwell,
)

GPU_ORDER = ("B200", "GB200", "H100")
# A nearer-convention FLOP ratio further than this from 1 is listed: a mis-read model or a
# source that counts its FLOPs another way.
FLOP_CHECK_TOLERANCE = 0.03


def _summary(
    comparisons: list[BlackwellComparison], key: Callable[[BlackwellComparison], str], title: str
) -> list[str]:
    groups: dict[str, list[float]] = {}
    for c in comparisons:
        groups.setdefault(key(c), []).append(c.error)
    order = {g: i for i, g in enumerate(GPU_ORDER)}
    lines = [f"| {title} | rows | mean signed % | mean abs % | worst % |", "|---|---:|---:|---:|---:|"]
    for group in sorted(groups, key=lambda g: (order.get(g, len(order)), g)):
        e = np.array(groups[group])
        worst = float(e[np.argmax(np.abs(e))])
        lines.append(
            f"| {group} | {len(e)} | {100 * e.mean():+.1f} | {100 * np.abs(e).mean():.1f} | {100 * worst:+.1f} |"
        )
    return lines


def _rows(comparisons: list[BlackwellComparison]) -> list[str]:
    lines = [
        "| id | source | container | model | gpu | n | precision | layout | measured | predicted | error % | notes |",
        "|---|---|---|---|---|---:|---|---|---:|---:|---:|---|",
    ]
    for c in comparisons:
        r, t = c.run, c.run.training
        notes = "; ".join([*r.inferred, *([] if c.fits else ["memory model: does not fit"])])
        layout = f"{r.layout.describe()}, mb {t.micro_batch} x ga {t.grad_accum}"
        lines.append(
            f"| {r.row_id} | {r.source} | {r.container_version} | {r.model_name} | {r.gpu_label} | {r.num_gpus} "
            f"| {r.quantisation.value} | {layout} | {r.measured_tokens_per_s_per_gpu:,.0f} "
            f"| {c.predicted_tokens_per_s_per_gpu:,.0f} | {100 * c.error:+.1f} | {notes} |"
        )
    return lines


def _not_scored(rows: BlackwellRows) -> list[str]:
    lines = ["| id | source | model | why not scored |", "|---|---|---|---|"]
    lines += [f"| {s.row_id} | {s.source} | {s.model_name} | {s.reason.value} |" for s in rows.skipped]
    lines += [
        f"| {r.row_id} | {r.source} | {r.model_name} | duplicate of published_runs row {r.duplicate_of} |"
        for r in rows.runs
        if r.duplicate_of is not None
    ]
    return lines


def _flop_summary(checks: list[FlopCheck]) -> list[str]:
    """Per source: the published FLOPs per token over each convention's count (1.000 = that convention)."""
    lines = [
        "| source | rows with TFLOP/s | published / non-causal | published / causal | off by > 3 % |",
        "|---|---:|---:|---:|---|",
    ]
    for source in sorted({c.run.source for c in checks}):
        group = [c for c in checks if c.run.source == source]
        noncausal = np.array([c.ratio_noncausal for c in group])
        causal = np.array([c.ratio_causal for c in group])
        off = ", ".join(
            f"{c.run.row_id} ({100 * c.deviation:+.0f} %)" for c in group if abs(c.deviation) > FLOP_CHECK_TOLERANCE
        )
        lines.append(
            f"| {source} | {len(group)} | {noncausal.min():.3f}-{noncausal.max():.3f} "
            f"| {causal.min():.3f}-{causal.max():.3f} | {off or 'none'} |"
        )
    return lines


def render(rows: bool = False) -> str:
    read = read_nemo_blackwell()
    comparisons = compare_nemo_blackwell(read.runs)
    duplicates = sum(r.duplicate_of is not None for r in read.runs)
    checks = [check for run in read.runs if (check := flop_check(run)) is not None]
    lines = [
        f"**Held-out NeMo / Megatron-Bridge / DGX Cloud rows** (nothing fitted on them): "
        f"{len(read.runs) + len(read.skipped)} rows, {len(comparisons)} scored, {len(read.skipped)} skipped, "
        f"{duplicates} duplicates of calibration rows.",
        "",
        *_summary(comparisons, lambda c: c.run.gpu_label, "GPU"),
        "",
        *_summary(comparisons, lambda c: c.run.source, "source"),
        "",
        *_summary(comparisons, lambda c: c.run.quantisation.value, "precision"),
        "",
        *_summary(comparisons, lambda c: c.run.container_version, "container"),
        "",
        "Not scored:",
        "",
        *_not_scored(read),
        "",
        "Model FLOPs per token (published TFLOP/s / tokens/s) against the built model's counts:",
        "",
        *_flop_summary(checks),
    ]
    if rows:
        lines += ["", *_rows(comparisons)]
    return "\n".join(lines)


DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
START, END = "<!-- blackwell-table:start -->", "<!-- blackwell-table:end -->"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="also print every row")
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the summaries in {DOCS}")
    args = parser.parse_args(argv)
    print(render(args.rows))
    if args.write_docs:
        replace_marked_block(DOCS, START, END, render(False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
