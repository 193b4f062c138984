"""Fixtures for every test folder. Helpers the tests call are in tests/support (imported, not fixtures).

Layout: tests/planner (no torch, streamlit or plotly at import), tests/trainer, tests/ui,
tests/integration (planner and trainer together; multi-process torchrun runs); tests/data is shared.
"""

from __future__ import annotations

import socket

import pytest


@pytest.fixture(autouse=True)
def no_user_calibration(monkeypatch, tmp_path_factory):
    """No test reads the real per-user calibration file (ui/calibration.py): an empty config home."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture
def in_process(monkeypatch):
    """torchrun's environment for a world of one (``trainer.train.main`` in the test process)."""
    import torch  # here, not at the top: the planner tests collect without torch
    import torch.distributed as dist

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for key, value in dict(
        RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    ).items():
        monkeypatch.setenv(key, value)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # like OMP_NUM_THREADS=1 in the torchrun tests
    yield
    torch.set_num_threads(threads)
    assert not dist.is_initialized()
