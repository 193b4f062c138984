"""Issue #12, cases 2, 4, 5, 7: a real full disk, checkpoints of the wrong shape or of another
model, and damaged job-dir entries (docs/reliability.md). The trainer runs in this process
(a world of one, gloo); the full disk is a real tmpfs mounted for the test (root only, else
skipped) or ``/dev/full``, never a faked OSError.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest
import torch
from support.jobs import read_metrics, tiny_spec, write_job

import trainer.metrics as metrics_module
from planner.errors import ExitCode
from planner.layout import Layout
from trainer.checkpoint import _is_disk_full, list_checkpoints
from trainer.job_spec import JobSpec
from trainer.metrics import MetricsLogger, StepMetrics
from trainer.train import main

SINGLE = Layout(dp_shard=1)


def train(job_dir: Path, *extra: str) -> int:
    return main([str(job_dir), "--device", "cpu", *extra])


@pytest.fixture
def small_disk(tmp_path):
    """A real 8 MiB tmpfs (the tiny model's checkpoint with Adam state is ~38 MB)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip() or 'not root'})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path) -> None:
    """Write a filler file until the file system says ENOSPC."""
    with (directory / "filler").open("wb", buffering=0) as handle:
        chunk = b"\0" * (1 << 16)
        with contextlib.suppress(OSError):
            while True:
                handle.write(chunk)


def _valid_json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]  # raises on a torn line


def test_checkpoint_on_a_full_disk_exits_disk_full_and_keeps_no_partial(small_disk, in_process, capsys):
    job = write_job(small_disk / "job", SINGLE, 1, steps=3, checkpoint_every=2, probe_steps=0)
    assert train(job) == ExitCode.DISK_FULL
    captured = capsys.readouterr()
    errors = [line for line in (captured.out + captured.err).splitlines() if "disk full" in line]
    assert len(errors) == 1 and "step-000002.tmp (step 2)" in errors[0], captured.out + captured.err
    assert "Traceback" not in captured.out + captured.err
    assert list_checkpoints(job / "ckpt") == [] and not list((job / "ckpt").glob("*.tmp"))
    assert [r["step"] for r in _valid_json_lines(job / "metrics.jsonl")] == [1, 2]


def test_torchs_zip_writer_error_on_a_full_disk_is_recognised(small_disk):
    """torch.save's zip writer reports ENOSPC as ``unexpected pos`` / ``file write failed``."""
    fill(small_disk)
    with pytest.raises(Exception) as caught:
        torch.save(torch.zeros(1 << 18), small_disk / "rank-00000.pt")
    assert _is_disk_full(caught.value), repr(caught.value)


def test_metrics_line_on_a_full_disk_is_all_or_nothing(small_disk):
    """A short write on a nearly full tmpfs is cut back: no half-written JSON line."""
    job = small_disk / "job"
    job.mkdir()
    # Records that end 50 bytes short of a 4 KiB page: the next record (~250 bytes) fits only in part.
    head = json.dumps({"step": 1, "loss": 1.0, "pad": ""}).encode()
    pad = 2 * 4096 - 50 - len(head) - 1
    (job / "metrics.jsonl").write_bytes(json.dumps({"step": 1, "loss": 1.0, "pad": "x" * pad}).encode() + b"\n")
    assert (job / "metrics.jsonl").stat().st_size == 2 * 4096 - 50
    logger = MetricsLogger(job, resume_step=10**6, enabled=True, tensorboard=False)
    fill(small_disk)
    before = (job / "metrics.jsonl").read_bytes()
    logger.log_step(StepMetrics(50, 0.5, 1e-3, 1.0, 0.1, 1e3, None, None, None, None, val_loss=None))
    assert (job / "metrics.jsonl").read_bytes() == before
    assert logger.failure is not None and "disk full while writing" in logger.failure


def test_metrics_write_to_dev_full_stops_the_run_with_disk_full(tmp_path, in_process, monkeypatch, capsys):
    """Between checkpoints: the kernel's ENOSPC from /dev/full reaches every rank as one stop."""
    job = write_job(tmp_path / "job", SINGLE, 1, steps=6, checkpoint_every=2, probe_steps=0)
    original = MetricsLogger.__init__

    def on_dev_full(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.path = Path("/dev/full")

    monkeypatch.setattr(metrics_module.MetricsLogger, "__init__", on_dev_full)
    assert train(job) == ExitCode.DISK_FULL
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if "disk full" in line]
    assert len(lines) == 1 and "/dev/full" in lines[0] and "Traceback" not in captured.err
    assert json.loads((job / "exit_status.json").read_text()) == {"code": ExitCode.DISK_FULL}


# --------------------------------------------------------------------------- checkpoints


