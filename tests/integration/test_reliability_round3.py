"""Issue #29 (trainer side): pruning after corrupt checkpoints, checkpoints that try to run code,
unwritable job directories, the run's input bounds and the lock of a dying agent
(docs/reliability.md, round 3). The data-preparation cases are tests/trainer/test_data_safety.py.

The checkpoint cases drive ``CheckpointManager`` directly, in a world of one with a small model
(no training loop), so each takes well under a second.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import pickle
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from support.cli import call
from support.jobs import REPO, read_metrics, subprocess_env, write_job

from planner.errors import ExitCode
from planner.layout import Layout
from trainer.checkpoint import Checkpointable, CheckpointManager, list_checkpoints
from trainer.log import setup_logging
from trainer.safe_dcp import UnsafeCheckpointError, load_metadata
from trainer.train import main

SINGLE = Layout(dp_shard=1)
CPU = torch.device("cpu")


def train(job_dir: Path, *extra: str) -> int:
    return main([str(job_dir), "--device", "cpu", *extra])


@contextlib.contextmanager
def world_of_one() -> Iterator[None]:
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def small_state() -> tuple[Checkpointable, dict]:
    """A linear layer after one AdamW step (so the optimizer has state and hyper-parameters)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    rank_state = {"step": 0}
    return Checkpointable(model, optimizer, lambda: dict(rank_state), rank_state.update), rank_state


def save_steps(manager: CheckpointManager, state: Checkpointable, rank_state: dict, *steps: int) -> None:
    for step in steps:
        rank_state["step"] = step
        manager.save(step, state)


@pytest.fixture(autouse=True)
def trainer_console() -> None:
    """The trainer's console handler, as its entry points set it up: these tests call the
    checkpoint manager directly, and without it the lines they read go to pytest's log capture
    (they passed only after another test in the same process had set it up)."""
    setup_logging()


def printed(capsys) -> str:
    captured = capsys.readouterr()
    return captured.out + captured.err


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def rehash(checkpoint: Path, *names: str) -> None:
    """Make the manifest agree with changed files, as an attacker who can write the dir would."""
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    for name in names:
        data = (checkpoint / name).read_bytes()
        manifest["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))


# --------------------------------------------------------------------------- 1: pruning


def test_pruning_never_deletes_the_checkpoint_just_written_when_newer_ones_are_corrupt(tmp_path, capsys):
    ckpt = tmp_path / "ckpt"
    with world_of_one():
        manager = CheckpointManager(ckpt, keep=2, collective_device=CPU)
        state, rank_state = small_state()
        save_steps(manager, state, rank_state, 27, 30)
        for step in (27, 30):  # the case: the two newest (and only) checkpoints corrupt
            truncate(ckpt / f"step-{step:06d}" / "__0_0.distcp")
        assert manager.load_latest(state, restart_from_scratch=True) is None  # both corrupt: start over
        save_steps(manager, state, rank_state, 3, 6)
        assert [step for step, _ in list_checkpoints(ckpt)] == [3, 6]
        # The corrupt ones were set aside at the resume, not counted (and not deleted) by pruning.
        names = sorted(p.name for p in ckpt.iterdir())
        assert names == ["step-000003", "step-000006", "step-000027.corrupt", "step-000030.corrupt"]
        assert "step-000030 set aside as step-000030.corrupt" in printed(capsys)
        # A newer checkpoint that could not be set aside (a read-only moment) is not counted either.
        (ckpt / "step-000099").mkdir()
        (ckpt / "step-000099" / "manifest.json").write_text("{}")  # damaged (a missing one is refused)
        save_steps(manager, state, rank_state, 9)
        assert [step for step, _ in list_checkpoints(ckpt)] == [6, 9, 99]
        assert manager.load_latest(state) == 9  # 99's manifest is malformed: corrupt, set aside
        assert rank_state["step"] == 9


# --------------------------------------------------------------------------- 3: checkpoints run no code


class Payload:
    """Unpickling this runs ``touch MARKER`` (what an attacker puts in a checkpoint)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _payload_in_metadata(checkpoint: Path, marker: Path) -> None:
    (checkpoint / ".metadata").write_bytes(pickle.dumps(Payload(marker)))


def _payload_in_a_bytes_entry(checkpoint: Path, marker: Path) -> None:
    """Point one non-tensor entry (an optimizer hyper-parameter) at a torch.save'd payload."""
    metadata = load_metadata((checkpoint / ".metadata").read_bytes())  # our own, trusted here
    index = next(i for i in metadata.storage_data if i.fqn.startswith("optim.param_groups"))
    info = metadata.storage_data[index]
    shard = checkpoint / info.relative_path
    buffer = io.BytesIO()
    torch.save(Payload(marker), buffer)
    offset = shard.stat().st_size
    with shard.open("ab") as handle:
        handle.write(buffer.getvalue())
    info.offset, info.length = offset, len(buffer.getvalue())
    (checkpoint / ".metadata").write_bytes(pickle.dumps(metadata))
    rehash(checkpoint, info.relative_path)


PAYLOADS = {
    ".metadata": (_payload_in_metadata, r"\.metadata refers to posix\.system"),
    "a bytes entry of a shard": (_payload_in_a_bytes_entry, r"UnpicklingError"),
}


@pytest.mark.parametrize("where", list(PAYLOADS))
def test_a_checkpoint_that_would_run_code_is_refused_and_the_previous_one_loaded(where, tmp_path, capsys):
    ckpt, marker = tmp_path / "ckpt", tmp_path / "PWNED"
    with world_of_one():
        manager = CheckpointManager(ckpt, keep=2, collective_device=CPU)
        state, rank_state = small_state()
        save_steps(manager, state, rank_state, 27, 30)
        newest = ckpt / "step-000030"
        inject, expected = PAYLOADS[where]
        inject(newest, marker)
        rehash(newest, ".metadata")  # the manifest verifies: only loading can refuse it
        assert manager.verify(newest) is None
        assert manager.load_latest(state) == 27
    assert not marker.exists(), "the checkpoint ran code"
    out = printed(capsys)
    assert f"checkpoint {newest} is corrupt (does not load: " in out
    assert re.search(expected, out), out


def test_metadata_unpickler_refuses_what_is_not_checkpoint_metadata():
    for hostile in (pickle.dumps(eval), pickle.dumps({"a": 1}), pickle.dumps(subprocess.Popen)):
        with pytest.raises(UnsafeCheckpointError):
            load_metadata(hostile)


# --------------------------------------------------------------------------- 4: unwritable job dirs


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """``directory`` read-only for this process: a read-only bind mount as root (root ignores
    permissions), else chmod."""
    if os.geteuid() == 0:
        subprocess.run(["mount", "--bind", str(directory), str(directory)], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)], check=True)
            yield
        finally:
            subprocess.run(["umount", str(directory)], check=True)
    else:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)


