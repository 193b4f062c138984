"""Megatron-DeepSpeed rows (BigScience, Lucie-Training) against ``--stack megatron-deepspeed``: prints the table.

    python bench/validate_megatron_deepspeed.py               # markdown table + summaries on stdout
    python bench/validate_megatron_deepspeed.py --write-docs  # also refresh docs/validation.md's block

Rows, sources and assumptions: validation/megatron_deepspeed_runs.py and
data/validation/megatron_deepspeed_runs_sources.md. Errors are predicted / measured tokens per second - 1.
Nothing in the model was fitted on BigScience's rows; two of the stack's terms were looked for after
their errors were seen, so those figures are not blind (the blind ones: docs/validation.md). The
blocking host time per block is fitted on the Lucie sweep's single-node rows (use "fitted").
"""

from __future__ import annotations

import argparse
from pathlib import Path

from planner.accuracy.residuals import load_residuals
from validation.bands import checks_without
from validation.docs import replace_marked_block, yes_no
from validation.megatron_deepspeed_runs import MegatronDeepSpeedComparison, Use, compare_megatron_deepspeed

DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
START, END = "<!-- megatron-deepspeed-table:start -->", "<!-- megatron-deepspeed-table:end -->"


def held_out_band(comparisons: list[MegatronDeepSpeedComparison]) -> dict[str, bool]:
    """Whether each band row's error lies inside its 80 % band read without its own team's rows (the
    coverage of docs/validation.md "Error bands"), by row id; the shipped band holds these rows."""
    residuals = load_residuals()
    inside = {}
    for team in {c.row.team for c in comparisons}:
        inside |= {c.row.name: c.inside() for c in checks_without(residuals, team)}
    return {
        c.row.row_id: inside[f"{c.row.row_id} {c.row.model.name}"] for c in comparisons if c.row.use == Use.HELD_OUT
    }


def results_table(comparisons: list[MegatronDeepSpeedComparison], band: dict[str, bool]) -> str:
    """One line per row: its layout, the logged and predicted step, the error and the memory."""
    lines = [
        "| row | source | model | GPUs | layout | mb x accum | measured s/it | predicted s | error % "
        "| in its held-out 80 % band? | predicted GiB | use |",
        "|---|---|---|---:|---|---|---:|---:|---:|---|---:|---|",
    ]
    for c in comparisons:
        r, e = c.row, c.plan.estimate
        lines.append(
            f"| {r.row_id} | {r.source} | {r.model.num_params() / 1e9:.0f}B, {r.model.num_layers} x "
            f"{r.model.hidden_size}, {r.model.num_heads} heads | {r.num_gpus} | {r.layout.describe()} "
            f"| {r.training.micro_batch} x {r.training.grad_accum} | {r.measured_step_s:.1f} | {e.time.step_s:.1f} "
            f"| {100 * c.error:+.1f} | {yes_no(band.get(r.row_id))} | {e.memory.reserved_gib:.1f} | {r.use.value} |"
        )
    return "\n".join(lines)


def summary(name: str, comparisons: list[MegatronDeepSpeedComparison], band: dict[str, bool]) -> str:
    """Mean abs and signed error of ``comparisons``, the largest, and their held-out band coverage."""
    if not comparisons:
        return f"- {name}: no rows."
    errors = [c.error for c in comparisons]
    mean_abs, signed = sum(map(abs, errors)) / len(errors), sum(errors) / len(errors)
    line = (
        f"- {name}, {len(errors)} rows: mean abs error {100 * mean_abs:.1f} %, mean signed {100 * signed:+.1f} %, "
        f"largest {100 * max(errors, key=abs):+.1f} %"
    )
    scored = [band[c.row.row_id] for c in comparisons if c.row.row_id in band]
    return line + (f"; inside the held-out 80 % band for {sum(scored)} of {len(scored)}." if scored else ".")


def summaries(comparisons: list[MegatronDeepSpeedComparison], band: dict[str, bool]) -> str:
    """The headline rows, per source and per tp width, then the rows left out of the headline."""
    held = [c for c in comparisons if c.row.use == Use.HELD_OUT]
    lines = [summary("Held out, all", held, band)]
    for source in sorted({c.row.source for c in held}):
        lines.append(summary(f"Held out, source {source}", [c for c in held if c.row.source == source], band))
    lines.append(summary("Held out, tp 8", [c for c in held if c.row.layout.tp == 8], band))
    lines.append(summary("Held out, tp 1-4", [c for c in held if c.row.layout.tp < 8], band))
    lucie = [c for c in held if c.row.source == "S3"]
    for name, keep in (("4 nodes", lambda n: n <= 32), ("8-32 nodes", lambda n: n > 32)):
        lines.append(summary(f"Held out, S3 on {name}", [c for c in lucie if keep(c.row.num_gpus)], band))
    lines.append(summary("Fitted (S3's one-node rows: the blocking host time per block)", [
        c for c in comparisons if c.row.use == Use.FITTED
    ], band))  # fmt: skip
    lines.append(summary("Not in the headline (BLOOM's own configuration, a lone first iteration)", [
        c for c in comparisons if c.row.use in (Use.NOT_HELD_OUT, Use.WEAK)
    ], band))  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the table in {DOCS}")
    args = parser.parse_args()
    comparisons = compare_megatron_deepspeed()
    band = held_out_band(comparisons)
    text = f"{results_table(comparisons, band)}\n\n{summaries(comparisons, band)}"
    print(text)
    if args.write_docs:
        replace_marked_block(DOCS, START, END, text)


if __name__ == "__main__":
    main()
