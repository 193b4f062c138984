"""Goodput: what a whole run loses beside its steps: failures, checkpoints and restarts, and the
run's other losses (evaluation, input stalls, slow ranks, planned restarts, start-up).

Vectorised over a candidate table, so the ILP's scoring and the scalar ``estimate`` share one
formula (docs/model.md, "Goodput"):

- a job of ``n`` GPUs on ``k`` nodes fails at ``n x r_gpu + k x r_node`` per hour (failures
  independent per GPU-hour and per host-hour): ``MTTF = 1 / (n x r_gpu + k x r_node)``; a spot
  price adds its preemptions per node-hour to ``r_node`` (planner/catalog/prices.py);
- a checkpoint writes the job's state (fp32 master weights + AdamW moments) sharded over all
  ranks, ``write = state_bytes / (n x storage bandwidth per GPU)`` (or over the job's own
  aggregate bandwidth where one is set: ``checkpoint_bandwidth``); a restore reads it back and a
  restart adds a fixed overhead (rescheduling, process-group setup);
- checkpoints every ``tau = sqrt(2 x write x MTTF)`` (Young 1974; Daly 2006's first-order
  optimum), rounded to whole optimizer steps and never longer than the run;
- per useful second the job spends ``write / tau`` writing checkpoints, and each failure
  loses ``tau / 2`` of work on average plus the restart: wall time ``W`` solves
  ``W = T (1 + write / tau) + (W / MTTF) (tau / 2 + restart)``, so
  ``goodput = T / W = (1 - (tau / 2 + restart) / MTTF) / (1 + write / tau)``;
- a restore reads the checkpoint back ``restore_over_save`` times slower than it was written;
- a spot preemption is a host failure that also waits for capacity: ``p`` preemptions per
  node-hour (part of ``r_node``) cost ``k x p x wait`` per hour of wall time beside the lost
  work and restart (``spot_capacity_wait_s``);
- the run's other losses (``run_losses``, each a named setting with its source): the steps of a
  job of ``n`` GPUs wait for the slowest rank, ``1 + sigma (sqrt(2 ln n) - sqrt(2 ln 8))`` (the
  expected maximum of ``n`` normal speeds, beyond one node's); evaluation and input stalls add
  their shares of the step time; planned interruptions (maintenance) cost a restart each, no
  lost work; the job starts once, and writes no checkpoint while it starts. So
  ``W = (T s (1 + eval + stall) (1 + write / tau) + startup) / (1 - (tau / 2 + restart) / MTTF
  - planned x restart - k p wait)`` and ``goodput = T / W``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.units import FP32_BYTES, SECONDS_PER_HOUR

if TYPE_CHECKING:  # the typed figures of planner/plan.py, read here, never built
    from planner.estimate_parts import GoodputEstimate

# Where failures outpace progress (tau / 2 + restart >= MTTF) the first-order model has no
# finite answer; the job is scored at this goodput (1,000x its failure-free time) so that it
# stays a finite, visibly hopeless row of the search instead of breaking the ILP.
MIN_GOODPUT = 1e-3

# The ranks one node holds: a step already waits for the slowest GPU of one node in every
# single-node measurement the step model is checked on, so stragglers count beyond it.
STRAGGLER_BASE_GPUS = 8.0


def checkpoint_bytes_per_param(s: ModelingSettings) -> float:
    """Bytes per parameter in a training checkpoint: fp32 master weights (bf16 in pure bf16, whose
    bf16 weights are the master: ``s.weights_are_master``, ``s.master_param_bytes``) and the AdamW
    moments at the stack's width (``s.adam_state_bytes``: bf16 moments for DeepSeek-V3 and pure
    bf16); the gradients are not saved. 16-bit remainders are saved as the fp32 master they rebuild."""
    master = s.master_param_bytes if s.weights_are_master else FP32_BYTES
    return master + s.adam_state_bytes


def checkpoint_bytes(model: ModelSpec, s: ModelingSettings) -> float:
    """Bytes one checkpoint writes, over all ranks (each shard once)."""
    return float(model.num_params()) * checkpoint_bytes_per_param(s)


@dataclass(frozen=True)
class Goodput:
    """Per-row arrays; ``mttf_s`` and ``interval_s`` are inf when nothing fails (no checkpoints)."""

    mttf_s: np.ndarray
    write_s: np.ndarray  # one checkpoint save (the step waits for it)
    restart_s: np.ndarray  # restart overhead + restore, per failure
    interval_s: np.ndarray  # checkpoint interval, a whole number of steps
    interval_steps: np.ndarray
    young_s: np.ndarray  # Young/Daly's interval before it is cut to the run (inf: nothing fails)
    interval_cut: np.ndarray  # whether the run is shorter than Young/Daly's interval (one checkpoint)
    fraction: np.ndarray  # useful time / wall time (MIN_GOODPUT when failures outpace progress)
    wall_s: np.ndarray  # time-to-train including the lost time (NaN without a token budget)
    interruptions: np.ndarray  # expected failures over the wall time
    losses: RunLosses  # the run's other losses
    planned_restarts: np.ndarray  # expected planned interruptions over the wall time
    preemptions: np.ndarray  # expected spot preemptions over the wall time (among the interruptions)
    capacity_wait_s: np.ndarray  # what each waits for capacity (0 where no spot price is priced in)


def failure_rates(
    gpu_rate: np.ndarray, node_rate: np.ndarray, settings: ModelingSettings, preemptions: np.ndarray | float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Per-GPU-hour and per-node-hour failure rates: the catalog's where the GPU (node) file
    has one, else the settings', times ``failure_rate_scale`` (all 0 with ``model_failures`` off).
    Of ``node_rate``, ``preemptions`` per node-hour are a spot price's: kept, not scaled."""
    gpu, node = np.asarray(gpu_rate, dtype=float), np.asarray(node_rate, dtype=float) - preemptions
    on = float(settings.model_failures)
    scale = on * settings.failure_rate_scale
    return (
        np.where(np.isfinite(gpu), gpu, settings.failure_rate_per_gpu_hour) * scale,
        np.where(np.isfinite(node), node, settings.failure_rate_per_node_hour) * scale + on * np.asarray(preemptions),
    )


