"""A long step says how far it is (trainer/step.py ``Heartbeat``; trial s43: a CPU run of a
1M-token batch printed nothing for 331 s and looked hung)."""

from __future__ import annotations

from support.jobs import write_job

import trainer.step as step
from planner.layout import Layout
from trainer.train import main


def test_a_long_step_says_which_micro_batch_it_is_at(tmp_path, in_process, capsys, monkeypatch) -> None:
    monkeypatch.setattr(step, "HEARTBEAT_S", 0.0)  # every micro-batch past the first, here
    job = write_job(tmp_path / "job", Layout(dp_shard=1), 1, steps=1, grad_accum=3, probe_steps=0)
    assert main([str(job), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("step running: micro-batch")]
    assert [line.split(" s so far")[0].rsplit(",", 1)[0] for line in lines] == [
        "step running: micro-batch 0 of 3 done",
        "step running: micro-batch 1 of 3 done",
        "step running: micro-batch 2 of 3 done",
    ]


def test_a_step_shorter_than_the_interval_says_nothing(tmp_path, in_process, capsys) -> None:
    job = write_job(tmp_path / "job", Layout(dp_shard=1), 1, steps=1, grad_accum=3, probe_steps=0)
    assert main([str(job), "--device", "cpu"]) == 0
    assert "step running" not in capsys.readouterr().out
