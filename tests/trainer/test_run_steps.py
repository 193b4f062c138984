"""``run --steps``: a stop on the planned schedule, not a new schedule; a finished job's rerun
trains nothing and keeps its report (trial s23)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from support.jobs import read_metrics, write_job

from planner.errors import ExitCode
from planner.layout import Layout
from trainer.job_spec import JobSpec
from trainer.optim import lr_factor
from trainer.train import main

SINGLE = Layout(dp_shard=1)


def train(job_dir: Path, *extra: str) -> int:
    return main([str(job_dir), "--device", "cpu", *extra])


def test_steps_below_the_plan_stop_it_there_on_its_own_schedule(tmp_path, in_process, capsys):
    job = write_job(tmp_path, SINGLE, 1, steps=8, checkpoint_every=2, probe_steps=0, warmup_steps=1)
    run = JobSpec.load(job).run
    assert train(job, "--steps", "3") == ExitCode.OK
    report = json.loads((job / "report.json").read_text())
    assert report["outcome"] == "stopped" and report["steps_done"] == 3
    assert report["wall_s"] == report["launch_wall_s"] > 0  # one launch: the job's time is its own
    first_wall_s = report["wall_s"]
    assert train(job) == ExitCode.OK  # resumes at 3 and finishes the planned 8
    records = read_metrics(job)
    assert [r["step"] for r in records] == list(range(1, 9))
    # every step's rate is the 8-step schedule's (a 3-step schedule had decayed to its floor by step 3)
    expected = [run.lr * lr_factor(step - 1, run) for step in range(1, 9)]
    assert [r["lr"] for r in records] == pytest.approx(expected)
    report = json.loads((job / "report.json").read_text())
    assert report["outcome"] == "completed"
    # wall_s is the job's: the first launch's time up to its save at step 3, then this launch's (it
    # was the last launch's alone)
    earlier_s = report["wall_s"] - report["launch_wall_s"]
    assert report["launch_wall_s"] > 0 and 0 < earlier_s <= first_wall_s
    # The report times the whole job, each launch's first (warm-up) step left out (trial s25: after a
    # resume it timed the last launch only).
    assert [r["step"] for r in records if r["launch_start"]] == [1, 4]
    warm = [r["step_s"] for r in records if not r["launch_start"]]
    assert report["measured_steps"] == len(warm) == 6
    assert report["measured"]["step_s"] == pytest.approx(statistics.median(warm))


def test_a_finished_jobs_rerun_trains_nothing_and_keeps_its_report(tmp_path, in_process, capsys):
    job = write_job(tmp_path, SINGLE, 1, steps=4, checkpoint_every=2, probe_steps=0)
    assert train(job) == ExitCode.OK
    report = (job / "report.json").read_text()
    assert json.loads(report)["measured"]["step_s"] is not None
    capsys.readouterr()
    assert train(job) == ExitCode.OK
    assert "the job is complete: at step 4 of 4" in capsys.readouterr().out
    assert (job / "report.json").read_text() == report and len(read_metrics(job)) == 4
    assert train(job, "--steps", "2") == ExitCode.OK  # a stop it is past already: nothing to run either
    assert (job / "report.json").read_text() == report
    said = capsys.readouterr().out  # trial s27: it did not say --steps 2 was behind the checkpoint
    assert "--steps 2 is behind the checkpoint; the job is complete" in said and "--steps above 4 extends it" in said
    assert train(job, "--steps", "5") == ExitCode.OK  # extended by one step
    capsys.readouterr()
    assert train(job) == ExitCode.OK  # trial s37: "--steps 4 is behind the checkpoint", no --steps given
    said = capsys.readouterr().out
    assert "job.json's 4 steps are behind the checkpoint (an earlier --steps extended the run)" in said
    assert "--steps 4" not in said and "(--steps above 5 extends it)" in said
    assert train(job, "--steps", "3") == ExitCode.OK  # review s37: "job.json's 3 steps" for the user's own
    said = capsys.readouterr().out
    assert "--steps 3 is behind the checkpoint" in said and "job.json" not in said


def test_extending_a_job_says_its_learning_rate_rises_again(tmp_path, caplog):
    """Trial s34: `run --steps 45` after a 40-step job trained step 41 at 4.0e-5, above step 40's
    3.1e-5, and said only that the schedule now ends at 45."""
    from trainer.train import load_job

    job_dir = write_job(tmp_path / "job", SINGLE, 1, steps=40)
    with caplog.at_level("INFO"):
        job, stop = load_job(job_dir, 45)
    planned = JobSpec.load(job_dir).run
    rises = planned.lr * lr_factor(40, job.run)
    assert stop == 45 and job.run.steps == 45 and rises > planned.lr * lr_factor(39, planned)
    assert f"the rate rises again: {rises:.3g} at step 41" in caplog.text
