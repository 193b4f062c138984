"""Validation of a plan before and after the run: static checks, the probe, the final report.

``check_plan`` refuses what cannot run, each problem as a one-line ValueError. The probe is
the first ``probe_steps`` steps of every launch: their step time and (CUDA) peak memory are
compared with the plan's prediction in ``validation.json``; when the measured memory does not
fit the device (or a probe step runs out of memory) the run stops before the long part with
``replan_needed.json``, which the launcher's ``--auto-replan`` feeds back to the planner.
"""

from __future__ import annotations

import functools
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

import torch

from planner.errors import ReplanNeeded
from planner.fmt import counted
from planner.layout import Layout, Precision
from planner.model.configuration import structural_problem
from planner.model.memory import fits, usable_capacity
from planner.model.settings import DEFAULT_SETTINGS
from planner.plan import Plan
from planner.reports import (
    BandCheck,
    BandChecks,
    Losses,
    MemoryFigures,
    PredictedMeasured,
    ProbeFigures,
    ReplanRequest,
    RunFigures,
    RunReport,
    ValidationReport,
    error_pct,
)
from planner.units import GIB
from trainer.files import REPLAN_FILE, REPORT_FILE, write_json_atomic
from trainer.job_spec import RunSettings, check_estimate_current, memory_headroom, run_problem
from trainer.run_state import Outcome

# The CUDA context lives outside the caching allocator: the planner's fit rule adds it to the
# reserved memory (planner.model.settings.cuda_context_bytes), and so do the checks here.
CUDA_CONTEXT_GIB = DEFAULT_SETTINGS.cuda_context_bytes / GIB

FP8_MIN_CAPABILITY = (8, 9)
STALE_FACTOR = 1.25  # a fresh memory estimate this much above job.json's: the recorded one is stale


def _check_structure(plan: Plan, layout: Layout) -> None:
    """The planner's structural rules (planner/model/structure.py), the same ones its search obeys,
    on the run's layout. The schedule is the plan's: run overrides were applied to it when the job
    was emitted."""
    from planner.catalog.hardware import load_catalog  # the planner's model, without its search

    problem = structural_problem(plan, layout, load_catalog())
    if problem is not None:
        raise ValueError(f"plan: {problem}")


def _check_precision(plan: Plan, device: torch.device) -> None:
    if plan.training.precision != Precision.FP8:
        return
    # On CPU torch emulates the fp8 matmuls (slowly): CPU runs test the plumbing, never the speed.
    if device.type == "cuda" and torch.cuda.get_device_capability(device) < FP8_MIN_CAPABILITY:
        raise ValueError("plan: fp8 training needs a GPU with compute capability >= 8.9 (Ada, Hopper or newer)")
    try:
        import torchao.float8  # noqa: F401
    except ImportError:
        raise ValueError("plan: fp8 training needs torchao (pip install torchao)") from None


def _check_run(plan: Plan, run: RunSettings) -> None:
    if (problem := run_problem(plan, run)) is not None:
        raise ValueError(problem)


def check_memory_fit(plan: Plan, capacity_gib: float, headroom: float, fresh_gib: float = 0.0) -> None:
    """The planner's fit rule (planner.model.memory.fits) on the plan's prediction and this
    device's capacity: predicted reserved + CUDA context <= capacity x (1 - headroom). The
    prediction is ``fresh_gib`` (made again from job.json) where the recorded one is stale: a
    calibrated plan's own figure differs from the built-in model's by less than STALE_FACTOR."""
    recorded = plan.estimate.memory.reserved_gib
    predicted = fresh_gib if fresh_gib > STALE_FACTOR * recorded else recorded
    if not fits(predicted + CUDA_CONTEXT_GIB, capacity_gib, headroom):
        usable = usable_capacity(capacity_gib, headroom)
        raise ValueError(
            f"plan: predicted {predicted:.1f} GiB reserved + {CUDA_CONTEXT_GIB:.1f} GiB CUDA context per GPU "
            f"exceeds this GPU's {capacity_gib:.1f} GiB x (1 - headroom {headroom}) = {usable:.1f} GiB"
        )


