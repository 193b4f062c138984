"""Markdown tables of the NeMo-style held-out rows (validation/nemo_blackwell.py's comparisons):
bench/validate_blackwell.py and bench/validate_mlperf.py print them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from validation.docs import error_summary
from validation.nemo_blackwell import BlackwellComparison, BlackwellRows
from validation.nemo_flops import FlopCheck, flop_check

GPU_ORDER = ("B200", "GB200", "GB300", "H100", "H200")
# A nearer-convention FLOP ratio further than this from 1 is listed: a mis-read model or a
# source that counts its FLOPs another way.
FLOP_CHECK_TOLERANCE = 0.03


def summary_lines(
    comparisons: list[BlackwellComparison], key: Callable[[BlackwellComparison], str], title: str
) -> list[str]:
    return error_summary(((key(c), c.error) for c in comparisons), title, GPU_ORDER)


def summary_blocks(
    comparisons: list[BlackwellComparison], groups: tuple[tuple[Callable[[BlackwellComparison], str], str], ...]
) -> list[str]:
    """``summary_lines`` of each (key, title) of ``groups``, a blank line after each table."""
    return [line for key, title in groups for line in (*summary_lines(comparisons, key, title), "")]


def row_lines(comparisons: list[BlackwellComparison]) -> list[str]:
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


def not_scored_lines(rows: BlackwellRows) -> list[str]:
    lines = ["| id | source | model | why not scored |", "|---|---|---|---|"]
    lines += [f"| {s.row_id} | {s.source} | {s.model_name} | {s.reason.value} |" for s in rows.skipped]
    lines += [
        f"| {r.row_id} | {r.source} | {r.model_name} | duplicate of published_runs row {r.duplicate_of} |"
        for r in rows.runs
        if r.duplicate_of is not None
    ]
    return lines


def flop_lines(checks: list[FlopCheck]) -> list[str]:
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


def report_tail(read: BlackwellRows, comparisons: list[BlackwellComparison], flops_from: str, rows: bool) -> list[str]:
    """What both benches print after their summaries: the rows not scored, the FLOP check (``flops_from``:
    what the rows' own FLOPs per token are read from) and, with ``rows``, every scored row."""
    checks = [check for run in read.runs if (check := flop_check(run)) is not None]
    lines = ["Not scored:", "", *not_scored_lines(read), ""]
    lines += [f"Model FLOPs per token ({flops_from}) against the built model's counts:", "", *flop_lines(checks)]
    return lines + (["", *row_lines(comparisons)] if rows else [])
