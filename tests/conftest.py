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


# Wall seconds of the longest modules under scripts/test.sh (2 workers on a 2-core machine, from
# ``--durations``; rough, they only rank). xdist's ``--dist loadfile`` hands whole modules to the
# workers in collection order (scripts/test.sh turns off its own reordering by test count, which put
# these few-test modules last), so the longest start first and the short ones fill in at the end:
# a long module that starts last keeps its worker busy while the other one idles.
LONGEST_MODULES_S = {
    "integration/test_distributed.py": 420,
    "integration/test_reliability.py": 210,
    "ui/test_app.py": 130,
    "ui/test_cli.py": 115,
    "integration/test_kill_anything.py": 110,
    "integration/test_plans_build.py": 105,
    "ui/test_app_browser.py": 90,
    "trainer/test_job.py": 70,
    "integration/test_deepseek_distributed.py": 45,
    "trainer/test_loss.py": 40,
    "trainer/test_context_parallel.py": 25,
    "planner/test_floors.py": 20,
    "integration/test_gpu_validate_script.py": 20,
    "integration/test_bad_input_cli.py": 15,
    "planner/test_plan.py": 15,
}


def module_seconds(path) -> float:
    relative = path.relative_to(path.parents[1]).as_posix()  # "<folder>/test_x.py"
    return LONGEST_MODULES_S.get(relative, 0.0)


def pytest_collection_modifyitems(items):
    """Longest modules first (see LONGEST_MODULES_S); a stable sort keeps each module's own order
    and the other modules' collection order."""
    items.sort(key=lambda item: -module_seconds(item.path))
