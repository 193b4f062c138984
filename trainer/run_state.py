"""How a launch ends (``Outcome``) and the counters a checkpoint restores with the model
(``TrainState``): the run's state that trainer/session.py advances, saves and reports."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    COMPLETED = "completed"
    STOPPED = "stopped"  # at run --steps, before the job's last step: run again to go on
    EARLY_STOPPED = "early_stopped"
    # SIGTERM, exit 143: saved after the step, or stopped at once with nothing saved since the newest
    # checkpoint (trainer/preemption.py choose_stop; review s50 M2): a rerun resumes from that checkpoint
    PREEMPTED = "preempted"
    INTERRUPTED = "interrupted"  # Ctrl-C, exit 130 (the report's word for PREEMPTED by SIGINT)
    DIVERGED = "diverged"  # max_bad_steps non-finite steps
    # written by `trainplan run`, not the workers: a launch that ended without their report
    FAILED = "failed"  # a worker killed or crashed
    PEER_LOST = "peer_lost"  # a rank or node went away mid-collective (exit 144)


@dataclass
class TrainState:
    """Counters that a checkpoint restores along with the model."""

    step: int = 0
    bad_steps: int = 0  # non-finite loss/gradients (skipped)
    overflow_steps: int = 0  # fp16 loss-scale overflows (skipped, not "bad")
    best_val_loss: float = math.inf
    evals_without_improvement: int = 0
    last_val_loss: float | None = None
    last_val_step: int | None = None  # the step last_val_loss was evaluated at (None in older checkpoints)
    last_train_loss: float | None = None
    # The job's wall time (s) before the launch that resumes from this state: at a save, every launch's
    # up to it (a launch's time after its last save is lost with its steps, as metrics.jsonl's are)
    wall_s: float = 0.0