def checkpoint_bandwidth(num_gpus: np.ndarray, settings: ModelingSettings) -> np.ndarray:
    """Bytes per second a checkpoint is written at: the job's own aggregate where the settings
    give one, else every GPU at the per-GPU figure (Llama 3's store shared out)."""
    if settings.checkpoint_bandwidth_bytes_per_s is not None:
        return np.full(np.shape(num_gpus), settings.checkpoint_bandwidth_bytes_per_s)
    return num_gpus * settings.checkpoint_bandwidth_bytes_per_s_per_gpu


def goodput(
    useful_s: np.ndarray,
    step_s: np.ndarray,
    num_gpus: np.ndarray,
    rate_per_gpu_hour: np.ndarray,
    state_bytes: float | np.ndarray,
    settings: ModelingSettings,
    num_nodes: np.ndarray | int = 1,
    rate_per_node_hour: np.ndarray | float = 0.0,
    preemptions_per_node_hour: np.ndarray | float = 0.0,
) -> Goodput:
    """Failures, checkpoints and restarts for a failure-free run of ``useful_s`` seconds; of the
    node failures, ``preemptions_per_node_hour`` are spot preemptions, which wait for capacity."""
    n = np.asarray(num_gpus, dtype=float)
    step = np.asarray(step_s, dtype=float)
    useful = np.asarray(useful_s, dtype=float)
    per_hour = n * np.asarray(rate_per_gpu_hour, dtype=float) + np.asarray(num_nodes, dtype=float) * np.asarray(
        rate_per_node_hour, dtype=float
    )
    failures_per_s = per_hour / SECONDS_PER_HOUR
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mttf = np.where(failures_per_s > 0, 1.0 / failures_per_s, np.inf)
        write = state_bytes / checkpoint_bandwidth(n, settings)
        restart = settings.restart_overhead_s + settings.restore_over_save * write
        young = np.sqrt(2.0 * write * mttf)
        # no point checkpointing less than once per run, nor at all when nothing fails
        capped = np.where(np.isfinite(mttf), np.fmin(young, useful), np.inf)
        steps = np.maximum(1.0, np.round(capped / step))
        steps = np.where(np.isfinite(steps), steps, np.inf)
        interval = steps * step
        other = run_losses(n, np.asarray(num_nodes, dtype=float), settings)
        planned = other.planned_per_s * restart
        preempted_per_s = np.asarray(num_nodes, dtype=float) * np.asarray(preemptions_per_node_hour) / SECONDS_PER_HOUR
        waiting = preempted_per_s * settings.spot_capacity_wait_s
        lost = np.where(np.isfinite(mttf), (interval / 2 + restart) / mttf, 0.0) + planned + waiting
        overhead = np.where(np.isfinite(interval), write / interval, 0.0)
        survived = np.clip(1.0 - lost, MIN_GOODPUT, 1.0)
        kept = np.clip(survived / (1.0 + overhead), MIN_GOODPUT, 1.0)
        # Checkpoints are written while the steps run, not while the job starts; a job that
        # failures outpace is held at MIN_GOODPUT.
        wall = (useful * other.step_factor * (1.0 + overhead) + other.startup_s) / survived
        wall = np.fmin(wall, (useful * other.step_factor + other.startup_s) / MIN_GOODPUT)
        fraction = np.clip(useful / wall, MIN_GOODPUT, 1.0)
        interruptions = np.where(np.isfinite(mttf), wall / mttf, 0.0)
    return Goodput(
        mttf_s=mttf,
        write_s=write,
        restart_s=restart,
        interval_s=interval,
        interval_steps=steps,
        young_s=np.where(np.isfinite(mttf), young, np.inf),
        interval_cut=np.isfinite(mttf) & (young > useful),
        fraction=np.where(np.isnan(useful), kept / other.step_factor, fraction),
        wall_s=np.where(np.isnan(useful), np.nan, wall),
        interruptions=np.where(np.isnan(useful), np.nan, interruptions),
        losses=other,
        planned_restarts=np.where(np.isnan(useful), np.nan, wall * other.planned_per_s),
        preemptions=np.where(np.isnan(useful), np.nan, wall * preempted_per_s),
        capacity_wait_s=np.where(preempted_per_s > 0, settings.spot_capacity_wait_s, 0.0),
    )


