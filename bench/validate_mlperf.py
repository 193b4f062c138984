"""Held-out tokens/s error on MLPerf Training's LLM pre-training submissions (v3.0-v5.1).

    python bench/validate_mlperf.py           # summaries per GPU, benchmark, MLPerf round, scale
    python bench/validate_mlperf.py --rows    # and every row
    python bench/validate_mlperf.py --write-docs   # refresh the summaries in docs/validation.md

No setting is fitted on these rows and nothing is fitted here: the script only reports
(validation/mlperf.py; rows and how each was read: data/validation/mlperf_runs_sources.md). They
are not blind: the ring-latency rule (planner/model/comm.py) was adopted after they were seen
(blind: 13.6 % mean abs; docs/validation.md, "MLPerf Training").
Error = (predicted - measured) / measured tokens/s per GPU, the measured figure being the step time
the submissions' result logs record. The FLOP check divides NVIDIA's own model FLOPs per sample
(MODEL_TFLOP_PER_SAMPLE, Llama rows) by the sequence and compares it with the built model's counts.
"""

from __future__ import annotations

import sys

from validation.docs import summary_main
from validation.mlperf import compare_mlperf, read_mlperf
from validation.nemo_blackwell import BlackwellComparison
from validation.nemo_tables import report_tail, summary_blocks

# The scale a row ran at, by GPU count: MLPerf's rounds span one node to 11,616 GPUs.
SCALE_EDGES = ((64, "<= 64 GPUs"), (1024, "65-1,024 GPUs"), (4096, "1,025-4,096 GPUs"))


def scale(c: BlackwellComparison) -> str:
    return next((label for edge, label in SCALE_EDGES if c.run.num_gpus <= edge), "> 4,096 GPUs")


def render(rows: bool = False) -> str:
    read = read_mlperf()
    comparisons = compare_mlperf(read)
    lines = [
        f"**MLPerf Training rows** (no setting fitted on them; the ring-latency rule and the GB300's measured"
        f" GEMM rate were adopted after seeing them): {len(read.runs) + len(read.skipped)} rows,"
        f" {len(comparisons)} scored, {len(read.skipped)} skipped.",
        "",
        *summary_blocks(
            comparisons,
            (
                (lambda c: "all", "set"),
                (lambda c: c.run.gpu_label, "GPU"),
                (lambda c: c.run.model_name, "benchmark"),
                (lambda c: c.run.source.removeprefix("MLPERF_TRAINING_"), "round"),
                (scale, "scale"),
            ),
        ),
        *report_tail(read, comparisons, "NVIDIA's MODEL_TFLOP_PER_SAMPLE / sequence", rows),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(summary_main(sys.argv[1:], __doc__, render, "mlperf-table"))
