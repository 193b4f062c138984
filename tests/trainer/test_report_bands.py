"""report.json and validation.json carry the plan's 80 % bands beside the point figures, and say
whether each measured figure lies inside (trial s49 M1); the final val loss names its step (L5);
a launch whose workers wrote no report leaves one saying it failed (L2)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from support.jobs import PREDICTED_PEAK_GIB, PREDICTED_STEP_S, make_plan

from planner.layout import Layout, TrainingConfig
from planner.plan_accuracy import MemoryBand, Uncertainty
from planner.reports import RunReport, ValidationReport
from trainer.failed_report import write_failed_report
from trainer.files import REPORT_FILE
from trainer.probe import MemoryReading, RunSummary, format_report, write_report, write_validation
from trainer.run_state import Outcome

STEP_BAND = (0.041, 0.056)
RESERVED_BAND = (1.6, 2.1)


def banded_plan():
    plan = make_plan(Layout(dp_shard=1), TrainingConfig(micro_batch=2, seq_len=64, grad_accum=1), 1)
    tokens = plan.estimate.throughput.tokens_per_s
    memory = MemoryBand(
        reserved_gib=RESERVED_BAND, usable_gib=70.0, may_not_fit=False, may_fit=False, validated=True, rows=9,
        sources=("s",), stacks=("torchtitan 9",), mean_abs_error=0.1, kind="torchtitan, one GPU",
    )  # fmt: skip
    u = Uncertainty(
        coverage=0.8, tokens_per_s=(tokens * 0.9, tokens * 1.2), step_s=STEP_BAND, mfu=(0.2, 0.4),
        validated=True, regime="torchtitan on Hopper", rows=9, exact_rows=3, sources=("s",),
        mean_abs_error=0.1, widened_by=0.0, envelope="inside", basis="held out", memory=memory,
    )  # fmt: skip
    return plan.model_copy(update={"estimate": plan.estimate.model_copy(update={"uncertainty": u})})


def summary(step_s: float, **changes) -> RunSummary:
    base = RunSummary(
        steps_done=33, outcome="completed", step_s=step_s, tokens_per_s=None, mfu=None, peak_gib=1.4,
        final_train_loss=3.0, final_val_loss=3.2, test_loss=3.3, test_perplexity=27.1, bad_steps=0,
        wall_s=5.0, launch_wall_s=5.0, measured_steps=30, reserved_gib=1.9, final_val_step=30,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)


def row(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(label))


def test_the_report_shows_each_band_and_whether_the_measured_figure_is_inside(tmp_path):
    plan = banded_plan()
    assert plan.estimate.time.step_s == PREDICTED_STEP_S  # 0.05: inside its band
    report = write_report(tmp_path, plan, summary(0.054), "cuda", plan.gpu)
    assert RunReport.load(tmp_path / REPORT_FILE) == report  # typed on disk
    assert (report.band.step_s.low, report.band.step_s.high, report.band.step_s.inside) == (*STEP_BAND, True)
    assert report.band.reserved_gib.inside is True and report.band.coverage == 0.8
    text = format_report(report)
    assert "predicted (80% band)" in text and "in band" in text
    step = row(text, "step time (s)")
    assert "0.050 (0.041-0.056)" in step and "0.054" in step and step.endswith("yes")
    assert row(text, "reserved peak, GiB").split()[-1] == "yes"
    assert "1.80 (1.60-2.10)" in row(text, "reserved peak, GiB")  # the memory band is the reserved peak's
    assert not row(text, "allocated peak, GiB").endswith(("yes", "no", "-"))  # it has no band
    slow = write_report(tmp_path, plan, summary(0.070, reserved_gib=2.5), "cuda", plan.gpu)
    assert slow.band.step_s.inside is False and slow.band.reserved_gib.inside is False
    assert row(format_report(slow), "step time (s)").endswith("no")


def test_on_cpu_the_band_is_shown_unchecked_and_the_missing_memory_explained(tmp_path):
    plan = banded_plan()
    report = write_report(tmp_path, plan, summary(3.0, peak_gib=None, reserved_gib=None), "cpu", None)
    assert report.band.step_s is not None and report.band.step_s.inside is None  # not a check of a GPU's band
    text = format_report(report)
    assert "0.050 (0.041-0.056)" in text and row(text, "step time (s)").endswith("-")
    assert "memory peaks are read from CUDA's allocator: none on cpu" in text
    cuda = format_report(write_report(tmp_path, plan, summary(0.05), "cuda", plan.gpu))
    assert "CUDA's allocator" not in cuda


def test_validation_json_carries_the_bands(tmp_path):
    plan = banded_plan()
    memory = MemoryReading(peak_gib=PREDICTED_PEAK_GIB, reserved_gib=2.5, capacity_gib=80.0)
    report = write_validation(tmp_path, plan, [0.3, 0.05, 0.05], memory, "cuda", plan.gpu)
    assert ValidationReport.load(tmp_path / "validation.json") == report
    assert report.band.step_s.inside is True and report.band.reserved_gib.inside is False
    assert report.band.tokens_per_s is not None and report.band.tokens_per_s.inside is None  # not measured
    on_cpu = write_validation(tmp_path, plan, [0.3, 0.05], memory, "cpu", None)
    assert on_cpu.band.step_s.inside is None


def test_a_plan_without_bands_reports_as_before(tmp_path):
    plan = make_plan(Layout(dp_shard=1), TrainingConfig(micro_batch=2, seq_len=64, grad_accum=1), 1)
    report = write_report(tmp_path, plan, summary(0.054), "cuda", plan.gpu)
    assert report.band.step_s is None
    text = format_report(report)
    assert "predicted" in text and "(0." not in row(text, "step time (s)")


def test_the_final_val_loss_names_its_step(tmp_path):
    plan = banded_plan()
    text = format_report(write_report(tmp_path, plan, summary(0.05), "cpu", None))
    assert "val 3.2000 (step 30)," in text  # trial s49 L5: --steps 33 with --eval-every 10
    older = format_report(write_report(tmp_path, plan, summary(0.05, final_val_step=None), "cpu", None))
    assert "val 3.2000, test" in older


@pytest.mark.parametrize("outcome", [Outcome.FAILED, Outcome.PEER_LOST])
def test_a_failed_launch_leaves_a_report_at_the_newest_checkpoint(tmp_path, outcome):
    plan = banded_plan()
    write_report(tmp_path, plan, summary(0.05, steps_done=13, outcome="preempted"), "cpu", None)
    for step in (10, 15):
        (tmp_path / "ckpt" / f"step-{step:06d}").mkdir(parents=True)
    (tmp_path / "ckpt" / "step-000020.tmp").mkdir()  # a save cut short: not a checkpoint
    report = write_failed_report(tmp_path, plan, outcome, "cpu", launch_wall_s=7.0)
    loaded = RunReport.load(tmp_path / REPORT_FILE)
    assert loaded == report and (loaded.outcome, loaded.steps_done) == (outcome.value, 15)
    assert loaded.measured.step_s is None and loaded.losses.final_train is None  # nothing of the old launch's
    text = format_report(report)
    assert loaded.wall_s is None  # review50 L8: the empty checkpoints give no time, and 0.0 would be one
    assert (
        f"run {outcome.value} (7 s this launch; the job's time before it unknown: its checkpoint is unreadable)" in text
    )
    assert "newest checkpoint at step 15" in text
    for step in (10, 15):
        (tmp_path / "ckpt" / f"step-{step:06d}").rmdir()
    fresh = write_failed_report(tmp_path, plan, outcome, "cpu", launch_wall_s=7.0)
    assert fresh.wall_s == 0.0 and f"run {outcome.value} (7 s this launch)" in format_report(fresh)  # none saved
    assert fresh.steps_done == 0 and "no checkpoint yet, so a rerun starts from step 0" in format_report(fresh)


def test_a_failed_launch_keeps_the_earlier_measured_report_and_the_jobs_wall_time(tmp_path):
    """Review49 L3: a failed relaunch replaced a completed report's measured figures, and its wall_s
    was that launch's alone, where every report's is the job's up to its newest checkpoint."""
    import torch

    plan = banded_plan()
    completed = write_report(tmp_path, plan, summary(0.05, steps_done=15, outcome="completed"), "cpu", None)
    newest = tmp_path / "ckpt" / "step-000015"
    newest.mkdir(parents=True)
    torch.save({"train": {"step": 15, "wall_s": 120.0}}, newest / "rank-00000.pt")
    first = write_failed_report(tmp_path, plan, Outcome.FAILED, "cpu", launch_wall_s=7.0)
    assert (first.wall_s, first.launch_wall_s) == (120.0, 7.0)
    assert first.earlier_report == "report.before-failure-1.json"
    assert RunReport.load(tmp_path / "report.before-failure-1.json") == completed
    text = format_report(first)
    assert "(7 s this launch, 120 s in all)" in text
    assert "the earlier report, with its measured figures, is report.before-failure-1.json" in text
    again = write_failed_report(tmp_path, plan, Outcome.PEER_LOST, "cpu", launch_wall_s=3.0)
    assert again.earlier_report == "report.before-failure-1.json"  # a failed one holds nothing to keep
    assert sorted(p.name for p in tmp_path.glob("report*.json")) == ["report.before-failure-1.json", REPORT_FILE]


