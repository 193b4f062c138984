"""A plan records the calibration file it was estimated with (planner.plan_calibration.PlanCalibration):
made by planner.catalog.calibration.calibrate, put on every plan by planner.api, kept through
plan.json."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from planner.api import PlanRequest, build_plan, plan, restack
from planner.catalog.achievable import rate_file_values
from planner.catalog.calibration import CalibrationFile, apply_calibration, calibrate, write_calibration
from planner.catalog.hardware import load_catalog
from planner.catalog.measured_job import MeasuredJob
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.model.stacks import Stack
from planner.plan import Plan
from planner.plan_calibration import CalibrationMachine, RateChange

# A device no catalog entry is: one [machine] above two GPUs' rates (a known device under another
# GPU's table is refused, calib50 M3).
MACHINE = dict(host="node-1", device="NVIDIA test rig", driver="570.86", date="2026-12-01", software="torch 2.11")
JOB = MeasuredJob(
    compute_time_factor=1.25,
    memory_factor=1.1,
    name="llama-1b",
    date="2026-12-02",
    shape="llama3.2-1b, 8 x h100-sxm",
    step_s=2.0,
    predicted_step_s=1.6,
    peak_gib=44.0,
    predicted_peak_gib=40.0,
)
TRAINING = TrainingConfig(seq_len=2048, micro_batch=2)


def _file(tmp_path: Path) -> Path:
    rates = {"h100-sxm": {"gemm_bf16_tflops_achieved": 500.0, "hbm_copy_tbps_achieved": 2.5}}
    rates["a100-80gb-sxm"] = {"gemm_bf16_tflops_achieved": 250.0}
    return write_calibration(tmp_path / "cal.toml", CalibrationFile(MACHINE, rates, {"h100-sxm": JOB}))


def _request() -> PlanRequest:
    return PlanRequest(model=get_preset("llama3.2-1b"), training_tokens=1e10, gpus={"h100-sxm": 8}, top_k=1)


def test_a_plan_made_with_a_file_records_its_path_hash_machine_and_overrides(tmp_path):
    path = _file(tmp_path)
    result = plan(_request(), calibration=calibrate(load_catalog(), path))
    record = result.plan.calibration
    assert record is not None and record.file == str(path.resolve())
    assert record.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert record.machine == CalibrationMachine(**MACHINE)
    h100 = record.entry("h100-sxm")
    assert h100 is not None and (h100.rates, h100.measured_job) == (
        ("gemm_bf16_tflops_achieved", "hbm_copy_tbps_achieved"),
        True,
    )
    # calib50 H3: each rate beside the catalog's own figure, in the file's units
    gemm = rate_file_values(load_catalog().gpu("h100-sxm").rates)["gemm_bf16_tflops_achieved"]
    assert h100.changes[0] == RateChange(field="gemm_bf16_tflops_achieved", catalog=gemm, measured=500.0)
    assert h100.changes[0].words == f"gemm_bf16_tflops {gemm:,.4g} -> 500 ({500.0 / gemm - 1:+.0%})"
    a100 = record.entry("a100-80gb-sxm")
    assert a100 is not None and a100.rates == ("gemm_bf16_tflops_achieved",) and not a100.measured_job
    assert record.entry("b200") is None
    assert all(alt.calibration == record for alt in result.alternatives)
    # The record comes with the calibrated estimate, not instead of it.
    # A file that measured the GPU lifts the efficiency ceiling for it (planner/accuracy/ceiling.py).
    expected = plan(_request(), catalog=apply_calibration(load_catalog(), path)).plan
    lifted = result.plan.estimate.ceiling  # recorded, not applied (calib50 H1: it was lifted unsaid)
    assert lifted is not None and lifted.lifted and not lifted.binding
    assert expected.estimate.ceiling is not None and not expected.estimate.ceiling.lifted
    same = {"ceiling": lifted}
    assert result.plan.estimate == expected.estimate.model_copy(update=same) and expected.calibration is None


def test_without_a_file_no_calibration_is_recorded_and_plan_json_round_trips(tmp_path):
    assert plan(_request()).plan.calibration is None
    made = build_plan(
        get_preset("llama3.2-1b"),
        "h100-sxm",
        Layout(dp_shard=8),
        TRAINING,
        num_gpus=8,
        calibration=calibrate(load_catalog(), _file(tmp_path)),
    )
    assert made.calibration is not None and made.calibration.entry("h100-sxm").measured_job
    assert Plan.load(made.save(tmp_path / "plan.json")) == made
    older = made.model_dump(mode="json")
    del older["calibration"]  # a plan file written before plans recorded it
    assert Plan.model_validate(older).calibration is None


def test_restack_keeps_the_record_only_while_the_estimate_is_the_same(tmp_path):
    applied = calibrate(load_catalog(), _file(tmp_path))
    made = build_plan(get_preset("llama3.2-1b"), "h100-sxm", Layout(dp_shard=8), TRAINING, num_gpus=8)
    calibrated = restack(made, made.stack, calibration=applied)
    assert calibrated.calibration == applied.record
    assert calibrated.estimate.time.step_s != made.estimate.time.step_s
    assert restack(calibrated, calibrated.stack) is calibrated  # nothing changed: the same plan
    assert restack(calibrated, Stack.TORCHTITAN).calibration is None  # re-estimated on the built-in catalog
    with pytest.raises(ValueError, match="a catalog or a calibration"):
        restack(made, made.stack, catalog=load_catalog(), calibration=applied)
