"""Whole published pre-training runs against the planner's predicted GPU-hours (held out): prints the tables.

    python bench/validate_whole_runs.py           # markdown tables + summary on stdout

Runs, sources and every assumption: validation/whole_runs.py and data/validation/whole_runs_sources.md.
Errors are predicted / reported GPU-hours - 1. Nothing in the model was fitted on these runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from validation.docs import replace_marked_block, yes_no
from validation.whole_run_recipes import NOT_HELD_OUT, SHARES_A_FITTED_SOURCE, Basis
from validation.whole_runs import (
    SkippedRun,
    WholeRunComparison,
    compare_whole_runs,
    read_whole_runs,
)

LOSS_TERMS = ("straggler", "evaluation", "data_stall", "startup", "checkpoints", "failures", "planned_restarts")


def _hours(value: float) -> str:
    return f"{value / 1e6:.2f}M" if value >= 1e6 else f"{value / 1e3:.0f}K"


def _layout(c: WholeRunComparison) -> str:
    p = c.prediction
    t, batch = p.training, p.training.tokens_per_step(p.layout)
    label = f"{p.layout.describe()}, mb {t.micro_batch} x {t.grad_accum} ({batch / 1e6:.2f}M tok)"
    return f"{label}, ac {t.activation_checkpointing.value} ({c.run.layout_source})"


def _gpus(c: WholeRunComparison) -> str:
    assumed = c.run.recipe.assumed_gpus is not None
    return f"{c.run.num_gpus:,} x {c.run.recipe.gpu}{' (assumed)' if assumed else ''}"


def _error(c: WholeRunComparison) -> str:
    """The error at the source's figure, and at the ends of the range the source allows where it allows one."""
    span = c.error_range
    return f"{100 * c.error:+.1f}" + ("" if span is None else f" ({100 * span[0]:+.1f} to {100 * span[1]:+.1f})")


def results_table(comparisons: list[WholeRunComparison]) -> str:
    lines = [
        "| run | GPUs | tokens | layout (published / searched) | compared | reported GPU-h | predicted GPU-h "
        "| error % (at the source's range) | in 80 % band? | goodput % | losses' share |",
        "|---|---|---:|---|---|---:|---:|---:|---|---:|---:|",
    ]
    for c in comparisons:
        lo, hi = c.band_gpu_hours
        basis = "step model" if c.run.recipe.basis == Basis.STEP else "wall time"
        lines.append(
            f"| {c.run.name} | {_gpus(c)} | {c.run.tokens / 1e12:.2f}T | {_layout(c)} | {basis} "
            f"| {c.run.reported_gpu_hours:,.0f} | {c.predicted_gpu_hours:,.0f} | {_error(c)} "
            f"| {'yes' if c.in_band else 'no'} ({_hours(lo)}-{_hours(hi)}) "
            f"| {100 * c.prediction.goodput.goodput_fraction:.1f} | {100 * c.losses.total:.1f} % |"
        )
    return "\n".join(lines)


def losses_table(comparisons: list[WholeRunComparison]) -> str:
    """Each term of the predicted losses as a share of the predicted wall time (%)."""
    lines = [
        "| run | " + " | ".join(t.replace("_", " ") for t in LOSS_TERMS) + " | total | expected failures |",
        "|---|" + "---:|" * (len(LOSS_TERMS) + 2),
    ]
    for c in comparisons:
        shares = c.losses
        terms = " | ".join(f"{100 * getattr(shares, t):.2f}" for t in LOSS_TERMS)
        failures = c.prediction.goodput.expected_interruptions or 0.0
        lines.append(f"| {c.run.name} | {terms} | {100 * shares.total:.2f} | {failures:,.0f} |")
    return "\n".join(lines)


