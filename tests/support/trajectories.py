"""The settings and the loss-curve checks that the multi-process layout tests share
(integration/test_distributed.py against a 2-rank reference, test_distributed_one_process.py
against one process).

All runs see the same global batch (4 sequences of 32 tokens per step, ordered by the data
loader) and the same initial weights (initialisation does not depend on the layout), and use a
constant learning rate after warm-up; so, up to floating-point summation order, every layout
must follow its reference step by step.
"""

from __future__ import annotations

from pathlib import Path

from support.jobs import read_metrics

# 4 sequences per step: micro_batch 1 x grad_accum x data-parallel degree = 4. One batch for the
# test loss that every finished run evaluates (no test reads it, and under tensor parallelism 4
# batches took as long as a training step); runs that validate set their own eval_batches.
COMMON = dict(seq_len=32, micro_batch=1, lr=3e-3, warmup_steps=2, min_lr_ratio=1.0, probe_steps=2, eval_batches=1)
# Tensor- and context-parallel micro-steps cost about a second each on CPU, whatever their size
# (4 ranks' collectives on 2 cores), so those runs take the same 4 sequences per step in
# micro-batches of 2: half the micro-steps, the same global batch and trajectory.
TWO_PER_MICRO_BATCH = dict(micro_batch=2)
# Where nothing splits the batch (one data-parallel rank, no pipeline to feed), the whole step in
# one micro-step: a quarter of them. test_native_gpt_architecture_under_tp_and_cp keeps 2 x 2, so
# gradient accumulation under tensor and context parallelism stays tested.
ALL_IN_ONE_MICRO_BATCH = dict(micro_batch=4)


def settings(**changes) -> dict:
    """COMMON with ``changes`` (which may override it)."""
    return {**COMMON, **changes}


def mean(values) -> float:
    return sum(values) / len(values)


def assert_learns(losses: dict[int, float]) -> None:
    steps = sorted(losses)
    first, last = mean([losses[s] for s in steps[:3]]), mean([losses[s] for s in steps[-3:]])
    assert last < first - 0.5, f"loss did not fall: first steps {first:.3f}, last steps {last:.3f}"


def assert_same_trajectory(losses: dict[int, float], reference: dict[int, float], tolerance: float) -> None:
    assert sorted(losses) == list(range(1, len(losses) + 1))
    worst = max(abs(losses[s] - reference[s]) for s in losses)
    assert worst <= tolerance, f"differs from the reference run by up to {worst:.2e} (allowed {tolerance})"


def assert_same_gradient_norms(parallel: Path, single: Path) -> None:
    """AdamW hides a mis-scaled gradient from the loss; the gradient norm shows it."""
    pairs = zip(read_metrics(parallel), read_metrics(single), strict=True)
    norms = [(p["grad_norm"], s["grad_norm"]) for p, s in pairs]
    assert all(abs(p - s) <= 1e-3 * s for p, s in norms), norms
