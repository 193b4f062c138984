"""Calibration files in the CLI: where the default one lives, which one a command uses,
``trainplan calibrate`` (measure this machine's kernel rates) and ``trainplan calibrate
--calibrate-from JOB_DIR`` (a finished job's measured step time and memory).

The default per-user file is resolved here, once (``default_calibration_path``); the planner
only ever gets a path or a catalog (planner/ reads no environment).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ui import render, render_calibration

if TYPE_CHECKING:
    from planner.catalog.calibration import AppliedCalibration
    from planner.plan_calibration import CollectiveFit, PlanCalibration

CALIBRATION_FILE = Path("trainplan") / "calibration.toml"


def default_calibration_path(environ: Mapping[str, str] = os.environ) -> Path:
    """$XDG_CONFIG_HOME/trainplan/calibration.toml, else ~/.config/trainplan/calibration.toml
    (the XDG base-directory rule: a relative XDG_CONFIG_HOME is ignored)."""
    base = environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / CALIBRATION_FILE


@dataclass(frozen=True)
class CalibrationChoice:
    """The calibration file a command applies and why: ``--calibration`` or the default file."""

    path: Path
    default: bool  # True: the per-user default file, applied because it exists
    own: bool = False  # True: the file a saved plan was made with, applied again (explain, emit)
    # The file's record once applied, where a result has no one plan to carry it (portfolio, fleet:
    # calib50 L4, their line had no hash, GPUs or machine); None: the plan's record says it.
    record: PlanCalibration | None = None

    def as_json(self) -> dict:
        source = "default" if self.default else "plan" if self.own else "--calibration"
        return {"file": str(self.path), "source": source}

    def line(self) -> str:
        if self.default:
            return f"calibration: default file {self.path} applied (--no-calibration to ignore it)"
        if self.own:
            return f"calibration: {self.path}, the plan's own file, applied (--no-calibration to ignore it)"
        return f"calibration: {self.path} applied"


def choose_calibration(given: Path | None, disabled: bool) -> CalibrationChoice | None:
    """``--calibration FILE``, else the default file where it exists; None with ``--no-calibration``."""
    if given is not None and disabled:
        raise ValueError("give --calibration or --no-calibration, not both")
    if disabled:
        return None
    if given is not None:
        return CalibrationChoice(given, default=False)
    path = default_calibration_path()
    return CalibrationChoice(path, default=True) if path.is_file() else None


def plan_file_calibration(given: Path | None, disabled: bool, record) -> CalibrationChoice | None:
    """The calibration ``explain`` and ``emit`` apply to a saved plan (``record``: its
    PlanCalibration, None for a plan made without a file): ``--calibration`` / ``--no-calibration``
    where given; else the file the plan was made with, as it is now (the default one, or
    ``own_calibration``). A plan made without a file keeps that (calib50 M6: a plan made with
    --no-calibration was estimated again with the default file)."""
    if given is not None or disabled:
        return choose_calibration(given, disabled)
    if record is None:
        return None
    default = choose_calibration(None, disabled=False)
    if default is not None and str(default.path.expanduser().resolve()) == record.file:
        return default
    return own_calibration(record)


def own_calibration(record) -> CalibrationChoice | None:
    """The file a saved plan was made with (not the default one), applied again as it is now
    (review51 H1: it was dropped, and a re-estimate ran on the catalog's rates unsaid); a changed
    file is warned of, a missing one too (the plan is then estimated again without it)."""
    import hashlib

    path = Path(record.file)
    try:
        data = path.read_bytes()
    except OSError:
        render.warn(
            f"the plan was made with calibration file {path}, which cannot be read now: estimated again without"
            " it (--calibration FILE applies another)"
        )
        return None
    if hashlib.sha256(data).hexdigest() != record.sha256:
        render.warn(f"calibration file {path} changed since the plan was made: applied as it is now")
    return CalibrationChoice(path, default=False, own=True)


def choose_and_apply(given: Path | None, disabled: bool) -> tuple[CalibrationChoice | None, AppliedCalibration | None]:
    """``choose_calibration`` and ``applied_calibration`` for a result of many plans (portfolio,
    fleet): the choice carries the file's record, so its line and JSON say what the file holds."""
    chosen = choose_calibration(given, disabled)
    applied = applied_calibration(chosen)
    if chosen is None or applied is None:
        return chosen, applied
    return dataclasses.replace(chosen, record=applied.record), applied


def applied_calibration(choice: CalibrationChoice | None):
    """The built-in catalog with the chosen file merged over it, and the file's record the plans
    keep (planner.catalog.calibration.AppliedCalibration); None when no file is chosen."""
    if choice is None:
        return None
    from planner.catalog.calibration import calibrate, cpu_measured_gpus
    from planner.catalog.hardware import load_catalog
    from planner.errors import CatalogError

    try:
        applied = calibrate(load_catalog(), choice.path)
    except CatalogError as exc:
        if not choice.default:
            raise
        raise CatalogError(f"{exc} (the default calibration file; --no-calibration ignores it)") from None
    if gpus := cpu_measured_gpus(applied.record):
        render.warn(cpu_rates_warning(choice.path, gpus))
    return applied


def cpu_rates_warning(path: Path, gpus: tuple[str, ...]) -> str:
    """One line: a file measured on a CPU (a format check) times these GPUs at the CPU's speed."""
    return (
        f"{path} was measured on a CPU: it times {', '.join(gpus)} at that CPU's speed (a check of the"
        " file's format, not a calibration); measure on the GPU itself, or --no-calibration"
    )


def writable_out(out: Path | None) -> Path:
    """``--out`` (None: the default file, whose directory is made), checked writable before
    anything is measured: ValueError naming ``--out`` (calib50 L2: /proc/x.toml failed after the
    measuring with a raw errno, and /nonexistent/dir was made for --out /nonexistent/dir/x.toml)."""
    if out is None:
        out = default_calibration_path()
        if not out.parent.is_dir():  # made by ``_write``, once there is something to write (runner53 L11:
            return _creatable(out)  # a refused calibrate left an empty config directory behind)
    elif not out.parent.is_dir():
        raise ValueError(f"--out {out}: no such directory {out.parent}")
    try:
        if out.exists():
            with open(out, "r+b"):  # opened for writing, left as it is
                pass
        else:
            with open(out, "xb"):
                pass
            out.unlink()
    except OSError as exc:
        raise ValueError(f"--out {out}: cannot write it ({exc.strerror or type(exc).__name__})") from None
    return out


def _creatable(out: Path) -> Path:
    """``out`` whose directory does not exist yet: its nearest existing ancestor is a directory this
    user may create it in (ValueError naming --out otherwise)."""
    ancestor = next(parent for parent in out.parents if parent.exists())
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: cannot create its directory in {ancestor}")
    return out


def _existing(path: Path):
    """The file already at ``path`` (merged into, never overwritten blindly), else None."""
    from planner.catalog.calibration import read_calibration

    return read_calibration(path) if path.exists() else None


def run_calibration(
    gpu: str | None, device: str, quick: bool, out: Path | None, collectives: int | None = None
) -> None:
    """Measure GEMM, attention and copy rates on ``device`` (auto, cpu, cuda), and collectives over
    ``collectives`` local devices (None: every local GPU where there are 2 or more; 0: none), and
    write ``out`` (default: the per-user file), keeping the file's other GPUs."""
    import torch

    from planner.catalog.calibration import CalibrationFile
    from planner.catalog.hardware import load_catalog
    from trainer.calibrate import machine_info, measure

    use_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    if use_cuda and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available")
    if not use_cuda:  # calib50 L5: both missing options said at once, not one per try
        _check_cpu_options(gpu, out)
    out = writable_out(out)
    gpu_id, driver = _calibration_target(gpu, use_cuda)
    gpu_id = load_catalog().gpu(gpu_id).id  # an unknown id fails before anything is measured
    existing = _existing(out)
    target = torch.device("cuda" if use_cuda else "cpu")
    ranks = collectives if collectives is not None else (torch.cuda.device_count() if use_cuda else 0)
    if ranks == 1 and collectives is not None:
        raise ValueError("--collectives 1: a collective needs at least 2 devices")
    values = measure(target, quick, render.progress_line)
    interrupted = False
    fits: dict[str, CollectiveFit] = {}
    if ranks > 1:
        try:
            ring, fits[gpu_id] = _collective_rates(target.type, ranks, quick)
            values = {**values, **ring}
        except KeyboardInterrupt:  # trial s38: the kernel rates measured before it were lost
            interrupted = True
    machine = machine_info(target, driver)
    merged = _merged_into(existing, out, CalibrationFile(machine, {gpu_id: values}, fits=fits))
    path = _write(out, merged)
    render_calibration.calibrated(path, gpu_id, values, is_default=path == default_calibration_path())
    if target.type == "cpu":
        render.warn(cpu_rates_warning(path, (gpu_id,)))
    if interrupted:
        render.warn(f"collectives interrupted: {path} holds the kernel rates measured before, without them")
        raise KeyboardInterrupt


def _merged_into(existing, out: Path, measured):
    """``measured`` (a CalibrationFile of one GPU's rates, and their collective fit) merged into the
    file ``existing`` at ``out`` (None: no file yet), each thing it drops warned of."""
    (gpu_id,) = measured.rates
    machine, rates, fits, jobs = measured.machine, measured.rates, measured.fits, {}
    if existing is not None:
        same_machine = existing.machine is not None and all(
            existing.machine[k] == machine[k] for k in ("host", "device")
        )
        # Other GPUs' rates keep their provenance only when [machine] still names who measured them.
        rates = {**(existing.rates if same_machine else {}), **rates}
        fits = {**{g: f for g, f in existing.fits.items() if g in rates and g != gpu_id}, **fits}
        if dropped := [g for g in existing.rates if g not in rates]:  # calib50 M1: they went unsaid
            assert existing.machine is not None  # rates are written with their [machine]
            render.warn(
                f"{out}: the measured rates of {', '.join(dropped)} were dropped: {existing.machine['host']}"
                f" ({existing.machine['device']}) measured them, and a file holds one [machine]; write this"
                " machine's rates to another file (--out) to keep them"
            )
        # A job correction was fitted against the old rates: it would count their error twice.
        jobs = {g: job for g, job in existing.jobs.items() if g != gpu_id}
        if gpu_id in existing.jobs:
            render.warn(f"{out}: the measured job correction of {gpu_id} was dropped (fitted against the old rates)")
    return dataclasses.replace(measured, rates=rates, jobs=jobs, fits=fits)


def _collective_rates(device_type: str, ranks: int, quick: bool) -> tuple[dict[str, float], CollectiveFit]:
    """The scale-up collective fields (file units) from a ring fit of timed collectives, and the
    fit's record (a CollectiveFit: its rms error and ranks, kept in the file)."""
    from planner.model.comm import MAX_RING_FIT_RMS, fit_ring
    from planner.model.settings import DEFAULT_SETTINGS
    from planner.plan_calibration import CollectiveFit
    from trainer.calibrate_comm import measure_collectives

    render.progress_line(0, 1, f"all-reduce, all-gather, reduce-scatter over {ranks} {device_type} ranks")
    samples = measure_collectives(device_type, ranks, quick)
    fit = fit_ring(samples, DEFAULT_SETTINGS.collective_base_latency_s)
    said = f"ring fit: rms error {fit.rms_relative_error:.0%} over {len(samples)} samples"
    render.progress_line(1, 1, said)
    record = CollectiveFit(rms=fit.rms_relative_error, ranks=ranks)
    if record.rms > MAX_RING_FIT_RMS:
        render.warn(poor_fit_warning(record, len(samples)))
    rates = {
        "scaleup_busbw_gbyte_per_s_achieved": fit.bandwidth / 1e9,
        "scaleup_step_latency_us_achieved": fit.step_latency_s * 1e6,
    }
    return rates, record


def poor_fit_warning(fit: CollectiveFit, samples: int) -> str:
    """One line: a collective fit (a CollectiveFit) past ``MAX_RING_FIT_RMS`` on its own samples."""
    from planner.model.comm import MAX_RING_FIT_RMS

    return (
        f"ring fit: rms error {fit.rms:.0%} over {samples} samples on {fit.ranks} ranks, past the"
        f" {MAX_RING_FIT_RMS:.0%} a fit on an idle node reaches: the scaleup_* rates describe these timings"
        " poorly (a loaded node, or a link the ring model does not describe); measure again, or drop them"
    )


def _write(out: Path, calibration) -> Path:
    """Write ``out`` once the contents pass the catalog's checks (a bad default file would break
    every plan), and read it back as it will be used."""
    from planner.catalog.calibration import apply_calibration, apply_file, write_calibration
    from planner.catalog.hardware import load_catalog

    apply_file(load_catalog(), calibration, out)
    out.parent.mkdir(parents=True, exist_ok=True)  # the default file's directory may not exist yet
    path = write_calibration(out, calibration)
    apply_calibration(load_catalog(), path)
    return path


def _check_cpu_options(gpu: str | None, out: Path | None) -> None:
    """ValueError naming every option a CPU run needs and lacks: --out (trial s38: a format check
    written to the default file became every later plan's GPU rates) and --gpu (no device to match)."""
    missing = []
    if out is None:
        missing.append(
            "--out (its rates check the file's format only; in the default file they would time the GPU at the"
            " CPU's speed in every later plan)"
        )
    if gpu is None:
        missing.append("--gpu (the catalog entry the measurements are written for)")
    if missing:
        raise ValueError(f"needed on a CPU: {'; '.join(missing)}")


def _calibration_target(gpu: str | None, use_cuda: bool) -> tuple[str, str | None]:
    """The catalog id and driver of the device measured: --gpu, else NVML's match on CUDA (torch's
    device name where NVML sees no GPU: an AMD GPU under ROCm)."""
    if not use_cuda:
        assert gpu is not None, "_check_cpu_options refused a CPU run without --gpu"
        return gpu, None
    from planner.catalog.detect import NoGPUDriver, detect_gpus
    from planner.catalog.hardware import load_catalog

    try:
        found = detect_gpus(load_catalog())
    except NoGPUDriver:
        found = []
    if not found:  # no NVML (ROCm: devname51): the name torch's runtime reports, as calibrate records it
        import torch

        name, memory = torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0).total_memory
        return gpu_to_calibrate(gpu, name, memory, load_catalog()), None
    driver, name, memory = found[0].driver_version, found[0].name, found[0].memory_bytes
    return gpu_to_calibrate(gpu, name, memory, load_catalog()), driver