def test_a_read_only_checkpoint_dir_is_one_line_and_exit_2(tmp_path, in_process, capsys):
    job = write_job(tmp_path / "job", SINGLE, 1, steps=2, checkpoint_every=2, probe_steps=0)
    (job / "ckpt").mkdir()
    with read_only(job / "ckpt"):
        code = train(job)
    message = printed(capsys)
    assert code == ExitCode.INVALID, message
    assert "Traceback" not in message
    assert f"cannot write checkpoint {job / 'ckpt' / 'step-000002.tmp'} (step 2): " in message
    assert f"make {job / 'ckpt'} writable and resume" in message
    assert [r["step"] for r in read_metrics(job)] == [1, 2]
    assert json.loads((job / "exit_status.json").read_text())["code"] == ExitCode.INVALID


def test_a_read_only_checkpoint_dir_is_one_line_on_every_rank(tmp_path):
    """Trial s27: on 2 ranks, rank 0 (which makes the save's directory) said it in one line, and
    rank 1, whose write never started, printed a traceback ("failed on another rank"); and it was
    found only at the first save. The launcher now refuses before step 1, and should the directory
    turn read-only later, every rank raises the worst kind any rank met."""
    from trainer.job_spec import JobSpec
    from trainer.launch import torchrun_command

    job = write_job(tmp_path / "job", Layout(dp_shard=2), 2, steps=2, checkpoint_every=2, probe_steps=0)
    (job / "ckpt").mkdir()
    workers = torchrun_command(JobSpec.load(job), job, device="cpu", nproc=2)
    outputs = []
    with read_only(job / "ckpt"):
        # `trainplan run` in this process: it refuses before it starts torchrun (and a traceback
        # would fail the test as an exception); the workers at the save need their own processes.
        code, out, err = call("run", str(job), "--device", "cpu")
        outputs.append(out + err)
        assert code == ExitCode.INVALID, outputs[-1][-3000:]
        proc = subprocess.run(workers, cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=180)
        outputs.append(proc.stdout + proc.stderr)
        assert proc.returncode == ExitCode.INVALID, outputs[-1][-3000:]
        for output in outputs:
            assert "Traceback" not in output and "RuntimeError" not in output, output[-3000:]
    refused, at_save = outputs
    assert f"{job / 'ckpt'}: checkpoints cannot be written there (" in refused
    assert "step 1/2" not in refused  # nothing trained
    assert f"cannot write checkpoint {job / 'ckpt' / 'step-000002.tmp'} (step 2): " in at_save
    # one line of the launcher's own, blaming neither rank: both refused alike, and which exited
    # first (the other then stopped by the launcher, or both exiting) is only timing (ckpt49)
    said = re.search(
        r"training failed \(exit 2\): the workers' error line above says why \((rank \d exited first|every)", at_save
    )
    assert "failed (exitcode" not in at_save and said


