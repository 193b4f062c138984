"""The CLI's words for calibration files: the file a result used (``calibration_line``, its JSON
``calibration_json``) and what ``trainplan calibrate`` wrote (``calibrated``, ``job_calibrated``).
Split from ui/render.py (it passed 500 lines)."""

from __future__ import annotations

from pathlib import Path

from planner.calibration_use import UnusedRate, unused_rates
from planner.fmt import counted
from planner.plan import Plan
from planner.plan_calibration import CalibratedGpu, PlanCalibration
from ui.terminal import out


def calibration_json(calibration, record: PlanCalibration | None = None) -> dict | None:
    """The calibration a result used: the plan's record of the file, with why it applied
    (``source``: ui.calibration.CalibrationChoice's, or "plan" for a plan file's own); None
    without one. Without a plan (an infeasible answer) only the chosen file."""
    record = record or (None if calibration is None else calibration.record)  # portfolio's, fleet's
    if record is None:
        return None if calibration is None else calibration.as_json()
    source = "plan" if calibration is None else calibration.as_json()["source"]
    return {"file": record.file, "source": source, **record.model_dump(mode="json", exclude={"file"})}


def plan_calibration_json(calibration, plan: Plan) -> dict | None:
    """``calibration_json`` of one plan's record, with the rates of its GPU its estimate did not
    use (``unused_rates``: field and reason; calib50 M2)."""
    data = calibration_json(calibration, plan.calibration)
    if data is None or plan.calibration is None:
        return data
    unused = [{"gpu": plan.gpu, **u.model_dump()} for u in unused_rates(plan)]
    return {**data, "unused_rates": unused}


def covers(record: PlanCalibration | None, gpu: str) -> bool:
    """Whether the calibration file a plan was made with overrode anything of ``gpu`` (its rates or
    a measured job): the plan's figures rest on the file, not on the catalog's rates alone."""
    return record is not None and record.entry(gpu) is not None


def calibration_summary(record: PlanCalibration, unused: tuple[UnusedRate, ...] = (), gpu: str | None = None) -> str:
    """'sha256 1f2e3d4c5b6a, h100-sxm: 4 rates + measured job, measured on node-17 2026-12-01';
    ``unused``: the rates of ``gpu`` (the plan's) its estimate did not use."""
    entries = ", ".join(_overrides(g, unused if g.gpu == gpu else ()) for g in record.gpus)
    machine = "" if record.machine is None else f", measured on {record.machine.host} {record.machine.date}"
    return f"sha256 {record.sha256[:12]}, {entries}{machine}"


def _overrides(gpu: CalibratedGpu, unused: tuple[UnusedRate, ...] = ()) -> str:
    """'h100-sxm: 4 rates + measured job (gemm_bf16_tflops 742.8 -> 600 (-19%), ...)': what a
    calibration file overrode for one GPU, each rate against the catalog's (calib50 H3); with
    ``unused``, only the rates used are counted and listed, then the others with why (calib50 M2:
    "h100-sxm: 2 of 4 rates used (...); unused: attention_fwd_tflops, ... (the plan runs cuDNN
    attention; ...)")."""
    skipped = {u.field for u in unused}
    changes = [c for c in gpu.changes if c.field not in skipped]
    rates = counted(len(gpu.rates), "rate")
    if skipped:
        rates = f"{len(gpu.rates) - len(skipped)} of {rates} used"
    if changes:
        rates += f" ({'; '.join(c.words for c in changes)})"
    if gpu.collective_fit is not None:  # calib50 M5: how far to trust the scaleup_* rates
        rates += f"; {gpu.collective_fit.words}"
    for reason in dict.fromkeys(u.reason for u in unused):  # grouped by reason, in file order
        names = ", ".join(u.field.removesuffix("_achieved") for u in unused if u.reason == reason)
        rates += f"; unused: {names} ({reason})"
    parts = ([rates] if gpu.rates else []) + (["measured job"] if gpu.measured_job else [])
    return f"{gpu.gpu}: {' + '.join(parts)}"


def calibration_line(
    calibration, record: PlanCalibration | None = None, gpu: str | None = None, unused: tuple[UnusedRate, ...] = ()
) -> None:
    """One line naming the calibration file applied (so a default file never acts silently) and,
    from the plan's record, its hash and what it overrode; where the plan's ``gpu`` is not among
    those, that it was timed at the catalog's rates (trial s38: "applied" above an A100 estimate
    the file did not touch); ``unused``: the rates of ``gpu`` the estimate did not use."""
    record = record or (None if calibration is None else calibration.record)  # portfolio's, fleet's
    if calibration is None and record is None:
        return
    if calibration is None:
        assert record is not None
        line = f"calibration: the plan was made with {record.file}"
    else:
        line = calibration.line()
    if record is not None:
        line = f"{line}; {calibration_summary(record, unused, gpu)}"
        if gpu is not None and not covers(record, gpu):
            line += f"; {gpu}: not in the file, timed at the catalog's rates"
    out.print(line, markup=False)


def plan_calibration_line(calibration, plan: Plan) -> None:
    """``calibration_line`` of one plan: its record, its GPU and the rates it did not use."""
    calibration_line(calibration, plan.calibration, plan.gpu, unused_rates(plan))


def recalibrated_words(file: str, plan_step_s: float, step_s: float) -> str:
    """'estimated again with calibration PATH (not the plan's own): step 0.538 -> 0.6086 s': a
    saved plan estimated again with another file, its own figure beside the new one (calib50 M6:
    the plan's step was shown nowhere)."""
    step = f"step {plan_step_s:.4g} -> {step_s:.4g} s" if plan_step_s > 0 and step_s > 0 else "infeasible"
    return f"estimated again with calibration {file} (not the plan's own): {step}"


def calibrated(path: Path, gpu_id: str, values: dict[str, float], *, is_default: bool) -> None:
    # calib50 L5: the default file needs no flag; saying "use: --calibration" of it suggested one did
    use = "the default file: every plan reads it" if is_default else f"use: --calibration {path}"
    out.print(f"measured rates for {gpu_id} written to {path} ({use})")
    for name, value in values.items():
        out.print(f"  {name} = {value:,.4g}")


def job_calibrated(path: Path, gpu_id: str, job, measured_in: str, planned_step_s: float) -> None:
    """``calibrate --calibrate-from``: the job's corrections (a MeasuredJob) and where they went;
    ``planned_step_s``: the step the job's plan said (trial s38: the fit's own prediction, the
    model before the efficiency ceiling, appeared nowhere else)."""
    out.print(f"measured job correction for {gpu_id} written to {path} (from {measured_in})", markup=False)
    out.print(f"  job {job.name}: {job.shape}", markup=False)
    planned = (
        "" if round(planned_step_s, 4) == round(job.predicted_step_s, 4) else f"; the plan said {planned_step_s:.4g} s"
    )
    out.print(
        f"  step {job.step_s:.4g} s measured, {job.predicted_step_s:.4g} s the model predicted"
        f" (with the file's rates, before any efficiency ceiling{planned}): compute x {job.compute_time_factor:.4g}",
        markup=False,
    )
    out.print(
        f"  peak {job.peak_gib:.4g} GiB measured, {job.predicted_peak_gib:.4g} GiB predicted:"
        f" memory x {job.memory_factor:.4g}",
        markup=False,
    )