def gpu_to_calibrate(gpu: str | None, nvml_name: str | None, memory_bytes: int | None, catalog) -> str:
    """The catalog id a GPU's measured rates are written for: NVML's match of ``nvml_name``, or
    ``--gpu`` where NVML matches none (an unlisted variant); ValueError for a --gpu that names
    another entry than the one the device is (calib50 M3: A100 rates written as an H100's)."""
    from planner.catalog.detect import match_gpu_name

    matched = None if nvml_name is None else match_gpu_name(nvml_name, memory_bytes, catalog)
    if gpu is None:
        if matched is None:
            raise ValueError("--gpu: this GPU matches no catalog entry; name the entry to write the rates for")
        return matched.id
    named = catalog.gpu(gpu).id  # an unknown id fails before anything is measured
    if matched is not None and matched.id != named:
        raise ValueError(
            f"--gpu {gpu}: this GPU ({nvml_name}) is {matched.id}; its rates would time {named} at another"
            f" GPU's speed: drop --gpu, or measure on {named}"
        )
    return named


def calibrate_from_job(job_dir: Path, gpu: str | None, out: Path | None) -> None:
    """Write a finished job's measured step time and peak memory into ``out`` (default: the
    per-user file) as the job correction of its GPU, keeping the file's kernel rates."""
    from planner.catalog.calibration import CalibrationFile, apply_file
    from planner.catalog.hardware import load_catalog
    from planner.job_fit import fit_measured_job
    from planner.model.stacks import STACK_SETTINGS
    from trainer.job_spec import JobSpec

    out = writable_out(out)
    job = JobSpec.load(job_dir)
    plan = job.plan
    if gpu is not None and load_catalog().gpu(gpu).id != plan.gpu:
        raise ValueError(f"--calibrate-from {job_dir}: the job ran on {plan.gpu}, not --gpu {gpu}")
    step_s, peak_gib, measured_in = _job_measurements(Path(job_dir))
    existing = _existing(out) or CalibrationFile(machine=None)
    if _cpu_rates(existing, plan.gpu):  # trial s38: the refusal blamed "host dispatch or communication"
        raise ValueError(
            f"--calibrate-from {job_dir}: {out} times {plan.gpu} with rates measured on a CPU (a format check);"
            " a job's correction fitted against them would carry their error: --out another file, or measure"
            " the GPU's rates on it (trainplan calibrate)"
        )
    # Fit against the model the file is applied with: its kernel rates, no earlier job correction.
    rates_only = CalibrationFile(existing.machine, existing.rates)
    catalog = apply_file(load_catalog(), rates_only, out)
    settings = STACK_SETTINGS[plan.stack].but(loss_chunk_tokens=job.run.loss_chunk_tokens)
    try:
        measured = fit_measured_job(
            plan,
            catalog,
            settings,
            step_s=step_s,
            peak_gib=peak_gib,
            name=job.name,
            date=datetime.date.today().isoformat(),
        )
    except ValueError as exc:  # calib50 L5: the fit's refusal named no job directory
        raise ValueError(f"--calibrate-from {job_dir}: {exc}") from None
    path = _write(out, dataclasses.replace(existing, jobs={**existing.jobs, plan.gpu: measured}))
    render_calibration.job_calibrated(path, plan.gpu, measured, measured_in, plan.estimate.time.step_s)


