"""Goodput across scales: MTTF, checkpoint interval, expected interruptions and lost time.

Fixed layouts (``trainplan estimate``), so the figures move only with the failure model
(planner/model/goodput.py, docs/model.md section 5b), not with the search. The anchor is Llama 3
405B on 16,384 H100: 419 unexpected interruptions in a 54-day snapshot and "higher than 90 %
effective training time" (Dubey et al. 2024, sec. 3.3.4). Prints a Markdown table; asserts
nothing. Run: .venv/bin/python bench/goodput_table.py
"""

from __future__ import annotations

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing as AC
from planner.layout import Layout, TrainingConfig
from planner.model.estimate import estimate
from planner.model.settings import DEFAULT_SETTINGS
from planner.units import HOURS_PER_DAY

ROWS = (
    # model, tokens, GPU, GPUs, layout, seq, micro-batch, accumulation
    ("llama3-8b", 1e12, "h100-sxm", 8, Layout(), 4096, 1, 32),
    ("llama3-8b", 1e12, "h100-sxm", 128, Layout(), 4096, 1, 2),
    ("llama3-70b", 2e12, "h100-sxm", 1024, Layout(tp=8), 4096, 1, 4),
    ("llama3.1-405b", 15.6e12, "h100-sxm", 4096, Layout(tp=8, pp=2), 8192, 1, 8),
    ("llama3.1-405b", 15.6e12, "h100-sxm", 16384, Layout(tp=8, pp=2), 8192, 1, 2),
)


def main() -> None:
    catalog = load_catalog()
    print(
        "| model | GPUs | layout | failure-free days | MTTF h | ckpt write s | ckpt every min | "
        "interruptions | goodput | days with failures |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, tokens, gpu, n, layout, seq, mb, acc in ROWS:
        training = TrainingConfig(seq_len=seq, micro_batch=mb, grad_accum=acc, activation_checkpointing=AC.FULL)
        e, off = (
            estimate(
                get_preset(name), gpu, layout, training, num_gpus=n, catalog=catalog, settings=s, training_tokens=tokens
            )
            for s in (DEFAULT_SETTINGS, DEFAULT_SETTINGS.but(model_failures=False))
        )
        g = e.goodput
        assert g is not None and e.time_to_train_h is not None and off.time_to_train_h is not None
        print(
            f"| {name} | {n:,} | {layout.resolve(n).describe()} | {off.time_to_train_h / HOURS_PER_DAY:,.1f} | "
            f"{g.mttf_h:,.1f} | {g.checkpoint_write_s:,.1f} | {g.checkpoint_interval_min:,.1f} | "
            f"{g.expected_interruptions:,.0f} | {g.goodput_fraction:.1%} | {e.time_to_train_h / HOURS_PER_DAY:,.1f} |"
        )


if __name__ == "__main__":
    main()
