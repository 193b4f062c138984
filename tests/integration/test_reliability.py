"""Issue #5: bad input at the command line, faults during training, and safety of the app.

The rest of the issue's cases live next to the code they exercise (see docs/reliability.md for
the whole table): hypothesis properties in planner/test_properties.py, catalog files in
planner/test_hardware.py, model configs in planner/test_models.py, script quoting and the job-dir
lock in trainer/test_job.py, NaN steps and disk-full saves in trainer/test_run.py, kill-and-resume
and SIGTERM in integration/test_distributed.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from support import REPO
from support.jobs import (
    descendants,
    kill_tree,
    losses_by_step,
    make_plan,
    read_metrics,
    subprocess_env,
    wait_for,
    write_job,
)

import trainer.step as step_module
from planner.errors import ExitCode
from planner.layout import Layout, TrainingConfig
from trainer.checkpoint import CheckpointManager, list_checkpoints
from trainer.launch import job_lock
from trainer.train import main

TRAINPLAN = str(Path(sys.executable).with_name("trainplan"))
SINGLE = Layout(dp_shard=1)


def trainplan(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [TRAINPLAN, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, env=subprocess_env()
    )


def cli(*args: str) -> subprocess.CompletedProcess:
    """``trainplan ARGS`` through ``ui.cli.main`` in this process (the binary's ~2 s of imports saved)."""
    from ui.cli import main as trainplan_main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = trainplan_main(list(args))
    return subprocess.CompletedProcess(["trainplan", *args], code, stdout.getvalue(), stderr.getvalue())


def assert_one_line_error(proc: subprocess.CompletedProcess, needle: str) -> str:
    """Exit 2, exactly one non-empty line on stderr, no traceback, naming ``needle``."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("trainplan: error:"), proc.stderr
    assert needle in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- CLI: emit and run


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """A plan file, a file that is not JSON, a good job dir, an empty dir, two broken job.json files."""
    root = tmp_path_factory.mktemp("inputs")
    training = TrainingConfig(seq_len=32, micro_batch=2, precision="fp32")
    make_plan(SINGLE, training, 1).save(root / "plan.json")
    (root / "notjson.txt").write_text("model: tiny\n")
    write_job(root / "good", SINGLE, 1, steps=2)
    (root / "empty").mkdir()
    (root / "corrupt").mkdir()
    (root / "corrupt" / "job.json").write_text('{"name": "x", "plan": {')
    (root / "out-of-range").mkdir()
    job = json.loads((root / "good" / "job.json").read_text())
    job["run"]["checkpoint_every"] = 0
    (root / "out-of-range" / "job.json").write_text(json.dumps(job))
    return root


# (argv with {d} for the inputs dir, what the one error line must name)
BAD_EMIT_AND_RUN = {
    "emit: missing plan file": (["emit", "{d}/missing.json", "--out", "{d}/j1"], "missing.json: cannot read"),
    "emit: plan is not JSON": (
        ["emit", "{d}/notjson.txt", "--out", "{d}/j2"],
        "notjson.txt: not a valid trainplan plan",
    ),
    "emit: shell metacharacters in the name": (
        ["emit", "{d}/plan.json", "--out", "{d}/j3", "--name", "x; rm -rf ~"],
        "job name 'x; rm -rf ~'",
    ),
    "emit: name with a command substitution": (
        ["emit", "{d}/plan.json", "--out", "{d}/j4", "--name", "$(touch PWNED)"],
        "job name",
    ),
    "emit: --steps 0": (["emit", "{d}/plan.json", "--out", "{d}/j5", "--steps", "0"], "steps"),
    "emit: --checkpoint-every 0": (
        ["emit", "{d}/plan.json", "--out", "{d}/j6", "--checkpoint-every", "0"],
        "--checkpoint-every must be >= 1",
    ),
    # trial s49 L3: accepted without a word
    "emit: --checkpoint-every with --no-checkpoints": (
        ["emit", "{d}/plan.json", "--out", "{d}/j7", "--no-checkpoints", "--checkpoint-every", "5"],
        "--checkpoint-every 5 with --no-checkpoints: this job saves no checkpoints",
    ),
    "emit: --keep-checkpoints with --no-checkpoints": (
        ["emit", "{d}/plan.json", "--out", "{d}/j8", "--no-checkpoints", "--keep-checkpoints", "3"],
        "--keep-checkpoints 3 with --no-checkpoints",
    ),
    "emit: --out is a file": (
        ["emit", "{d}/plan.json", "--out", "{d}/notjson.txt"],
        "cannot create the job directory (File exists)",
    ),
    "run: missing job dir": (
        ["run", "{d}/no-such-job", "--device", "cpu"],
        "no-such-job does not exist: trainplan emit",
    ),
    "run: dir without job.json": (["run", "{d}/empty", "--device", "cpu"], "empty: not a job directory (no job.json)"),
    "run: corrupt job.json": (["run", "{d}/corrupt", "--device", "cpu"], "corrupt/job.json: not a valid trainplan job"),
    "run: out-of-range field in job.json": (["run", "{d}/out-of-range", "--device", "cpu"], "run.checkpoint_every"),
    "run: --nproc 0": (["run", "{d}/good", "--device", "cpu", "--nproc", "0"], "--nproc must be >= 1"),
    "run: --steps 0": (["run", "{d}/good", "--device", "cpu", "--steps", "0"], "--steps must be >= 1"),
    "run: --max-restarts -1": (
        ["run", "{d}/good", "--device", "cpu", "--max-restarts", "-1"],
        "--max-restarts must be >= 0",
    ),
    "run: --device tpu": (["run", "{d}/good", "--device", "tpu"], "--device"),
}


@pytest.mark.parametrize("case", list(BAD_EMIT_AND_RUN))
def test_bad_emit_and_run_invocations_are_one_line_and_exit_2(case, inputs):
    argv, needle = BAD_EMIT_AND_RUN[case]
    before = sorted(p.name for p in inputs.rglob("*"))
    assert_one_line_error(cli(*[arg.format(d=inputs) for arg in argv]), needle)
    # Nothing was written: no job directory, no lock file, no torchrun output.
    assert sorted(p.name for p in inputs.rglob("*")) == before
    assert not (REPO / "PWNED").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_run_on_cuda_without_a_gpu_is_one_line(inputs):
    assert_one_line_error(trainplan("run", str(inputs / "good"), "--device", "cuda"), "no CUDA device")


def test_second_trainplan_run_on_a_locked_job_dir_refuses(inputs):
    with job_lock(inputs / "good"):
        line = assert_one_line_error(trainplan("run", str(inputs / "good"), "--device", "cpu"), "already being run by")
    assert f"pid {os.getpid()} on" in line
    assert not (inputs / "good" / "metrics.jsonl").exists()


# --------------------------------------------------------------------------- damaged checkpoints


def train(job_dir: Path, *extra: str) -> int:
    return main([str(job_dir), "--device", "cpu", *extra])


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


DAMAGE = {
    # what is done to step-000006, and what the trainer must say about it
    "truncated shard": (lambda d: _truncate(d / "__0_0.distcp"), r"__0_0\.distcp has \d+ bytes, manifest says \d+"),
    "garbled manifest": (
        lambda d: (d / "manifest.json").write_text('{"files": '),
        r"unreadable manifest \(JSONDecodeError\)",
    ),
    "missing rank state": (lambda d: (d / "rank-00000.pt").unlink(), r"rank-00000\.pt is missing"),
    "stray file": (lambda d: (d / "extra.bin").write_bytes(b"x"), r"files differ from the manifest"),
}


@pytest.fixture(scope="module")
def six_steps_dir(tmp_path_factory) -> Path:
    """Where :func:`six_steps` keeps the run it trains once for this module."""
    return tmp_path_factory.mktemp("six-steps") / "job"


@pytest.fixture
def six_steps(six_steps_dir, tmp_path, in_process) -> Path:
    """A job trained 6 steps with checkpoints at 3 and 6, in ``tmp_path``: the run is trained once
    (the first test to ask) and copied for the others (seeded: every test's run is the same)."""
    if not (six_steps_dir / "report.json").exists():
        job = write_job(six_steps_dir, SINGLE, 1, steps=6, checkpoint_every=3, min_lr_ratio=1.0, probe_steps=0)
        assert train(job) == ExitCode.OK
        assert [step for step, _ in list_checkpoints(job / "ckpt")] == [3, 6]
    return Path(shutil.copytree(six_steps_dir, tmp_path / "job"))


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_checkpoint_is_named_and_the_previous_one_used(damage, six_steps, capsys):
    job = six_steps
    first = losses_by_step(job)
    newest = job / "ckpt" / "step-000006"
    corrupt, expected = DAMAGE[damage]
    corrupt(newest)
    capsys.readouterr()
    assert train(job, "--steps", "8") == ExitCode.OK
    out = capsys.readouterr().out
    assert re.search(rf"checkpoint {re.escape(str(newest))} is corrupt \({expected}\); falling back", out), out
    assert "resumed from checkpoint step-000003" in out
    assert [r["step"] for r in read_metrics(job)] == list(range(1, 9))
    resumed = losses_by_step(job)
    assert [resumed[s] for s in (4, 5, 6)] == pytest.approx([first[s] for s in (4, 5, 6)], abs=1e-6)


def test_no_good_checkpoint_starts_over_without_crashing(six_steps, capsys):
    """When asked to (trial49 M5: without --restart-from-scratch it refuses, exit 2)."""
    job = six_steps
    first = losses_by_step(job)
    for step in (3, 6):
        _truncate(job / "ckpt" / f"step-{step:06d}" / "__0_0.distcp")
    capsys.readouterr()
    assert train(job) == ExitCode.INVALID
    assert "--restart-from-scratch" in capsys.readouterr().err
    assert train(job, "--restart-from-scratch") == ExitCode.OK
    out = capsys.readouterr().out
    assert out.count("is corrupt") == 2 and "resumed from checkpoint" not in out
    assert [r["step"] for r in read_metrics(job)] == list(range(1, 7))
    assert losses_by_step(job) == pytest.approx(first, abs=1e-6)  # the same run again, from the seed


# --------------------------------------------------------------------------- non-finite steps


class _InfiniteGradient(torch.autograd.Function):
    """Identity forward; an infinite gradient backward (the loss itself stays finite)."""

    @staticmethod
    def forward(ctx, logits):
        return logits.view_as(logits)

    @staticmethod
    def backward(ctx, grad):
        return grad * float("inf")


def _poison_call(monkeypatch, bad_call: int, kind: str) -> None:
    original, calls = step_module.model_loss, [0]

    def model_loss(head, output, labels):
        calls[0] += 1
        if calls[0] != bad_call:
            return original(head, output, labels)
        if kind == "inf loss":
            return original(head, output, labels) * float("inf")
        return original(head, _InfiniteGradient.apply(output), labels)

    monkeypatch.setattr(step_module, "model_loss", model_loss)


@pytest.mark.parametrize("kind", ["inf loss", "inf gradient"])
def test_infinite_loss_or_gradient_is_skipped_and_counted(kind, tmp_path, in_process, monkeypatch):
    job = write_job(tmp_path, SINGLE, 1, steps=5, probe_steps=0)
    _poison_call(monkeypatch, 3, kind)
    assert train(job) == ExitCode.OK
    records = read_metrics(job)
    assert [r["skipped"] for r in records] == [False, False, True, False, False]
    assert records[2]["grad_norm"] is None  # not a number: not written as one
    if kind == "inf gradient":
        assert isinstance(records[2]["loss"], float)  # the loss was finite, the update was not
    else:
        assert records[2]["loss"] == "inf"
    assert json.loads((job / "report.json").read_text())["bad_steps"] == 1


# --------------------------------------------------------------------------- processes killed


def start_run(job: Path, log: Path, *extra: str) -> subprocess.Popen:
    """``trainplan run JOB --device cpu`` in the background (its own session), output in ``log``."""
    return subprocess.Popen(
        [TRAINPLAN, "run", str(job), "--device", "cpu", *extra],
        cwd=REPO,
        env=subprocess_env(),
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def logged_losses(job: Path) -> dict[int, float]:
    """Losses in metrics.jsonl while the run may be appending to it (a torn last line is skipped)."""
    losses = {}
    for line in (job / "metrics.jsonl").read_text().splitlines() if (job / "metrics.jsonl").exists() else []:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        losses[record["step"]] = record["loss"]
    return losses


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _has_files(directory: Path) -> bool:
    try:
        return any(entry.is_file() for entry in os.scandir(directory))
    except OSError:  # renamed or removed meanwhile
        return False


def freeze_during_a_save(proc: subprocess.Popen, ckpt: Path, timeout: float) -> Path:
    """Poll for a ``step-N.tmp`` (N >= 2) holding written files and SIGSTOP every process while it
    is still unpublished.

    Stopping first, then looking, makes the kill land inside the save for certain: shards on
    disk, the checkpoint not yet renamed into place. If the rename won the race, the processes
    continue and a later save is tried.
    """
    wait_for(lambda: (ckpt / "step-000001").exists() or proc.poll() is not None, 120, "the first checkpoint", poll=0.01)
    pids = [proc.pid, *descendants(proc.pid)]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        pending = [
            Path(entry.path)
            for entry in os.scandir(ckpt)
            if entry.name.endswith(".tmp") and entry.name >= "step-000002"
        ]
        if pending and _has_files(pending[0]):
            _signal_all(pids, signal.SIGSTOP)
            if _has_files(pending[0]) and not pending[0].with_suffix("").exists():
                return pending[0]
            _signal_all(pids, signal.SIGCONT)
        time.sleep(0.0005)
    raise AssertionError("no checkpoint save was caught in progress")


def verify_checkpoint(path: Path) -> str | None:
    """The trainer's own manifest check, in a world of one (an in-memory store: no ports, no env)."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        return CheckpointManager(path.parent, keep=2, collective_device=torch.device("cpu")).verify(path)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_sigkill_during_a_checkpoint_save_keeps_the_previous_one(tmp_path):
    steps = 12
    job = write_job(tmp_path / "job", SINGLE, 1, steps=steps, checkpoint_every=1, min_lr_ratio=1.0, probe_steps=0)
    proc = start_run(job, tmp_path / "killed.log")
    try:
        tmp = freeze_during_a_save(proc, job / "ckpt", timeout=60)
    finally:
        kill_tree(proc)  # SIGKILL works on stopped processes: nothing gets to clean up
        proc.wait(30)
    killed_at = int(tmp.name.removeprefix("step-").removesuffix(".tmp"))
    before = logged_losses(job)
    assert tmp.is_dir(), "the half-written checkpoint is left behind"
    # It is not a checkpoint; the one before it is complete and verifies against its manifest.
    saved = [step for step, _ in list_checkpoints(job / "ckpt")]
    assert killed_at not in saved and saved[-1] == killed_at - 1
    assert verify_checkpoint(job / "ckpt" / f"step-{killed_at - 1:06d}") is None
    # The lock died with its holders: the same command resumes and finishes.
    result = subprocess.run(
        [TRAINPLAN, "run", str(job), "--device", "cpu"],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"resumed from checkpoint step-{killed_at - 1:06d}" in result.stdout
    assert [r["step"] for r in read_metrics(job)] == list(range(1, steps + 1))
    after = losses_by_step(job)
    assert after[killed_at] == pytest.approx(before[killed_at], abs=1e-6)  # the step redone, identically
    assert not list((job / "ckpt").glob("*.tmp"))
    assert [step for step, _ in list_checkpoints(job / "ckpt")] == [steps - 1, steps]


def _rank_of(pid: int) -> str | None:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    return next((item[5:].decode() for item in environ if item.startswith(b"RANK=")), None)


@pytest.mark.slow
def test_a_killed_rank_is_restarted_by_torchrun_from_the_last_checkpoint(tmp_path):
    steps, every = 16, 4
    job = write_job(
        tmp_path / "job", Layout(dp_shard=2), 2, steps=steps, checkpoint_every=every, min_lr_ratio=1.0, probe_steps=0
    )
    log = tmp_path / "run.log"
    proc = start_run(job, log, "--max-restarts", "1")
    try:
        wait_for(
            lambda: len(logged_losses(job)) >= every + 2 or proc.poll() is not None,
            120,
            "two steps past the first checkpoint",
            poll=0.02,
        )
        workers = [pid for pid in descendants(proc.pid) if _rank_of(pid) == "1"]
        assert len(workers) == 1, log.read_text()[-3000:]
        os.kill(workers[0], signal.SIGKILL)
        before = logged_losses(job)  # read before the restarted workers rewrite metrics.jsonl
        code = proc.wait(150)
    finally:
        kill_tree(proc)
        proc.wait(30)
    output = log.read_text()
    assert code == 0, output[-4000:]
    # the surviving rank, in a collective with the dead one or stopped by torchrun, says so in one
    # line (trial s25: a 77-line gloo traceback)
    assert "Traceback" not in output, output[-4000:]
    # trial s49 M7: the restart left no trace but the repeated start-up lines
    # (rank 0, stopped by torchrun or on its way out after its peer, may be named too)
    restarted = (
        r"torchrun: (rank 0 [^;]*, )?rank 1 stopped by SIGKILL; restarting every worker from the last checkpoint"
    )
    assert re.search(restarted + r" \(restart 1 of 1, 0 left\)\n", output), output[-4000:]
    resumed = int(re.search(r"resumed from checkpoint step-(\d+)", output).group(1))
    assert resumed % every == 0 and every <= resumed <= max(before)
    assert [r["step"] for r in read_metrics(job)] == list(range(1, steps + 1))  # every step exactly once
    after = losses_by_step(job)
    redone = [s for s in before if s > resumed]
    assert [after[s] for s in redone] == pytest.approx([before[s] for s in redone], abs=1e-6)
    report = json.loads((job / "report.json").read_text())
    assert report["outcome"] == "completed" and report["steps_done"] == steps


# --------------------------------------------------------------------------- the app


def test_app_listens_on_localhost_and_caps_uploads(monkeypatch):
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] in ("localhost", "127.0.0.1")
    assert config["server"]["maxUploadSize"] <= 1  # MB; a config.json is a few KB
    import ui.cli as cli
    import ui.cli_jobs as cli_jobs

    calls = []
    monkeypatch.setattr(cli_jobs, "run_forwarding_signals", lambda argv: calls.append(argv) or 0)
    assert cli.main(["app"]) == 0
    argv = calls[0]
    options = dict(zip(argv[argv.index("run") + 2 :: 2], argv[argv.index("run") + 3 :: 2], strict=False))
    assert options["--server.address"] == "localhost"
    assert int(options["--server.maxUploadSize"]) <= 1


def test_an_app_session_writes_only_inside_its_temp_folder(tmp_path, monkeypatch):
    """Upload a config, plan, build the job zip (after refusing a hostile job name): afterwards the
    working directory is untouched and the temp folder is empty again."""
    import tempfile

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from ui.i18n import Labels

    workdir, temp = tmp_path / "cwd", tmp_path / "temp"
    workdir.mkdir()
    temp.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    st.cache_data.clear()  # build the zip now, not from another test's cache
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    for key, value in dict(model_source="upload", gpus=["h100-sxm"], seq_len=2048).items():
        at.session_state[key] = value
    at.run()
    config = REPO / "tests" / "data" / "hf_configs" / "llama.json"
    at.sidebar.file_uploader(key="config_upload").upload("llama.json", config.read_bytes(), "application/json")
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    at.session_state["main_tab"] = Labels("en")("tab_downloads")
    at.session_state["emit_name"] = "x; touch PWNED"
    at.run()
    assert [e.value for e in at.error] and "job name" in at.error[0].value
    assert {b.key for b in at.get("download_button")} == {"download_plan"}
    at.session_state["emit_name"] = "my-job"
    at.run()
    assert not at.exception and not at.error
    assert {b.key for b in at.get("download_button")} == {"download_plan", "download_job"}
    assert list(workdir.iterdir()) == [] and list(temp.iterdir()) == []
    assert not list(tmp_path.rglob("PWNED*")) and not (REPO / "PWNED").exists()


def test_run_settings_the_plan_cannot_take_are_refused_before_torchrun(tmp_path):
    """Trial s37: freeze_layers past the model's layers was found by the workers, ~10 s in (after a
    cluster's queue), as two lines; the launcher now refuses it in one, before any worker starts."""
    job = write_job(tmp_path / "job", SINGLE, 1, steps=2, freeze_layers=9)
    proc = trainplan("run", str(job), "--device", "cpu", "--nproc", "1", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == ["trainplan: error: job: freeze_layers=9 exceeds the model's 4 layers"]
    assert not (job / "exit_status.json").exists()  # no worker ran


def test_trainplan_run_returns_the_trainers_own_exit_code(tmp_path):
    """torchrun reports any failed worker as 1; `trainplan run` returns the trainer's code (2: the
    job is invalid on this machine) with its one-line reason, and torchrun's ChildFailedError
    becomes one line instead of a traceback."""
    bad = tmp_path / "tokenizer.json"  # found by the worker only: it loads the tokenizer
    bad.write_text("not json")
    job = write_job(tmp_path / "job", SINGLE, 1, steps=2, tokenizer=str(bad))
    proc = trainplan("run", str(job), "--device", "cpu", "--nproc", "1", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "cannot load tokenizer" in proc.stderr + proc.stdout
    assert "training failed (exit 2): the workers' error line above says why (every rank exited with it)" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout and "ChildFailedError" not in proc.stderr
    assert json.loads((job / "exit_status.json").read_text()) == {"code": 2}
