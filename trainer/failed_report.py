"""report.json after a launch whose workers wrote none (a worker killed or crashed, a lost peer:
trial s49 L2, the earlier launch's "preempted at step 13" stood after a kill at step 17), written
by `trainplan run` (trainer/launch_report.py, which imports this only when a launch failed)."""

from __future__ import annotations

from pathlib import Path

import torch

from planner.plan import Plan
from planner.reports import RunReport
from trainer.files import (
    CHECKPOINT_DIR,
    REPORT_FILE,
    keep_earlier_run,
    list_checkpoints,
    rank_state_file,
    write_json_atomic,
)
from trainer.probe import FAILED_OUTCOMES, RunSummary, run_report
from trainer.run_state import Outcome


def write_failed_report(
    job_dir: Path, plan: Plan, outcome: Outcome, device_type: str, launch_wall_s: float
) -> RunReport:
    """The outcome and the newest checkpoint's step, where a rerun resumes; nothing measured (the
    launcher holds no timings; metrics.jsonl has each step's). ``wall_s`` as in every report: the
    job's wall time up to its newest checkpoint (the checkpoint carries it), ``launch_wall_s`` this
    launch's. An earlier report with measured figures is kept beside (review49 L3)."""
    job_dir = Path(job_dir)
    saved = list_checkpoints(job_dir / CHECKPOINT_DIR)
    summary = RunSummary(
        steps_done=saved[-1][0] if saved else 0,
        outcome=outcome.value,
        step_s=None,
        tokens_per_s=None,
        mfu=None,
        peak_gib=None,
        final_train_loss=None,
        final_val_loss=None,
        test_loss=None,
        test_perplexity=None,
        bad_steps=0,
        wall_s=saved_wall_s(saved[-1][1]) if saved else 0.0,
        launch_wall_s=launch_wall_s,
    )
    report = run_report(plan, summary, device_type, None)
    report = report.model_copy(update={"earlier_report": keep_measured_report(job_dir)})
    write_json_atomic(job_dir / REPORT_FILE, report.model_dump(mode="json"))
    return report


def saved_wall_s(checkpoint: Path) -> float | None:
    """The job's wall time up to ``checkpoint`` (rank 0's saved ``TrainState.wall_s``); None when its
    file cannot be read (a failed launch's report: no figure is better than a wrong one)."""
    try:
        state = torch.load(rank_state_file(checkpoint, 0), weights_only=True)
        return float(state["train"]["wall_s"])
    except Exception:
        return None


def keep_measured_report(job_dir: Path) -> str | None:
    """Keep report.json beside (``report.before-failure-N.json``) when it holds measured figures
    (any launch's but a failed one's); returns the kept report's name, also the one an earlier
    failed launch's report named."""
    try:
        earlier = RunReport.load(job_dir / REPORT_FILE)
    except (OSError, ValueError):  # none, or not a report: nothing measured to keep
        return None
    if earlier.outcome in {o.value for o in FAILED_OUTCOMES}:
        return earlier.earlier_report
    return keep_earlier_run(job_dir, (REPORT_FILE,), before="failure")[0]