def _check_memory_fit(plan: Plan, run: RunSettings, device: torch.device, fresh_gib: float) -> None:
    if device.type != "cuda":
        return
    capacity_gib = torch.cuda.get_device_properties(device).total_memory / GIB
    check_memory_fit(plan, capacity_gib, memory_headroom(plan, run), fresh_gib)


def check_plan(plan: Plan, run: RunSettings, world_size: int, device: torch.device) -> Layout:
    """Static checks of the plan against the model, the world and the device; the resolved layout."""
    try:
        layout = plan.layout.resolve(world_size)
    except ValueError as exc:
        processes = counted(world_size, "process", "processes")  # trial s49 L5: "1 processes"
        raise ValueError(f"plan: layout {plan.layout.describe()} does not fit {processes}: {exc}") from None
    _check_structure(plan, layout)
    _check_precision(plan, device)
    _check_run(plan, run)
    # job.json's estimate may be stale (edited): estimated again here, in every worker, before any allocation
    fresh_gib = check_estimate_current(plan, run, int(os.environ.get("LOCAL_WORLD_SIZE", "1")), device.type)
    _check_memory_fit(plan, run, device, fresh_gib)
    return layout


# ----------------------------------------------------------------------------- probe


@dataclass(frozen=True)
class MemoryReading:
    peak_gib: float | None  # max_memory_allocated, max over ranks (None off CUDA)
    reserved_gib: float | None  # max_memory_reserved, max over ranks
    capacity_gib: float | None


def typical_step_s(step_times: list[float]) -> float | None:
    """Median step time without the first step (allocator warm-up, lazy optimizer states)."""
    times = step_times[1:] if len(step_times) > 1 else step_times
    return statistics.median(times) if times else None


@dataclass(frozen=True)
class JobTiming:
    """The job's typical step (the median of its warm steps: the earlier launches' from
    metrics.warm_step_times, this launch's after its first), how many steps it rests on, and
    whether that is this launch's only step, a warm-up, where nothing else was timed."""

    step_s: float | None
    measured_steps: int
    warmup_only: bool

    @classmethod
    def of(cls, earlier: list[float], this_launch: list[float]) -> JobTiming:
        times = earlier + this_launch[1:]
        warmup_only = not times and bool(this_launch)
        times = times or this_launch[:1]
        return cls(statistics.median(times) if times else None, len(times), warmup_only)


@functools.cache  # one device per process: the probe and the report ask for it
def measured_gpu(device: torch.device) -> str | None:
    """The catalog id of the GPU this rank trains on (NVML's name and memory, as `trainplan detect`
    matches them); None on a CPU or a device the catalog does not match. A run's timings are
    compared with the plan's only on the plan's GPU (trial s27: an H100 plan run on an A10 would
    have reported its errors as comparable)."""
    if device.type != "cuda":
        return None
    from planner.catalog.detect import match_gpu_name
    from planner.catalog.hardware import load_catalog

    props = torch.cuda.get_device_properties(device)
    spec = match_gpu_name(props.name, props.total_memory, load_catalog())
    return None if spec is None else spec.id


def comparable_run(plan: Plan, device_type: str, gpu: str | None) -> bool:
    """Whether measured figures check the plan's: on CUDA, on the plan's GPU."""
    return device_type == "cuda" and gpu == plan.gpu


def band_checks(plan: Plan, measured: RunFigures, comparable: bool) -> BandChecks:
    """The plan's 80 % bands (``Estimate.uncertainty``) of ``measured``'s figures, each checked
    against its measured figure where the run is ``comparable`` (a figure not measured, such as the
    probe's tokens/s: the band alone)."""
    u = plan.estimate.uncertainty
    if u is None:  # a plan file written before the bands
        return BandChecks()

    def check(band: tuple[float, float] | None, value: float | None) -> BandCheck | None:
        return None if band is None else BandCheck.of(band, value if comparable else None)

    return BandChecks(
        coverage=u.coverage,
        step_s=check(u.step_s, measured.step_s),
        tokens_per_s=check(u.tokens_per_s, measured.tokens_per_s),
        mfu=check(u.mfu, measured.mfu),
        reserved_gib=check(None if u.memory is None else u.memory.reserved_gib, measured.reserved_gib),
    )