def step_table(comparisons: list[WholeRunComparison]) -> str:
    """The step model apart: its tokens/s/GPU, where the source states one, the MFU ceiling and memory."""
    lines = [
        "| run | predicted tok/s/GPU | uncapped | source's tok/s/GPU | step error % | goodput the source implies "
        "| MFU ceiling binds | fits memory | regime validated |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for c in comparisons:
        p, n = c.prediction, c.run.num_gpus
        measured = c.run.measured_tokens_per_s_per_gpu
        step = "" if c.step_error is None else f"{100 * c.step_error:+.1f}"
        # tokens at the source's own step speed over its reported GPU-hours (a wall-time figure only)
        implied = "" if measured is None or c.run.recipe.basis == Basis.STEP else f"{_implied(c, measured):.1%}"
        lines.append(
            f"| {c.run.name} | {p.tokens_per_s / n:,.1f} | {p.uncapped_tokens_per_s / n:,.1f} "
            f"| {'' if measured is None else f'{measured:,.1f}'} | {step} | {implied} "
            f"| {yes_no(p.ceiling_binding)} | {yes_no(p.fits)} | {yes_no(p.validated)} |"
        )
    return "\n".join(lines)


def _implied(c: WholeRunComparison, measured: float) -> float:
    return c.run.tokens / measured / 3600 / c.run.reported_gpu_hours


def _summary(name: str, comparisons: list[WholeRunComparison]) -> str:
    if not comparisons:
        return f"{name}: no runs."
    errors = [c.error for c in comparisons]
    mean_abs, signed = sum(map(abs, errors)) / len(errors), sum(errors) / len(errors)
    covered = sum(c.in_band for c in comparisons)
    return (
        f"{name}, {len(comparisons)} run{'s' * (len(comparisons) != 1)}: mean abs error {100 * mean_abs:.1f} %, "
        f"mean signed {100 * signed:+.1f} %; reported inside the 80 % band for {covered} of {len(comparisons)}."
    )


# Issue 26, item 4 ("whole-run realism"): held-out runs, GPU generations, mean and largest |error|.
TARGET_RUNS, TARGET_GENERATIONS, TARGET_MEAN_ABS, TARGET_MAX_ABS = 8, 3, 0.15, 0.25


def held_out(c: WholeRunComparison) -> bool:
    return c.run.run_id not in NOT_HELD_OUT


def target_line(comparisons: list[WholeRunComparison]) -> str:
    """Where the held-out runs stand against issue 26's done-when."""
    held = [c for c in comparisons if held_out(c)]
    errors = [abs(c.error) for c in held] or [0.0]
    generations = len({c.generation for c in held})
    mean_abs, worst = sum(errors) / len(errors), max(errors)
    over = sum(e > TARGET_MAX_ABS for e in errors)
    met = (
        len(held) >= TARGET_RUNS
        and generations >= TARGET_GENERATIONS
        and mean_abs <= TARGET_MEAN_ABS
        and worst <= TARGET_MAX_ABS
    )
    return (
        f"- Issue 26 target (held out: >= {TARGET_RUNS} runs, >= {TARGET_GENERATIONS} GPU generations, mean abs "
        f"<= {100 * TARGET_MEAN_ABS:.0f} %, none over {100 * TARGET_MAX_ABS:.0f} %): {len(held)} runs, {generations} "
        f"generations, mean abs {100 * mean_abs:.1f} %, largest {100 * worst:.1f} %, {over} over: "
        f"{'met' if met else 'not met'}."
    )


def ranges_line(comparisons: list[WholeRunComparison]) -> str:
    """The rows whose source allows a range around its figure: scored at the figure, the range's errors beside."""
    spans = [(c.run.name, c.error_range) for c in comparisons if c.error_range is not None]
    ends = "; ".join(f"{name} {100 * lo:+.1f} % to {100 * hi:+.1f} %" for name, (lo, hi) in spans)
    return (
        f"- Scored at the figure each source states; where it allows a range (rounding, a quoted span of days), "
        f"the error at the range's ends: {ends or 'none'}."
    )


def summary(comparisons: list[WholeRunComparison]) -> str:
    generations = list(dict.fromkeys(c.generation for c in comparisons))
    mixed = [g for g in generations if any(c.generation == g and not held_out(c) for c in comparisons)]
    groups: list[tuple[str, Callable[[WholeRunComparison], bool]]] = [
        *((f"{g} GPUs", lambda c, g=g: c.generation == g) for g in generations),
        *(
            (
                f"{g} GPUs held out (without {', '.join(sorted(NOT_HELD_OUT))})",
                lambda c, g=g: c.generation == g and held_out(c),
            )
            for g in mixed
        ),
        ("Step-model rows (reported = tokens / throughput)", lambda c: c.run.recipe.basis == Basis.STEP),
        ("Wall-time rows (reported = GPUs x wall clock)", lambda c: c.run.recipe.basis == Basis.WALL),
        ("Overall without the rows not held out (" + ", ".join(sorted(NOT_HELD_OUT)) + ")", held_out),
        (
            "Held out by source, without the runs whose team a setting was fitted on ("
            + "; ".join(f"{run}: {why}" for run, why in SHARES_A_FITTED_SOURCE.items())
            + ")",
            lambda c: held_out(c) and c.run.run_id not in SHARES_A_FITTED_SOURCE,
        ),
    ]
    lines = [f"- {_summary(name, [c for c in comparisons if keep(c)])}" for name, keep in groups]
    worst = max(comparisons, key=lambda c: abs(c.error))
    lines.append(f"- Worst: {worst.run.name}, {100 * worst.error:+.1f} %.")
    lines.append(target_line(comparisons))
    lines.append(ranges_line(comparisons))
    return "\n".join([_summary("Overall", comparisons), "", *lines])


def notes(comparisons: list[WholeRunComparison], skipped: list[SkippedRun]) -> str:
    lines = [f"- **{c.run.name}**: {c.run.recipe.assumptions}{c.note}".rstrip("; ") for c in comparisons]
    lines += ["", "Skipped:"] + [f"- **{s.name}** (`{s.run_id}`): {s.reason}" for s in skipped]
    return "\n".join(lines)


def render(comparisons: list[WholeRunComparison], skipped: list[SkippedRun]) -> str:
    return "\n\n".join(
        [
            results_table(comparisons),
            summary(comparisons),
            "Losses of the prediction, % of its wall time:\n\n" + losses_table(comparisons),
            "The step model alone (goodput the source implies: the tokens at the source's own step speed over its "
            "reported GPU-hours; Llama 3.1 405B's hours also hold its long-context stage, so a lower bound there):\n\n"
            + step_table(comparisons),
            "Assumptions per run:\n\n" + notes(comparisons, skipped),
        ]
    )


DOCS = Path(__file__).resolve().parent.parent / "docs" / "validation.md"
START, END = "<!-- whole-runs-table:start -->", "<!-- whole-runs-table:end -->"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help=f"refresh the tables in {DOCS}")
    args = parser.parse_args(argv)
    runs, skipped = read_whole_runs()
    table = render(compare_whole_runs(runs), skipped)
    print(table)
    if args.write_docs:
        replace_marked_block(DOCS, START, END, table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
