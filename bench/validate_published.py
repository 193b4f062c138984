"""Published large-scale training runs against trainplan's step-time model: prints the table.

    python bench/validate_published.py                  # markdown table + summary on stdout
    python bench/validate_published.py --write-docs     # also refresh docs/validation.md
    python bench/validate_published.py --held-out-gpus  # only the parts read as a held-out check (GB300)

Each row is predicted with the settings profile of its software stack (validation.published).
Errors are (predicted - measured) / measured tokens/s per GPU, which equals the TFLOP/s error
in the source's own FLOP convention.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from validation.docs import replace_marked_block
from validation.published import PublishedComparison, compare_published, mean_abs_error
from validation.published_rows import (
    DEFAULT_PUBLISHED_RUNS,
    HELD_OUT_GPU_IDS,
    SkippedRow,
    SkipReason,
    read_published_runs,
)

DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
START, END = "<!-- published-table:start -->", "<!-- published-table:end -->"
HELD_OUT_START, HELD_OUT_END = "<!-- published-held-out-gpus:start -->", "<!-- published-held-out-gpus:end -->"


def _tflops(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def _config(c: PublishedComparison) -> str:
    t = c.run.training
    return (
        f"{c.run.layout.describe()}, mb {t.micro_batch} x {t.grad_accum}, "
        f"{t.activation_checkpointing.value} recompute, {t.precision.value}"
    )


def row_table(comparisons: list[PublishedComparison]) -> list[str]:
    lines = [
        "| row | source | model | GPUs | layout | stack | measured tok/s/GPU | predicted | error % "
        "| TFLOP/s meas / pred (convention) | scored | notes |",
        "|---|---|---|---|---|---|---:|---:|---:|---|---|---|",
    ]
    for c in comparisons:
        r = c.run
        flops = (
            f"{_tflops(r.measured_tflops_per_gpu) or '-'} / {_tflops(c.predicted_tflops_per_gpu)}"
            f" ({r.convention.value})"
            if r.convention
            else ""
        )
        notes = "; ".join([*r.inferred, *([] if c.fits else ["memory model: does not fit"])])
        lines.append(
            f"| {r.row_id} | {r.source} | {r.model_name} | {r.num_gpus} x {r.gpu_id} | {_config(c)} "
            f"| {r.stack.value} | {r.measured_tokens_per_s_per_gpu:,.1f} "
            f"| {c.predicted_tokens_per_s_per_gpu:,.1f} | {100 * c.error:+.1f} | {flops} "
            f"| {'yes' if c.excluded is None else 'no: ' + c.excluded} | {notes} |"
        )
    return lines


def summary(comparisons: list[PublishedComparison], skipped: list[SkippedRow]) -> list[str]:
    scored = [c for c in comparisons if c.excluded is None]
    groups: dict[tuple[str, str], list[PublishedComparison]] = defaultdict(list)
    for c in comparisons:
        groups[(c.run.source, c.excluded or "scored")].append(c)
    lines = [
        "| source | rows | scored? | mean abs error % | mean signed error % | worst % |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for (source, status), rows in groups.items():
        signed = sum(c.error for c in rows) / len(rows)
        worst = max(rows, key=lambda c: abs(c.error)).error
        lines.append(
            f"| {source} | {len(rows)} | {'yes' if status == 'scored' else 'no: ' + status} "
            f"| {100 * mean_abs_error(rows):.1f} | {100 * signed:+.1f} | {100 * worst:+.1f} |"
        )
    signed = sum(c.error for c in scored) / len(scored)
    lines.append(
        f"| **all comparable** | **{len(scored)}** | yes | **{100 * mean_abs_error(scored):.1f}** "
        f"| **{100 * signed:+.1f}** | {100 * max(scored, key=lambda c: abs(c.error)).error:+.1f} |"
    )
    reasons: dict[str, list[str]] = defaultdict(list)
    for s in skipped:
        reasons[s.reason.value].append(str(s.row_id))
    if reasons:
        lines += ["", "Rows not predicted at all:", ""]
        lines += [f"- {reason}: {len(rows)} ({', '.join(rows)})" for reason, rows in reasons.items()]
    return lines


def render(path: Path = DEFAULT_PUBLISHED_RUNS, held_out_gpus: bool = False) -> str:
    """The table of every row read; ``held_out_gpus``: of the rows of ``HELD_OUT_GPU_IDS`` only."""
    if held_out_gpus:
        runs, skipped = read_published_runs(path, gpu_ids=HELD_OUT_GPU_IDS)
        # the held-out parts' own rows not predicted (NVFP4): every other part's are "not in the catalog" here
        skipped = [s for s in skipped if s.reason not in (SkipReason.GPU_NOT_IN_CATALOG, SkipReason.TPU)]
        comparisons = compare_published(runs)
        return "\n".join([*summary(comparisons, skipped), "", *row_table(comparisons)])
    runs, skipped = read_published_runs(path)
    comparisons = compare_published(runs)
    return "\n".join([*summary(comparisons, skipped), "", *row_table(comparisons)])


def write_docs(table: str, docs: Path = DOCS, held_out_gpus: bool = False) -> None:
    start, end = (HELD_OUT_START, HELD_OUT_END) if held_out_gpus else (START, END)
    replace_marked_block(docs, start, end, table)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_PUBLISHED_RUNS)
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the table in {DOCS}")
    parser.add_argument("--held-out-gpus", action="store_true", help="only the rows of parts read as a held-out check")
    args = parser.parse_args(argv)
    table = render(args.csv, args.held_out_gpus)
    print(table)
    if args.write_docs:
        write_docs(table, held_out_gpus=args.held_out_gpus)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
