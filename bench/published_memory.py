"""Memory breakdown of the published runs the memory model judges not to fit.

    python bench/published_memory.py          # rows that do not fit
    python bench/published_memory.py --all    # every scored row

For each row: the terms of ``planner.model.memory.memory`` on the most loaded pp rank (GiB),
the reserved and device totals and the usable capacity of the fit rule, so the term that
pushes a run that really ran over the limit stands out.
"""

from __future__ import annotations

import argparse
import sys

from planner.catalog.hardware import load_catalog
from planner.model.memory import memory, usable_capacity
from planner.units import GIB
from validation.published import STACK_SETTINGS, compare_published, published_candidates, recipe_settings
from validation.published_rows import read_published_runs

TERMS = ("params", "grads", "optimizer", "unsharded_params", "activations", "logits_loss", "misc")


def breakdown_lines(show_all: bool) -> list[str]:
    catalog = load_catalog()
    runs, _ = read_published_runs()
    header = "| row | src | model | layout | " + " | ".join(TERMS) + " | reserved | device | usable | fits |"
    lines = [header, "|" + "---|" * (len(TERMS) + 8)]
    fitting = 0
    for c in compare_published(runs, catalog=catalog):
        fitting += c.fits
        if c.fits and not show_all:
            continue
        run = c.run
        settings = recipe_settings(run, STACK_SETTINGS[run.stack])
        cand = published_candidates(run, catalog)
        mem = memory(run.model, cand, settings)
        gib = mem.as_gib()
        usable = float(usable_capacity(cand.memory_bytes[0], settings.memory_headroom)) / GIB
        lines.append(
            f"| {run.row_id} | {run.source} | {run.model_name} | {run.layout.describe()} mb{run.training.micro_batch}"
            f" x{run.training.grad_accum} {run.training.activation_checkpointing.value} {run.training.precision.value} | "
            + " | ".join(f"{gib[t]:.1f}" for t in TERMS)
            + f" | {float(mem.reserved[0]) / GIB:.1f} | {float(mem.device_total[0]) / GIB:.1f} | {usable:.1f}"
            f" | {'yes' if c.fits else 'no'} |"
        )
    lines.append(f"\n{fitting} of {len(runs)} readable rows fit")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="every row, not only those that do not fit")
    print("\n".join(breakdown_lines(parser.parse_args(argv).all)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
