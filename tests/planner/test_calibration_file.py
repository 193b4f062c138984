"""Calibration files (trainplan calibrate's output): format, merge into the catalog, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.catalog.calibration import CalibrationFile, apply_calibration, read_calibration, write_calibration
from planner.catalog.hardware import CatalogError, load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.model.estimate import estimate

MACHINE = dict(host="node-1", device="NVIDIA H100 80GB HBM3", driver="570.86", date="2026-12-01", software="torch 2.11")


def _file(tmp_path: Path, gpus: dict, name: str = "cal.toml") -> Path:
    return write_calibration(tmp_path / name, CalibrationFile(MACHINE, gpus))


def _step(catalog, gpu_id: str = "h100-sxm") -> float:
    model, training = get_preset("llama3-8b"), TrainingConfig(seq_len=4096, micro_batch=1)
    return estimate(model, gpu_id, Layout(dp_shard=8), training, num_gpus=8, catalog=catalog).time.step_s


def test_round_trip_and_merge_mark_the_rates_measured(tmp_path):
    path = _file(tmp_path, {"h100-sxm": {"gemm_bf16_tflops_achieved": 800.0, "hbm_copy_tbps_achieved": 3.0}})
    read = read_calibration(path)
    assert (
        read.machine == MACHINE
        and not read.jobs
        and read.rates == {"h100-sxm": {"gemm_bf16_tflops_achieved": 800, "hbm_copy_tbps_achieved": 3.0}}
    )
    h100 = apply_calibration(load_catalog(), path).gpu("h100-sxm")
    assert h100.rates.gemm_flops_per_s["bf16"] == pytest.approx(800e12)
    assert h100.rates.copy_bandwidth_bytes_per_s == pytest.approx(3e12)
    assert h100.rates.provenance["gemm_bf16_tflops_achieved"] == "MEASURED"
    assert h100.rates.provenance["attention_fwd_tflops_achieved"] == "PUBLISHED"  # untouched fields stay
    source = h100.sources["gemm_bf16_tflops_achieved"]
    assert "node-1" in source and "570.86" in source and "2026-12-01" in source


def test_a_faster_measured_gemm_lowers_the_prediction_and_a_slower_raises_it(tmp_path):
    base = _step(load_catalog())
    fast = _step(
        apply_calibration(load_catalog(), _file(tmp_path, {"h100-sxm": {"gemm_bf16_tflops_achieved": 900.0}}, "f.toml"))
    )
    slow = _step(
        apply_calibration(load_catalog(), _file(tmp_path, {"h100-sxm": {"gemm_bf16_tflops_achieved": 500.0}}, "s.toml"))
    )
    assert fast < base < slow
    assert _step(load_catalog()) == base  # the built-in catalog is not changed


@pytest.mark.parametrize(
    "gpus, message",
    [
        ({"h900": {"gemm_bf16_tflops_achieved": 1.0}}, r"\[gpus.h900\]: unknown GPU 'h900'"),
        ({"h100-sxm": {"gemm_tflops": 1.0}}, r"field 'gemm_tflops': not an achievable rate"),
        ({"h100-sxm": {"gemm_bf16_tflops_achieved": 2000.0}}, r"expected at most bf16_tflops 989.4"),
        ({"h100-sxm": {"hbm_copy_tbps_achieved": -1.0}}, r"field 'hbm_copy_tbps_achieved': expected a number"),
        ({}, r"table \[gpus\]: missing or not a table"),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path, gpus, message):
    with pytest.raises(CatalogError, match=message) as info:
        apply_calibration(load_catalog(), _file(tmp_path, gpus))
    assert "\n" not in str(info.value)


def test_malformed_files(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[machine\n")
    with pytest.raises(CatalogError, match="invalid TOML"):
        read_calibration(bad)
    bad.write_text('[machine]\nhost = "x"\n[gpus.h100-sxm]\ngemm_bf16_tflops_achieved = 1.0\n')
    with pytest.raises(CatalogError, match=r"field 'machine.device': expected a non-empty string"):
        read_calibration(bad)
    with pytest.raises(CatalogError, match="cannot read the calibration file"):
        read_calibration(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    "machine, message",
    [
        ({"date": "2031-13-45"}, r"field 'machine.date': expected a date YYYY-MM-DD, got '2031-13-45'"),
        ({"date": "yesterday"}, r"field 'machine.date': expected a date YYYY-MM-DD, got 'yesterday'"),
        ({"date": "20261201"}, r"field 'machine.date': expected a date YYYY-MM-DD"),
        ({"rack": "r7"}, r"field 'machine.rack': unknown \(expected host, device, driver, date, software\)"),
        (
            {"device": "NVIDIA A100-SXM4-80GB"},  # the A100's device_name
            r"\[gpus.h100-sxm\]: \[machine\] device 'NVIDIA A100-SXM4-80GB' is a100-80gb-sxm, not h100-sxm",
        ),
        ({"device": "NVIDIA H200"}, r"device 'NVIDIA H200' is h200-sxm, not h100-sxm"),
    ],
)
def test_a_machine_table_is_checked_as_strictly_as_the_rates(tmp_path, machine, message):
    """calib50 L3 and M3: a bad date, an unknown [machine] key and another GPU's device passed."""
    path = tmp_path / "cal.toml"
    write_calibration(path, CalibrationFile(MACHINE, {"h100-sxm": {"gemm_bf16_tflops_achieved": 600.0}}))
    table = "\n".join(f'{k} = "{v}"' for k, v in {**MACHINE, **machine}.items())
    path.write_text(path.read_text().replace(path.read_text().split("\n\n")[0], "[machine]\n" + table))
    with pytest.raises(CatalogError, match=message) as info:
        apply_calibration(load_catalog(), path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("device", ["NVIDIA H100 80GB HBM3", "NVIDIA H100 64GB HBM3", "CPU (x86_64)"])
def test_the_tables_own_device_an_unlisted_variant_and_a_cpu_pass(tmp_path, device):
    path = write_calibration(
        tmp_path / "c.toml",
        CalibrationFile({**MACHINE, "device": device}, {"h100-sxm": {"hbm_copy_tbps_achieved": 3.0}}),
    )
    assert apply_calibration(load_catalog(), path).gpu("h100-sxm").rates.copy_bandwidth_bytes_per_s == 3e12


@pytest.mark.parametrize("device", ["AMD Instinct MI325X", "AMD Instinct MI325 OAM"])
def test_an_amd_table_passes_under_the_name_torch_reports_and_the_boards(tmp_path, device):
    """devname51: torch on ROCm reports the marketing name (calibrate writes it), the board's sysfs
    name drops the X; both are the MI325X's, and neither is another entry's."""
    path = write_calibration(
        tmp_path / "c.toml",
        CalibrationFile({**MACHINE, "device": device}, {"mi325x": {"hbm_copy_tbps_achieved": 4.0}}),
    )
    assert apply_calibration(load_catalog(), path).gpu("mi325x").rates.copy_bandwidth_bytes_per_s == 4e12
    assert load_catalog().gpu("mi325x").reports(device) and not load_catalog().gpu("mi300x").reports(device)


def test_a_collective_fit_round_trips_and_its_record_names_it(tmp_path):
    """calib50 M5: the fit's rms error and rank count were neither kept nor shown."""
    from planner.catalog.calibration import calibrate
    from planner.plan_calibration import CollectiveFit

    rates = {"scaleup_busbw_gbyte_per_s_achieved": 300.0, "scaleup_step_latency_us_achieved": 5.0}
    fit = CollectiveFit(rms=0.58, ranks=2)
    path = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, {"h100-sxm": rates}, fits={"h100-sxm": fit}))
    read = read_calibration(path)
    assert read.fits == {"h100-sxm": fit} and read.rates == {"h100-sxm": rates}
    entry = calibrate(load_catalog(), path).record.entry("h100-sxm")
    assert entry is not None and entry.collective_fit == fit and entry.rates == tuple(rates)
    assert fit.words == "collectives fitted over 2 ranks, rms error 58%"


