"""The default per-user calibration file and ``trainplan calibrate --calibrate-from JOB_DIR``
(in process; the conftest points XDG_CONFIG_HOME at an empty directory for every test)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from planner.api import build_plan
from planner.catalog.calibration import CalibrationFile, read_calibration, write_calibration
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.reports import RunReport
from ui.calibration import default_calibration_path
from ui.cli import main

MACHINE = dict(host="node-1", device="NVIDIA H100 80GB HBM3", driver="570.86", date="2026-12-01", software="torch 2.11")
ESTIMATE = ["estimate", "--model", "llama3.2-1b", "--gpu", "h100-sxm", "--num-gpus", "8", "--micro-batch", "4"]
ESTIMATE += ["--seq-len", "4096"]


def _default_file(rates: dict | None = None) -> Path:
    path = default_calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_calibration(
        path, CalibrationFile(MACHINE, {"h100-sxm": rates or {"gemm_bf16_tflops_achieved": 400.0}})
    )


def _json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _choice(data: dict) -> dict:
    """The file a command's JSON says it applied, and why (its record has more: sha256, gpus)."""
    return {key: data["calibration"][key] for key in ("file", "source")}


def test_the_default_path_follows_xdg_and_ignores_a_relative_one(tmp_path, monkeypatch):
    assert default_calibration_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "trainplan/calibration.toml"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = tmp_path / "home/.config/trainplan/calibration.toml"
    assert default_calibration_path({"XDG_CONFIG_HOME": "relative/dir"}) == expected
    assert default_calibration_path({}) == expected
    assert default_calibration_path() == Path(os.environ["XDG_CONFIG_HOME"]) / "trainplan/calibration.toml"


def test_estimate_applies_the_default_file_and_says_so(capsys):
    plain = _json(capsys, *ESTIMATE)
    assert plain["calibration"] is None
    path = _default_file()
    calibrated = _json(capsys, *ESTIMATE)
    assert _choice(calibrated) == {"file": str(path), "source": "default"}
    assert calibrated["time"]["step_s"] > plain["time"]["step_s"]  # 400 TFLOP/s: slower than the catalog's
    off = _json(capsys, *ESTIMATE, "--no-calibration")
    assert off["calibration"] is None and off["time"]["step_s"] == plain["time"]["step_s"]
    assert main(ESTIMATE) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"calibration: default file {path} applied (--no-calibration to ignore it); sha256 ")
    assert main([*ESTIMATE, "--no-calibration"]) == 0
    assert "calibration:" not in capsys.readouterr().out


