"""Calibration files: rates measured on the user's own GPUs (``trainplan calibrate``) and the
corrections a real job measured (``trainplan calibrate --calibrate-from JOB_DIR``), merged over
the catalog entries they name (``--calibration FILE``, or the default per-user file, on plan,
estimate and explain).

Format (TOML; the achievable-rate fields of docs/hardware.md, in the same units)::

    [machine]
    host = "node-17"
    device = "NVIDIA H200"
    driver = "570.86.15"
    date = "2026-12-01"
    software = "torch 2.11.0+cu130"

    [gpus.h200-sxm]
    gemm_bf16_tflops_achieved = 751.2
    attention_fwd_tflops_achieved = 352.0
    attention_bwd_tflops_achieved = 301.4
    cudnn_attention_fwd_tflops_achieved = 571.0
    cudnn_attention_bwd_tflops_achieved = 488.5
    hbm_copy_tbps_achieved = 4.27
    scaleup_busbw_gbyte_per_s_achieved = 372.4
    scaleup_step_latency_us_achieved = 4.1
    scaleup_fit_rms = 0.031
    scaleup_fit_ranks = 8
    job_compute_time_factor = 1.083
    job_memory_factor = 1.021
    job_name = "llama-8b"
    job_date = "2026-12-01"
    job_shape = "llama3-8b, 8 x h200-sxm, fsdp dp_shard=8, mb 1 x accum 4 x seq 4096"
    job_step_s = 2.61
    job_predicted_step_s = 2.41
    job_peak_gib = 61.3
    job_predicted_peak_gib = 60.0

Every rate becomes a MEASURED rate sourced with the machine, driver and date; the catalog's own
checks apply (at most the datasheet figure). The ``scaleup_fit_*`` fields are the ``scaleup_*`` rates' ring fit (``CollectiveFit``: its rms
error and ranks); the ``job_*`` fields are one ``MeasuredJob``
(planner/catalog/measured_job.py); ``[machine]`` is needed only where a table has rates. No
torch here: the measuring lives in trainer/.

``calibrate`` gives the merged catalog together with the record a plan keeps of the file
(``planner.plan_calibration.PlanCalibration``: path, SHA-256, machine, overridden entries), which the API
puts on every plan it estimates with that catalog.
"""

from __future__ import annotations

import datetime
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.catalog.achievable import RATE_FIELD_NAMES, rate_file_values
from planner.catalog.detect import match_gpu_name
from planner.catalog.hardware import Catalog, with_rates
from planner.catalog.measured_job import MeasuredJob
from planner.catalog.specs import GPUSpec
from planner.errors import CatalogError, CatalogViolation, RuleCode, RuleViolation
from planner.limits import read_input
from planner.plan_calibration import CalibratedGpu, CalibrationMachine, CollectiveFit, PlanCalibration, RateChange

MACHINE_FIELDS = tuple(CalibrationMachine.model_fields)  # host, device, driver, date, software
JOB_PREFIX = "job_"  # file field job_<name> = MeasuredJob.<name>
FIT_PREFIX = "scaleup_fit_"  # file field scaleup_fit_<name> = CollectiveFit.<name>


@dataclass(frozen=True)
class CalibrationFile:
    """One file's contents: who measured the kernel rates, the rates and the measured jobs."""

    machine: dict[str, str] | None  # None: the file holds only job corrections
    rates: dict[str, dict[str, float]] = field(default_factory=dict)  # gpu id -> rate fields (file units)
    jobs: dict[str, MeasuredJob] = field(default_factory=dict)  # gpu id -> its measured job
    fits: dict[str, CollectiveFit] = field(default_factory=dict)  # gpu id -> its scaleup_* rates' fit

    @property
    def gpu_ids(self) -> tuple[str, ...]:
        """The catalog entries the file names (rates, a measured job or both), in file order."""
        return tuple({**self.rates, **self.jobs})


