"""Ctrl-C while a process starts: the CLI's import takes a second, torch's takes seconds in the torchrun
agent and in every worker, and a stop signal there was a KeyboardInterrupt traceback per process (or, for a worker that had set
its flag while a peer had died, a hang in the rendezvous until torchrun's SIGKILL 30 s later).

Each signal below is sent at a moment read from /proc (a handler installed, torch's library mapped),
not after a sleep, so the test does not depend on the machine's speed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support import REPO
from support.jobs import descendants, subprocess_env, wait_for, write_job

from planner.errors import ExitCode
from planner.layout import Layout
from trainer.preemption import stop_at_once

TRAINPLAN = str(Path(sys.executable).with_name("trainplan"))


def _catches(pid: int, sig: signal.Signals) -> bool:
    """Whether the process has a handler for ``sig`` (/proc's SigCgt mask)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask, 16) >> (sig - 1) & 1)


def _maps(pid: int, library: str) -> bool:
    """Whether the process has ``library`` mapped: it is importing (or has imported) it."""
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _workers(launcher: subprocess.Popen) -> list[int]:
    def runs_worker(pid: int) -> bool:
        try:
            return b"trainer.worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False

    return [pid for pid in descendants(launcher.pid) if runs_worker(pid) and not _is_torchrun(pid)]


def _is_torchrun(pid: int) -> bool:
    try:
        return b"trainer.torchrun" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_stop_at_once_gives_stop_signals_their_default_action_and_restores_them() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with stop_at_once():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_DFL
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_a_stop_signal_at_start_up_ends_the_process_at_once_without_a_word() -> None:
    script = textwrap.dedent(
        """
        import os, signal, threading
        from trainer.preemption import stop_at_once
        with stop_at_once():
            os.kill(os.getpid(), signal.SIGINT)
            threading.Event().wait(60)  # a wait in C, as a rendezvous is
        print("not reached")
        """
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=subprocess_env(), capture_output=True, timeout=60
    )
    assert done.returncode == -signal.SIGINT and not done.stdout and not done.stderr, done
    assert time.monotonic() - started < 30


def test_ctrl_c_while_torchrun_imports_torch_is_one_line(tmp_path: Path) -> None:
    standalone = ["--standalone", "--nnodes", "1", "--nproc-per-node", "1"]
    agent = subprocess.Popen(
        [sys.executable, "-m", "trainer.torchrun", *standalone, "-m", "trainer.worker", str(tmp_path)],
        cwd=REPO,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # SIGTERM is caught only inside main's import of torch (its default action before and after).
    wait_for(lambda: _catches(agent.pid, signal.SIGTERM) or agent.poll() is not None, 60, "the agent's import", 0.005)
    agent.send_signal(signal.SIGINT)
    out, err = agent.communicate(timeout=60)
    assert agent.returncode == ExitCode.ABORTED, (out, err)
    assert err == "torchrun: stopped by SIGINT while starting; no worker had started\n", err


def test_ctrl_c_while_trainplan_imports_is_one_line() -> None:
    cli = subprocess.Popen(
        [TRAINPLAN, "catalog"],
        cwd=REPO,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # pandas' extensions are mapped while ui.cli imports the planner (a second or more).
    wait_for(lambda: _maps(cli.pid, "pandas/_libs") or cli.poll() is not None, 60, "the CLI's import", 0.005)
    cli.send_signal(signal.SIGINT)
    out, err = cli.communicate(timeout=60)
    assert cli.returncode == ExitCode.ABORTED and err == "trainplan: aborted\n", (out, err)


@pytest.mark.slow
def test_ctrl_c_while_the_workers_start_stops_the_run_cleanly_and_at_once(tmp_path: Path) -> None:
    job = write_job(tmp_path / "job", Layout(dp_shard=2), 2, seq_len=16, micro_batch=1)
    log = tmp_path / "run.log"
    launcher = subprocess.Popen(
        [TRAINPLAN, "run", str(job), "--device", "cpu"],
        cwd=REPO,
        env=subprocess_env(),
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own group, which a terminal's Ctrl-C reaches as a whole
    )

    def both_workers_import_torch() -> bool:
        workers = _workers(launcher)
        return len(workers) == 2 and all(_maps(pid, "libtorch") for pid in workers)

    wait_for(lambda: both_workers_import_torch() or launcher.poll() is not None, 120, "the workers' start", 0.01)
    assert launcher.poll() is None, log.read_text()
    stopped = time.monotonic()
    os.killpg(launcher.pid, signal.SIGINT)
    assert launcher.wait(60) == ExitCode.ABORTED, log.read_text()
    text = log.read_text()
    # torchrun's SIGKILL comes 30 s after its SIGINT: a worker left waiting for a dead peer would show it.
    assert time.monotonic() - stopped < 25 and "forcefully" not in text, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert "torchrun: stopped by SIGINT" in text and "death signal" not in text, text
    assert not (job / "ckpt").exists() or not any((job / "ckpt").iterdir()), text