def test_a_report_that_cannot_be_written_is_one_line(tmp_path, in_process, capsys):
    """The run trains and saves, then cannot write ``.report.json.tmp`` (a directory is in its
    way here; in the issue the job dir was made read-only): one line, exit 2, checkpoint kept."""
    job = write_job(tmp_path / "job", SINGLE, 1, steps=2, checkpoint_every=2, probe_steps=0)
    (job / ".report.json.tmp").mkdir()
    code = train(job)
    message = printed(capsys)
    assert code == ExitCode.INVALID and "Traceback" not in message, message
    assert f"cannot write {job / '.report.json.tmp'} (Is a directory): make {job} writable" in message
    assert [step for step, _ in list_checkpoints(job / "ckpt")] == [2]


# --------------------------------------------------------------------------- 9, 10, 12, 16: run's input


def trainplan(*args: str) -> subprocess.CompletedProcess:
    """``trainplan ARGS`` through ``ui.cli.main`` in this process."""
    from ui.cli import main as trainplan_main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = trainplan_main(list(args))
    return subprocess.CompletedProcess(["trainplan", *args], code, stdout.getvalue(), stderr.getvalue())


def assert_one_line_exit_2(proc: subprocess.CompletedProcess, needle: str) -> None:
    assert proc.returncode == ExitCode.INVALID, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("trainplan: error:") and "Traceback" not in proc.stdout, proc
    assert needle in lines[0], lines[0]


def edited_job(tmp_path: Path, edit) -> Path:
    """A tiny job whose job.json is then edited by hand (``edit`` changes the parsed JSON)."""
    job = write_job(tmp_path / "job", SINGLE, 1, steps=2, probe_steps=0)
    spec = json.loads((job / "job.json").read_text())
    edit(spec)
    (job / "job.json").write_text(json.dumps(spec))
    return job


def _set(*path_and_value):
    *path, key, value = path_and_value

    def edit(spec: dict) -> None:
        for part in path:
            spec = spec[part]
        spec[key] = value

    return edit


def _gpus(count: int):
    def edit(spec: dict) -> None:
        spec["plan"].update(num_gpus=count, gpus_per_node=count, num_nodes=1)

    return edit


EDITED = {
    # case: (edit of job.json, extra run flags, what the one line names)
    "rdzv id with a slash": (None, ["--rdzv-endpoint", "127.0.0.1:29513", "--rdzv-id", "a/b"], "--rdzv-id 'a/b'"),
    "rdzv endpoint host with a slash": (None, ["--rdzv-endpoint", "a/b:29513"], "--rdzv-endpoint 'a/b:29513'"),
    "num_gpus = gpus_per_node = 2**40": (_gpus(2**40), [], "job"),
    "2048 GPUs in one node": (_gpus(2048), [], ""),
    "eval_batches 10**7": (lambda s: s["run"].update(eval_every=1, eval_batches=10**7), [], "run.eval_batches"),
    "eval_batches 50 every step": (lambda s: s["run"].update(eval_every=1, eval_batches=50), [], "evaluate"),
    "micro_batch 10**6": (_set("plan", "training", "micro_batch", 10**6), [], "job.json was edited after emit"),
    "vocab_size 2**40": (_set("plan", "model", "vocab_size", 2**40), [], "job.json was edited after emit"),
}


@pytest.mark.parametrize("case", list(EDITED))
def test_run_refuses_hostile_input_before_anything_starts(case, tmp_path, monkeypatch):
    edit, flags, needle = EDITED[case]
    job = edited_job(tmp_path, edit or (lambda spec: None))
    started = []
    monkeypatch.setattr("trainer.launch.run_child", lambda *a, **k: started.append(a) or 0)
    before = sorted(p.name for p in job.iterdir())
    assert_one_line_exit_2(trainplan("run", str(job), "--device", "cpu", *flags), needle)
    assert not started and sorted(p.name for p in job.iterdir()) == before  # no agent, no lock, no data


def test_a_worker_refuses_an_edited_job_before_allocating(tmp_path, in_process, capsys):
    """launch.sh, SLURM and k8s start the trainer without the launcher's checks."""
    job = edited_job(tmp_path, _set("plan", "model", "vocab_size", 2**40))
    assert train(job) == ExitCode.INVALID
    assert "job.json was edited after emit" in printed(capsys)


def test_a_symlink_loop_as_a_path_is_one_line(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert_one_line_exit_2(trainplan("run", str(loop), "--device", "cpu"), f"job dir {loop}: cannot resolve the path")
    plan = tmp_path / "plan.json"
    from support.jobs import make_plan

    from planner.layout import TrainingConfig

    make_plan(SINGLE, TrainingConfig(seq_len=32, micro_batch=2, precision="fp32"), 1).save(plan)
    assert_one_line_exit_2(trainplan("emit", str(plan), "--out", str(loop)), f"--out {loop}: cannot resolve the path")