def write_validation(
    job_dir: Path, plan: Plan, step_times: list[float], memory: MemoryReading, device_type: str, gpu: str | None
) -> ValidationReport:
    """Predicted vs measured after the probe. Off CUDA, or on another GPU than the plan's
    (``gpu``: ``measured_gpu``), the timings are recorded but not compared (``error_pct`` null,
    ``comparable`` false, no band checked)."""
    predicted = ProbeFigures(peak_gib=plan.estimate.memory.peak_gib, step_s=plan.estimate.time.step_s)
    measured = ProbeFigures(peak_gib=memory.peak_gib, step_s=typical_step_s(step_times))
    comparable = comparable_run(plan, device_type, gpu)
    banded = RunFigures(step_s=measured.step_s, reserved_gib=memory.reserved_gib)
    report = ValidationReport(
        predicted=predicted,
        measured=measured,
        device=device_type,
        measured_gpu=gpu,
        comparable=comparable,
        error_pct=ProbeFigures(
            peak_gib=error_pct(measured.peak_gib, predicted.peak_gib) if comparable else None,
            step_s=error_pct(measured.step_s, predicted.step_s) if comparable else None,
        ),
        band=band_checks(plan, banded, comparable),
        reserved_gib=PredictedMeasured(predicted=plan.estimate.memory.reserved_gib, measured=memory.reserved_gib),
        capacity_gib=memory.capacity_gib,
        probe_steps=len(step_times),
    )
    write_json_atomic(Path(job_dir) / "validation.json", report.model_dump(mode="json"))
    return report


def write_replan_needed(job_dir: Path, plan: Plan, memory: MemoryReading, headroom: float, reason: str) -> Path:
    """The measured memory and the factor by which the planner's memory model under-predicted."""
    predicted = plan.estimate.memory
    measured_reserved = memory.reserved_gib if memory.reserved_gib is not None else memory.capacity_gib
    correction = (
        measured_reserved / predicted.reserved_gib if measured_reserved and predicted.reserved_gib > 0 else None
    )
    request = ReplanRequest(
        reason=reason,
        predicted=MemoryFigures(peak_gib=predicted.peak_gib, reserved_gib=predicted.reserved_gib),
        measured=MemoryFigures(peak_gib=memory.peak_gib, reserved_gib=memory.reserved_gib),
        capacity_gib=memory.capacity_gib,
        headroom_fraction=headroom,
        memory_correction=correction,
        layout=plan.layout.describe(),
        training=plan.training,
    )
    path = Path(job_dir) / REPLAN_FILE
    write_json_atomic(path, request.model_dump(mode="json"))
    return path


def check_measured_fit(job_dir: Path, plan: Plan, memory: MemoryReading, headroom: float, is_rank0: bool) -> None:
    """Raise ReplanNeeded when measured reserved memory (+ the CUDA context) breaks the fit rule."""
    if memory.reserved_gib is None or memory.capacity_gib is None:
        return
    if fits(memory.reserved_gib + CUDA_CONTEXT_GIB, memory.capacity_gib, headroom):
        return
    usable = usable_capacity(memory.capacity_gib, headroom)
    reason = (
        f"probe reserved {memory.reserved_gib:.2f} GiB + {CUDA_CONTEXT_GIB:.2f} GiB CUDA context per GPU, "
        f"more than {usable:.2f} GiB "
        f"({memory.capacity_gib:.1f} GiB x (1 - headroom {headroom})); predicted "
        f"{plan.estimate.memory.reserved_gib:.2f} GiB"
    )
    if is_rank0:
        write_replan_needed(job_dir, plan, memory, headroom, reason)
    raise ReplanNeeded(reason)


# ----------------------------------------------------------------------------- report


