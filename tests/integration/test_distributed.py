"""Multi-process training on CPU (torchrun, gloo): every layout, kill-and-resume, SIGTERM.

All runs see the same global batch and the same initial weights, and use a constant learning
rate after warm-up (support/trajectories.py). So, up to floating-point summation order, every
layout must reproduce the reference FSDP run step by step. This checks much more than "the loss
falls": a layout that dropped a gradient, double-counted a replica or mis-split a pipeline would
drift from the reference within a few steps.

The parallel runs of the table below share one torchrun launch of the largest world
(``support/job_batch.py``: each worker imports torch once and runs the jobs in turn, each through
``trainer.train.main`` with a process group of its own); a launch spends most of its time
starting up. The kill and SIGTERM tests launch torchrun themselves (they test the launch); the
killed job then resumes in the batch, as one more of its runs.
The runs compared with the same job on one process (model families, uneven and tied pipelines,
expert parallelism, fp8) are in test_distributed_one_process.py: two modules, which the two
xdist workers run side by side.
"""

from __future__ import annotations

import contextlib
import json
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.jobs import (
    Run,
    batch_result,
    finished,
    kill_tree,
    launch_runs,
    losses_by_step,
    read_metrics,
    start_torchrun,
    wait_for,
    write_job,
)
from support.trajectories import ALL_IN_ONE_MICRO_BATCH as ALL_IN_ONE
from support.trajectories import COMMON, assert_learns, assert_same_trajectory, settings
from support.trajectories import TWO_PER_MICRO_BATCH as TWO

from planner.layout import Layout
from trainer.checkpoint import list_checkpoints

pytestmark = pytest.mark.slow

# 3 checkpoints, so keep_checkpoints=2 deletes one; the kill test's run stops after the first and
# resumes for 8 steps, the pipelined resume continues the second for 4.
REFERENCE_STEPS = 12
CHECKPOINT_EVERY = 4
LAYOUT_STEPS = 6


def layout_run(layout: Layout, nproc: int, grad_accum: int, **training) -> Run:
    return Run(layout, nproc, grad_accum, settings(steps=LAYOUT_STEPS, **training))


# FSDP over 2 ranks, 12 steps, a checkpoint every 4: the run every layout is compared with.
REFERENCE = Run(Layout(dp_shard=2), 2, 2, settings(steps=REFERENCE_STEPS, checkpoint_every=CHECKPOINT_EVERY))

# name: (run, tolerance against the reference)
LAYOUTS = {
    "hsdp-2x2": (layout_run(Layout(dp_replicate=2, dp_shard=2), 4, 1), 1e-3),
    "fsdp2-x-tp2": (layout_run(Layout(dp_shard=2, tp=2), 4, 1, **TWO), 1e-3),
    # Pipelines also evaluate (schedule.eval) twice; the TP one uses the vocabulary-parallel loss.
    "pp2-gpipe-x-tp2": (
        layout_run(Layout(dp_shard=1, pp=2, tp=2, pp_schedule="gpipe"), 4, 2, eval_every=3, eval_batches=2, **TWO),
        1e-3,
    ),
    "pp2-1f1b-x-fsdp2": (
        layout_run(Layout(dp_shard=2, pp=2, pp_schedule="1f1b"), 4, 2, eval_every=3, eval_batches=2),
        1e-3,
    ),
    # Interleaved 1F1B: each pp rank runs 2 of the 4 one-block stages (0+2, 1+3).
    "pp2-vpp2-x-fsdp2": (
        layout_run(Layout(dp_shard=2, pp=2, vpp=2, pp_schedule="1f1b"), 4, 2, eval_every=3, eval_batches=2),
        1e-3,
    ),
    "ddp2-full-ac": (layout_run(Layout(dp_replicate=2, sharding="none"), 2, 2, activation_checkpointing="full"), 1e-3),
    "zero1-selective-ac": (
        layout_run(Layout(dp_shard=2, sharding="zero1"), 2, 2, activation_checkpointing="selective"),
        1e-3,
    ),
    # Context parallel: each rank holds half of every sequence; recompute re-gathers K/V.
    "cp2-x-fsdp2-full-ac": (
        layout_run(Layout(dp_shard=2, cp=2), 4, 1, activation_checkpointing="full", **TWO),
        1e-3,
    ),
    "cp2-x-tp2": (layout_run(Layout(dp_shard=1, cp=2, tp=2), 4, 1, **ALL_IN_ONE), 1e-3),
    "pp2-1f1b-x-cp2": (
        layout_run(Layout(dp_shard=1, pp=2, cp=2, pp_schedule="1f1b"), 4, 4, eval_every=3, eval_batches=4),
        1e-3,
    ),
    # bf16 compute rounds differently from the fp32 reference; it must still follow it closely.
    "zero2-bf16": (layout_run(Layout(dp_shard=2, sharding="zero2"), 2, 2, precision="bf16"), 5e-2),
}


# The reference's step-8 checkpoint continued as an interleaved pipeline (2 ranks x 2 stages each).
RESUMED_ON_PP = Run(
    Layout(dp_shard=1, pp=2, vpp=2, pp_schedule="1f1b"),
    2,
    4,
    settings(steps=REFERENCE_STEPS),
    resumes=("reference", "step-000008"),
)
# The reference's own job, SIGKILLed under torchrun after its first checkpoint (``killed``, before
# the batch), then resumed in the batch: it must end on the reference's trajectory.
KILLED = "killed-and-resumed"
RUNS = {
    "reference": REFERENCE,
    **{name: run for name, (run, _) in LAYOUTS.items()},
    "resumed-on-pp2-vpp2": RESUMED_ON_PP,
    KILLED: REFERENCE,
}


