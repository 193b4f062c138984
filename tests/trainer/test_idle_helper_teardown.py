"""trainer.train.main's teardown: ranks meet at a barrier before destroy_process_group, on the
success path only (a flaky torchrun restart test aborted a rank at exit without it)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import torch.distributed as dist

import trainer.train as train_module
from planner.errors import ExitCode


@pytest.fixture
def calls(monkeypatch) -> list[str]:
    """Stand-ins for the process group: each call is recorded by name."""
    seen: list[str] = []

    def barrier(*, device_ids=None, timeout=None) -> None:
        assert device_ids is None and isinstance(timeout, timedelta)  # CPU (gloo) runs; bounded wait
        seen.append("barrier")

    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda: 0)
    monkeypatch.setattr(dist, "barrier", barrier)
    monkeypatch.setattr(dist, "destroy_process_group", lambda: seen.append("destroy"))
    return seen


@pytest.mark.parametrize("code", [ExitCode.OK, ExitCode.DIVERGED])
def test_ranks_meet_before_the_group_is_destroyed(code, calls, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(train_module, "train", lambda *args: code)
    assert train_module.main([str(tmp_path), "--device", "cpu"]) == code
    assert calls == ["barrier", "destroy"]


def test_an_error_path_does_not_wait_for_the_other_ranks(calls, tmp_path, monkeypatch) -> None:
    def fails(*args) -> int:
        raise ValueError("a bad job")

    monkeypatch.setattr(train_module, "train", fails)
    assert train_module.main([str(tmp_path), "--device", "cpu"]) == ExitCode.INVALID
    assert calls == ["destroy"]  # one rank's error: the others may never reach a barrier


def test_a_barrier_that_fails_still_tears_down_and_keeps_the_result(calls, tmp_path, monkeypatch) -> None:
    def gone(**kw) -> None:
        calls.append("barrier")
        raise RuntimeError("Connection closed by peer")

    monkeypatch.setattr(dist, "barrier", gone)
    monkeypatch.setattr(train_module, "train", lambda *args: ExitCode.OK)
    assert train_module.main([str(tmp_path), "--device", "cpu"]) == ExitCode.OK
    assert calls == ["barrier", "destroy"]
