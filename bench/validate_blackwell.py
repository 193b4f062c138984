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

import sys

from validation.docs import summary_main
from validation.nemo_blackwell import compare_nemo_blackwell, read_nemo_blackwell
from validation.nemo_tables import report_tail, summary_blocks


def render(rows: bool = False) -> str:
    read = read_nemo_blackwell()
    comparisons = compare_nemo_blackwell(read.runs)
    duplicates = sum(r.duplicate_of is not None for r in read.runs)
    lines = [
        f"**Held-out NeMo / Megatron-Bridge / DGX Cloud rows** (nothing fitted on them): "
        f"{len(read.runs) + len(read.skipped)} rows, {len(comparisons)} scored, {len(read.skipped)} skipped, "
        f"{duplicates} duplicates of calibration rows.",
        "",
        *summary_blocks(
            comparisons,
            (
                (lambda c: c.run.gpu_label, "GPU"),
                (lambda c: c.run.source, "source"),
                (lambda c: c.run.quantisation.value, "precision"),
                (lambda c: c.run.container_version, "container"),
            ),
        ),
        *report_tail(read, comparisons, "published TFLOP/s / tokens/s", rows),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(summary_main(sys.argv[1:], __doc__, render, "blackwell-table"))
