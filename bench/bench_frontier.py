"""Frontier-scale checks (issue #10): Llama 3.1 405B on 16,384 H100s, pipelines included.

Prints one table: the time of a full ``plan`` at 16,384 GPUs (target < 3 s), the plan it picks
(layout, days, GPU-hours against Meta's 30.84M H100 GPU-hours, MFU), and ``estimate`` of Meta's
TP8 x PP16 x DP128 layout on the 126-layer preset (uneven stages 7, 8 x 14, 7) with each
activation-checkpointing mode: per-GPU memory and whether it fits an 80 GB H100.
Run: PYTHONPATH=. .venv/bin/python bench/bench_frontier.py
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from planner.api import PlanRequest, plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.model.estimate import estimate
from planner.model.settings import DEFAULT_SETTINGS

META_GPU_HOURS = 30.84e6  # Llama 3.1 model card, 405B pre-training on H100-80GB
TOKENS, SEQ, BATCH = 15.6e12, 8192, 2**24


def frontier_plan() -> None:
    load_catalog()
    request = PlanRequest(
        model=get_preset("llama3.1-405b"),
        training_tokens=TOKENS,
        gpus={"h100-sxm": 16384},
        seq_len=SEQ,
        global_batch_tokens=BATCH,
        objective="time",
    )
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        result = plan(request)
        best = min(best, time.perf_counter() - start)
    e = result.plan.estimate
    hours = e.time_to_train_h or float("nan")
    gpu_hours = hours * e.num_gpus
    print(f"plan 405b, 16384 h100: {best:.2f} s (target < 3 s), {result.num_candidates:,d} candidates")
    print(
        f"  picks {e.num_gpus} GPUs, {result.plan.layout.describe()}, micro_batch {e.layout.micro_batch} x "
        f"grad_accum {e.layout.grad_accum}, ac {e.layout.activation_checkpointing.value}: {hours / 24:.1f} days, "
        f"{gpu_hours / 1e6:.2f}M GPU-hours ({gpu_hours / META_GPU_HOURS - 1:+.0%} vs Meta's 30.84M), "
        f"MFU {e.throughput.mfu:.1%}, {e.memory.reserved_gib:.1f} GiB reserved"
    )


def meta_layout() -> None:
    """Meta's layout with trainplan's trainer (DEFAULT_SETTINGS) and, as a what-if, with Megatron's
    sequence-parallel activation storage (``sp_saves_gathered_inputs=False``)."""
    model = get_preset("llama3.1-405b")
    print("Meta's TP8 x PP16 x DP128 (16384 H100, micro_batch 1, grad_accum 16):")
    print(
        f"  {'physics':9s} {'sharding':8s} {'vpp':>3s} {'ac':10s} {'GiB':>6s} {'acts':>6s} {'fits':>5s} "
        f"{'days':>6s} {'MFU':>6s}"
    )
    megatron_sp = DEFAULT_SETTINGS.but(sp_saves_gathered_inputs=False)
    cases = [
        ("trainer", sh, vpp, ac) for sh in ("fsdp", "zero1") for vpp in (1, 2) for ac in ("none", "selective", "full")
    ]
    cases += [("megatron", "zero1", vpp, ac) for vpp in (1, 2) for ac in ("none", "selective")]
    for physics, sharding, vpp, ac in cases:
        e = estimate(
            model,
            "h100-sxm",
            Layout(tp=8, pp=16, vpp=vpp, sharding=sharding),
            TrainingConfig(seq_len=SEQ, micro_batch=1, grad_accum=16, activation_checkpointing=ac),
            num_gpus=16384,
            training_tokens=TOKENS,
            settings=DEFAULT_SETTINGS if physics == "trainer" else megatron_sp,
        )
        days = (e.time_to_train_h or float("nan")) / 24
        print(
            f"  {physics:9s} {sharding:8s} {vpp:>3d} {ac:10s} {e.memory.reserved_gib:6.1f} "
            f"{e.memory.breakdown_gib.activations:6.1f} {'yes' if e.feasible else 'no':>5s} "
            f"{days:6.1f} {e.throughput.mfu:6.1%}"
        )


if __name__ == "__main__":
    frontier_plan()
    meta_layout()
