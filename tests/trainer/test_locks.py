"""Issue #12, case 1: the lock messages name a live holder, and the workers' lock keeps an
orphaned worker's job dir locked (trainer/locks.py). Real processes, real flock/POSIX locks."""

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
from support.jobs import subprocess_env

from planner.errors import JobDirLockedError
from trainer.locks import check_no_workers, die_with_parent, hold_worker_lock, job_lock, parent_gone


def _spawn(code: str, *args: str) -> tuple[subprocess.Popen, int]:
    """Run ``code``; it prints a pid (the process left holding the lock) and keeps it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=subprocess_env(),
    )
    return proc, int(proc.stdout.readline())


def test_the_lock_message_names_the_live_holder_not_the_dead_locker(tmp_path):
    """The launcher that took ``.lock`` died; a child it passed the descriptor to holds it on."""
    proc, holder = _spawn(
        """
        import os, sys, time
        from trainer.locks import job_lock
        held = job_lock(sys.argv[1])
        held.__enter__()
        if os.fork() == 0:
            print(os.getpid(), flush=True)
            time.sleep(60)
        os._exit(0)
        """,
        str(tmp_path),
    )
    try:
        proc.wait(10)  # the locker is gone
        expected = rf"already being run by pid {holder} on .*\(pid {proc.pid}, which took the lock, has exited\)"
        with pytest.raises(JobDirLockedError, match=expected), job_lock(tmp_path, wait_s=0):
            pass  # (with no wait: a holder left by a dead launcher is waited for, see below)
    finally:
        os.kill(holder, signal.SIGKILL)
    time.sleep(0.2)
    with job_lock(tmp_path):  # and once the holder is gone the lock is free again: nothing stale
        pass


def test_a_rerun_waits_for_what_a_killed_launcher_left_then_takes_the_lock(tmp_path, capsys):
    """Issue #29, case 27: the launcher was SIGKILLed and its agent (holding ``.lock``) is still
    shutting down: the next launcher waits for it, with a message, instead of refusing."""
    proc, holder = _spawn(
        """
        import os, sys, time
        from trainer.locks import job_lock
        held = job_lock(sys.argv[1])
        held.__enter__()
        if os.fork() == 0:  # the agent: it saves and exits a little after its launcher died
            print(os.getpid(), flush=True)
            time.sleep(1.5)
            os._exit(0)
        os._exit(0)
        """,
        str(tmp_path),
    )
    proc.wait(10)  # the launcher is gone; its agent holds the lock
    started = time.monotonic()
    with job_lock(tmp_path, wait_s=30):
        waited = time.monotonic() - started
    assert 0.3 < waited < 30
    assert (
        f"waiting up to 30 s for an earlier run (pid {holder}) to shut down: the launcher that started it"
        f" (pid {proc.pid}) is gone" in capsys.readouterr().err
    )


def test_a_workers_lock_outlives_its_launcher_and_is_named(tmp_path):
    proc, worker = _spawn(
        """
        import os, sys, time
        from trainer.locks import hold_worker_lock
        hold_worker_lock(sys.argv[1], 1)
        print(os.getpid(), flush=True)
        time.sleep(60)
        """,
        str(tmp_path),
    )
    try:
        check_no_workers(tmp_path, 0, 1, wait_s=0)  # rank 0 is free
        started = time.monotonic()
        with pytest.raises(JobDirLockedError, match=rf"still being trained by pid {worker} \(workers of an earlier"):
            check_no_workers(tmp_path, 0, 2, wait_s=0.5)
        assert time.monotonic() - started >= 0.5  # it waited for the orphan first
        with pytest.raises(JobDirLockedError, match=rf"rank 1 is held by pid {worker}"):
            hold_worker_lock_elsewhere(tmp_path, 1)
        assert os.close(hold_worker_lock(tmp_path, 0)) is None  # another rank is free
    finally:
        proc.kill()
        proc.wait()
    check_no_workers(tmp_path, 0, 2, wait_s=0)  # the lock died with the worker


def hold_worker_lock_elsewhere(job_dir: Path, rank: int) -> None:
    """``hold_worker_lock`` in a child (POSIX locks never conflict within one process); re-raised here."""
    done = subprocess.run(
        [sys.executable, "-c", f"from trainer.locks import hold_worker_lock; hold_worker_lock({str(job_dir)!r}, {rank})"],
        capture_output=True, text=True, cwd=REPO, env=subprocess_env(),
    )  # fmt: skip
    if done.returncode:
        raise JobDirLockedError(done.stderr.strip().splitlines()[-1])


def test_a_child_gets_sigterm_when_its_parent_dies(tmp_path):
    """die_with_parent: the kernel sends SIGTERM to an orphan; parent_gone sees the re-parenting."""
    marker = tmp_path / "got"
    proc, child = _spawn(
        """
        import os, signal, sys, time
        from pathlib import Path
        if os.fork() == 0:
            from trainer.locks import die_with_parent, parent_gone
            parent = die_with_parent(signal.SIGTERM)
            signal.signal(signal.SIGTERM, lambda *a: Path(sys.argv[1]).write_text(str(parent_gone(parent))))
            print(os.getpid(), flush=True)
            time.sleep(30)
            os._exit(0)
        time.sleep(60)
        """,
        str(marker),
    )
    proc.kill()  # the parent dies without a word
    proc.wait()
    deadline = time.monotonic() + 20
    # write_text creates the file before it writes: wait for the text, not only the file.
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    assert marker.read_text() == "True"
    assert die_with_parent is not None and not parent_gone(None)
