"""The app's job files: an emitted job zipped for download, a local run started in the
background, and what it writes read back (``metrics.jsonl``, its log). Split out of
ui/app_core.py; testable without Streamlit."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from planner.plan import Plan


def emit_job_zip(plan_: Plan, name: str, steps: int) -> bytes:
    """The job directory of ``trainplan emit`` as zip bytes, built in a temporary folder (which its
    README does not name: the downloader never sees it)."""
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings

    folder = Path(tempfile.mkdtemp(prefix="trainplan-job-"))
    try:
        job_dir = folder / name
        emit_job(plan_, job_dir, name=name, run=RunSettings(steps=steps), name_folder=False)
        return zip_directory(job_dir)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def zip_directory(directory: Path) -> bytes:
    """Every file under ``directory``, stored under its name (``job/launch.sh``), modes kept."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo.from_file(path, arcname=f"{directory.name}/{path.relative_to(directory)}")
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def read_metrics(path: Path) -> pd.DataFrame:
    """A run's ``metrics.jsonl`` as a frame (step, loss, tokens_per_s, ...); empty while none are written."""
    records = []
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        lines = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line being written right now
        if isinstance(record, dict) and "step" in record:
            records.append(record)
    frame = pd.DataFrame.from_records(records, columns=None if records else ["step", "loss", "tokens_per_s"])
    for column in ("loss", "tokens_per_s"):
        if column in frame:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")  # "nan"/"inf" strings -> NaN
    return frame


@dataclass
class LocalRun:
    job_dir: Path
    process: subprocess.Popen


def start_training(plan_: Plan, steps: int) -> LocalRun:
    """Emit the plan into a new temporary folder and train it there in the background.

    ``python -m trainer.launch`` is what ``trainplan run`` calls; started directly, its exit code
    reaches the app unchanged. It runs in its own session, so stopping it stops its torchrun too.
    """
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings

    job_dir = Path(tempfile.mkdtemp(prefix="trainplan-run-")) / "job"
    emit_job(plan_, job_dir, name="local-run", run=RunSettings(steps=steps))
    with (job_dir / "run.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "trainer.launch", str(job_dir), "--steps", str(steps)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return LocalRun(job_dir=job_dir, process=process)


def log_tail(path: Path, num_lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-num_lines:])
    except FileNotFoundError:
        return ""
