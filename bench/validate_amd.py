"""Held-out tokens/s error on published LLM pre-training runs on AMD Instinct GPUs.

    python bench/validate_amd.py           # summaries per GPU, model, stack
    python bench/validate_amd.py --rows    # and every row
    python bench/validate_amd.py --write-docs   # refresh the summaries in docs/validation.md
    python bench/validate_amd.py --write   # rebuild planner/accuracy/unbanded_rows.csv (the rows an
                                           # AMD estimate cites beside its band)

No setting is fitted on these rows and nothing is fitted here: the script only reports
(validation/amd_runs.py; rows and how each was read: data/validation/amd_runs_sources.md).
Error = (predicted - measured) / measured tokens/s per GPU, the measured figure being the median
step time of the runs' own training logs (MLPerf rows: the result logs' block throughput). The
first table counts every source's rows per Instinct generation, skipped ones too. The FLOP check divides the logs' own TFLOP/s/GPU
(Megatron-LM's num_floating_point_operations) by their tokens/s and compares it with the built
model's counts.
"""

from __future__ import annotations

import sys

from validation.amd_runs import by_source_generation, compare_amd, generation_for, read_amd, write_unbanded
from validation.docs import summary_main
from validation.nemo_blackwell import BlackwellComparison, BlackwellRows
from validation.nemo_tables import report_tail, summary_blocks


def _pct(value: float | None, signed: bool) -> str:
    return "-" if value is None else (f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}")


def source_generation_lines(read: BlackwellRows, comparisons: list[BlackwellComparison]) -> list[str]:
    """Rows per source and generation: scored, skipped, held-out mean signed / abs error."""
    lines = [
        "| source | generation | rows | scored | skipped | mean signed % | mean abs % |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for g in by_source_generation(read, comparisons):
        lines.append(
            f"| {g.source} | {g.generation} | {g.rows} | {g.rows - g.skipped} | {g.skipped} "
            f"| {_pct(g.mean_signed, True)} | {_pct(g.mean_abs, False)} |"
        )
    return lines


def render(rows: bool = False) -> str:
    read = read_amd()
    comparisons = compare_amd(read)
    lines = [
        f"**AMD Instinct rows** (held out: nothing fitted on them, no setting changed after seeing them):"
        f" {len(read.runs) + len(read.skipped)} rows, {len(comparisons)} scored, {len(read.skipped)} skipped.",
        "",
        *source_generation_lines(read, comparisons),
        "",
        *summary_blocks(
            comparisons,
            (
                (lambda c: "all", "set"),
                (lambda c: c.run.source, "source"),
                (lambda c: generation_for(c.run.gpu_id), "generation"),
                (lambda c: c.run.gpu_label, "GPU"),
                (lambda c: c.run.model_name, "model"),
                (lambda c: c.profile.value, "profile"),
            ),
        ),
        *report_tail(read, comparisons, "the log's TFLOP/s/GPU / tokens/s", rows),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    written = ("planner/accuracy/unbanded_rows.csv", write_unbanded)
    sys.exit(summary_main(sys.argv[1:], __doc__, render, "amd-table", write=written))
