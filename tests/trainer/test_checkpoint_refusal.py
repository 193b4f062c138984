"""Trial49 M5: with checkpoints and none that verifies, a run refuses (exit 2, nothing renamed) unless
``--restart-from-scratch``; a manifest that cannot be read now is read again, then passed over for
an earlier checkpoint or, with none, refused: never taken for damage. Whole runs in this process (world size 1, gloo), like tests/trainer/test_run.py."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from support.jobs import read_metrics, write_job

import trainer.checkpoint as checkpoint_module
import trainer.launch as launch_module
import trainer.session as session_module
from planner.errors import ExitCode
from planner.layout import Layout
from trainer.files import MANIFEST
from trainer.train import main

SINGLE = Layout(dp_shard=1)


def train(job_dir: Path, *extra: str) -> int:
    return main([str(job_dir), "--device", "cpu", *extra])


def ckpt_names(job: Path) -> list[str]:
    return sorted(p.name for p in (job / "ckpt").iterdir())


@pytest.fixture
def six_steps(tmp_path, in_process) -> Path:
    """A job trained 6 steps with checkpoints at 3 and 6."""
    job = write_job(tmp_path / "job", SINGLE, 1, steps=6, checkpoint_every=3, probe_steps=0)
    assert train(job) == ExitCode.OK
    assert ckpt_names(job) == ["step-000003", "step-000006"]
    return job


def test_no_checkpoint_that_verifies_is_refused_unless_asked_to_start_over(six_steps, capsys):
    job = six_steps
    for step in ("step-000003", "step-000006"):
        shard = job / "ckpt" / step / "__0_0.distcp"
        shard.write_bytes(shard.read_bytes()[:-8])
    report = (job / "report.json").read_text()
    capsys.readouterr()
    assert train(job) == ExitCode.INVALID
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in captured.err, captured.err
    assert "no checkpoint in" in errors[0] and "verifies (step-000006, step-000003)" in errors[0]
    assert "nothing was set aside" in errors[0] and "--restart-from-scratch" in errors[0]
    # nothing renamed, nothing trained, the finished run's files as they were
    assert ckpt_names(job) == ["step-000003", "step-000006"]
    assert (job / "report.json").read_text() == report and len(read_metrics(job)) == 6
    assert train(job, "--restart-from-scratch", "--steps", "2") == ExitCode.OK
    out = capsys.readouterr().out
    assert "(step-000003.corrupt, step-000006.corrupt set aside): starting again from step 0" in out
    assert ckpt_names(job) == ["step-000002", "step-000003.corrupt", "step-000006.corrupt"]


def test_the_flag_changes_nothing_while_a_checkpoint_loads(six_steps, capsys):
    """Only the all-corrupt case starts over: a newer corrupt one still falls back, and is set aside."""
    job = six_steps
    shard = job / "ckpt" / "step-000006" / "__0_0.distcp"
    shard.write_bytes(shard.read_bytes()[:-8])
    capsys.readouterr()
    assert train(job, "--restart-from-scratch", "--steps", "4") == ExitCode.OK
    out = capsys.readouterr().out
    assert "falling back to the previous one" in out and "resumed from checkpoint step-000003" in out
    assert "step-000006.corrupt" in ckpt_names(job) and "starting again" not in out


@pytest.fixture
def waits(monkeypatch) -> list[float]:
    """The manifest retries' waits (CheckpointManager's ``wait``), recorded, not slept."""
    waited: list[float] = []
    manager = functools.partial(checkpoint_module.CheckpointManager, wait=waited.append)
    monkeypatch.setattr(session_module, "CheckpointManager", manager)
    return waited


def test_a_manifest_that_cannot_be_read_falls_back_after_retries_not_set_aside(six_steps, waits, capsys):
    """Review49 L2: a newest checkpoint whose manifest stayed unreadable refused the run (exit 2,
    which Slurm and Kubernetes do not retry) while an earlier one verified."""
    job = six_steps
    (job / "ckpt" / "step-000006" / "manifest.json").unlink()
    capsys.readouterr()
    assert train(job, "--steps", "4") == ExitCode.OK
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if "cannot be verified" in line]
    assert said == [
        f"checkpoint {job / 'ckpt' / 'step-000006'} cannot be verified (manifest.json cannot be read (No such file"
        " or directory), 3 tries 5 s apart; left in place); falling back to the previous one"
    ]
    assert "resumed from checkpoint step-000003" in out and "is corrupt" not in out
    assert waits == [checkpoint_module.MANIFEST_RETRY_S] * (checkpoint_module.MANIFEST_TRIES - 1)
    assert ckpt_names(job) == ["step-000003", "step-000004", "step-000006"]  # nothing renamed


def test_a_manifest_that_cannot_be_read_is_refused_when_no_earlier_one_verifies(six_steps, waits, capsys):
    """A shared file system's blip (the manifest briefly gone) set the checkpoint aside as corrupt."""
    job = six_steps
    (job / "ckpt" / "step-000006" / "manifest.json").unlink()
    shard = job / "ckpt" / "step-000003" / "__0_0.distcp"
    shard.write_bytes(shard.read_bytes()[:-8])
    capsys.readouterr()
    assert train(job, "--restart-from-scratch") == ExitCode.INVALID  # the flag is not for this either
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, captured.err
    assert "step-000006: manifest.json cannot be read (No such file or directory), 3 tries 5 s apart" in errors[0]
    assert "nothing was set aside" in errors[0]
    assert len(waits) == checkpoint_module.MANIFEST_TRIES - 1
    assert ckpt_names(job) == ["step-000003", "step-000006"] and len(read_metrics(job)) == 6


