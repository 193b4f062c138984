"""``trainplan calibrate`` on CPU: it measures, writes a file that --calibration takes, and fails in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from planner.catalog.calibration import read_calibration
from trainer.calibrate import attention_tflops, copy_tbps, gemm_tflops, kernel_attention_fields, sizes_for
from ui.cli import main


def test_measurements_are_positive_rates():
    cpu = torch.device("cpu")
    sizes = sizes_for(cpu, quick=True)
    assert gemm_tflops(cpu, torch.float32, sizes) > 0
    fwd, bwd = attention_tflops(cpu, torch.float32, sizes)
    assert fwd > 0 and bwd > 0
    assert copy_tbps(cpu, sizes) > 0
    # each kernel the build runs on the device gets its own fields; a CPU has no cuDNN kernel
    assert set(kernel_attention_fields(cpu, torch.float32, sizes)) == {
        "attention_fwd_tflops_achieved",
        "attention_bwd_tflops_achieved",
    }


def test_an_attention_rate_changes_the_stacks_that_run_that_kernel(tmp_path, capsys):
    machine = '[machine]\nhost = "n"\ndevice = "NVIDIA H100"\ndriver = "570"\ndate = "2026-12-01"\nsoftware = "torch"\n'
    slow = {
        "cudnn": "cudnn_attention_fwd_tflops_achieved = 100.0\ncudnn_attention_bwd_tflops_achieved = 80.0\n",
        "fa2": "attention_fwd_tflops_achieved = 100.0\nattention_bwd_tflops_achieved = 80.0\n",
    }
    steps = {}
    for kernel, fields in slow.items():
        path = tmp_path / f"{kernel}.toml"
        path.write_text(machine + "[gpus.h100-sxm]\n" + fields)
        for stack in ("trainplan", "megatron-core"):
            args = ["estimate", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--num-gpus", "8", "--micro-batch", "1"]
            args += ["--seq-len", "8192", "--stack", stack, "--json"]
            for cal in ("--no-calibration", f"--calibration={path}"):
                assert main([*args, cal]) == 0
                steps[kernel, stack, cal == "--no-calibration"] = json.loads(capsys.readouterr().out)["time"]["step_s"]
    for stack in ("trainplan", "megatron-core"):  # both run cuDNN on Hopper (torch >= 2.11, TransformerEngine)
        assert steps["cudnn", stack, False] > 1.2 * steps["cudnn", stack, True]  # 100 against 702 TFLOP/s
        assert steps["fa2", stack, False] == steps["fa2", stack, True]  # FlashAttention-2's rate: unused here


def test_calibrate_quick_writes_a_file_that_changes_the_plan(tmp_path, capsys):
    path = tmp_path / "cal.toml"
    assert main(["calibrate", "--device", "cpu", "--gpu", "h100-sxm", "--quick", "--out", str(path)]) == 0
    captured = capsys.readouterr()
    assert "3/3" in captured.err  # the progress bar reached the end
    assert f"written to {path} (use: --calibration {path})" in captured.out  # not the default file
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


def test_calibrate_writes_the_default_file_and_merges_into_it(capsys):
    from planner.catalog.calibration import CalibrationFile, write_calibration
    from planner.catalog.measured_job import MeasuredJob
    from ui.calibration import default_calibration_path

    path = default_calibration_path()  # under the test's XDG_CONFIG_HOME (tests/conftest.py)
    path.parent.mkdir(parents=True)
    job = MeasuredJob(
        compute_time_factor=1.1,
        memory_factor=1.0,
        name="j",
        date="2026-12-01",
        shape="s",
        step_s=1.0,
        predicted_step_s=0.9,
        peak_gib=10.0,
        predicted_peak_gib=10.0,
    )
    jobs = {"h100-sxm": job, "a100-80gb-sxm": job}
    write_calibration(path, CalibrationFile(None, {}, jobs))
    # trial s38: on a CPU the default file is written only when named (a CPU's rates are a format check)
    assert main(["calibrate", "--device", "cpu", "--gpu", "h100-sxm", "--quick"]) == 2
    assert "needed on a CPU: --out (" in capsys.readouterr().err
    # calib50 L5: both options a CPU run lacks are named at once, not one per try
    assert main(["calibrate", "--device", "cpu", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "--out (" in err and "--gpu (" in err and len(err.strip().splitlines()) == 1
    assert main(["calibrate", "--device", "cpu", "--gpu", "h100-sxm", "--quick", "--out", str(path)]) == 0
    captured = capsys.readouterr()
    # calib50 L5: the default file needs no flag, so none is suggested
    assert f"written to {path} (the default file: every plan reads it)" in captured.out
    assert "measured job correction of h100-sxm was dropped" in captured.err  # fitted against the old rates
    read = read_calibration(path)
    assert set(read.rates) == {"h100-sxm"} and read.jobs == {"a100-80gb-sxm": job}


@pytest.mark.slow
def test_calibrate_times_collectives_over_two_gloo_processes(tmp_path, capsys):
    from planner.catalog.calibration import apply_calibration
    from planner.catalog.hardware import load_catalog

    path = tmp_path / "cal.toml"
    args = ["calibrate", "--device", "cpu", "--gpu", "h100-sxm", "--quick", "--collectives", "2", "--out", str(path)]
    assert main(args) == 0
    assert "ring fit: rms error" in capsys.readouterr().err
    fit = read_calibration(path).fits["h100-sxm"]  # calib50 M5: the fit's error and ranks are kept
    assert fit.ranks == 2 and fit.rms >= 0
    rates = read_calibration(path).rates["h100-sxm"]
    assert 0 < rates["scaleup_busbw_gbyte_per_s_achieved"] < 450 and rates["scaleup_step_latency_us_achieved"] >= 0
    gpu = apply_calibration(load_catalog(), path).gpu("h100-sxm")
    assert gpu.rates.scaleup_bus_bandwidth_bytes_per_s == pytest.approx(
        rates["scaleup_busbw_gbyte_per_s_achieved"] * 1e9
    )
    assert main([*args[:-4], "--collectives", "1", "--out", str(tmp_path / "one.toml")]) == 2
    assert "at least 2 devices" in capsys.readouterr().err


def test_rates_another_machine_measured_are_not_dropped_unsaid(tmp_path, capsys):
    """Calib50 M1: calibrating into a file another host measured dropped its other GPUs' rates with
    only 'measured rates for a100-80gb-sxm written'."""
    from planner.catalog.calibration import CalibrationFile, write_calibration

    machine = dict(host="node-17", device="NVIDIA H100 80GB HBM3", driver="570.86", date="2026-12-01", software="t")
    path = write_calibration(
        tmp_path / "c.toml", CalibrationFile(machine, {"h100-sxm": {"gemm_bf16_tflops_achieved": 600.0}})
    )
    assert main(["calibrate", "--device", "cpu", "--gpu", "a100-80gb-sxm", "--quick", "--out", str(path)]) == 0
    err = capsys.readouterr().err
    assert "the measured rates of h100-sxm were dropped: node-17 (NVIDIA H100 80GB HBM3) measured them" in err
    assert set(read_calibration(path).rates) == {"a100-80gb-sxm"}


@pytest.mark.parametrize(
    "gpu, nvml, expected",
    [
        (None, "NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("h100-sxm", "NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("h100-sxm", "NVIDIA H100 64GB HBM3", "h100-sxm"),  # a variant NVML matches to no entry: --gpu names it
        ("h100-sxm", "NVIDIA A100-SXM4-80GB", "--gpu h100-sxm: this GPU (NVIDIA A100-SXM4-80GB) is a100-80gb-sxm"),
        (None, "NVIDIA H100 64GB HBM3", "--gpu: this GPU matches no catalog entry"),
    ],
)
def test_calibrate_writes_rates_for_the_entry_the_device_is(gpu, nvml, expected):
    """calib50 M3: --gpu overrode NVML's match unchecked, so an A100's rates could be written as an H100's."""
    from planner.catalog.hardware import load_catalog
    from ui.calibration import gpu_to_calibrate

    catalog = load_catalog()
    memory = {"H100 80GB": 80 * 2**30, "A100-SXM4-80GB": 80 * 2**30, "H100 64GB": 64 * 2**30}
    memory_bytes = next(v for k, v in memory.items() if k in nvml)
    if expected.startswith("--gpu"):
        with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace(")", r"\)")):
            gpu_to_calibrate(gpu, nvml, memory_bytes, catalog)
    else:
        assert gpu_to_calibrate(gpu, nvml, memory_bytes, catalog) == expected


