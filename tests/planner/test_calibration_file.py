"""Calibration files (trainplan calibrate's output): format, merge into the catalog, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.catalog.calibration import apply_calibration, read_calibration, write_calibration
from planner.catalog.hardware import CatalogError, load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.model.estimate import estimate

MACHINE = dict(host="node-1", device="NVIDIA H100 80GB HBM3", driver="570.86", date="2026-12-01", software="torch 2.11")


def _file(tmp_path: Path, gpus: dict, name: str = "cal.toml") -> Path:
    return write_calibration(tmp_path / name, MACHINE, gpus)


def _step(catalog, gpu_id: str = "h100-sxm") -> float:
    model, training = get_preset("llama3-8b"), TrainingConfig(seq_len=4096, micro_batch=1)
    return estimate(model, gpu_id, Layout(dp_shard=8), training, num_gpus=8, catalog=catalog).time.step_s


def test_round_trip_and_merge_mark_the_rates_measured(tmp_path):
    path = _file(tmp_path, {"h100-sxm": {"gemm_bf16_tflops_achieved": 800.0, "hbm_copy_tbps_achieved": 3.0}})
    machine, gpus = read_calibration(path)
    assert machine == MACHINE and gpus == {
        "h100-sxm": {"gemm_bf16_tflops_achieved": 800, "hbm_copy_tbps_achieved": 3.0}
    }
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
    with pytest.raises(CatalogError, match="cannot read calibration file"):
        read_calibration(tmp_path / "missing.toml")