@dataclass(frozen=True)
class RunSummary:
    steps_done: int
    outcome: str
    step_s: float | None
    tokens_per_s: float | None
    mfu: float | None
    peak_gib: float | None
    final_train_loss: float | None
    final_val_loss: float | None
    test_loss: float | None
    test_perplexity: float | None
    bad_steps: int
    wall_s: float | None  # the job's, over every launch (TrainState.wall_s); None: its checkpoint unread
    launch_wall_s: float  # this launch's
    measured_steps: int = 0  # the job's warm steps the timings come from (job_step_times)
    measured_warmup_only: bool = False  # no warm step yet: the one step timed is a warm-up
    reserved_gib: float | None = None  # the reserved peak (max_memory_reserved): the memory band's figure
    final_val_step: int | None = None  # the step final_val_loss was evaluated at


def run_report(plan: Plan, summary: RunSummary, device_type: str, gpu: str | None) -> RunReport:
    """The run's report; compared with the plan (errors, bands) only on its GPU (``comparable_run``)."""
    est = plan.estimate
    comparable = comparable_run(plan, device_type, gpu)
    predicted = RunFigures(
        step_s=est.time.step_s,
        tokens_per_s=est.throughput.tokens_per_s,
        peak_gib=est.memory.peak_gib,
        mfu=est.throughput.mfu,
        reserved_gib=est.memory.reserved_gib,
    )
    measured = RunFigures(
        step_s=summary.step_s,
        tokens_per_s=summary.tokens_per_s,
        peak_gib=summary.peak_gib,
        mfu=summary.mfu,
        reserved_gib=summary.reserved_gib,
    )
    errors = {name: error_pct(getattr(measured, name), value) if comparable else None for name, value in predicted}
    return RunReport(
        predicted=predicted,
        measured=measured,
        error_pct=RunFigures(**errors),
        band=band_checks(plan, measured, comparable),
        device=device_type,
        measured_gpu=gpu,
        comparable=comparable,
        losses=Losses(
            final_train=summary.final_train_loss,
            final_val=summary.final_val_loss,
            final_val_step=summary.final_val_step,
            test=summary.test_loss,
            test_perplexity=summary.test_perplexity,
        ),
        steps_done=summary.steps_done,
        outcome=summary.outcome,
        bad_steps=summary.bad_steps,
        wall_s=summary.wall_s,
        launch_wall_s=summary.launch_wall_s,
        measured_steps=summary.measured_steps,
        measured_warmup_only=summary.measured_warmup_only,
        layout=plan.layout.describe(),
        gpu=plan.gpu,
    )


def write_report(job_dir: Path, plan: Plan, summary: RunSummary, device_type: str, gpu: str | None) -> RunReport:
    """report.json (``run_report``)."""
    report = run_report(plan, summary, device_type, gpu)
    write_json_atomic(Path(job_dir) / REPORT_FILE, report.model_dump(mode="json"))
    return report


# RunFigures' fields; MFU in percent, as plan and estimate print it (trial s33: "0.003" beside "0.3%")
REPORT_FORMATS = {"step_s": ".3f", "tokens_per_s": ",.0f", "peak_gib": ".2f", "mfu": ".1%", "reserved_gib": ".2f"}
# ... and their rows' words, with units (trial s45: "peak_gib 0.16" beside the job README's "0.7 GiB
# reserved" did not say it was the allocated peak, nor "tokens_per_s" that it was the whole job's)
REPORT_LABELS = {
    "step_s": "step time (s)",
    "tokens_per_s": "tokens/s, job",
    "peak_gib": "allocated peak, GiB",
    "mfu": "MFU",
    "reserved_gib": "reserved peak, GiB",
}
# the outcomes `trainplan run` writes for a launch whose workers wrote no report (write_failed_report)
FAILED_OUTCOMES = (Outcome.FAILED, Outcome.PEER_LOST)