@dataclass(frozen=True)
class Killed:
    steps_logged: int  # metrics.jsonl's lines when the tree was killed
    log: Path  # torchrun's output


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def killed(runs_root) -> Killed:
    """SIGKILL torchrun and its workers once the first checkpoint is on disk, as a node failure
    would. A launch of its own (the kill is of a launch); the resume needs no torch start-up of its
    own, so it is the batch's. What went wrong is the kill test's to say, not every layout's: a
    launch that never checkpoints is killed at the deadline and the test reads its log."""
    job, log = RUNS[KILLED].write(runs_root / KILLED), runs_root / "killed.log"
    proc = start_torchrun(job, 2, log)
    try:
        with contextlib.suppress(AssertionError):  # the deadline: test_killed_run_resumes_exactly fails
            wait_for(
                lambda: (job / "ckpt" / f"step-{CHECKPOINT_EVERY:06d}").exists() or proc.poll() is not None,
                120,
                "the first checkpoint",
                poll=0.02,
            )
    finally:
        kill_tree(proc)
        proc.wait(30)
    return Killed(len(read_metrics(job)), log)


@pytest.fixture(scope="module")
def launched(runs_root, killed) -> dict[str, Path]:
    return launch_runs(runs_root, RUNS)


@pytest.fixture(scope="module")
def reference_dir(launched) -> Path:
    job = finished(launched, "reference")
    assert_learns(losses_by_step(job))
    assert [step for step, _ in list_checkpoints(job / "ckpt")] == [8, 12]  # keep_checkpoints=2
    return job


@pytest.fixture(scope="module")
def reference(reference_dir) -> dict[int, float]:
    return losses_by_step(reference_dir)


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layout_trains_like_the_reference(name, launched, reference):
    job, (_, tolerance) = finished(launched, name), LAYOUTS[name]
    losses = losses_by_step(job)
    assert_learns(losses)
    assert_same_trajectory(losses, reference, tolerance)
    if "eval_every" in RUNS[name].settings:
        val_losses = [r["val_loss"] for r in read_metrics(job) if r["val_loss"] is not None]
        assert len(val_losses) == 2 and val_losses[1] < val_losses[0] < 7.0


def test_killed_run_resumes_exactly(killed, launched, reference):
    """The reference's job, SIGKILLed (torchrun and its workers) after its first checkpoint, resumes
    from it; the metrics lines the killed launch logged past it are replaced, not duplicated, and
    the run matches the reference."""
    assert CHECKPOINT_EVERY <= killed.steps_logged < REFERENCE_STEPS, killed.log.read_text()[-3000:]
    job = finished(launched, KILLED)
    assert "resumed from checkpoint step-0000" in batch_result(job)[1]
    losses = losses_by_step(job)
    assert [r["step"] for r in read_metrics(job)] == list(range(1, REFERENCE_STEPS + 1))  # no duplicates
    assert_same_trajectory(losses, reference, 1e-5)


def test_checkpoint_resumes_on_a_different_layout(launched, reference_dir, reference):
    """Checkpoints hold layout-independent names and resharding DCP shards: an FSDP checkpoint
    continues as an interleaved pipeline (2 ranks x 2 stages each, as after an automatic replan)
    on the same trajectory. (The batch copies the reference's step-8 checkpoint in when it
    reaches this run: ``Run.resumes``.)"""
    job = finished(launched, "resumed-on-pp2-vpp2")
    output = batch_result(job)[1]
    assert "resumed from checkpoint step-000008" in output
    assert "pipeline: interleaved 1f1b, stages 0, 2 on pp rank 0 of 2" in output
    losses = losses_by_step(job)
    assert sorted(losses) == list(range(9, REFERENCE_STEPS + 1))
    assert max(abs(losses[s] - reference[s]) for s in losses) <= 1e-4


def test_sigterm_saves_and_exits_promptly(tmp_path):
    job = write_job(tmp_path, Layout(dp_shard=2), 2, steps=5000, grad_accum=2, **COMMON)
    log = tmp_path / "run.log"
    proc = start_torchrun(job, 2, log)
    try:
        wait_for(lambda: len(read_metrics(job)) >= 3 or proc.poll() is not None, 120, "three steps")
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # what a scheduler does; torchrun forwards it to the workers
        proc.wait(60)
        elapsed = time.monotonic() - signalled
    finally:
        kill_tree(proc)
    output = log.read_text()
    saved = [step for step, _ in list_checkpoints(job / "ckpt")]
    assert len(saved) == 1 and 3 <= saved[0] < 5000, output[-3000:]
    assert f"SIGTERM: saved checkpoint at step {saved[0]}; exiting" in output
    assert elapsed < 30
    report = json.loads((job / "report.json").read_text())  # trial s27: a preempted launch reports too
    assert (report["outcome"], report["steps_done"]) == ("preempted", saved[0])
    manifest = json.loads((job / "ckpt" / f"step-{saved[0]:06d}" / "manifest.json").read_text())
    assert {"rank-00000.pt", "rank-00001.pt", ".metadata"} <= set(manifest["files"])
    assert not list(Path(job / "ckpt").glob("*.tmp"))
