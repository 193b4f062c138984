"""Held-out tokens/s error on published FSDP runs of PyTorch stacks (torchtitan, fms-fsdp, llm-foundry),
and the memory model's reserved peak against the rows that print theirs (torchtitan's benchmarks).

    python bench/validate_fsdp.py            # per generation and per source
    python bench/validate_fsdp.py --rows     # and every row
    python bench/validate_fsdp.py --write-docs   # refresh the table in docs/validation.md

Nothing is fitted on these rows (validation/fsdp_runs.py; rows and how each was read:
data/validation/fsdp_runs_sources.md). Error = predicted / measured tokens/s per GPU - 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from validation.docs import error_summary, replace_marked_block
from validation.fsdp_runs import FsdpComparison, compare_fsdp_runs

GENERATION_ORDER = ("A100", "H100", "H200", "B200")
DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
START, END = "<!-- fsdp-table:start -->", "<!-- fsdp-table:end -->"
MEMORY_START, MEMORY_END = "<!-- fsdp-memory:start -->", "<!-- fsdp-memory:end -->"


def _summary(comparisons: list[FsdpComparison], key, title: str) -> list[str]:
    return error_summary(((key(c), c.error) for c in comparisons), title, GENERATION_ORDER)


def _rows(comparisons: list[FsdpComparison]) -> list[str]:
    lines = [
        "| # | source | GPU | model | GPUs | tp/cp | seq x mb | AC | prec | compile | measured | predicted | error % |"
    ]
    lines.append("|---:|---|---|---|---:|---|---|---|---|---|---:|---:|---:|")
    for c in comparisons:
        r, t = c.run, c.run.training
        lines.append(
            f"| {r.row_id} | {r.source} | {r.gpu} | {r.model.name} | {r.num_gpus} | {r.layout.tp}/{r.layout.cp} "
            f"| {t.seq_len} x {t.micro_batch} | {t.activation_checkpointing.value} | {t.precision.value} "
            f"| {'y' if t.compile else 'n'} | {r.measured_tokens_per_s_per_gpu:,.0f} "
            f"| {c.predicted_tokens_per_s_per_gpu:,.0f} | {100 * c.error:+.1f} |"
        )
    return lines


def render_memory(comparisons: list[FsdpComparison] | None = None) -> str:
    """The rows that print a reserved peak: measured, predicted, error, the terms behind it."""
    measured = [c for c in comparisons or compare_fsdp_runs() if c.memory_error is not None]
    lines = [
        "| # | GPU | model | GPUs | tp/cp | seq x mb | AC | prec | compile | measured GiB | predicted GiB | error % "
        "| activations | loss | states + unsharded |",
        "|---:|---|---|---:|---|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in measured:
        r, t, m = c.run, c.run.training, c.memory_gib or {}
        states = sum(m.get(k, 0.0) for k in ("params", "grads", "optimizer", "unsharded_params"))
        lines.append(
            f"| {r.row_id} | {r.gpu} | {r.model.name} | {r.num_gpus} | {r.layout.tp}/{r.layout.cp} "
            f"| {t.seq_len} x {t.micro_batch} | {t.activation_checkpointing.value} | {t.precision.value} "
            f"| {'y' if t.compile else 'n'} | {r.measured_reserved_gib:.1f} | {c.predicted_reserved_gib:.1f} "
            f"| {100 * (c.memory_error or 0.0):+.1f} | {m.get('activations', 0.0):.1f} "
            f"| {m.get('logits_loss', 0.0):.1f} | {states:.1f} |"
        )
    errors = [c.memory_error for c in measured if c.memory_error is not None]
    mean_abs = sum(abs(e) for e in errors) / len(errors)
    lines += [
        "",
        f"{len(errors)} rows, mean abs {100 * mean_abs:.1f} %, mean signed {100 * sum(errors) / len(errors):+.1f} %.",
    ]
    return "\n".join(lines)


def render(rows: bool = False) -> str:
    comparisons = compare_fsdp_runs()
    lines = ["**Held-out FSDP runs** (nothing fitted on them):", ""]
    lines += _summary(comparisons, lambda c: c.run.generation, "GPU generation")
    lines += ["", *_summary(comparisons, lambda c: f"{c.run.generation} {c.run.source}", "generation, source")]
    if rows:
        lines += ["", *_rows(comparisons)]
    return "\n".join(lines)


def write_docs(table: str, docs: Path = DOCS) -> None:
    replace_marked_block(docs, START, END, table)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="also print every row")
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the summary tables in {DOCS}")
    args = parser.parse_args(argv)
    table = render(args.rows)
    print(table)
    memory = render_memory()
    print("", "**Memory** (reserved peak, held out):", "", memory, sep="\n")
    if args.write_docs:
        write_docs(render())
        replace_marked_block(DOCS, MEMORY_START, MEMORY_END, memory)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
