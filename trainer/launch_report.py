"""The launcher's share of report.json: after a launch that failed without a report of its
workers' (a worker killed or crashed, a lost peer), one that says so (trial s49 L2: the earlier
launch's "preempted at step 13" stood after a kill at step 17). Apart from trainer/launch.py, which
imports no torch: trainer/probe.py, which writes it, is imported only when a launch failed."""

from __future__ import annotations

import sys
from pathlib import Path

from planner.errors import ExitCode
from planner.fmt import one_line
from trainer.files import REPORT_FILE
from trainer.job_spec import JobSpec

# Launch endings after which the workers wrote report.json themselves, or trained nothing (a
# refusal, a replan): after any other the launcher writes it (report_failed_launch).
WORKERS_REPORT = frozenset(
    (ExitCode.OK, ExitCode.INVALID, ExitCode.REPLAN, ExitCode.DIVERGED, ExitCode.ABORTED, ExitCode.PREEMPTED)
)


def report_stamp(job_dir: Path) -> tuple[int, int] | None:
    """report.json's inode and mtime (None: none), to tell whether a launch's workers wrote it."""
    try:
        stat = (job_dir / REPORT_FILE).stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns


def report_failed_launch(job_dir: Path, spec: JobSpec, device: str, code: int, before: tuple[int, int] | None,
                         launch_s: float) -> None:  # fmt: skip
    """After a launch that failed without a report of its workers' (a worker killed or crashed, a
    lost peer), write one that says so at the newest checkpoint (trial s49 L2: the earlier launch's
    "preempted at step 13" stood after a kill at step 17)."""
    if code in WORKERS_REPORT or report_stamp(job_dir) != before:
        return
    from trainer.failed_report import write_failed_report
    from trainer.run_state import Outcome

    outcome = Outcome.PEER_LOST if code == ExitCode.PEER_LOST else Outcome.FAILED
    try:
        write_failed_report(job_dir, spec.plan, outcome, device, launch_s)
    except OSError as exc:  # a full disk (exit 4): its own line was said; the earlier report stands
        print(f"trainplan: {job_dir / REPORT_FILE} not updated ({exc.strerror or one_line(exc)})", file=sys.stderr)