def shown(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def with_band(value: float | None, check: BandCheck | None, fmt: str, unit: str = "") -> str:
    """'0.048 s (0.041-0.056)': a predicted figure, its unit and its 80 % band, as precise as the figure."""
    if value is None or check is None:
        return shown(value, fmt) + unit
    return f"{format(value, fmt)}{unit} ({format(check.low, fmt)}-{format(check.high, fmt)})"


def band_words(check: BandCheck | None) -> str:
    """', inside the plan's band' (or outside) where a comparable figure was checked, else ''."""
    if check is None or check.inside is None:
        return ""
    return f", {'inside' if check.inside else 'outside'} the plan's band"


def band_verdict(check: BandCheck | None) -> str:
    """The "in band" cell: yes / no, '-' where nothing comparable was measured, '' without a band."""
    if check is None:
        return ""
    return "-" if check.inside is None else ("yes" if check.inside else "no")


def wall_words(report: RunReport) -> str:
    """'12 s this launch', and the whole job's where earlier launches add to it ('..., 30 s in all')."""
    if report.launch_wall_s is None:  # a report written before launch_wall_s: wall_s is the launch's
        return f"{report.wall_s or 0.0:.0f} s this launch"
    if report.wall_s is None:  # a failed launch's, its newest checkpoint unreadable
        return (
            f"{report.launch_wall_s:.0f} s this launch; the job's time before it unknown: its checkpoint is unreadable"
        )
    earlier = report.wall_s > report.launch_wall_s
    return f"{report.launch_wall_s:.0f} s this launch" + (f", {report.wall_s:.0f} s in all" if earlier else "")


def timing_line(report: RunReport) -> str:
    """Which steps the measured figures come from (the memory peak is this launch's)."""
    if report.measured_warmup_only:
        steps = "its only step, a warm-up (start-up costs included)"
    else:
        steps = f"{report.measured_steps} step(s) of the job, every launch's first left out"
    return f"step time measured over {steps}; memory peak of this launch (metrics.jsonl holds every step)"


def _head_lines(report: RunReport) -> list[str]:
    """The outcome, where the figures come from and why some are not compared."""
    if report.outcome in FAILED_OUTCOMES:
        resume = (
            f"newest checkpoint at step {report.steps_done}, where a rerun resumes"
            if report.steps_done
            else "no checkpoint yet, so a rerun starts from step 0"
        )
        kept = (
            f"; the earlier report, with its measured figures, is {report.earlier_report}"
            if report.earlier_report
            else ""
        )
        return [
            f"run {report.outcome} ({wall_words(report)}), layout {report.layout}: its workers wrote no report;"
            f" {resume} (metrics.jsonl holds every step){kept}"
        ]
    lines = [f"run {report.outcome} at step {report.steps_done} ({wall_words(report)}), layout {report.layout}"]
    if not report.comparable:
        on = report.device if report.device != "cuda" else report.measured_gpu or "a GPU the catalog does not match"
        lines.append(
            f"(measured on {on}; the prediction is for {report.gpu}, so no error is computed nor its band checked)"
        )
    if report.device != "cuda":  # trial s49 M1: "-" with no word of why
        lines.append(f"(memory peaks are read from CUDA's allocator: none on {report.device}, so '-')")
    return [*lines, timing_line(report)]


def format_report(report: RunReport) -> str:
    coverage = report.band.coverage
    band = f"predicted ({coverage:.0%} band)" if coverage is not None else "predicted"
    lines = [*_head_lines(report), f"{'':20}{band:>30}{'measured':>12}{'error':>9}{'in band':>9}"]
    for (key, predicted), (_, measured), (_, err) in zip(
        report.predicted, report.measured, report.error_pct, strict=True
    ):
        fmt, check = REPORT_FORMATS[key], getattr(report.band, key, None)
        lines.append(
            f"{REPORT_LABELS[key]:20}{with_band(predicted, check, fmt):>30}{shown(measured, fmt):>12}"
            f"{shown(err, '+.1f') + ('%' if err is not None else ''):>9}{band_verdict(check):>9}"
        )
    losses = report.losses
    val_step = "" if losses.final_val is None or losses.final_val_step is None else f" (step {losses.final_val_step})"
    lines.append(
        f"loss: train {shown(losses.final_train, '.4f')}, val {shown(losses.final_val, '.4f')}{val_step}, "
        f"test {shown(losses.test, '.4f')} (perplexity {shown(losses.test_perplexity, '.2f')})"
    )
    return "\n".join(lines)