STAND_IN = """
import json, os, sys
from pathlib import Path
job_dir = Path(sys.argv[1])
mode = os.environ["STAND_IN_MODE"]
if mode == "reports":  # the workers' own report, then a preemption's exit
    (job_dir / "report.json").write_text(json.dumps({"outcome": "preempted"}))
    sys.exit(143)
sys.exit(int(mode))
"""


@pytest.mark.parametrize(
    ("mode", "code", "outcome"),
    [("144", 144, "peer_lost"), ("1", 1, "failed"), ("143", 143, "preempted"), ("reports", 143, "preempted")],
)
def test_run_job_reports_a_launch_that_failed_without_a_report(tmp_path, monkeypatch, mode, code, outcome):
    """trial s49 L2: a worker SIGKILLed at step 17 (exit 144, checkpoint 15) left the earlier launch's
    report, "preempted" at step 13; a launch whose workers wrote their report keeps it."""
    from support.jobs import write_job

    from trainer.launch import NodeLaunch, run_job

    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "stand_in_worker.py").write_text(STAND_IN)
    monkeypatch.setenv("PYTHONPATH", f"{modules}:{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("STAND_IN_MODE", mode)
    job = write_job(tmp_path / "job", Layout(dp_shard=1), 1)
    write_report(job, banded_plan(), summary(0.05, steps_done=13, outcome="preempted"), "cpu", None)
    (job / "ckpt" / "step-000015").mkdir(parents=True)
    assert run_job(job, NodeLaunch(device="cpu", module="stand_in_worker")) == code
    report = json.loads((job / REPORT_FILE).read_text())
    assert report["outcome"] == outcome
    if mode in ("144", "1"):
        assert report["steps_done"] == 15 and report["measured"]["step_s"] is None
    elif mode == "143":
        assert report["steps_done"] == 13  # the stand-in wrote none, yet 143 is the workers' own report's


def test_a_run_records_the_step_of_its_last_val_loss_across_a_resume(tmp_path, in_process, capsys):
    """trial s49 L5: after --steps 33 with --eval-every 10 the final "val" was step 30's, unsaid; the
    step is a checkpointed counter, so a resume past the last evaluation keeps it."""
    from support.jobs import write_job

    from planner.errors import ExitCode
    from trainer.train import main

    job = write_job(tmp_path / "job", Layout(dp_shard=1), 1, steps=5, eval_every=2, checkpoint_every=4, probe_steps=0)
    assert main([str(job), "--device", "cpu", "--steps", "4"]) == ExitCode.OK
    assert main([str(job), "--device", "cpu"]) == ExitCode.OK  # resumes at 4, evaluates nothing more
    report = RunReport.load(job / REPORT_FILE)
    assert report.steps_done == 5 and report.losses.final_val_step == 4
    assert f"val {report.losses.final_val:.4f} (step 4)," in capsys.readouterr().out
