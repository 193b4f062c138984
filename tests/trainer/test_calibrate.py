"""``trainplan calibrate`` on CPU: it measures, writes a file that --calibration takes, and fails in one line."""

from __future__ import annotations

import json

import torch

from planner.catalog.calibration import read_calibration
from trainer.calibrate import attention_tflops, copy_tbps, gemm_tflops, sizes_for
from ui.cli import main


def test_measurements_are_positive_rates():
    cpu = torch.device("cpu")
    sizes = sizes_for(cpu, quick=True)
    assert gemm_tflops(cpu, torch.float32, sizes) > 0
    fwd, bwd = attention_tflops(cpu, torch.float32, sizes)
    assert fwd > 0 and bwd > 0
    assert copy_tbps(cpu, sizes) > 0


def test_calibrate_quick_writes_a_file_that_changes_the_plan(tmp_path, capsys):
    path = tmp_path / "cal.toml"
    assert main(["calibrate", "--device", "cpu", "--gpu", "h100-sxm", "--quick", "--out", str(path)]) == 0
    assert "3/3" in capsys.readouterr().err  # the progress bar reached the end
    read = read_calibration(path)
    assert read.machine is not None and read.machine["driver"] == "none (cpu)" and set(read.rates) == {"h100-sxm"}
    assert set(read.rates["h100-sxm"]) >= {"gemm_bf16_tflops_achieved", "hbm_copy_tbps_achieved"}
    args = ["estimate", "--model", "llama3.2-1b", "--gpu", "h100-sxm", "--num-gpus", "8", "--micro-batch", "1"]
    args += ["--seq-len", "1024", "--json"]
    assert main(args) == 0
    catalog_step = json.loads(capsys.readouterr().out)["time"]["step_s"]
    assert main([*args, "--calibration", str(path)]) == 0
    cpu_step = json.loads(capsys.readouterr().out)["time"]["step_s"]
    assert cpu_step > 100 * catalog_step  # a CPU's measured rates: far slower than an H100's


def test_calibrate_errors_are_one_line(tmp_path, capsys):
    assert main(["calibrate", "--device", "cpu", "--quick", "--out", str(tmp_path / "c.toml")]) == 2
    assert main(["calibrate", "--device", "cpu", "--gpu", "h900", "--quick", "--out", str(tmp_path / "c.toml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("trainplan: error:") for line in err)
    assert not (tmp_path / "c.toml").exists()
