"""A worker frees its run's objects before it tears its process group down (trainer/train.py):
left to the interpreter's exit, they were freed while it was tearing down, and a worker aborted
("terminate called without an active exception"; CI, stop 62)."""

from __future__ import annotations

import weakref

import pytest

import trainer.train as worker


class Model:
    """A stand-in for the run's modules: in a reference cycle, as FSDP2's are."""


def failing_train(kind: type[Exception], seen: dict):
    def train(job_dir, device, steps, restart_from_scratch=False):
        model = Model()
        model.me = model  # type: ignore[attr-defined]
        seen["model"] = weakref.ref(model)
        raise kind("boom")

    return train


@pytest.mark.parametrize("kind", [OSError, RuntimeError])
def test_the_runs_objects_are_freed_before_the_group_is_torn_down(monkeypatch, tmp_path, kind) -> None:
    """A handled error (OSError: one line, exit 2) and one on its way out (a rank's own RuntimeError,
    re-raised with its traceback; review s43: its frames kept the model alive through the teardown)."""
    seen: dict = {}
    alive: list[bool] = []
    monkeypatch.setattr(worker, "train", failing_train(kind, seen))
    monkeypatch.setattr(worker.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(worker.dist, "get_rank", lambda: 0)
    monkeypatch.setattr(worker.dist, "destroy_process_group", lambda: alive.append(seen["model"]() is not None))
    if kind is RuntimeError:
        with pytest.raises(RuntimeError, match="boom"):
            worker._main([str(tmp_path), "--device", "cpu"])
    else:
        assert worker._main([str(tmp_path), "--device", "cpu"]) == worker.ExitCode.INVALID
    assert alive == [False]