def _table(raw: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = raw.get(key)
    if not isinstance(value, dict):
        raise CatalogViolation(RuleCode.CAL_MISSING_TABLE, {"where": where, "table": key})
    return value


def _prefixed(kind: type[MeasuredJob] | type[CollectiveFit], prefix: str, values: dict[str, Any], where: str):
    """The ``prefix``-named fields of a table as one ``kind`` record; CatalogError naming the field."""
    fields_ = {name.removeprefix(prefix): value for name, value in values.items()}
    try:
        return kind.model_validate(fields_)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = prefix + ".".join(str(part) for part in error["loc"])
        raise CatalogError(f"{where}: field '{name}': {error['msg']}") from None


def read_calibration_bytes(path: Path) -> bytes:
    """A calibration file's bytes (``read_input``: a regular file, capped); CatalogError naming it."""
    try:
        return read_input(path, "calibration file")
    except RuleViolation as exc:  # its code and figures kept: the app words it in the page's language
        raise CatalogViolation(exc.code, exc.figures) from None
    except ValueError as exc:
        raise CatalogError(str(exc)) from None


def read_calibration(path: Path) -> CalibrationFile:
    """The file's contents; CatalogError when unreadable or malformed."""
    return parse_calibration(read_calibration_bytes(path), str(path))


def parse_calibration(data: bytes, where: str) -> CalibrationFile:
    """A calibration file's bytes (``where`` names it in errors: a path, an upload); CatalogError
    when malformed."""
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CatalogViolation(RuleCode.CAL_TOML, {"where": where, "error": str(exc)}) from None
    unknown = set(raw) - {"machine", "gpus"}
    if unknown:
        raise CatalogViolation(RuleCode.CAL_UNKNOWN_TABLE, {"where": where, "tables": ", ".join(sorted(unknown))})
    gpus = _table(raw, "gpus", where)
    if not gpus:
        raise CatalogError(f"{where}: no [gpus.<id>] table")
    rates, jobs, fits = {}, {}, {}
    for gpu_id, values in gpus.items():
        if not isinstance(values, dict) or not values:
            raise CatalogError(f"{where}: table [gpus.{gpu_id}]: expected rate or job_* fields")
        table = f"{where}: table [gpus.{gpu_id}]"
        job = {k: v for k, v in values.items() if k.startswith(JOB_PREFIX)}
        fit = {k: v for k, v in values.items() if k.startswith(FIT_PREFIX)}
        if job:
            jobs[gpu_id] = _prefixed(MeasuredJob, JOB_PREFIX, job, table)
        if fit:
            if not any(k.startswith("scaleup_") and k not in fit for k in values):
                raise CatalogError(f"{table}: {FIT_PREFIX}* fields without the scaleup_* rates they describe")
            fits[gpu_id] = _prefixed(CollectiveFit, FIT_PREFIX, fit, table)
        if len(job) + len(fit) < len(values):
            rates[gpu_id] = {k: v for k, v in values.items() if k not in job and k not in fit}
    machine = None
    if rates or "machine" in raw:  # measured kernel rates name the machine they were measured on
        machine = _machine(_table(raw, "machine", where), where)
    return CalibrationFile(machine, rates, jobs, fits)


def _machine(table: dict[str, Any], where: str) -> dict[str, str]:
    """The ``[machine]`` table's fields, each a non-empty string, the date an ISO date; unknown
    fields refused as unknown rate fields are (calib50 L3: "yesterday" and a rack key passed)."""
    if unknown := [name for name in table if name not in MACHINE_FIELDS]:
        figures = {"where": where, "field": unknown[0], "expected": ", ".join(MACHINE_FIELDS)}
        raise CatalogViolation(RuleCode.CAL_MACHINE_UNKNOWN, figures)
    for name in MACHINE_FIELDS:
        if not isinstance(table.get(name), str) or not table[name].strip():
            raise CatalogViolation(RuleCode.CAL_MACHINE_FIELD, {"where": where, "field": name})
    if not _iso_date(table["date"]):
        raise CatalogViolation(RuleCode.CAL_MACHINE_DATE, {"where": where, "value": table["date"]})
    return {k: table[k] for k in MACHINE_FIELDS}


def _iso_date(text: str) -> bool:
    """Whether ``text`` is a calendar date as ``calibrate`` writes it (YYYY-MM-DD; fromisoformat
    alone also takes 20261201 and week dates)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def device_entry(device: str, catalog: Catalog) -> GPUSpec | None:
    """The catalog entry a device name (NVML's or torch's) is: the one that ``reports`` it, else the
    name matcher's where one entry alone fits (``trainplan detect``'s rule, without the memory);
    None for a name the catalog does not know (an unlisted variant ``--gpu`` named)."""
    named = next((g for g in catalog.gpus.values() if g.reports(device)), None)
    return named or match_gpu_name(device, None, catalog)


def check_device(device: str, gpu: GPUSpec, catalog: Catalog, where: str) -> None:
    """Refuse rates measured on ``device`` written for ``gpu`` where the device is another catalog
    entry (calib50 M3: A100 rates under [gpus.h100-sxm] were applied unsaid); a CPU's rates are a
    format check (``measured_on_cpu``) and pass."""
    if measured_on_cpu(device) or gpu.reports(device):
        return
    other = device_entry(device, catalog)
    if other is not None and other.id != gpu.id:
        figures = {"where": where, "device": device, "other": other.id, "gpu": gpu.id}
        raise CatalogViolation(RuleCode.CAL_DEVICE, figures)


@dataclass(frozen=True)
class AppliedCalibration:
    """A catalog with a calibration file merged over it, and the plans' record of that file."""

    catalog: Catalog
    record: PlanCalibration