@pytest.mark.parametrize(
    "fields, message",
    [
        ("scaleup_fit_rms = -0.1\nscaleup_fit_ranks = 2\n", "field 'scaleup_fit_rms': Input should be greater"),
        ("scaleup_fit_rms = 0.1\nscaleup_fit_ranks = 1\n", "field 'scaleup_fit_ranks': Input should be greater"),
        ("scaleup_fit_rms = 0.1\n", "field 'scaleup_fit_ranks': Field required"),
    ],
)
def test_bad_collective_fit_fields_are_one_line_errors(tmp_path, fields, message):
    rates = {"scaleup_busbw_gbyte_per_s_achieved": 300.0}
    path = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, {"h100-sxm": rates}))
    path.write_text(path.read_text() + fields)
    with pytest.raises(CatalogError, match=message):
        read_calibration(path)
    alone = _file(tmp_path, {"h100-sxm": {"gemm_bf16_tflops_achieved": 600.0}}, "alone.toml")
    alone.write_text(alone.read_text() + "scaleup_fit_rms = 0.1\nscaleup_fit_ranks = 2\n")
    with pytest.raises(CatalogError, match="scaleup_fit_\\* fields without the scaleup_\\* rates they describe"):
        read_calibration(alone)


# ----------------------------------------------------------------------------- measured job corrections

JOB = dict(
    job_compute_time_factor=1.25,
    job_memory_factor=1.1,
    job_name="llama-8b",
    job_date="2026-12-01",
    job_shape="llama3-8b, 8 x h100-sxm, fsdp dp_shard=8, mb 1 x accum 1 x seq 4096",
    job_step_s=2.0,
    job_predicted_step_s=1.6,
    job_peak_gib=44.0,
    job_predicted_peak_gib=40.0,
)


