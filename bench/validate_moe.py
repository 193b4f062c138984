"""Published mixture-of-experts runs against trainplan's model (held out): prints the table.

    python bench/validate_moe.py                  # markdown table + summary on stdout
    python bench/validate_moe.py --write-docs     # also refresh docs/validation.md

Rows and sources: validation/moe_runs.py. Errors are (predicted - measured) / measured tokens/s
per GPU. Nothing in the model was fitted on these rows.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from validation.docs import replace_marked_block
from validation.moe_runs import MoeComparison, compare_moe_runs

DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
START, END = "<!-- moe-table:start -->", "<!-- moe-table:end -->"


def _config(c: MoeComparison) -> str:
    t = c.run.training
    return f"{c.run.layout.describe()}, mb {t.micro_batch} x {t.grad_accum}, {t.precision.value}"


def render(comparisons: list[MoeComparison]) -> str:
    lines = [
        "| run | source | GPUs | layout | measured tok/s/GPU | predicted | error % | all-to-all share (pred.) "
        "| notes |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for c in comparisons:
        r = c.run
        notes = "; ".join(n for n in (r.note, "" if c.fits else "memory model: does not fit") if n)
        lines.append(
            f"| {r.label} | {r.source} | {r.num_gpus} x {r.gpu} | {_config(c)} "
            f"| {r.measured_tokens_per_s_per_gpu:,.0f} | {c.predicted_tokens_per_s_per_gpu:,.0f} "
            f"| {100 * c.error:+.1f} | {100 * c.ep_comm_share:.0f} % | {notes} |"
        )
    lines += ["", _summary("Held out", comparisons)]
    # Per GPU, per model, per source (its repository or paper, without the tables' detail).
    for key in (lambda r: r.gpu, lambda r: r.model.name, lambda r: r.source.split(" (")[0]):
        for name in dict.fromkeys(key(c.run) for c in comparisons):
            lines.append(f"- {_summary(name, [c for c in comparisons if key(c.run) == name])}")
    return "\n".join(lines)


def _summary(name: str, comparisons: list[MoeComparison]) -> str:
    mean_abs = sum(abs(c.error) for c in comparisons) / len(comparisons)
    signed = sum(c.error for c in comparisons) / len(comparisons)
    runs = "run" if len(comparisons) == 1 else "runs"
    return (
        f"{name}, {len(comparisons)} {runs}: mean abs error {100 * mean_abs:.1f} %, mean signed {100 * signed:+.1f} %."
    )


def write_docs(table: str, docs: Path = DOCS) -> None:
    replace_marked_block(docs, START, END, table)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the table in {DOCS}")
    args = parser.parse_args(argv)
    table = render(compare_moe_runs())
    print(table)
    if args.write_docs:
        write_docs(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
