"""The launcher's replanning (``trainplan run --auto-replan``, trainer/launch.py ``run_job``): the
trainer's ``replan_needed.json`` read (and earlier ones kept aside), and the job emitted again with
the plan ``planner.api.replan`` corrects from it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from planner.reports import ReplanRequest
from trainer.files import REPLAN_FILE
from trainer.job_spec import JobSpec


def read_replan_report(job_dir: Path) -> ReplanRequest | None:
    """The trainer's ``replan_needed.json``; one naming the problem when it cannot be read."""
    path = Path(job_dir) / REPLAN_FILE
    try:
        return ReplanRequest.load(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        return ReplanRequest(reason=f"{path}: unreadable ({str(exc).splitlines()[0]})")


def archive_replan_report(job_dir: Path) -> None:
    """Move a report of an earlier run aside, so only this run's report triggers a replan."""
    path = Path(job_dir) / REPLAN_FILE
    if path.exists():
        os.replace(path, _next_free(Path(job_dir), "replan_needed.{}.json"))


def print_replan_report(job_dir: Path, report: ReplanRequest) -> None:
    print(f"trainplan: the validation probe found that the plan in {job_dir} does not fit:", file=sys.stderr)
    for key, value in report.model_dump(mode="json").items():
        print(f"  {key}: {json.dumps(value) if isinstance(value, (dict, list)) else value}", file=sys.stderr)


def replan_job(job_dir: Path, spec: JobSpec, report: ReplanRequest) -> JobSpec | None:
    """Ask ``planner.api.replan`` for a corrected plan and re-emit the job; None if none fits."""
    from planner import api
    from planner.errors import InfeasiblePlan

    try:
        new_plan = api.replan(spec.plan, report)
    except InfeasiblePlan as exc:
        print(
            f"trainplan: no layout of {spec.plan.num_gpus} x {spec.plan.gpu} fits the measured memory: {exc}",
            file=sys.stderr,
        )
        return None
    from trainer.job import emit_job

    history = _next_free(Path(job_dir), "job.replan-{}.json")
    shutil.copyfile(Path(job_dir) / "job.json", history)
    # the same job, corrected (its k8s image and claim too: review s27; and its cluster settings)
    emit_job(
        new_plan,
        job_dir,
        name=spec.name,
        run=spec.run,
        force=True,
        k8s_image=spec.k8s_image,
        k8s_pvc=spec.k8s_pvc,
        cluster=spec.cluster,
        launcher=True,  # it holds the lock emit would refuse the directory for
    )
    print(
        f"trainplan: replanned ({new_plan.num_gpus} x {new_plan.gpu}, {new_plan.layout.describe()}); "
        f"the previous job.json is {history.name}",
        file=sys.stderr,
    )
    return JobSpec.load(job_dir)


def _next_free(directory: Path, pattern: str) -> Path:
    index = 1
    while (directory / pattern.format(index)).exists():
        index += 1
    return directory / pattern.format(index)
