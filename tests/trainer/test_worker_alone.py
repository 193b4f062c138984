"""A worker started outside any launcher (trial s45 L8): ``python -m trainer.worker JOB`` said
"environment variable RANK expected"; it now runs a one-process plan as a world of one, and a plan
for more processes is refused by its layout check with the count, one line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support import REPO, jobs

from planner.layout import Layout, Precision, TrainingConfig
from trainer.job import emit_job
from trainer.job_spec import RunSettings
from trainer.parallel import TORCHRUN_ENV


def run_alone(job_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_ENV and not k.startswith(("LOCAL_", "GROUP_"))}
    argv = [sys.executable, "-m", "trainer.worker", str(job_dir), "--device", "cpu", "--steps", "2"]
    return subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_a_worker_alone_runs_a_one_process_plan_and_refuses_a_larger_one(tmp_path: Path) -> None:
    training = TrainingConfig(seq_len=32, micro_batch=1, precision=Precision.FP32)
    emit_job(jobs.make_plan(Layout(), training, 1), tmp_path / "one", name=None, run=RunSettings())
    alone = run_alone(tmp_path / "one")
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert "RANK expected" not in alone.stderr
    emit_job(jobs.make_plan(Layout(dp_shard=2), training, 2), tmp_path / "two", name=None, run=RunSettings())
    two = run_alone(tmp_path / "two")
    assert two.returncode == 2 and "does not fit 1 process:" in two.stderr, two.stderr[-2000:]
    assert "Traceback" not in two.stderr
