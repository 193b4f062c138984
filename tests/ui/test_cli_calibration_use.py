"""calib50 M2: the calibration line and JSON count only the rates a plan's estimate used."""

from __future__ import annotations

import json

from planner.catalog.calibration import CalibrationFile, write_calibration
from ui.cli import main

MACHINE = dict(host="node-1", device="NVIDIA H100 80GB HBM3", driver="570.86", date="2026-12-01", software="torch 2.11")
ESTIMATE = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8"]
FLASH = {"attention_fwd_tflops_achieved": 300.0, "attention_bwd_tflops_achieved": 250.0}
RATES = {"gemm_bf16_tflops_achieved": 600.0, **FLASH}


def _estimate(capsys, *args: str) -> dict:
    assert main([*ESTIMATE, *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _line(capsys, *args: str) -> str:
    assert main([*ESTIMATE, *args]) == 0
    return capsys.readouterr().out.splitlines()[0]


def test_flash_rates_under_cudnn_attention_are_said_unused_and_change_nothing(tmp_path, capsys):
    path = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, {"h100-sxm": RATES}))
    gemm_only = write_calibration(
        tmp_path / "g.toml", CalibrationFile(MACHINE, {"h100-sxm": {"gemm_bf16_tflops_achieved": 600.0}})
    )
    data = _estimate(capsys, "--calibration", str(path))
    assert data["attention_kernel_timed"] == "cudnn"
    # the FlashAttention-2 rates changed nothing: the estimate is the GEMM-only file's
    assert data["time"] == _estimate(capsys, "--calibration", str(gemm_only))["time"]
    reason = "the plan runs cuDNN attention; the file has no cudnn_attention_*"
    assert data["calibration"]["unused_rates"] == [
        {"gpu": "h100-sxm", "field": name, "reason": reason} for name in FLASH
    ]
    line = _line(capsys, "--calibration", str(path))
    assert "h100-sxm: 1 of 3 rates used (gemm_bf16_tflops 742.8 -> 600 (-19%)); unused: attention_fwd_tflops," in line
    assert f"attention_bwd_tflops ({reason})," in line


def test_flash_rates_under_flash_attention_are_used_and_cudnn_ones_not(tmp_path, capsys):
    cudnn = {"cudnn_attention_fwd_tflops_achieved": 500.0, "cudnn_attention_bwd_tflops_achieved": 400.0}
    path = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, {"h100-sxm": {**RATES, **cudnn}}))
    data = _estimate(capsys, "--calibration", str(path), "--attention", "sdpa-fa2")
    assert [u["field"] for u in data["calibration"]["unused_rates"]] == list(cudnn)
    assert "3 of 5 rates used" in _line(capsys, "--calibration", str(path), "--attention", "sdpa-fa2")
    # cuDNN timed with the file's own cuDNN rates: the flash ones unused, without the "has no" clause
    line = _line(capsys, "--calibration", str(path))
    assert "unused: attention_fwd_tflops, attention_bwd_tflops (the plan runs cuDNN attention)" in line


def test_a_file_whose_every_rate_is_used_keeps_its_line(tmp_path, capsys):
    path = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, {"h100-sxm": RATES}))
    data = _estimate(capsys, "--calibration", str(path), "--attention", "sdpa-fa2")
    assert data["calibration"]["unused_rates"] == []
    line = _line(capsys, "--calibration", str(path), "--attention", "sdpa-fa2")
    assert "h100-sxm: 3 rates (gemm_bf16_tflops" in line and "unused" not in line


def test_fp8_and_collective_rates_a_bf16_single_gpu_plan_does_not_use(tmp_path, capsys):
    rates = {"gemm_fp8_tflops_achieved": 1200.0, "scaleup_busbw_gbyte_per_s_achieved": 300.0}
    path = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, {"h100-sxm": rates}))
    args = ["estimate", "--model", "llama3.2-1b", "--gpu", "h100-sxm", "--num-gpus", "1", "--calibration", str(path)]
    assert main([*args, "--json"]) == 0
    unused = json.loads(capsys.readouterr().out)["calibration"]["unused_rates"]
    assert [(u["field"], u["reason"]) for u in unused] == [
        ("gemm_fp8_tflops_achieved", "the plan's GEMMs run in bf16"),
        ("scaleup_busbw_gbyte_per_s_achieved", "a single GPU runs no collective"),
    ]


def test_rates_a_cpu_measured_give_figures_without_an_accuracy_band(tmp_path, capsys):
    """calib50 M4: a CPU-timed file (a format check) gave a 3,862 s step with "mean |error| 3.5%"."""
    cpu = dict(MACHINE, device="CPU (x86_64)", driver="none (cpu)")
    path = write_calibration(
        tmp_path / "cpu.toml", CalibrationFile(cpu, {"h100-sxm": {"gemm_bf16_tflops_achieved": 0.2}})
    )
    data = _estimate(capsys, "--calibration", str(path))
    assert data["uncertainty"] is None and data["time"]["step_s"] > 100
    assert _estimate(capsys, "--no-calibration")["uncertainty"] is not None
    assert main([*ESTIMATE, "--calibration", str(path)]) == 0
    out = capsys.readouterr().out
    assert "accuracy: none: h100-sxm's rates were measured on a CPU (a format check)" in out.splitlines()
    assert "band" not in out and "mean |error|" not in out
    # a GPU the file does not touch keeps its band
    a100 = ["--calibration", str(path), "--gpu", "a100-80gb-sxm"]
    assert main([*ESTIMATE[:3], *ESTIMATE[5:], *a100, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["uncertainty"] is not None


def test_the_calibration_line_says_how_well_the_collectives_were_fitted(tmp_path, capsys):
    """calib50 M5: a 58 % fit over 2 ranks was applied to 8-GPU nodes unsaid."""
    from planner.plan_calibration import CollectiveFit

    rates = {"scaleup_busbw_gbyte_per_s_achieved": 300.0, "scaleup_step_latency_us_achieved": 5.0}
    fits = {"h100-sxm": CollectiveFit(rms=0.58, ranks=2)}
    path = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, {"h100-sxm": rates}, fits=fits))
    line = _line(capsys, "--calibration", str(path))
    assert "h100-sxm: 2 rates (" in line and "; collectives fitted over 2 ranks, rms error 58%, measured on" in line
    fit = _estimate(capsys, "--calibration", str(path))["calibration"]["gpus"][0]["collective_fit"]
    assert fit == {"rms": 0.58, "ranks": 2}
