"""BigScience's Megatron-DeepSpeed rows against ``--stack megatron-deepspeed`` (held out): prints the table.

    python bench/validate_megatron_deepspeed.py               # markdown table + summaries on stdout
    python bench/validate_megatron_deepspeed.py --write-docs  # also refresh docs/validation.md's block

Rows, sources and assumptions: validation/megatron_deepspeed_runs.py and
data/validation/megatron_deepspeed_runs_sources.md. Errors are predicted / measured tokens per second - 1.
Nothing in the model was fitted on these rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from validation.docs import replace_marked_block
from validation.megatron_deepspeed_runs import MegatronDeepSpeedComparison, Use, compare_megatron_deepspeed

DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
START, END = "<!-- megatron-deepspeed-table:start -->", "<!-- megatron-deepspeed-table:end -->"


def results_table(comparisons: list[MegatronDeepSpeedComparison]) -> str:
    lines = [
        "| row | source | model | GPUs | layout | mb x accum | measured s/it | predicted s | error % | in 80 % band? "
        "| predicted GiB | use |",
        "|---|---|---|---:|---|---|---:|---:|---:|---|---:|---|",
    ]
    for c in comparisons:
        r, e = c.row, c.plan.estimate
        lines.append(
            f"| {r.row_id} | {r.source} | {r.model.num_params() / 1e9:.0f}B, {r.model.num_layers} x "
            f"{r.model.hidden_size}, {r.model.num_heads} heads | {r.num_gpus} | {r.layout.describe()} "
            f"| {r.training.micro_batch} x {r.training.grad_accum} | {r.measured_step_s:.1f} | {e.time.step_s:.1f} "
            f"| {100 * c.error:+.1f} | {'yes' if c.in_band else 'no'} | {e.memory.reserved_gib:.1f} | {r.use.value} |"
        )
    return "\n".join(lines)


def summary(name: str, comparisons: list[MegatronDeepSpeedComparison]) -> str:
    if not comparisons:
        return f"- {name}: no rows."
    errors = [c.error for c in comparisons]
    mean_abs, signed = sum(map(abs, errors)) / len(errors), sum(errors) / len(errors)
    covered = sum(c.in_band for c in comparisons)
    return (
        f"- {name}, {len(errors)} rows: mean abs error {100 * mean_abs:.1f} %, mean signed {100 * signed:+.1f} %, "
        f"largest {100 * max(errors, key=abs):+.1f} %; measured inside the 80 % band for {covered} of {len(errors)}."
    )


def summaries(comparisons: list[MegatronDeepSpeedComparison]) -> str:
    held = [c for c in comparisons if c.row.use == Use.HELD_OUT]
    lines = [summary("Held out, all", held)]
    for source in sorted({c.row.source for c in held}):
        lines.append(summary(f"Held out, source {source}", [c for c in held if c.row.source == source]))
    lines.append(summary("Held out, tp 8", [c for c in held if c.row.layout.tp == 8]))
    lines.append(summary("Held out, tp 1-4", [c for c in held if c.row.layout.tp < 8]))
    lines.append(summary("Not in the headline (BLOOM's own configuration, a lone first iteration)", [
        c for c in comparisons if c.row.use != Use.HELD_OUT
    ]))  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the table in {DOCS}")
    args = parser.parse_args()
    comparisons = compare_megatron_deepspeed()
    text = f"{results_table(comparisons)}\n\n{summaries(comparisons)}"
    print(text)
    if args.write_docs:
        replace_marked_block(DOCS, START, END, text)


if __name__ == "__main__":
    main()
