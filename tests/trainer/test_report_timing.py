"""The job's typical step is timed over the steps of the setup it runs now (trial s45: a job emitted
again with --force for another layout reported the median of both layouts' steps, and the new batch's
tokens/s divided by it)."""

from __future__ import annotations

import json
import statistics

import pytest
from support.jobs import read_metrics, write_job

from planner.errors import ExitCode
from planner.layout import Layout
from trainer.metrics import MetricsLogger, warm_step_times
from trainer.train import main

SINGLE = Layout(dp_shard=1)


def test_steps_of_another_setup_are_left_out_and_older_records_kept(tmp_path, capsys):
    path = tmp_path / "metrics.jsonl"
    rows = [(1, 9.0, True, "a"), (2, 0.5, False, "a"), (3, 3.0, True, "b"), (4, 0.7, False, "b"), (5, 0.6, False, None)]
    records = [{"step": s, "step_s": t, "launch_start": f} | ({"setup": k} if k else {}) for s, t, f, k in rows]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    assert warm_step_times(path) == [0.5, 0.7, 0.6]  # no setup asked: every warm step
    assert warm_step_times(path, "b") == [0.7, 0.6]  # a record from before the setup was kept counts
    logger = MetricsLogger(tmp_path, resume_step=5, enabled=True, tensorboard=False, setup="b")
    assert logger.earlier_step_times == [0.7, 0.6]
    assert "the times of 1 earlier step(s), under another plan" in capsys.readouterr().out


def test_a_job_emitted_again_for_another_batch_times_only_its_own_steps(tmp_path, in_process, capsys):
    job = write_job(tmp_path / "job", SINGLE, 1, steps=8, micro_batch=2, probe_steps=0, warmup_steps=1)
    assert main([str(job), "--device", "cpu", "--steps", "4"]) == ExitCode.OK
    write_job(job, SINGLE, 1, steps=8, micro_batch=1, probe_steps=0, warmup_steps=1)  # another plan, same model
    assert main([str(job), "--device", "cpu"]) == ExitCode.OK
    records = read_metrics(job)
    assert [r["step"] for r in records] == list(range(1, 9))
    first, second = {r["setup"] for r in records[:4]}, {r["setup"] for r in records[4:]}
    assert len(first) == len(second) == 1 and first != second
    report = json.loads((job / "report.json").read_text())
    warm = [r["step_s"] for r in records[5:]]  # the new plan's steps but the launch's first
    assert report["measured_steps"] == len(warm) == 3  # was 6: the old plan's steps 2-4 as well
    assert report["measured"]["step_s"] == pytest.approx(statistics.median(warm))
    assert report["measured"]["tokens_per_s"] == pytest.approx(1 * 32 / statistics.median(warm))
