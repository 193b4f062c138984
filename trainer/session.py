"""The stateful part of a run: data, optimizer, checkpoints, metrics, probe, loop, save and report.

What it is built from (optimizer, stepper, data loaders) is trainer/session_setup.py; what the run
measures of itself (step times, memory peaks, MFU) is trainer/meter.py; the stop signals it obeys
(SIGTERM, Ctrl-C) are trainer/preemption.py, and its step boundaries' agreement on them
trainer/session_stop.py; how a launch ends and the counters a checkpoint
restores are trainer/run_state.py."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch
import torch.distributed as dist

from planner.errors import DiskFullError, ReplanNeeded
from planner.fmt import one_line
from planner.layout import Layout, Precision
from trainer.checkpoint import Checkpointable, CheckpointManager, step_dir_name
from trainer.files import CHECKPOINT_DIR, keep_earlier_run, model_identity
from trainer.job_spec import JobSpec, memory_headroom
from trainer.log import ON_STDOUT
from trainer.meter import RunMeter
from trainer.metrics import MetricsLogger, ProgressBar, StepMetrics, timing_setup
from trainer.optim import LossScaler, adopt_run, apply_schedule
from trainer.parallel import Meshes
from trainer.pipeline import describe_run
from trainer.preemption import stopped_words
from trainer.probe import (
    JobTiming,
    MemoryReading,
    RunSummary,
    band_words,
    check_measured_fit,
    format_report,
    measured_gpu,
    with_band,
    write_replan_needed,
    write_report,
    write_validation,
)
from trainer.run_state import Outcome, TrainState
from trainer.session_setup import build_step_parts, prepare_data_once, split_loader
from trainer.session_stop import RunStops

log = logging.getLogger(__name__)


def eval_micro_batches(eval_batches: int, grad_accum: int) -> int:
    """Micro-batches each rank evaluates: ``eval_batches`` global batches of the plan (Session.evaluate)."""
    return eval_batches * grad_accum


class Session:
    def __init__(
        self,
        job: JobSpec,
        job_dir: Path,
        device: torch.device,
        layout: Layout,
        meshes: Meshes,
        model: torch.nn.Module,
        stage_modules: list[torch.nn.Module] | None = None,
        stop_step: int | None = None,
    ):
        """``model``: what the optimizer and checkpoints see; ``stage_modules``: what the pipeline
        runs (this rank's stages; defaults to ``[model]``); ``stop_step``: the step this launch
        ends at (``run --steps``; default the job's last)."""
        self.job, self.job_dir, self.device, self.layout, self.meshes, self.model = (
            job,
            Path(job_dir),
            device,
            layout,
            meshes,
            model,
        )
        self.stage_modules = stage_modules or [model]
        self.run, self.plan, self.training = job.run, job.plan, job.plan.training
        self.stop_step = job.run.steps if stop_step is None else min(stop_step, job.run.steps)
        self.steps_given = stop_step is not None  # run --steps (its messages name the flag only then)
        self.is_rank0 = dist.get_rank() == 0
        self.state = TrainState()
        self.scaler = LossScaler.for_precision(self.training.precision == Precision.FP16)
        self.optimizer, self.scheduler, self.pipeline_kind, self.stepper = build_step_parts(
            model, self.stage_modules, self.run, self.training, layout, meshes, device, self.scaler
        )
        log.info(
            describe_run(
                layout,
                self.training.precision,
                dist.get_world_size(),
                device,
                self.pipeline_kind,
                len(self.stage_modules),
                self.plan.optimizer_precision.pure_bf16,
            )
        )
        self._prepare_data()
        # Its small collectives use tensors on ``device``: CPU for gloo, CUDA for NCCL.
        self.ckpt = CheckpointManager(
            self.job_dir / CHECKPOINT_DIR, self.run.keep_checkpoints, device, model_identity(self.plan)
        )
        plan_save_s = getattr(self.plan.estimate.goodput, "checkpoint_write_s", 0.0)
        self.stops = RunStops(self.run.save_checkpoints, plan_save_s, device, self.stepper.heartbeat, self._last_words)
        self.preemption = self.stops.flag
        self.meter = RunMeter(self.plan, device, self.is_rank0)
        # the job's typical step is timed over the steps of this setup (trial s45)
        self.setup = timing_setup(self.plan, dist.get_world_size(), measured_gpu(device) or device.type)
        self.last_saved_step = -1
        self.started = time.perf_counter()
        self.metrics: MetricsLogger | None = None

    def close(self) -> None:
        self.preemption.close()
        if self.metrics is not None:
            self.metrics.close()

    # ------------------------------------------------------------------ setup

    def _prepare_data(self) -> None:
        """Rank 0 prepares (idempotent) while the others wait; a failure stops every rank the same way."""
        prepare_data_once(self.run, self.job_dir, self.plan.model.vocab_size, self.training.seq_len, self.is_rank0)
        self.loader = self._loader("train")
        if self.run.eval_every:
            self._loader("val")  # fail now, not at the first evaluation, if the split is too small

    def _loader(self, split: str):
        return split_loader(
            self.run, self.job_dir, split, self.training, self.meshes, self.plan.model.vocab_size, self.device
        )

    # ------------------------------------------------------------------ checkpoints

    def _checkpointable(self) -> Checkpointable:
        return Checkpointable(
            model=self.model,
            optimizer=self.optimizer,
            rank_state=self._rank_state,
            load_rank_state=self._load_rank_state,
        )

    def _rank_state(self) -> dict:
        rng = {"torch": torch.get_rng_state()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        return {
            "train": asdict(replace(self.state, wall_s=self._wall_s()[0])),
            "loader": self.loader.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": rng,
        }

    def _load_rank_state(self, saved: dict) -> None:
        self.state = TrainState(**saved["train"])
        self.loader.load_state_dict(saved["loader"])
        self.scheduler.load_state_dict(saved["scheduler"])
        changed = adopt_run(self.optimizer, self.scheduler, self.run)
        if changed and self.is_rank0:
            log.info(f"resumed under job.json's settings, not the checkpoint's: {', '.join(changed)}")
        apply_schedule(self.scheduler)  # after the optimizer's state: its rate is the checkpoint's
        self.scaler.load_state_dict(saved["scaler"])
        torch.set_rng_state(saved["rng"]["torch"])
        if "cuda" in saved["rng"] and self.device.type == "cuda":
            torch.cuda.set_rng_state(saved["rng"]["cuda"], self.device)

    def load_checkpoint(self, restart_from_scratch: bool = False) -> None:
        """``restart_from_scratch``: with no checkpoint that verifies, set them aside and start over
        (without it the run refuses: trial49 M5)."""
        step = self.ckpt.load_latest(self._checkpointable(), restart_from_scratch)
        if step is not None:
            log.info(f"resumed from checkpoint {step_dir_name(step)} (step {step} of {self.run.steps})")
        elif aside := sorted(self.ckpt.set_aside):  # this launch set them aside (review s37: not again)
            self._start_over(aside)
        self.last_saved_step = step if step is not None else -1
        self.stops.resumed(self.state.step, self.last_saved_step)
        self.metrics = MetricsLogger(self.job_dir, self.state.step, enabled=self.is_rank0, setup=self.setup)

    def _start_over(self, aside: list[str]) -> None:
        """No checkpoint left, some set aside as corrupt: the run starts again from step 0 (the same
        run, from the seed), and says so; the earlier launches' metrics.jsonl and report.json are
        kept beside, renamed, not cut back (trial s37: a finished 60-step run's metrics were cut to
        the 3 steps of the next launch and its report replaced, unsaid)."""
        kept = keep_earlier_run(self.job_dir) if self.is_rank0 else []
        log.warning(
            f"no checkpoint in {self.ckpt.ckpt_dir} verifies ({', '.join(aside)} set aside): starting again from"
            " step 0, every step trained before is trained again"
            + (f"; the earlier run's {' and '.join(kept)} kept" if kept else ""),
            extra=ON_STDOUT,
        )

    def save(self) -> None:
        if self.last_saved_step == self.state.step or not self.run.save_checkpoints:
            return
        started = time.perf_counter()
        path = self.ckpt.save(self.state.step, self._checkpointable())
        self.last_saved_step = self.state.step
        self.stops.saved(self.state.step, time.perf_counter() - started)
        log.info(f"\nsaved checkpoint {path}")

    # ------------------------------------------------------------------ probe

    def probe(self) -> Outcome | None:
        """Run the first ``probe_steps`` steps of this launch measured; stop if they do not fit."""
        num_steps = min(self.run.probe_steps, self.stop_step - self.state.step)
        if num_steps <= 0:
            return None
        self.meter.reset_peaks()
        try:
            outcome = self.run_steps(self.state.step + num_steps)
        except torch.OutOfMemoryError as exc:
            reading = self.meter.oom_reading()
            reason = f"out of memory during the probe ({one_line(exc)})"
            # Written by the rank that ran out (others may be blocked in a collective).
            write_replan_needed(self.job_dir, self.plan, reading, memory_headroom(self.plan, self.run), reason)
            raise ReplanNeeded(reason) from None
        memory = self.meter.reading()
        if self.is_rank0:
            report = write_validation(
                self.job_dir, self.plan, self.meter.step_times, memory, self.device.type, measured_gpu(self.device)
            )
            measured, predicted = report.measured, report.predicted
            log.info(
                f"\nprobe: {len(self.meter.step_times)} steps, step {measured.step_s:.3f} s (predicted "
                f"{with_band(predicted.step_s, report.band.step_s, '.3f', ' s')}{band_words(report.band.step_s)}),"
                " allocated peak "
                + (f"{measured.peak_gib:.2f} GiB" if measured.peak_gib is not None else "n/a on this device")
                + f" (predicted {predicted.peak_gib:.2f} GiB)"
                + (
                    ""
                    if report.comparable
                    else f"\nprobe: measured on {report.measured_gpu or self.device.type.upper()}, so the timings are not"
                    f" compared with the prediction for {self.plan.gpu}: this run checks that the plan runs, not its"
                    " speed"
                ),
            )
        check_measured_fit(self.job_dir, self.plan, memory, memory_headroom(self.plan, self.run), self.is_rank0)
        return outcome

    # ------------------------------------------------------------------ loop

    def loop(self) -> Outcome:
        ended = Outcome.COMPLETED if self.stop_step == self.run.steps else Outcome.STOPPED
        return self.run_steps(self.stop_step) or ended

    def nothing_to_run(self) -> bool:
        """Whether the checkpoint resumed from is at or past the step this launch ends at: then
        nothing is trained and nothing is overwritten (a rerun of a finished job wiped its
        report's measurements)."""
        if self.state.step < self.stop_step:
            return False
        where = f"at step {self.state.step} of {self.run.steps} ({step_dir_name(self.state.step)})"
        if self.state.step >= self.run.steps:
            # trial s27: `--steps 10` on a finished 30-step job did not say it was behind the checkpoint
            behind = ""
            if self.steps_given and self.stop_step < self.state.step:
                behind = f"--steps {self.stop_step} is behind the checkpoint; "
            elif not self.steps_given and self.state.step > self.run.steps:  # trial s37: "--steps 60", none given
                behind = f"job.json's {self.run.steps} steps are behind the checkpoint (an earlier --steps extended the run); "
            log.info(
                f"{behind}the job is complete: {where}; its report.json stands (--steps above"
                f" {max(self.run.steps, self.state.step)} extends it)"
            )
        else:
            log.info(f"nothing to run before --steps {self.stop_step}: {where}; run without --steps to go on")
        return True

    def _next_batches(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [next(self.loader) for _ in range(self.training.grad_accum)]

    def _synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def stop_requested(self, loop_ends: bool = False) -> bool:
        """Whether any rank was signalled or orphaned, or rank 0 could not write its metrics (a
        full disk): one all-reduce, so every rank stops at the same step (trainer/session_stop.py).
        ``loop_ends``: no training step follows in this launch."""
        failure = self.metrics.failure if self.metrics is not None else None
        step_s = self.meter.step_times[-1] if self.meter.step_times else None  # None: before the first step
        agreed = self.stops.boundary(self.state.step, step_s, failure is not None, loop_ends)
        if agreed.failure:
            raise DiskFullError(
                (failure or f"rank 0 could not write {self.job_dir / 'metrics.jsonl'}")
                + f"; free space and resume from the last checkpoint ({self._kept()})"
            )
        return agreed.stop

    def _last_words(self) -> None:
        """Before a stop at once, this launch's report; none when it trained nothing (then the last one
        stands). In the signal handler: this rank's peaks, no collective (review49 H1)."""
        if self.meter.step_times:
            outcome = Outcome.INTERRUPTED if self.preemption.by_user else Outcome.PREEMPTED
            self._report(outcome, test_loss=None, memory=self.meter.local_reading())

    def _kept(self) -> str:
        return step_dir_name(self.last_saved_step) if self.last_saved_step >= 0 else "none yet"

    def _opened_metrics(self) -> MetricsLogger:
        if self.metrics is None:  # load_checkpoint() opens it (it knows the step to resume from)
            raise RuntimeError("the metrics log is not open: call load_checkpoint() before training steps")
        return self.metrics

    def run_steps(self, until_step: int) -> Outcome | None:
        """Train until ``until_step``; an Outcome when the run must end early."""
        progress = ProgressBar(self.state.step, self.stop_step, enabled=self.is_rank0)
        tokens_per_step = self.training.tokens_per_step(self.layout)
        while self.state.step < until_step:
            batches = self._next_batches()
            self._synchronize()
            started = self.stops.step_begins()
            result = self.stepper.train_step(batches)
            self._synchronize()
            step_s = time.perf_counter() - started
            self.stops.step_ends()
            self.meter.step_times.append(step_s)
            self.state.step += 1
            self._count_bad(result)
            val_loss = self._maybe_evaluate()
            metrics = self._step_metrics(result, step_s, tokens_per_step, val_loss)
            self._opened_metrics().log_step(metrics)
            progress.update(metrics)
            outcome = self._end_condition(val_loss)
            if outcome is not None:
                progress.close()
                return outcome
            if self.state.step % self.run.checkpoint_every == 0:
                self.save()
        progress.close()
        return None

    def _count_bad(self, result) -> None:
        if not result.skipped:
            self.state.last_train_loss = result.loss
            return
        if result.overflow and not self.scaler.at_minimum:
            self.state.overflow_steps += 1
            return
        self.state.bad_steps += 1
        log.warning(
            f"\nwarning: step {self.state.step}: non-finite loss {result.loss} or gradient norm "
            f"{result.grad_norm}; skipped (no update), {self.state.bad_steps} of max_bad_steps "
            f"{self.run.max_bad_steps}",
            extra=ON_STDOUT,
        )

    def _step_metrics(self, result, step_s: float, tokens_per_step: int, val_loss: float | None) -> StepMetrics:
        tokens_per_s = tokens_per_step / step_s
        util, power = self.meter.sample_gpu()
        return StepMetrics(
            step=self.state.step,
            loss=result.loss,
            lr=result.lr,
            grad_norm=result.grad_norm,
            step_s=step_s,
            tokens_per_s=tokens_per_s,
            mfu=self.meter.mfu(tokens_per_s),
            peak_mem_gib=self.meter.track_memory(),
            gpu_util=util,
            power_w=power,
            skipped=result.skipped,
            loss_scale=self.scaler.scale if self.scaler.enabled else None,
            val_loss=val_loss,
            launch_start=len(self.meter.step_times) == 1,
            setup=self.setup,
        )

    def _end_condition(self, val_loss: float | None) -> Outcome | None:
        ended = self._run_ended(val_loss)
        # every step's boundary is agreed, the last too: a stop signal's answer reads it
        stop = self.stop_requested(loop_ends=ended is not None or self.state.step >= self.stop_step)
        # A stop during the launch's last step: it ends as it would have, saved and tested (trial s45:
        # "preempted" at the job's last step, no test loss, and the rerun kept that report as final).
        if ended is None and stop and self.state.step < self.stop_step:
            return Outcome.PREEMPTED
        return ended

    def _run_ended(self, val_loss: float | None) -> Outcome | None:
        """The run's own end before its last step (every rank alike: the losses are all-reduced)."""
        if self.state.bad_steps >= self.run.max_bad_steps:
            return Outcome.DIVERGED
        if (
            val_loss is not None
            and self.run.early_stop_patience
            and self.state.evals_without_improvement >= self.run.early_stop_patience
        ):
            return Outcome.EARLY_STOPPED
        return None

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, split: str) -> float:
        """Mean loss over the split's first ``eval_batches`` global batches, the same sequences every
        time and on every layout of the plan's batch: each rank takes its ``grad_accum`` micro-batches
        of each (whole pipeline calls under pp). The loader deals the split's order out rank by rank,
        so the ranks' first k micro-batches are the order's first k x micro_batch x dp sequences
        (trial s45 L3: over eval_batches micro-batches per rank, dp1 mb2 and pp2 dp1 mb1 tested
        other sequences, and a replan's early stopping compared losses over other sets)."""
        loader = self._loader(split)
        num = eval_micro_batches(self.run.eval_batches, self.training.grad_accum)
        return self.stepper.eval_loss([next(loader) for _ in range(num)])

    def _maybe_evaluate(self) -> float | None:
        if not self.run.eval_every or self.state.step % self.run.eval_every:
            return None
        val_loss = self.evaluate("val")
        self.state.last_val_loss, self.state.last_val_step = val_loss, self.state.step
        if val_loss < self.state.best_val_loss:
            self.state.best_val_loss, self.state.evals_without_improvement = val_loss, 0
        else:
            self.state.evals_without_improvement += 1
        self._opened_metrics().log_scalar("val/loss", val_loss, self.state.step)
        return val_loss

    # ------------------------------------------------------------------ save and report

    def save_and_report(self, outcome: Outcome) -> None:
        """Save (except after divergence, which keeps the last good checkpoint), test, report."""
        if outcome == Outcome.DIVERGED:
            kept = self.last_saved_step
            log.error(
                f"\nerror: {self.state.bad_steps} non-finite steps (max_bad_steps={self.run.max_bad_steps}); "
                f"stopping at step {self.state.step}, last good checkpoint: "
                f"{step_dir_name(kept) if kept >= 0 else 'none'}",
                extra=ON_STDOUT,
            )
            self._report(outcome, test_loss=None)
            return
        if outcome == Outcome.PREEMPTED:
            saves = self.state.step > 0 and self.run.save_checkpoints
            if saves:
                self.save()
            log.info(stopped_words(self.preemption.name(), self.state.step, saves))
            # trial s27: the last launch's report ("stopped" at step 10) stood after a SIGTERM at 16;
            # trial s33: Ctrl-C's was "run preempted"
            self._report(Outcome.INTERRUPTED if self.preemption.by_user else outcome, test_loss=None)
            return
        self.save()
        self._report(outcome, test_loss=self._test_loss())

    def _test_loss(self) -> float | None:
        try:
            return self.evaluate("test")
        except ValueError as exc:  # a tiny dataset's test split may hold no full batch
            log.info(f"note: no test loss ({exc})")
            return None

    def _wall_s(self) -> tuple[float, float]:
        """(the job's wall time over every launch, this launch's) so far, in seconds."""
        launch_s = time.perf_counter() - self.started
        return self.state.wall_s + launch_s, launch_s

    def _report(self, outcome: Outcome, test_loss: float | None, memory: MemoryReading | None = None) -> None:
        memory = self.meter.reading() if memory is None else memory  # reading(): a collective
        earlier = [] if self.metrics is None else self.metrics.earlier_step_times
        if self.metrics is not None:
            self.metrics.close()
        if not self.is_rank0:
            return
        timing = JobTiming.of(earlier, self.meter.step_times)
        step_s = timing.step_s
        tokens_per_s = self.training.tokens_per_step(self.layout) / step_s if step_s else None
        perplexity = math.exp(test_loss) if test_loss is not None and test_loss < 50 else None
        job_wall_s, launch_wall_s = self._wall_s()
        summary = RunSummary(
            steps_done=self.state.step,
            outcome=outcome.value,
            step_s=step_s,
            tokens_per_s=tokens_per_s,
            mfu=self.meter.mfu(tokens_per_s),
            peak_gib=memory.peak_gib,
            final_train_loss=self.state.last_train_loss,
            final_val_loss=self.state.last_val_loss,
            test_loss=test_loss,
            test_perplexity=perplexity,
            bad_steps=self.state.bad_steps,
            wall_s=job_wall_s,
            launch_wall_s=launch_wall_s,
            measured_steps=timing.measured_steps,
            measured_warmup_only=timing.warmup_only,
            reserved_gib=memory.reserved_gib,
            final_val_step=self.state.last_val_step,
        )
        report = write_report(self.job_dir, self.plan, summary, self.device.type, measured_gpu(self.device))
        log.info("\n" + format_report(report))
