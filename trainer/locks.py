"""Who may write a job directory: the launcher's lock, the workers' lock, and dying with the parent.

Two locks, because torch's elastic agent starts every worker in a new session with its
descriptors closed, so a worker can never inherit the launcher's lock:

- ``JOB_DIR/.lock`` (``flock``, exclusive): one ``trainplan run`` per node. The launcher holds it
  and passes it to the torchrun agent; it dies with the last of them.
- ``JOB_DIR/.train.lock`` (POSIX record lock on byte ``RANK``): every worker holds the byte of
  its global rank for as long as it lives, so a worker left behind by a dead launcher keeps the
  directory locked. A new launcher checks its node's bytes before it starts workers (and waits
  a little for orphans that are saving), and a worker whose rank is still held refuses to start.
  Record locks are per process and work on the shared file systems multi-node jobs use.

Parent death: the agent and every worker ask the kernel for SIGTERM when their parent dies
(``prctl(PR_SET_PDEATHSIG)``); SIGTERM is the trainer's preemption signal, so an orphaned worker
saves a checkpoint and exits instead of training beside the next run.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from planner.errors import JobDirLockedError

LOCK_FILE = ".lock"
WORKER_LOCK_FILE = ".train.lock"
ORPHAN_WAIT_S = 45.0  # an orphaned worker saves, then exits: how long a new launcher waits for it
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def lock_path(job_dir: Path, node_rank: int = 0) -> Path:
    # One lock per node: on a shared file system every node's launcher uses the same directory.
    return Path(job_dir) / (LOCK_FILE if node_rank == 0 else f"{LOCK_FILE}-node{node_rank}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def processes_with_open(path: Path) -> list[int]:
    """Live pids (other than this one) that have ``path`` open, read from ``/proc`` (Linux)."""
    target, found = str(Path(path).resolve()), []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if any(os.readlink(fd.path) == target for fd in os.scandir(f"{entry.path}/fd")):
                    found.append(int(entry.name))
    return sorted(found)


def _holder_text(fd: int, path: Path) -> str:
    """``pid N on HOST`` of the launcher that wrote the lock, or the live processes holding it."""
    recorded = os.pread(fd, 200, 0).decode(errors="replace").strip()
    pid_text = recorded.split(" ", 1)[0]
    if recorded and pid_text.isdigit() and _pid_alive(int(pid_text)):
        return f"pid {recorded}"
    live = processes_with_open(path)
    if live:
        return f"pid {', '.join(map(str, live))} on {socket.gethostname()}" + (
            f" (pid {pid_text}, which took the lock, has exited)" if pid_text.isdigit() else ""
        )
    return f"pid {recorded or 'unknown'}"


def _recorded_pid(fd: int) -> int | None:
    text = os.pread(fd, 200, 0).decode(errors="replace").strip().split(" ", 1)[0]
    return int(text) if text.isdigit() else None


def _take_lock(fd: int, path: Path, job_dir: Path, wait_s: float) -> None:
    """flock ``fd``. Held by a live launcher: refused at once. Held only by what a dead launcher
    left (its torchrun agent, which dies with it and stops its workers): waited for, up to
    ``wait_s``, as a scheduler restarting the job at once needs."""
    deadline, announced = time.monotonic() + wait_s, False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            locker = _recorded_pid(fd)
            if locker is None or _pid_alive(locker) or time.monotonic() >= deadline:
                holder = _holder_text(fd, path)
                raise JobDirLockedError(f"job dir {job_dir} is already being run by {holder}") from None
            if not announced:
                live = ", ".join(map(str, processes_with_open(path))) or "unknown"
                print(
                    f"trainplan: waiting up to {wait_s:.0f} s for an earlier run (pid {live}) to shut down: the"
                    f" launcher that started it (pid {locker}) is gone",
                    file=sys.stderr,
                )
                announced = True
            time.sleep(0.2)


@contextmanager
def job_lock(job_dir: Path, node_rank: int = 0, wait_s: float = ORPHAN_WAIT_S) -> Iterator[int]:
    """Hold ``JOB_DIR/.lock`` (flock) and yield its descriptor; waits up to ``wait_s`` only for
    the remains of a run whose launcher is gone (``_take_lock``).

    The lock lives on the open file, so a child given the descriptor keeps it held even if this
    process is killed; it is released when the last holder exits. The file is never deleted
    (deleting a lock file lets two processes lock two different files).
    """
    path = lock_path(job_dir, node_rank)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # .lock is a directory, the job dir is read-only, ...
        raise ValueError(f"{path}: cannot open the job's lock file ({exc.strerror})") from None
    try:
        _take_lock(fd, path, job_dir, wait_s)
    except BaseException:
        os.close(fd)
        raise
    try:
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        except OSError as exc:  # a full disk (trial s37: no path said)
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        yield fd
    finally:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)


# --------------------------------------------------------------------------- the workers' lock


def _record_lock_holders(path: Path, first: int, count: int) -> list[int]:
    """Pids holding POSIX locks on bytes ``first .. first+count-1`` of ``path`` (``/proc/locks``)."""
    try:
        st = os.stat(path)
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = set()
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a waiter, not a holder
            continue
        if len(fields) >= 8 and fields[1] == "POSIX" and fields[5] == inode:
            start, end = int(fields[6]), fields[7]
            if start < first + count and (end == "EOF" or int(end) >= first):
                pids.add(int(fields[4]))
    return sorted(pids)


def _open_worker_lock(job_dir: Path) -> int:
    path = Path(job_dir) / WORKER_LOCK_FILE
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ValueError(f"{path}: cannot open the workers' lock file ({exc.strerror})") from None


def check_no_workers(job_dir: Path, first_rank: int, count: int, wait_s: float = ORPHAN_WAIT_S) -> None:
    """Raise JobDirLockedError if a worker of ranks ``first_rank ..`` still runs in ``job_dir``
    (after waiting up to ``wait_s`` for orphans, which save and exit on their own)."""
    fd = _open_worker_lock(job_dir)
    deadline, announced = time.monotonic() + wait_s, False
    try:
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, count, first_rank, os.SEEK_SET)
                fcntl.lockf(fd, fcntl.LOCK_UN, count, first_rank, os.SEEK_SET)
                return
            except OSError:
                pids = _record_lock_holders(Path(job_dir) / WORKER_LOCK_FILE, first_rank, count)
                if time.monotonic() >= deadline:
                    raise _orphans_error(job_dir, pids) from None
                if not announced:
                    print(
                        f"trainplan: waiting for the workers of an earlier run (pid "
                        f"{', '.join(map(str, pids)) or 'unknown'}) to save and exit",
                        file=sys.stderr,
                    )
                    announced = True
                time.sleep(0.2)
    finally:
        os.close(fd)


def _orphans_error(job_dir: Path, pids: list[int]) -> JobDirLockedError:
    return JobDirLockedError(
        f"job dir {job_dir} is still being trained by pid {', '.join(map(str, pids)) or 'unknown'}"
        f" (workers of an earlier run whose launcher is gone); they save and exit on SIGTERM:"
        f" wait for them or kill them"
    )


def hold_worker_lock(job_dir: Path, rank: int) -> int:
    """Lock byte ``rank`` of ``.train.lock`` for this worker's lifetime; returns the descriptor
    (keep it open: closing any descriptor of the file drops a POSIX lock)."""
    fd = _open_worker_lock(job_dir)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, rank, os.SEEK_SET)
    except OSError:
        pids = _record_lock_holders(Path(job_dir) / WORKER_LOCK_FILE, rank, 1)
        os.close(fd)
        raise JobDirLockedError(
            f"job dir {job_dir} is already being trained: rank {rank} is held by pid "
            f"{', '.join(map(str, pids)) or 'unknown'}"
        ) from None
    return fd


# --------------------------------------------------------------------------- emit


_ALL_RANKS = 1 << 31  # bytes of .train.lock checked at once: every rank's


@contextmanager
def no_run_in(job_dir: Path) -> Iterator[None]:
    """Held while ``emit`` rewrites ``job_dir``: JobDirLockedError, in ``run``'s words, while a
    launcher of any node holds its lock or a worker its byte of the workers' lock (trial49 M2:
    emit --force rewrote job.json under a live run, which went on under the old settings). The
    launchers' locks found are held until the files are written, so no run starts half-way; no
    lock file is created (a directory no run has used gets none)."""
    held: list[int] = []
    try:
        for path in sorted(Path(job_dir).glob(LOCK_FILE + "*")):  # .lock, .lock-node1, ...
            with contextlib.suppress(OSError):  # not a file, unreadable: no launcher holds it either
                held.append(os.open(path, os.O_RDONLY))
                _take_lock(held[-1], path, job_dir, wait_s=0)
        _check_no_worker_holds(job_dir)
        yield
    finally:
        for fd in held:
            os.close(fd)


def _check_no_worker_holds(job_dir: Path) -> None:
    path = Path(job_dir) / WORKER_LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR)  # a write lock needs a descriptor open for writing
    except OSError:  # none yet, or read-only: a worker could not have taken it either
        return
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, _ALL_RANKS, 0, os.SEEK_SET)
    except OSError:
        raise _orphans_error(job_dir, _record_lock_holders(path, 0, _ALL_RANKS)) from None
    finally:
        os.close(fd)  # drops the record lock taken, if any


# --------------------------------------------------------------------------- parent death


def die_with_parent(signum: int = signal.SIGTERM) -> int | None:
    """Ask for ``signum`` when the parent exits (Linux); returns the parent pid it is tied to,
    None where the call is not available (then the step loop's pid check still notices)."""
    parent = os.getppid()
    if not sys.platform.startswith("linux"):
        return parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
            return parent
    except (OSError, AttributeError):
        return parent
    if os.getppid() != parent:  # it died between the two calls: the signal will not come
        os.kill(os.getpid(), signum)
    return parent


def parent_gone(parent: int | None) -> bool:
    """True when the process we were started by has exited (we were re-parented)."""
    return parent is not None and parent > 1 and os.getppid() != parent