def test_a_manifest_back_on_the_next_read_is_loaded(six_steps, monkeypatch, capsys):
    job = six_steps
    manifest = job / "ckpt" / "step-000006" / "manifest.json"
    text = manifest.read_text()
    manifest.unlink()
    manager = functools.partial(checkpoint_module.CheckpointManager, wait=lambda _s: manifest.write_text(text))
    monkeypatch.setattr(session_module, "CheckpointManager", manager)
    capsys.readouterr()
    assert train(job, "--steps", "6") == ExitCode.OK
    out = capsys.readouterr().out
    assert "manifest.json cannot be read (No such file or directory); trying again in 5 s" in out
    assert "resumed from checkpoint step-000006" in out and ckpt_names(job) == ["step-000003", "step-000006"]


def test_a_resume_reads_the_manifest_it_loads_once(six_steps, monkeypatch, capsys):
    """The manifest's check and the model it records (``_check_identity``) come from one read."""
    job = six_steps
    reads: list[Path] = []
    read_text = Path.read_text

    def counted(self: Path, *args, **kwargs) -> str:
        if self.name == MANIFEST:
            reads.append(self)
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    capsys.readouterr()
    assert train(job, "--steps", "6") == ExitCode.OK
    assert "resumed from checkpoint step-000006" in capsys.readouterr().out
    assert reads == [job / "ckpt" / "step-000006" / MANIFEST]


def test_run_and_the_launcher_pass_the_flag_to_the_workers(tmp_path, monkeypatch):
    from ui.cli import main as cli_main

    job = write_job(tmp_path / "job", SINGLE, 1, steps=2)
    launches = []

    def run_job(_job_dir, launch, **_kw) -> int:
        """Records the launch (its first line is the launcher's --help description)."""
        launches.append(launch)
        return 0

    monkeypatch.setattr(launch_module, "run_job", run_job)
    assert cli_main(["run", str(job), "--device", "cpu", "--restart-from-scratch"]) == 0
    assert launch_module.main([str(job), "--device", "cpu", "--restart-from-scratch"]) == 0
    assert cli_main(["run", str(job), "--device", "cpu"]) == 0
    assert [launch.restart_from_scratch for launch in launches] == [True, True, False]
    command = launches[0].command(json_spec(job), job)
    assert command[command.index("trainer.worker") :][-1] == "--restart-from-scratch"
    assert "--restart-from-scratch" not in launches[2].command(json_spec(job), job)


def json_spec(job: Path):
    from trainer.job_spec import JobSpec

    return JobSpec.model_validate(json.loads((job / "job.json").read_text()))