def test_an_explicit_file_wins_and_cannot_be_combined_with_no_calibration(tmp_path, capsys):
    _default_file()
    other = write_calibration(
        tmp_path / "o.toml", CalibrationFile(MACHINE, {"h100-sxm": {"hbm_copy_tbps_achieved": 2}})
    )
    data = _json(capsys, *ESTIMATE, "--calibration", str(other))
    assert _choice(data) == {"file": str(other), "source": "--calibration"}
    assert main([*ESTIMATE, "--calibration", str(other), "--no-calibration"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["trainplan: error: give --calibration or --no-calibration, not both"]


def test_a_broken_default_file_names_itself_and_the_way_out(capsys):
    path = default_calibration_path()
    path.parent.mkdir(parents=True)
    path.write_text("[gpus\n")
    assert main(ESTIMATE) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "--no-calibration ignores it" in err[0]
    assert main([*ESTIMATE, "--no-calibration"]) == 0


def test_plan_uses_the_default_file_and_explain_keeps_the_plans_choice(tmp_path, capsys):
    """calib50 M6: explain of a plan made without a file re-estimated it with the default file; it
    keeps the plan's choice unless --calibration is given, and then says the plan's step beside."""
    plan_args = ["plan", "--model", "llama3.2-1b", "--tokens", "1e10", "--gpus", "h100-sxm=8", "--top", "0"]
    saved = tmp_path / "p.json"
    before = _json(capsys, *plan_args, "--out", str(saved))
    assert before["calibration"] is None
    explained = _json(capsys, "explain", str(saved))
    assert explained["calibration"] is None and explained["plan"] == before["plan"]
    path = _default_file()
    after = _json(capsys, *plan_args)
    assert _choice(after) == {"file": str(path), "source": "default"}
    assert after["plan"]["time"]["step_s"] != before["plan"]["time"]["step_s"]
    kept = _json(capsys, "explain", str(saved))
    assert kept["calibration"] is None and kept["plan"] == before["plan"]
    assert kept["recalibrated_from_step_s"] is None
    re_estimated = _json(capsys, "explain", str(saved), "--calibration", str(path))
    assert re_estimated["calibration"]["source"] == "--calibration"
    assert re_estimated["plan"]["time"]["step_s"] > before["plan"]["time"]["step_s"]
    assert re_estimated["recalibrated_from_step_s"] == before["plan"]["time"]["step_s"]
    assert main(["explain", str(saved), "--calibration", str(path)]) == 0
    was, now = before["plan"]["time"]["step_s"], re_estimated["plan"]["time"]["step_s"]
    line = f"estimated again with calibration {path} (not the plan's own): step {was:.4g} -> {now:.4g} s"
    assert capsys.readouterr().out.splitlines()[1] == line


def test_a_plan_made_with_the_default_file_is_explained_with_it_as_it_is_now(tmp_path, capsys):
    saved = tmp_path / "p.json"
    _default_file()
    planned = _json(capsys, *ESTIMATE, "--out", str(saved))["time"]["step_s"]
    assert _json(capsys, "explain", str(saved))["recalibrated_from_step_s"] is None
    _default_file({"gemm_bf16_tflops_achieved": 300.0})  # measured again: slower
    again = _json(capsys, "explain", str(saved))
    assert again["calibration"]["source"] == "default" and again["recalibrated_from_step_s"] == planned
    assert again["plan"]["time"]["step_s"] > planned


def test_explain_and_emit_apply_a_plans_own_file_again_and_say_when_it_changed_or_is_gone(tmp_path, capsys):
    """review51 H1: a plan made with --calibration FILE (not the default) was estimated again by
    explain --failure-rate-x and emit on the catalog's rates, its file dropped unsaid."""
    own = write_calibration(
        tmp_path / "slow.toml", CalibrationFile(MACHINE, {"h100-sxm": {"gemm_bf16_tflops_achieved": 300.0}})
    )
    saved = tmp_path / "p.json"
    planned = _json(capsys, *ESTIMATE, "--calibration", str(own), "--out", str(saved))["time"]["step_s"]
    bare = _json(capsys, *ESTIMATE, "--no-calibration")["time"]["step_s"]
    assert planned > bare
    again = _json(capsys, "explain", str(saved), "--failure-rate-x", "2")
    assert again["plan"]["time"]["step_s"] == pytest.approx(planned) and _choice(again)["source"] == "plan"
    assert main(["emit", str(saved), "--out", str(tmp_path / "job")]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "job" / "job.json").read_text())["plan"]["estimate"]["time"][
        "step_s"
    ] == pytest.approx(planned)
    write_calibration(own, CalibrationFile(MACHINE, {"h100-sxm": {"gemm_bf16_tflops_achieved": 200.0}}))
    assert main(["explain", str(saved), "--failure-rate-x", "2", "--json"]) == 0
    changed = capsys.readouterr()
    assert f"calibration file {own} changed since the plan was made" in changed.err
    assert json.loads(changed.out)["plan"]["time"]["step_s"] > planned
    own.unlink()
    assert main(["explain", str(saved), "--failure-rate-x", "2", "--json"]) == 0
    gone = capsys.readouterr()
    assert "cannot be read now: estimated again without it" in gone.err
    assert json.loads(gone.out)["plan"]["time"]["step_s"] == pytest.approx(bare)


# ----------------------------------------------------------------------------- --calibrate-from


def _job_dir(
    tmp_path: Path,
    *,
    device: str = "cuda",
    step_factor: float = 1.2,
    peak_factor: float = 1.05,
    gpu: str = "h100-sxm",
    outcome: str = "completed",
    warmup_only: bool = False,
) -> Path:
    """A job directory as ``trainplan run`` leaves it: job.json and the trainer's report.json."""
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings
    from trainer.probe import RunSummary, write_report

    training = TrainingConfig(seq_len=4096, micro_batch=4)
    plan = build_plan(get_preset("llama3.2-1b"), "h100-sxm", Layout(dp_shard=8), training, num_gpus=8)
    job_dir = tmp_path / f"job-{device}-{gpu}-{outcome}-{warmup_only}"
    emit_job(plan, job_dir, name="llama-1b", run=RunSettings())
    step, peak = step_factor * plan.estimate.time.step_s, peak_factor * plan.estimate.memory.peak_gib
    steps = 1 if warmup_only else 49
    summary = RunSummary(50, outcome, step, None, None, peak, 3.0, None, None, None, 0, 60.0, 60.0, steps, warmup_only)
    write_report(job_dir, plan, summary, device, gpu if device == "cuda" else None)
    return job_dir


def test_calibrate_from_a_job_makes_the_next_estimate_start_from_it(tmp_path, capsys):
    job_dir = _job_dir(tmp_path)
    measured = RunReport.load(job_dir / "report.json").measured
    assert main(["calibrate", "--calibrate-from", str(job_dir)]) == 0
    out = capsys.readouterr().out
    assert "measured job correction for h100-sxm written to" in out and "(from report.json: 49 steps, completed)" in out
    job = read_calibration(default_calibration_path()).jobs["h100-sxm"]
    assert job.name == "llama-1b" and "8 x h100-sxm" in job.shape and job.step_s == pytest.approx(measured.step_s)
    again = _json(capsys, *ESTIMATE)  # the job's own configuration
    assert again["time"]["step_s"] == pytest.approx(measured.step_s, rel=1e-5)
    assert again["memory"]["peak_gib"] == pytest.approx(measured.peak_gib, rel=1e-5)
    assert again["time"]["breakdown_s"]["measured_correction"] > 0
    other_gpu = [*ESTIMATE[:4], "a100-80gb-sxm", *ESTIMATE[5:]]
    assert _json(capsys, *other_gpu)["time"]["breakdown_s"]["measured_correction"] == 0


def test_calibrate_from_keeps_the_kernel_rates_and_fits_against_them(tmp_path, capsys):
    from planner.plan_calibration import CollectiveFit

    rates = {"gemm_bf16_tflops_achieved": 600.0, "scaleup_busbw_gbyte_per_s_achieved": 300.0}
    fit = {"h100-sxm": CollectiveFit(rms=0.05, ranks=8)}
    default_calibration_path().parent.mkdir(parents=True)
    path = write_calibration(default_calibration_path(), CalibrationFile(MACHINE, {"h100-sxm": rates}, fits=fit))
    job_dir = _job_dir(tmp_path)
    assert main(["calibrate", "--calibrate-from", str(job_dir), "--gpu", "h100-sxm"]) == 0
    read = read_calibration(path)
    assert read.machine == MACHINE and read.rates == {"h100-sxm": rates}
    assert set(read.jobs) == {"h100-sxm"} and read.fits == fit  # the collective fit's record stays too
    measured = RunReport.load(job_dir / "report.json").measured
    capsys.readouterr()
    assert _json(capsys, *ESTIMATE)["time"]["step_s"] == pytest.approx(measured.step_s, rel=1e-5)


def test_calibrate_from_refuses_jobs_that_measured_nothing_on_this_gpu(tmp_path, capsys):
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings

    cpu_job = _job_dir(tmp_path, device="cpu")
    unrun = tmp_path / "unrun"
    plan = build_plan(get_preset("tiny"), "h100-sxm", Layout(), TrainingConfig(seq_len=256, micro_batch=1), num_gpus=1)
    emit_job(plan, unrun, name="unrun", run=RunSettings())
    gpu_job = _job_dir(tmp_path)
    elsewhere = _job_dir(tmp_path, gpu="a10")  # review s27: an H100 plan measured on an A10
    (tmp_path / "fast").mkdir()
    (tmp_path / "empty").mkdir()
    too_fast = _job_dir(tmp_path / "fast", step_factor=0.01)
    cases = [
        (["--calibrate-from", str(elsewhere)], "the job ran on a10 (report.json), not the plan's GPU"),
        (["--calibrate-from", str(cpu_job)], "measurements from a CPU run say nothing about a GPU"),
        (["--calibrate-from", str(unrun)], "no measured step time and peak memory"),
        (["--calibrate-from", str(gpu_job), "--gpu", "h200-sxm"], "the job ran on h100-sxm, not --gpu h200-sxm"),
        (["--calibrate-from", str(gpu_job), "--quick"], "--quick, --device and --collectives measure here"),
        (["--calibrate-from", str(tmp_path / "nothing")], "cannot read job file"),
        # calib50 L5: an empty directory, and the fit's refusal that named no directory
        (["--calibrate-from", str(tmp_path / "empty")], "empty: not a job directory (no job.json): trainplan emit"),
        (["--calibrate-from", str(too_fast)], f"--calibrate-from {too_fast}: measured step"),
        # trial s38: a diverged run and one timed on its warm-up step alone (compute x 3.95) were taken
        (["--calibrate-from", str(_job_dir(tmp_path, outcome="diverged"))], "the run diverged (report.json)"),
        (["--calibrate-from", str(_job_dir(tmp_path, warmup_only=True))], "only the warm-up step was timed"),
    ]
    for args, message in cases:
        assert main(["calibrate", *args]) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("trainplan: error:") and message in err[0], err
    assert not default_calibration_path().exists()
    assert not default_calibration_path().parent.exists()  # runner53 L11: nor its directory, made empty


def test_emit_re_estimates_a_changed_loss_with_the_calibration_plan_applies(tmp_path, capsys):
    """A run setting that makes emit estimate the plan again (the loss chunk) uses the same
    calibration as plan/estimate: the default file, or none with --no-calibration."""
    from trainer.job_spec import JobSpec

    plan_file = tmp_path / "plan.json"
    _default_file()
    assert main([*ESTIMATE, "--out", str(plan_file)]) == 0
    capsys.readouterr()
    planned = json.loads(plan_file.read_text())["estimate"]["time"]["step_s"]
    runs = {}
    for flags in ([], ["--no-calibration"]):
        out = tmp_path / f"job{len(runs)}"
        assert main(["emit", str(plan_file), "--out", str(out), "--loss-chunk-tokens", "0", *flags]) == 0
        runs[bool(flags)] = JobSpec.load(out).plan.estimate.time.step_s
    # The full-logits loss skips the chunked loss's head recompute: a little faster than planned,
    # and the calibrated (400 TFLOP/s) re-estimate slower than the catalog's.
    assert runs[False] < planned and runs[True] < runs[False]
    # The job records what its plan was estimated with: the default file's record, or none.
    calibrated, built_in = (JobSpec.load(tmp_path / f"job{i}").plan.calibration for i in range(2))
    assert calibrated is not None and calibrated.file == str(default_calibration_path()) and built_in is None


def test_a_saved_plan_records_its_calibration_and_the_cli_says_so(tmp_path, capsys):
    """plan --out / --json carry the file's path, hash and overrides; explain of the saved plan
    (no calibration now) names the file it was made with; without a file, none is recorded."""
    plan_args = ["plan", "--model", "llama3.2-1b", "--tokens", "1e10", "--gpus", "h100-sxm=8", "--top", "0"]
    path = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, {"h100-sxm": {"hbm_copy_tbps_achieved": 2}}))
    saved = tmp_path / "p.json"
    data = _json(capsys, *plan_args, "--calibration", str(path), "--out", str(saved))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert data["calibration"]["sha256"] == digest and data["calibration"]["machine"]["host"] == "node-1"
    assert data["calibration"]["gpus"] == [
        {
            "gpu": "h100-sxm",
            "rates": ["hbm_copy_tbps_achieved"],
            "measured_job": False,
            # calib50 H3: each rate beside the catalog's (the H100's HBM copy rate is derived, not listed)
            "changes": [{"field": "hbm_copy_tbps_achieved", "catalog": None, "measured": 2.0}],
            "collective_fit": None,  # calib50 M5: none fitted
        }
    ]
    recorded = json.loads(saved.read_text())["calibration"]
    # (source and unused_rates: what this command made of the record)
    assert recorded == {k: v for k, v in data["calibration"].items() if k not in ("source", "unused_rates")}
    assert main(["explain", str(saved), "--no-calibration"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert (
        line == f"calibration: the plan was made with {path}; sha256 {digest[:12]}, h100-sxm: 1 rate (hbm_copy_tbps 2"
        " (the catalog lists no such figure)), measured on node-1 2026-12-01"
    )
    assert _json(capsys, "explain", str(saved))["calibration"]["source"] == "plan"
    assert main([*plan_args, "--out", str(saved)]) == 0
    out = capsys.readouterr().out  # (the H200 rows' source is named 'calibration' where a band cites it)
    assert not any(line.startswith("calibration") or "calibrated" in line for line in out.splitlines())
    assert json.loads(saved.read_text())["calibration"] is None


def test_a_measured_job_lifts_the_ceiling_for_its_own_shape_only_and_the_envelope_says_which(tmp_path, capsys):
    """Trial s38: a 1-GPU 124M job measured fast lifted the efficiency ceiling of every estimate on
    its GPU (a 256-GPU 8B run passed the best MFU ever measured), and the envelope never said the
    figure was the user's own measurement, nor that another shape's correction was extrapolated."""
    job_dir = _job_dir(tmp_path, step_factor=0.7)  # faster than the regime's ceiling allows
    assert main(["calibrate", "--calibrate-from", str(job_dir)]) == 0
    measured = RunReport.load(job_dir / "report.json").measured
    capsys.readouterr()
    own = _json(capsys, *ESTIMATE)
    assert own["time"]["step_s"] == pytest.approx(measured.step_s, rel=1e-5)  # beyond the ceiling: lifted
    assert own["ceiling"] is None
    job = own["uncertainty"]["measured_job"]
    assert job["exact"] and job["name"] == "llama-1b"
    # calib50 M7: the job's own shape leads with its measurement, not with "outside the envelope"
    assert own["uncertainty"]["envelope"].startswith("calibrated on your job llama-1b")
    from planner.plan_accuracy import Uncertainty
    from ui.i18n import Labels
    from ui.messages import envelope_text

    card = envelope_text(Labels("en"), Uncertainty.model_validate(own["uncertainty"]))
    assert card.startswith("Calibrated on your job llama-1b") and "validated" in card
    other = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "256", "--sharding", "zero2"]
    other += ["--micro-batch", "2", "--seq-len", "4096"]
    bare = _json(capsys, *other, "--no-calibration")
    corrected = _json(capsys, *other)
    assert corrected["ceiling"] is not None and corrected["ceiling"]["mfu"] == bare["ceiling"]["mfu"]
    assert corrected["throughput"]["mfu"] <= bare["ceiling"]["mfu"] + 1e-9
    assert not corrected["uncertainty"]["measured_job"]["exact"]
    assert "extrapolated to this shape" in corrected["uncertainty"]["envelope"]
    assert "measured_job" not in bare["uncertainty"] or bare["uncertainty"]["measured_job"] is None


def test_calibrate_from_says_when_its_report_is_an_earlier_launchs(tmp_path, capsys):
    """Trial s38: after a relaunch that crashed, report.json was still the first launch's and was read silently."""
    job_dir = _job_dir(tmp_path)
    status = job_dir / "exit_status.json"
    status.write_text('{"code": 144}\n')
    written = (job_dir / "report.json").stat().st_mtime
    os.utime(status, (written + 2, written + 2))  # review s38: the same launch's pair is not stale
    assert main(["calibrate", "--calibrate-from", str(job_dir)]) == 0
    assert "earlier launch" not in capsys.readouterr().err
    os.utime(status, (written + 600, written + 600))
    assert main(["calibrate", "--calibrate-from", str(job_dir)]) == 0
    err = capsys.readouterr().err
    assert "report.json is an earlier launch's: a later one ended after it (exit_status.json)" in err


def test_calibrate_from_refuses_a_file_whose_rates_for_the_gpu_a_cpu_measured(tmp_path, capsys):
    """Trial s38: the fit then failed with 'host dispatch or communication', not the CPU's rates."""
    cpu = {**MACHINE, "device": "CPU (x86_64)"}
    path = default_calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_calibration(path, CalibrationFile(cpu, {"h100-sxm": {"gemm_bf16_tflops_achieved": 0.2}}))
    assert main(["calibrate", "--calibrate-from", str(_job_dir(tmp_path))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "times h100-sxm with rates measured on a CPU" in err[0]
    assert main(["calibrate", "--calibrate-from", str(_job_dir(tmp_path)), "--out", str(tmp_path / "gpu.toml")]) == 0


def test_the_calibration_line_says_when_the_plans_gpu_is_not_in_the_file(capsys):
    """Trial s38: "calibration: FILE applied" stood above an A100 estimate the file did not touch."""
    _default_file()
    a100 = [*ESTIMATE[:4], "a100-80gb-sxm", *ESTIMATE[5:]]
    assert main(a100) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("calibration: default file") and "a100-80gb-sxm: not in the file" in first
    assert main(ESTIMATE) == 0
    assert "not in the file" not in capsys.readouterr().out.splitlines()[0]


def test_emit_applies_a_calibration_other_than_the_plans_own_and_says_so(tmp_path, capsys):
    """Trial s38: emit --calibration was used only where a run setting changed, so job.json kept
    the plan's uncalibrated step while explain showed the calibrated one. calib50 M6: the default
    file does not replace a plan's choice of none, and the plan's step is said beside the new one."""
    from trainer.job_spec import JobSpec

    plan_file = tmp_path / "plan.json"
    assert main([*ESTIMATE, "--no-calibration", "--out", str(plan_file)]) == 0
    planned = json.loads(plan_file.read_text())["estimate"]["time"]["step_s"]
    path = _default_file()
    capsys.readouterr()
    assert main(["emit", str(plan_file), "--out", str(tmp_path / "kept")]) == 0
    assert "estimated again" not in capsys.readouterr().out
    kept = JobSpec.load(tmp_path / "kept").plan
    assert kept.calibration is None and kept.estimate.time.step_s == planned
    assert main(["explain", str(plan_file), "--json", "--calibration", str(path)]) == 0
    explained = json.loads(capsys.readouterr().out)["plan"]["time"]["step_s"]
    assert main(["emit", str(plan_file), "--out", str(tmp_path / "job"), "--calibration", str(path)]) == 0
    out = capsys.readouterr().out
    job = JobSpec.load(tmp_path / "job").plan
    assert job.calibration is not None and job.estimate.time.step_s == pytest.approx(explained)
    assert f"(not the plan's own): step {planned:.4g} -> {explained:.4g} s" in out
    assert explained != pytest.approx(planned)


def test_portfolio_and_fleet_apply_the_calibration_plan_applies(tmp_path, capsys):
    """Trial s38: portfolio and fleet ignored the default file (and took no --calibration), so their
    jobs were planned, and emitted, at the catalog's rates where plan used the measured ones."""
    jobs = tmp_path / "jobs.toml"
    jobs.write_text(
        'horizon_days = 60\n[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\ntokens = 2e10\n'
    )
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        'horizon_days = 365\nbuy = ["h100-sxm"]\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\ntokens = 2e10\n'
    )
    bare = {cmd: _json(capsys, cmd, str(f), "--no-calibration") for cmd, f in (("portfolio", jobs), ("fleet", fleet))}
    _default_file({"gemm_bf16_tflops_achieved": 300.0})  # a slower H100 than the catalog's
    assert main(["estimate", "--model", "llama3.2-1b", "--gpu", "h100-sxm", "--num-gpus", "8"]) == 0
    estimate_line = capsys.readouterr().out.splitlines()[0]
    for cmd, path in (("portfolio", jobs), ("fleet", fleet)):
        calibrated = _json(capsys, cmd, str(path))
        assert calibrated["calibration"]["source"] == "default" and "calibration" not in bare[cmd]
        assert calibrated["calibration"]["sha256"] and calibrated["calibration"]["gpus"][0]["gpu"] == "h100-sxm"
        assert calibrated != bare[cmd]
        assert main([cmd, str(path)]) == 0
        # calib50 L4: the line plan and estimate print (hash, rates, machine), not a shorter one
        assert capsys.readouterr().out.splitlines()[0] == estimate_line
    days = [d["assignments"][0]["days"] for d in (bare["portfolio"], _json(capsys, "portfolio", str(jobs)))]
    assert days[1] > days[0]


def test_portfolio_emits_jobs_that_record_the_calibration_they_were_planned_with(tmp_path, capsys):
    from trainer.job_spec import JobSpec

    jobs = tmp_path / "jobs.toml"
    jobs.write_text('[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\ntokens = 2e9\n')
    _default_file({"gemm_bf16_tflops_achieved": 300.0})
    assert main(["portfolio", str(jobs), "--emit", str(tmp_path / "jobs")]) == 0
    job = JobSpec.load(tmp_path / "jobs" / "a").plan
    assert job.calibration is not None and job.calibration.file == str(default_calibration_path())
    # review s38: its measured rates lift the ceiling as in plan and estimate (the record was stamped on)
    args = ["estimate", "--model", "llama3.2-1b", "--gpu", "h100-sxm", "--num-gpus", str(job.num_gpus)]
    args += ["--micro-batch", str(job.training.micro_batch), "--seq-len", str(job.training.seq_len)]
    capsys.readouterr()
    said = _json(capsys, *args)["ceiling"]  # the ceiling it lifted is recorded, not applied (calib50 H1)
    assert said is not None and said["lifted"] and not said["binding"]
    assert job.estimate.ceiling is not None and job.estimate.ceiling.lifted and not job.estimate.ceiling.binding


def test_calibrate_from_names_what_a_report_lacks_or_where_it_is_broken(tmp_path, capsys):
    """Trial s38: a report without its peak was told to "run the job first", and a broken one only
    "(ValidationError)"."""
    job_dir = _job_dir(tmp_path)
    report = json.loads((job_dir / "report.json").read_text())
    report["measured"]["peak_gib"] = None
    (job_dir / "report.json").write_text(json.dumps(report))
    assert main(["calibrate", "--calibrate-from", str(job_dir)]) == 2
    assert "has a measured step time or peak memory but no peak memory" in capsys.readouterr().err
    (job_dir / "report.json").write_text('{"x":')
    assert main(["calibrate", "--calibrate-from", str(job_dir)]) == 2
    err = capsys.readouterr().err
    assert "not a trainplan report.json (" in err and "ValidationError" not in err


def test_plan_lifts_the_ceiling_for_the_measured_jobs_own_shape_as_estimate_does(tmp_path, capsys):
    """Review s38: the search held the job's own shape at the ceiling while its re-scored plan was
    lifted, so plan listed an alternative faster than its "fastest" choice."""
    job_dir = _job_dir(tmp_path, step_factor=0.7)
    assert main(["calibrate", "--calibrate-from", str(job_dir)]) == 0
    capsys.readouterr()
    args = ["plan", "--model", "llama3.2-1b", "--tokens", "1e9", "--gpus", "h100-sxm=8", "--seq-len", "4096"]
    args += ["--global-batch-tokens", "131072"]  # the job's: 8 GPUs x 4 sequences
    data = _json(capsys, *args, "--objective", "time", "--top", "5")
    at = data["risk"]
    chosen = data["plan"]["uncertainty"]["time_to_train_h_at_risk"][at]
    others = [a["uncertainty"]["time_to_train_h_at_risk"][at] for a in data["alternatives"]]
    assert all(chosen <= t * (1 + 1e-9) for t in others), (chosen, others)
    assert data["plan"]["uncertainty"]["measured_job"]["exact"]  # the job's own layout is the fastest


def test_a_ceiling_lifted_by_kernel_rates_is_said_with_what_it_would_hold(tmp_path, capsys):
    """Calib50 H1: a file restating the catalog's own GEMM rate lifted the efficiency ceiling and the
    step came out 20 % faster, MFU past the best ever measured in its regime, without a word."""

    gemm = 742.8  # hw_catalog/gpus/h200-sxm.toml's own figure
    path = tmp_path / "same.toml"
    write_calibration(
        path, CalibrationFile({**MACHINE, "device": "NVIDIA H200"}, {"h200-sxm": {"gemm_bf16_tflops_achieved": gemm}})
    )
    args = ["estimate", "--model", "llama3-8b", "--gpu", "h200-sxm", "--num-gpus", "8", "--sharding", "zero1"]
    args += ["--grad-accum", "64"]
    held = _json(capsys, *args, "--no-calibration")["ceiling"]
    assert held is not None and held["binding"] and not held["lifted"]
    data = _json(capsys, *args, "--calibration", str(path))
    lifted = data["ceiling"]
    assert lifted is not None and lifted["lifted"] and not lifted["binding"] and lifted["mfu"] == held["mfu"]
    assert main([*args, "--calibration", str(path)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("efficiency ceiling: lifted")]
    assert f"passes {held['mfu']:.1%}" in line and "kernel rates measure kernels, not the step" in line


def test_the_card_says_a_lifted_ceiling_in_both_languages(tmp_path):
    from planner.catalog.calibration import calibrate
    from planner.catalog.hardware import load_catalog
    from ui.i18n import Labels
    from ui.messages import ceiling_text

    path = tmp_path / "same.toml"
    machine = {**MACHINE, "device": "NVIDIA H200"}
    write_calibration(path, CalibrationFile(machine, {"h200-sxm": {"gemm_bf16_tflops_achieved": 742.8}}))
    layout, training = Layout(sharding="zero1"), TrainingConfig(micro_batch=1, grad_accum=64, seq_len=4096)
    applied = calibrate(load_catalog(), path)
    p = build_plan(get_preset("llama3-8b"), "h200-sxm", layout, training, num_gpus=8, calibration=applied)
    assert p.estimate.ceiling is not None and p.estimate.ceiling.lifted
    english, chinese = ceiling_text(Labels("en"), p.estimate), ceiling_text(Labels("zh"), p.estimate)
    assert english is not None and english.startswith("Not held: the calibration file measured")
    assert chinese is not None and chinese.startswith("未封顶")


def test_a_plan_that_fits_only_by_another_shapes_memory_factor_warns(tmp_path, capsys):
    """Calib50 H2: a 1-GPU probe's memory x0.647 made a layout the model puts past the GPU fit, with
    only the accuracy line's "extrapolated" to hint at it."""
    from planner.catalog.measured_job import MeasuredJob

    def job(memory_factor: float) -> MeasuredJob:
        return MeasuredJob(
            compute_time_factor=1.0, memory_factor=memory_factor, name="probe", date="2026-12-07",
            shape="llama-124m, 1 x h100-sxm", step_s=1.0, predicted_step_s=1.0, peak_gib=6.0 * memory_factor,
            predicted_peak_gib=6.0,
        )  # fmt: skip

    args = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8", "--micro-batch", "4"]
    args += ["--seq-len", "4096", "--sharding", "fsdp"]
    assert _json(capsys, *args, "--no-calibration")["feasible"] is False  # the model alone: ~102 GiB reserved
    low = write_calibration(tmp_path / "low.toml", CalibrationFile(None, {}, {"h100-sxm": job(0.6)}))
    data = _json(capsys, *args, "--calibration", str(low))
    (said,) = [w for w in data["warnings"] if w.startswith("the plan fits only by the memory factor x0.6")]
    assert "your job probe measured on another shape" in said and "--no-calibration" in said
    even = write_calibration(tmp_path / "even.toml", CalibrationFile(None, {}, {"h100-sxm": job(1.0)}))
    assert not [w for w in _json(capsys, *args, "--calibration", str(even))["warnings"] if "fits only by" in w]