def calibrate(catalog: Catalog, path: Path) -> AppliedCalibration:
    """``catalog`` with the file at ``path`` merged over it, and its record (by absolute path)."""
    data = read_calibration_bytes(path)
    read = parse_calibration(data, str(path))
    merged = apply_file(catalog, read, Path(path))
    return AppliedCalibration(merged, calibration_record(catalog, read, data, str(Path(path).expanduser().resolve())))


def calibration_record(catalog: Catalog, calibration: CalibrationFile, data: bytes, file: str) -> PlanCalibration:
    """What a plan keeps of ``calibration`` (parsed from ``data``, read from ``file``: a path or
    an upload's name) once merged over ``catalog``: its hash, machine and the entries it overrode."""
    gpus = tuple(
        CalibratedGpu(
            gpu=catalog.gpu(gpu_id).id,
            rates=tuple(calibration.rates.get(gpu_id, {})),
            measured_job=gpu_id in calibration.jobs,
            changes=rate_changes(catalog, gpu_id, calibration.rates.get(gpu_id, {})),
            collective_fit=calibration.fits.get(gpu_id),
        )
        for gpu_id in calibration.gpu_ids
    )
    machine = None if calibration.machine is None else CalibrationMachine(**calibration.machine)
    return PlanCalibration(file=file, sha256=hashlib.sha256(data).hexdigest(), machine=machine, gpus=gpus)


def rate_changes(catalog: Catalog, gpu_id: str, measured: dict[str, float]) -> tuple[RateChange, ...]:
    """Each rate the file gives ``gpu_id`` beside the catalog's own, in the file's units."""
    own = rate_file_values(catalog.gpu(gpu_id).rates)
    return tuple(RateChange(field=name, catalog=own.get(name), measured=value) for name, value in measured.items())


# How ``trainplan calibrate --device cpu`` names the machine (trainer/calibrate.py machine_info): a
# CPU's rates check a file's format and say nothing of a GPU's.
CPU_DEVICE_PREFIX = "CPU ("