@dataclass(frozen=True)
class RunLosses:
    """A whole run's losses besides failures and checkpoints (per row)."""

    straggler: np.ndarray  # the slowest rank's extra share of the step
    evaluation: float  # evaluation's share of the step time
    data_stall: float  # input stalls' share
    planned_per_s: np.ndarray  # planned interruptions (maintenance) per second of wall time
    startup_s: float  # once per run

    @property
    def step_factor(self) -> np.ndarray:
        return step_factor(self.straggler, self.evaluation, self.data_stall)


def step_factor(straggler, evaluation, data_stall):
    """Wall seconds per second of the model's steps, before failures and restarts: the slowest
    rank stretches every step, evaluation and input stalls add their shares of it."""
    return (1.0 + straggler) * (1.0 + evaluation + data_stall)


def run_losses(num_gpus: np.ndarray, num_nodes: np.ndarray, settings: ModelingSettings) -> RunLosses:
    """The named losses of ``settings`` for jobs of ``num_gpus`` GPUs on ``num_nodes`` nodes."""
    beyond_node = np.sqrt(2.0 * np.log(np.maximum(num_gpus, 1.0))) - np.sqrt(2.0 * np.log(STRAGGLER_BASE_GPUS))
    return RunLosses(
        straggler=settings.straggler_sigma * np.maximum(beyond_node, 0.0),
        evaluation=settings.eval_time_fraction,
        data_stall=settings.data_stall_fraction,
        planned_per_s=num_nodes * settings.planned_interruptions_per_node_hour / SECONDS_PER_HOUR,
        startup_s=settings.job_startup_s,
    )


@dataclass(frozen=True)
class LossShares:
    """The predicted wall time's losses, each as a share of it (together 1 - goodput)."""

    straggler: float
    evaluation: float
    data_stall: float
    startup: float
    checkpoints: float
    failures: float  # the work lost since the last checkpoint, restart and restore, per failure
    planned_restarts: float
    capacity_wait: float = 0.0  # a spot preemption's wait for capacity (review s33: left out, shares fell short)

    @property
    def total(self) -> float:
        return sum(vars(self).values())

    def largest(self) -> tuple[str, float]:
        """The largest loss's field name and its share (explain's goodput note)."""
        return max(vars(self).items(), key=lambda item: item[1])


def loss_shares(g: GoodputEstimate, useful_h: float, wall_h: float) -> LossShares:
    """``wall - useful`` split by planner/model/goodput.py's formula, ``W = (T s (1 + eval + stall)
    (1 + write / tau) + startup) / (1 - (tau / 2 + restart) / MTTF - planned x restart)``: no
    checkpoint is written while the job starts."""
    useful, wall = useful_h * SECONDS_PER_HOUR, wall_h * SECONDS_PER_HOUR
    steps = useful * (1 + g.straggler_fraction)
    before_checkpoints = steps * (1 + g.evaluation_fraction + g.data_stall_fraction)
    tau = math.inf if g.checkpoint_interval_min is None else g.checkpoint_interval_min * 60
    failures = (g.expected_interruptions or 0.0) * (tau / 2 + g.restart_s) if math.isfinite(tau) else 0.0
    return LossShares(
        straggler=useful * g.straggler_fraction / wall,
        evaluation=steps * g.evaluation_fraction / wall,
        data_stall=steps * g.data_stall_fraction / wall,
        startup=g.startup_s / wall,
        checkpoints=before_checkpoints * g.checkpoint_write_s / tau / wall,
        failures=failures / wall,
        planned_restarts=(g.planned_restarts or 0.0) * g.restart_s / wall,
        capacity_wait=(g.spot_preemptions or 0.0) * g.capacity_wait_s / wall,
    )