STALE_REPORT_S = 60.0  # exit_status.json this much newer than the report: a later launch's


def _measured_in(job_dir: Path, name: str, report) -> str:
    """'report.json: 48 steps, completed' or "validation.json: the probe's 3 steps"; ValueError for
    a run whose timing says nothing of the job's steps (trial s38: a diverged run and one timed on
    its warm-up step alone, compute x 3.95, were taken)."""
    from planner.reports import RunReport
    from trainer.files import EXIT_STATUS_FILE

    if not isinstance(report, RunReport):
        return f"{name}: the probe's {report.probe_steps} steps"
    if report.outcome == "diverged":
        raise ValueError(
            f"--calibrate-from {job_dir}: the run diverged ({name}); its timing is of a broken run: calibrate from"
            " one that trained"
        )
    if report.measured_warmup_only:
        raise ValueError(
            f"--calibrate-from {job_dir}: only the warm-up step was timed ({name}: compile, allocator and"
            " communicator set-up are in it); run more steps (trainplan run --steps)"
        )
    status = job_dir / EXIT_STATUS_FILE
    # A launch writes its report, then its exit status, within seconds (review s38: an interrupted
    # run's own pair read as stale); a later launch that ended without a report, minutes after.
    if status.is_file() and status.stat().st_mtime > (job_dir / name).stat().st_mtime + STALE_REPORT_S:
        render.warn(
            f"{job_dir}: {name} is an earlier launch's: a later one ended after it ({EXIT_STATUS_FILE});"
            " its figures are that earlier launch's"
        )
    steps = f"{report.measured_steps} steps, " if report.measured_steps else ""
    return f"{name}: {steps}{report.outcome}"