def test_calibrate_without_nvml_reads_the_device_torch_reports(monkeypatch):
    """devname51: under ROCm NVML sees no GPU, and calibrate without --gpu said "this GPU matches no
    catalog entry" where torch's own name (AMD Instinct MI325X) is the MI325X's."""
    from types import SimpleNamespace

    import torch

    import planner.catalog.detect
    from ui.calibration import _calibration_target

    def no_driver(catalog):
        raise planner.catalog.detect.NoGPUDriver("no NVML")

    monkeypatch.setattr(planner.catalog.detect, "detect_gpus", no_driver)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "AMD Instinct MI325X")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index=0: SimpleNamespace(total_memory=256 * 2**30))
    assert _calibration_target(None, use_cuda=True) == ("mi325x", None)
    with pytest.raises(ValueError, match=r"this GPU \(AMD Instinct MI325X\) is mi325x"):
        _calibration_target("mi300x", use_cuda=True)


@pytest.mark.parametrize("spread, warned", [(0.0, False), (0.8, True)])
def test_a_collective_fit_past_its_threshold_is_warned_of(monkeypatch, capsys, spread, warned):
    """calib50 M5: a 58 % ring fit was written without a word."""
    import trainer.calibrate_comm
    from planner.model.comm import MAX_RING_FIT_RMS, CollectiveSample
    from ui.calibration import _collective_rates

    def timed(device_type, ranks, quick):  # a 100 GB/s ring, each sample off by +-spread
        sizes = [2.0**20, 2.0**24, 2.0**28, 2.0**30]
        return [
            CollectiveSample("all_gather", n, 2, (1e-5 + n / 2 / 100e9) * (1 + spread * (-1) ** i))
            for i, n in enumerate(sizes)
        ]

    monkeypatch.setattr(trainer.calibrate_comm, "measure_collectives", timed)
    rates, fit = _collective_rates("cpu", 2, True)
    assert fit.ranks == 2 and (fit.rms > MAX_RING_FIT_RMS) == warned and rates["scaleup_busbw_gbyte_per_s_achieved"] > 0
    err = capsys.readouterr().err
    assert (f"past the {MAX_RING_FIT_RMS:.0%} a fit on an idle node reaches" in err) == warned


def test_an_unwritable_out_is_refused_before_anything_is_measured(tmp_path, capsys, monkeypatch):
    """calib50 L2: --out /proc/x.toml failed after measuring with a raw errno, and a missing
    parent directory was made."""
    import trainer.calibrate

    def never(*args, **kwargs):
        raise AssertionError("measured before --out was checked")

    monkeypatch.setattr(trainer.calibrate, "measure", never)
    outs = {
        tmp_path / "missing" / "c.toml": f"no such directory {tmp_path / 'missing'}",
        tmp_path: "cannot write it (Is a directory)",
        Path("/proc/trainplan-calib.toml"): "cannot write it (No such file or directory)",
    }
    for out, reason in outs.items():
        assert main(["calibrate", "--device", "cpu", "--gpu", "h100-sxm", "--quick", "--out", str(out)]) == 2
        assert capsys.readouterr().err.strip().splitlines() == [f"trainplan: error: --out {out}: {reason}"]
    assert not (tmp_path / "missing").exists()
