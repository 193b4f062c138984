"""What ``emit`` refuses even with --force: a job directory a run is training (trial49 M2), and
one whose checkpoints hold another model (trial49 L6). Real locks held by other processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import REPO, jobs
from support.jobs import subprocess_env, tiny_spec, write_job

from planner.errors import ExitCode, JobDirLockedError
from planner.layout import Layout, TrainingConfig
from planner.plan import Plan
from trainer.job import emit_job
from trainer.job_spec import RunSettings
from trainer.train import main as train_main

TRAINING = TrainingConfig(seq_len=32, micro_batch=2, precision="fp32")


def plan_for(layout: Layout, num_gpus: int, **model_changes) -> Plan:
    return jobs.make_plan(layout, TRAINING, num_gpus, tiny_spec(**model_changes) if model_changes else None)


def holding(code: str, job_dir: Path) -> subprocess.Popen:
    """A process that runs ``code`` (with ``job_dir`` as ``JOB``), says "held" and keeps it held."""
    proc = subprocess.Popen(
        [sys.executable, "-c", f"JOB = {str(job_dir)!r}\n" + textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=subprocess_env(),
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


LAUNCHER = """
import time
from trainer.locks import job_lock
with job_lock(JOB):
    print("held", flush=True)
    time.sleep(60)
"""

ORPHANED_WORKER = """
import time
from trainer.locks import hold_worker_lock
fd = hold_worker_lock(JOB, 1)
print("held", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize(
    ("holder", "expected"),
    [(LAUNCHER, "is already being run by pid {pid} on "), (ORPHANED_WORKER, "is still being trained by pid {pid} ")],
    ids=["trainplan run", "an orphaned worker"],
)
def test_emit_refuses_a_job_dir_being_trained_even_with_force(holder, expected, tmp_path, capsys):
    from ui.cli import main

    plan, job_dir = plan_for(Layout(dp_shard=2), 2), tmp_path / "job"
    emit_job(plan, job_dir, name="job", run=RunSettings(steps=30))
    written = (job_dir / "job.json").read_bytes()
    proc = holding(holder, job_dir)
    try:
        with pytest.raises(JobDirLockedError, match=expected.format(pid=proc.pid)):
            emit_job(plan, job_dir, name="job", run=RunSettings(steps=40, lr=1e-3), force=True)
        plan_file = plan.save(tmp_path / "plan.json")
        capsys.readouterr()
        assert main(["emit", str(plan_file), "--out", str(job_dir), "--steps", "40", "--force"]) == ExitCode.INVALID
        err = capsys.readouterr().err.strip()
        assert err.startswith("trainplan: error: job dir") and "\n" not in err
    finally:
        proc.kill()
        proc.wait()
    assert (job_dir / "job.json").read_bytes() == written  # nothing rewritten under the run
    emit_job(plan, job_dir, name="job", run=RunSettings(steps=40, lr=1e-3), force=True)  # once it is gone
    assert b'"steps": 40' in (job_dir / "job.json").read_bytes()


def test_emit_makes_no_lock_file_where_no_run_has_been(tmp_path):
    emit_job(plan_for(Layout(dp_shard=1), 1), tmp_path / "job", name="job", run=RunSettings())
    assert not (tmp_path / "job" / ".lock").exists() and not (tmp_path / "job" / ".train.lock").exists()


def test_emit_force_refuses_checkpoints_of_another_model_but_not_another_layout(tmp_path, in_process, capsys):
    """--force is for new settings and layouts: the run refused another model's checkpoints only after
    it had started (and waited in a queue); a new layout of the same model resumes (DCP reshards)."""
    job = write_job(tmp_path / "job", Layout(dp_shard=1), 1, steps=2, checkpoint_every=2, probe_steps=0)
    assert train_main([str(job), "--device", "cpu"]) == ExitCode.OK  # a real checkpoint, its manifest the worker's
    written = (job / "job.json").read_bytes()
    other = plan_for(Layout(dp_shard=1), 1, name="tiny-wide", num_layers=2)
    with pytest.raises(ValueError, match=r"checkpoint step-000002 holds model tiny \(4 layers.*plan is for model"
                       r" tiny-wide \(2 layers.*emit into a new directory, or move .*ckpt aside"):  # fmt: skip
        emit_job(other, job, name="job", run=RunSettings(steps=2), force=True)
    assert (job / "job.json").read_bytes() == written
    emit_job(plan_for(Layout(dp_shard=2), 2), job, name="job", run=RunSettings(steps=4), force=True)
    assert b'"dp_shard": 2' in (job / "job.json").read_bytes()