def measured_on_cpu(device: str) -> bool:
    """Whether a file's ``[machine]`` device is a CPU (``trainplan calibrate`` on a CPU writes it so)."""
    return device.startswith(CPU_DEVICE_PREFIX)


def cpu_measured_gpus(record: PlanCalibration) -> tuple[str, ...]:
    """The GPUs a calibration times with rates measured on a CPU (trial s25: applied to an H100
    without a word, a plan took 36.8 million days)."""
    machine = record.machine
    if machine is None or not measured_on_cpu(machine.device):
        return ()
    return record.rate_gpus


RATE_SOURCE_PREFIX = "MEASURED: trainplan calibrate on "  # a file's rates' source (apply_file): host (device, ...


def rates_timed_on_cpu(gpu: GPUSpec) -> bool:
    """Whether a calibration file measured on a CPU set any of ``gpu``'s kernel rates (their
    source, as ``apply_file`` writes it, names the device): its figures are a format check's, so
    they carry no accuracy band (calib50 M4: a 3,862 s step stood beside "mean |error| 3.5%")."""
    mark = f" ({CPU_DEVICE_PREFIX}"
    return any(
        source.startswith(RATE_SOURCE_PREFIX) and mark in source
        for name, source in gpu.sources.items()
        if name in RATE_FIELD_NAMES
    )


def apply_calibration(catalog: Catalog, path: Path) -> Catalog:
    """The catalog with each named GPU's rates replaced by the file's measurements."""
    return calibrate(catalog, path).catalog


def apply_file(catalog: Catalog, calibration: CalibrationFile, path: Path) -> Catalog:
    """``calibration`` (read from ``path``) merged over the catalog: rates, then the measured jobs."""
    updated = dict(catalog.gpus)
    for gpu_id in calibration.gpu_ids:
        try:
            gpu = catalog.gpu(gpu_id)
        except ValueError as exc:
            figures = {"where": str(path), "gpu": gpu_id, "detail": str(exc)}
            raise CatalogViolation(RuleCode.CAL_UNKNOWN_GPU, figures) from None
        if gpu_id in calibration.rates and calibration.machine is not None:
            m = calibration.machine
            check_device(m["device"], gpu, catalog, f"{path} [gpus.{gpu_id}]")
            source = (
                f"{RATE_SOURCE_PREFIX}{m['host']} ({m['device']}, driver {m['driver']},"
                f" {m['software']}), {m['date']}; file {path.name}"
            )
            gpu = with_rates(gpu, calibration.rates[gpu_id], source, f"{path} [gpus.{gpu_id}]")
        if (job := calibration.jobs.get(gpu_id)) is not None:
            sources = {**gpu.sources, "measured_job": f"{job.source}; file {path.name}"}
            gpu = gpu.model_copy(update={"measured_job": job, "sources": sources})
        updated[gpu.id] = gpu
    return catalog.model_copy(update={"gpus": updated})


def write_calibration(path: Path, calibration: CalibrationFile) -> Path:
    """Write the file (flat TOML: strings and numbers only)."""

    def quote(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    def value(v: Any) -> str:
        return quote(v) if isinstance(v, str) else f"{float(v):.6g}"

    lines = []
    if calibration.machine is not None:
        lines += ["[machine]", *(f"{k} = {quote(calibration.machine[k])}" for k in MACHINE_FIELDS), ""]
    for gpu_id in calibration.gpu_ids:
        lines.append(f"[gpus.{gpu_id}]")
        lines += [f"{k} = {value(v)}" for k, v in calibration.rates.get(gpu_id, {}).items()]
        if (fit := calibration.fits.get(gpu_id)) is not None:
            lines += [f"{FIT_PREFIX}{k} = {v:.6g}" for k, v in fit.model_dump().items()]
        if (job := calibration.jobs.get(gpu_id)) is not None:
            lines += [f"{JOB_PREFIX}{k} = {value(v)}" for k, v in job.model_dump().items()]
        lines.append("")
    path = Path(path)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