def _rehash(checkpoint: Path, name: str) -> None:
    """Make the manifest agree with a changed file: it then verifies, and must fail to load."""
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    data = (checkpoint / name).read_bytes()
    manifest["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))


def _garble(checkpoint: Path, name: str) -> None:
    path = checkpoint / name
    path.write_bytes(bytes(b ^ 0x5A for b in path.read_bytes()))
    _rehash(checkpoint, name)


MANIFEST_SHAPES = {
    '{"files": null}': r"malformed manifest \('files' is not an object\)",
    '{"files": [1]}': r"malformed manifest \('files' is not an object\)",
    "[]": r"malformed manifest \('files' is not an object\)",
    '{"files": {".metadata": {"sha256": "x"}}}': r"malformed manifest \(bad entry for '\.metadata'\)",
    '{"files": {"../../etc/passwd": {"size": 1, "sha256": "x"}}}': r"malformed manifest \(bad entry for '\.\./\.\./etc/passwd'\)",
    '{"files": {"a": {"size": true, "sha256": "x"}}}': r"malformed manifest \(bad entry for 'a'\)",
    "[" * 3000 + "]" * 3000: r"(unreadable manifest \(RecursionError\)|malformed manifest)",
    "\xff": r"unreadable manifest \(\w+Error\)",
}


@pytest.mark.parametrize("text", list(MANIFEST_SHAPES), ids=lambda t: t[:40])
def test_a_manifest_of_the_wrong_shape_is_named_not_a_crash(text, tmp_path):
    import torch.distributed as dist

    from trainer.checkpoint import CheckpointManager

    checkpoint = tmp_path / "ckpt" / "step-000004"
    checkpoint.mkdir(parents=True)
    (checkpoint / "manifest.json").write_bytes(text.encode("latin-1"))
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        problem = CheckpointManager(tmp_path / "ckpt", 2, torch.device("cpu")).verify(checkpoint)
    finally:
        dist.destroy_process_group()
    assert problem is not None and re.fullmatch(MANIFEST_SHAPES[text], problem), problem


# Each trains and resumes: the case from the issue, and the two that verify but do not load.
SHAPES = {
    "files null": (
        lambda d: (d / "manifest.json").write_text('{"files": null}'),
        r"malformed manifest \('files' is not an object\)",
    ),
    "verified but .metadata does not unpickle": (lambda d: _garble(d, ".metadata"), r"does not load: .+"),
    "verified but the rank state does not load": (lambda d: _garble(d, "rank-00000.pt"), r"does not load: .+"),
}


@pytest.mark.parametrize("damage", list(SHAPES))
def test_a_checkpoint_of_the_wrong_shape_falls_back(damage, tmp_path, in_process, capsys):
    job = write_job(tmp_path / "job", SINGLE, 1, steps=4, checkpoint_every=2, min_lr_ratio=1.0, probe_steps=0)
    assert train(job) == ExitCode.OK
    first = {r["step"]: r["loss"] for r in read_metrics(job)}
    newest = job / "ckpt" / "step-000004"
    corrupt, expected = SHAPES[damage]
    corrupt(newest)
    capsys.readouterr()
    assert train(job, "--steps", "5") == ExitCode.OK  # every rerun, not only the first
    out = capsys.readouterr().out
    assert re.search(rf"checkpoint {re.escape(str(newest))} is corrupt \({expected}\); falling back", out), out
    assert "resumed from checkpoint step-000002" in out
    after = {r["step"]: r["loss"] for r in read_metrics(job)}
    assert sorted(after) == [1, 2, 3, 4, 5] and after[3] == pytest.approx(first[3], abs=1e-6)


def test_a_checkpoint_of_another_model_names_it(tmp_path, in_process, capsys):
    """The job dir was emitted again (with --force) for another model: run says whose the checkpoint is."""
    job = write_job(tmp_path / "job", SINGLE, 1, steps=2, checkpoint_every=2, probe_steps=0)
    assert train(job) == ExitCode.OK
    spec = JobSpec.load(job)
    other = spec.plan.model_copy(update={"model": tiny_spec(name="tiny-wide", num_layers=2)})
    spec.model_copy(update={"plan": other}).save(job)
    capsys.readouterr()
    assert train(job, "--steps", "4") == ExitCode.INVALID
    captured = capsys.readouterr()
    message = captured.out + captured.err
    assert (
        "step-000002 holds model tiny (4 layers" in message and "job.json is for model tiny-wide (2 layers" in message
    )
    assert "Traceback" not in message and "size mismatch" not in message


# --------------------------------------------------------------------------- job-dir entries


def test_ckpt_that_is_a_file_is_one_line(tmp_path, in_process, capsys):
    job = write_job(tmp_path / "job", SINGLE, 1, steps=2, probe_steps=0)
    (job / "ckpt").write_text("not a directory")
    assert train(job) == ExitCode.INVALID
    captured = capsys.readouterr()
    assert f"{job / 'ckpt'} is not a directory" in captured.out + captured.err


def test_stale_tmp_file_and_garbage_metrics_lines_are_handled(tmp_path, in_process, capsys):
    job = write_job(tmp_path / "job", SINGLE, 1, steps=2, checkpoint_every=2, probe_steps=0)
    (job / "ckpt").mkdir()
    (job / "ckpt" / "step-000002.tmp").write_text("a stale file where a save directory goes")
    (job / "metrics.jsonl").write_bytes(b'{"step": "x"}\n\xff\xfe\n{"step": 1, "loss": 9.0}\n')
    assert train(job) == ExitCode.OK
    captured = capsys.readouterr()
    assert f"{job / 'metrics.jsonl'}: line(s) 1, 2 are not metrics records; dropped" in captured.err
    assert [step for step, _ in list_checkpoints(job / "ckpt")] == [2] and not list((job / "ckpt").glob("*.tmp"))
    assert [r["step"] for r in read_metrics(job)] == [1, 2]


def test_enospc_is_recognised_through_the_exception_chain():
    error = RuntimeError("writing failed")
    error.__cause__ = OSError(errno.ENOSPC, "No space left on device")
    assert _is_disk_full(error) and not _is_disk_full(RuntimeError("permission denied"))