def _cpu_rates(calibration, gpu: str) -> bool:
    """Whether ``calibration`` (a CalibrationFile) holds ``gpu`` rates a CPU measured."""
    from planner.catalog.calibration import measured_on_cpu

    machine = calibration.machine
    return machine is not None and measured_on_cpu(machine["device"]) and bool(calibration.rates.get(gpu))


def _job_measurements(job_dir: Path) -> tuple[float, float, str]:
    """(step s, peak GiB, file) measured by the job on a GPU: report.json (the whole run), else
    validation.json (the probe); ValueError for a job without them or one run on a CPU."""
    from pydantic import ValidationError

    from planner.reports import RunReport, ValidationReport

    for name, kind in (("report.json", RunReport), ("validation.json", ValidationReport)):
        path = job_dir / name
        if not path.is_file():
            continue
        try:
            report = kind.load(path)
        except ValidationError as exc:  # trial s38: "(ValidationError)" said neither where nor what
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ())) or "the file"
            raise ValueError(f"{path}: not a trainplan {name} ({where}: {first['msg']})") from None
        except OSError as exc:
            raise ValueError(f"{path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
        if report.device != "cuda":
            raise ValueError(
                f"--calibrate-from {job_dir}: the job ran on {report.device} ({name}); measurements from a"
                " CPU run say nothing about a GPU"
            )
        # review s27: a plan for one GPU measured on another calibrated the planned one. Reports
        # before measured_gpu say comparable on CUDA alone, so they are taken as they were.
        if report.measured_gpu is not None and not report.comparable:
            raise ValueError(
                f"--calibrate-from {job_dir}: the job ran on {report.measured_gpu} ({name}), not the plan's GPU;"
                " its measurements say nothing about that one"
            )
        step_s, peak_gib = report.measured.step_s, report.measured.peak_gib
        if step_s and peak_gib:
            return step_s, peak_gib, _measured_in(job_dir, name, report)
        if step_s or peak_gib:  # trial s38: a run that ran was told to "run the job first"
            missing = "peak memory" if step_s else "step time"
            raise ValueError(
                f"--calibrate-from {job_dir}: {name} has a measured step time or peak memory but no {missing}"
            )
    raise ValueError(
        f"--calibrate-from {job_dir}: no measured step time and peak memory (report.json or validation.json);"
        " run the job first (trainplan run)"
    )
