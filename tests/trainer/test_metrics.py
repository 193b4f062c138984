"""metrics.jsonl (resume without duplicates), TensorBoard, utilisation warning, progress line, MFU inputs."""

from __future__ import annotations

import io
import json

import pytest
from support.jobs import make_plan

from planner.layout import Layout, TrainingConfig
from trainer.metrics import (
    LOW_UTILIZATION_PERCENT,
    UTILIZATION_WINDOW_STEPS,
    MetricsLogger,
    ProgressBar,
    StepMetrics,
    model_flops_per_token,
    peak_flops_per_s,
    truncate_after,
    warm_step_times,
)


def metrics(step: int, loss: float = 2.0, gpu_util: float | None = None) -> StepMetrics:
    return StepMetrics(
        step=step,
        loss=loss,
        lr=1e-3,
        grad_norm=0.5,
        step_s=0.1,
        tokens_per_s=1000.0,
        mfu=None,
        peak_mem_gib=None,
        gpu_util=gpu_util,
        power_w=None,
    )


def test_log_step_writes_one_record_per_step_and_tensorboard(tmp_path):
    logger = MetricsLogger(tmp_path, resume_step=0, enabled=True)
    for step in (1, 2):
        logger.log_step(metrics(step))
    logger.log_step(metrics(3, loss=float("nan")))
    logger.close()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3]
    assert {"step", "loss", "lr", "grad_norm", "tokens_per_s", "mfu", "peak_mem_gib", "gpu_util", "power_w"} <= set(
        records[0]
    )
    assert records[2]["loss"] == "nan"  # visible, and the file stays valid JSON
    assert any((tmp_path / "tb").iterdir())


def test_only_rank0_writes(tmp_path):
    logger = MetricsLogger(tmp_path, resume_step=0, enabled=False)
    logger.log_step(metrics(1))
    assert not (tmp_path / "metrics.jsonl").exists() and not (tmp_path / "tb").exists()


def test_resume_drops_records_after_the_checkpoint(tmp_path, caplog):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in range(1, 8)) + '{"step": 8, "lo')
    with caplog.at_level("INFO"):
        truncate_after(path, last_step=5)
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2, 3, 4, 5]
    # trial s37: the steps a kill costs are said
    assert "steps 6-7 of the previous launch, past the step this one resumes from, are trained again" in caplog.text
    logger = MetricsLogger(tmp_path, resume_step=3, enabled=True, tensorboard=False)
    logger.log_step(metrics(4))
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2, 3, 4]


def test_a_resumed_logger_holds_the_earlier_launches_warm_step_times(tmp_path):
    """Each launch's first step is warm-up; files from before ``launch_start`` count their first line
    as the only one; steps past the checkpoint and lines that are not records are not counted."""
    path = tmp_path / "metrics.jsonl"
    rows = [(1, 9.0, True), (2, 0.5, False), (3, 0.7, False), (4, 4.0, True), (5, 0.6, False), (6, 0.8, False)]
    path.write_text("".join(json.dumps({"step": s, "step_s": t, "launch_start": f}) + "\n" for s, t, f in rows))
    logger = MetricsLogger(tmp_path, resume_step=5, enabled=True, tensorboard=False)
    assert logger.earlier_step_times == [0.5, 0.7, 0.6]
    old = tmp_path / "old"
    old.mkdir()
    (old / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "step_s": t}) + "\n" for s, t, _ in rows))
    assert warm_step_times(old / "metrics.jsonl") == [0.5, 0.7, 4.0, 0.6, 0.8]
    assert warm_step_times(tmp_path / "absent.jsonl") == []
    assert MetricsLogger(tmp_path, resume_step=5, enabled=False).earlier_step_times == []


def test_low_gpu_utilisation_warns_once_per_window(tmp_path, capsys):
    logger = MetricsLogger(tmp_path, resume_step=0, enabled=True, tensorboard=False)
    for step in range(1, UTILIZATION_WINDOW_STEPS):
        logger.log_step(metrics(step, gpu_util=LOW_UTILIZATION_PERCENT - 20))
    assert "utilisation" not in capsys.readouterr().err
    logger.log_step(metrics(UTILIZATION_WINDOW_STEPS, gpu_util=LOW_UTILIZATION_PERCENT - 20))
    logger.log_step(metrics(UTILIZATION_WINDOW_STEPS + 1, gpu_util=LOW_UTILIZATION_PERCENT - 20))
    assert capsys.readouterr().err.count("GPU utilisation below 70%") == 1
    # One busy step in the window: no warning.
    busy = MetricsLogger(tmp_path / "busy", resume_step=0, enabled=True, tensorboard=False)
    (tmp_path / "busy").mkdir()
    for step in range(1, 2 * UTILIZATION_WINDOW_STEPS):
        busy.log_step(metrics(step, gpu_util=95.0 if step % 10 == 0 else 10.0))
    assert "utilisation" not in capsys.readouterr().err


def test_progress_line_without_a_terminal():
    stream = io.StringIO()
    bar = ProgressBar(first_step=0, last_step=40, enabled=True, stream=stream)
    for step in range(1, 41):
        bar.update(metrics(step, loss=3.25))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 20  # every ~5%
    assert lines[-1].startswith("[########################] step 40/40 loss 3.2500 1,000 tok/s ETA")
    resumed = io.StringIO()  # a run resumed at step 20 of 40: half the bar is done already
    ProgressBar(first_step=20, last_step=40, enabled=True, stream=resumed).update(metrics(21, loss=3.25))
    assert resumed.getvalue().startswith("[############............] step 21/40")


def test_peak_flops_from_the_catalog():
    assert peak_flops_per_s("h100-sxm", "bf16") > 5e14
    assert peak_flops_per_s("no-such-gpu", "bf16") is None


def test_model_flops_fall_back_to_the_planner_formula():
    plan = make_plan(Layout(dp_shard=1), TrainingConfig(seq_len=32), 1)
    assert plan.estimate.throughput.model_flops_per_token == 0.0  # placeholder estimate
    flops = model_flops_per_token(plan)
    spec = plan.model
    matmul_params = (
        spec.num_params() - spec.vocab_size * spec.hidden_size - (2 * spec.num_layers + 1) * spec.hidden_size
    )
    assert flops == pytest.approx(6 * matmul_params + 6 * 32 * spec.q_size * spec.num_layers, rel=0.01)