def _estimate(catalog, gpu_id: str = "h100-sxm", layout: Layout | None = None):
    model, training = get_preset("llama3-8b"), TrainingConfig(seq_len=4096, micro_batch=1)
    return estimate(model, gpu_id, layout or Layout(dp_shard=8), training, num_gpus=8, catalog=catalog)


def test_a_job_only_file_needs_no_machine_and_its_corrections_are_named_terms(tmp_path):
    path = tmp_path / "job.toml"
    path.write_text("[gpus.h100-sxm]\n" + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in JOB.items()))
    read = read_calibration(path)
    assert read.machine is None and not read.rates and read.jobs["h100-sxm"].compute_time_factor == 1.25
    calibrated = apply_calibration(load_catalog(), path)
    assert "MEASURED: job llama-8b" in calibrated.gpu("h100-sxm").sources["measured_job"]
    base, corrected = _estimate(load_catalog()), _estimate(calibrated)
    compute = sum(getattr(base.time.breakdown_s, k) for k in ("matmul", "attention", "memory_bound"))
    assert corrected.time.breakdown_s.measured_correction == pytest.approx(0.25 * compute)
    assert corrected.time.step_s > base.time.step_s
    assert sum(v for _, v in corrected.time.breakdown_s) == pytest.approx(corrected.time.step_s)
    assert corrected.memory.peak_gib == pytest.approx(1.1 * base.memory.peak_gib)
    assert corrected.memory.breakdown_gib.total == pytest.approx(corrected.memory.peak_gib)
    assert corrected.memory.reserved_gib > base.memory.reserved_gib
    assert _estimate(calibrated, "a100-80gb-sxm").time.step_s == _estimate(load_catalog(), "a100-80gb-sxm").time.step_s


def test_rates_and_a_job_round_trip_in_one_table(tmp_path):
    from planner.catalog.measured_job import MeasuredJob

    job = MeasuredJob(**{k.removeprefix("job_"): v for k, v in JOB.items()})
    cal = CalibrationFile(MACHINE, {"h100-sxm": {"gemm_bf16_tflops_achieved": 800.0}}, {"h100-sxm": job})
    assert read_calibration(write_calibration(tmp_path / "c.toml", cal)) == cal


@pytest.mark.parametrize(
    "change, message",
    [
        (
            dict(job_compute_time_factor=9.0),
            r"field 'job_compute_time_factor': Input should be less than or equal to 5",
        ),
        (dict(job_name=""), r"field 'job_name': String should have at least 1 character"),
        (dict(job_peak_gb=1.0), r"field 'job_peak_gb': Extra inputs are not permitted"),
    ],
)
def test_bad_job_fields_are_one_line_errors(tmp_path, change, message):
    path = tmp_path / "bad.toml"
    fields = {**JOB, **change}
    path.write_text("[gpus.h100-sxm]\n" + "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in fields.items()))
    with pytest.raises(CatalogError, match=r"\[gpus.h100-sxm\]: " + message):
        read_calibration(path)


def test_the_fit_reproduces_the_measured_job_and_refuses_what_compute_cannot_explain():
    from planner.api import build_plan
    from planner.job_fit import fit_measured_job
    from planner.model.settings import DEFAULT_SETTINGS

    model, training = get_preset("llama3-8b"), TrainingConfig(seq_len=4096, micro_batch=1)
    plan = build_plan(model, "h100-sxm", Layout(dp_shard=8), training, num_gpus=8)
    step, peak = 1.3 * plan.estimate.time.step_s, 0.9 * plan.estimate.memory.peak_gib
    job = fit_measured_job(
        plan, load_catalog(), DEFAULT_SETTINGS, step_s=step, peak_gib=peak, name="j", date="2026-12-01"
    )
    assert job.compute_time_factor > 1.3  # only the compute part grows; comm and optimizer stay
    assert job.memory_factor == pytest.approx(0.9)
    gpu = load_catalog().gpu("h100-sxm").model_copy(update={"measured_job": job})
    again = estimate(model, gpu, Layout(dp_shard=8), training, num_gpus=8)
    assert again.time.step_s == pytest.approx(step, rel=1e-9)
    assert again.memory.peak_gib == pytest.approx(peak, rel=1e-9)
    with pytest.raises(ValueError, match="slower than the model gives even at compute x 5"):
        fit_measured_job(plan, load_catalog(), DEFAULT_SETTINGS, step_s=step * 100, peak_gib=peak, name="j", date="d")
    # trial s38: a job faster than any compute factor was blamed on "host dispatch or communication"
    with pytest.raises(ValueError, match=r"faster than the model gives even at compute x 0\.2.*alone take longer"):
        fit_measured_job(plan, load_catalog(), DEFAULT_SETTINGS, step_s=step / 100, peak_gib=peak, name="j", date="d")
    with pytest.raises(ValueError, match="not a calibration"):
        fit_measured_job(plan, load_catalog(), DEFAULT_SETTINGS, step_s=step, peak_gib=peak * 10, name="j", date="d")
