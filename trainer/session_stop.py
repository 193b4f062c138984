"""A run's stop signals as the training loop sees them (trainer/session.py): the flag the signal
handlers set (trainer/preemption.py), the step boundary where every rank agrees whether to stop,
and what each rank's handler chooses from.

The choice between finishing the step and stopping at once is made in each rank's own handler,
at its own point of the step, where a collective would pair with another rank's step traffic and
hang (review49 H1). So it reads only figures the ranks already agree on (review49 M2: ranks that
chose from their own clocks and save times chose apart near the grace, and the finishing ones hung
in a collective with the ones gone until the launcher's SIGKILL): each step boundary's one
all-reduce carries the slowest rank's step and save times beside the stop flag."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
import torch.distributed as dist

from trainer.checkpoint import step_dir_name
from trainer.locks import parent_gone
from trainer.preemption import AgreedStop, PreemptionFlag, StopPoint, choose_stop, stop_grace_s
from trainer.step import Heartbeat


@dataclass(frozen=True)
class Boundary:
    """What one step boundary's all-reduce says, the same on every rank."""

    stop: bool  # some rank was signalled or orphaned
    failure: bool  # rank 0 could not write its metrics (a full disk)
    step_s: float | None  # the slowest rank's last step; None: none given
    save_s: float  # the slowest rank's last save (else the plan's)


def agree(stop: bool, failure: bool, step_s: float | None, save_s: float, device: torch.device) -> Boundary:
    """One all-reduce (max) of this rank's figures: every rank gets the same :class:`Boundary`."""
    values = torch.tensor(
        [float(stop), float(failure), -1.0 if step_s is None else step_s, save_s], dtype=torch.float64, device=device
    )
    dist.all_reduce(values, op=dist.ReduceOp.MAX)
    stop_max, failure_max, step_max, save_max = values.tolist()
    return Boundary(stop_max > 0, failure_max > 0, None if step_max < 0 else step_max, save_max)


class RunStops:
    """The run's stop flag, the step in flight, and the agreed figures its signal answer reads."""

    def __init__(
        self, saves_checkpoints: bool, save_s: float, device: torch.device, heartbeat: Heartbeat,
        last_words: Callable[[], None],
    ):  # fmt: skip
        """``save_s``: the plan's checkpoint write, until one is measured; ``last_words``: rank 0's
        report before a stop at once."""
        self.flag = PreemptionFlag.install()
        self.saves_checkpoints, self.device, self.heartbeat = saves_checkpoints, device, heartbeat
        self.save_s = save_s  # this rank's last save as measured
        self.step_started: float | None = None  # perf_counter at the start of the step in flight
        self.boundary_ahead = False  # a step has ended and its boundary is not yet passed
        # Under torchrun: the agent that started us. If it is gone (re-parented), stop like on SIGTERM.
        self.parent_pid = os.getppid() if "TORCHELASTIC_RUN_ID" in os.environ else None
        self.agreed = AgreedStop(
            steps_done=0,
            last_saved_step=-1,
            last_saved=None,
            trained=False,
            step_s=None,
            save_s=save_s,
            step_follows=True,
            at_end=False,
        )
        self.flag.choose = lambda name: choose_stop(name, self.point(), stop_grace_s())
        self.flag.last_words = last_words

    def resumed(self, step: int, last_saved_step: int) -> None:
        """The step a checkpoint (or the start) puts the run at: the same on every rank."""
        self.agreed = replace(self.agreed, steps_done=step)
        self.saved(last_saved_step)

    def saved(self, step: int, seconds: float | None = None) -> None:
        """A checkpoint of ``step`` is written (each rank returns from its last agreement together),
        in ``seconds`` on this rank: agreed at the next boundary."""
        self.agreed = replace(self.agreed, last_saved_step=step, last_saved=step_dir_name(step) if step >= 0 else None)
        if seconds is not None:
            self.save_s = seconds

    def step_begins(self) -> float:
        """The step's start (perf_counter): no micro-batch of it counted yet (review49 L1: the last
        step's count stood, "8 of 8 micro-batches done" at a step's first instant)."""
        self.heartbeat.micro_batch = None  # before the start is set: the handler reads both
        self.step_started = time.perf_counter()
        return self.step_started

    def step_ends(self) -> None:
        self.boundary_ahead = True  # before the start is cleared: the handler reads both
        self.step_started = None

    def boundary(self, steps_done: int, step_s: float | None, failure: bool, loop_ends: bool) -> Boundary:
        """The step boundary's agreement, and the figures a stop signal's answer reads until the
        next one. ``loop_ends``: no training step follows (the launch's last step, a divergence,
        an early stop), whatever the stop flag says."""
        own = self.flag.requested or parent_gone(self.parent_pid)
        agreed = agree(own, failure, step_s, self.save_s, self.device)
        self.boundary_ahead = False
        if own and not self.flag.requested:
            self.flag.signum = signal.SIGTERM  # the launcher died: save and exit as preempted
        self.agreed = replace(
            self.agreed,
            steps_done=steps_done,
            trained=agreed.step_s is not None,  # None: the boundary before this launch's first step
            step_s=agreed.step_s,
            save_s=agreed.save_s,
            step_follows=not (loop_ends or agreed.stop),
            at_end=loop_ends,
        )
        return agreed

    def point(self) -> StopPoint:
        """Where the run is, for a stop signal's answer (trainer/preemption.py ``choose_stop``)."""
        started = self.step_started
        return StopPoint(
            agreed=self.agreed,
            saves_checkpoints=self.saves_checkpoints,
            in_step_s=None if started is None else time.perf_counter() - started,
            micro_batch=self.heartbeat.micro_batch if started is not None else None,
            boundary_ahead=self.boundary_ahead,
        )
