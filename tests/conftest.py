"""Fixtures for every test folder. Helpers the tests call are in tests/support (imported, not fixtures).

Layout: tests/planner (no torch, streamlit or plotly at import), tests/trainer, tests/ui,
tests/integration (planner and trainer together; multi-process torchrun runs); tests/data is shared.
"""

from __future__ import annotations

import gc
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
    # As a worker does (trainer/worker.py freeze_imports): the run's collections, trainer.train.main's
    # own at its end too, leave out what this process held before (torch's, the planner's, every
    # earlier test's), which each full collection walked again; what the run makes is collected.
    gc.freeze()
    yield
    gc.unfreeze()
    torch.set_num_threads(threads)
    assert not dist.is_initialized()


# Wall seconds of the longest modules, each run alone on the 2-core machine (``pytest MODULE
# --durations``, 2026-12-01; rough: they only rank). xdist's ``--dist loadfile`` hands whole modules to
# the workers in collection order (scripts/test.sh turns off its own reordering by test count, which
# put these few-test modules last), so the longest start first and the short ones fill in at the end:
# a long module that starts last keeps its worker busy while the other one idles. A module not
# listed counts as short; list one here when it takes more than ~10 s.
LONGEST_MODULES_S = {
    # The two halves of the layout runs (one was 650 s). Measured alone on 2026-12-02, on a quieter
    # machine than the figures below (which read 1.6x those of that day): 252 s and 187 s, scaled.
    "integration/test_distributed.py": 400,
    "integration/test_distributed_one_process.py": 300,
    "integration/test_reliability.py": 245,
    "integration/test_kill_anything.py": 165,
    "ui/test_app.py": 145,
    "ui/test_app_browser.py": 145,
    "integration/test_plans_build.py": 140,
    "trainer/test_run.py": 90,
    "trainer/test_job.py": 85,
    "trainer/test_context_parallel.py": 15,  # its ranks forked since 2026-12-07 (support/worlds.py): 8 s alone
    "trainer/test_loss.py": 65,
    "trainer/test_calibrate.py": 55,
    "ui/test_cli.py": 35,
    "ui/test_app_stack.py": 35,
    "trainer/test_pure_bf16_run.py": 35,  # a two-rank torchrun launch: 34 s alone with the format guard, 2026-12-07
    "ui/test_app_views.py": 30,
    "ui/test_app_bars_browser.py": 30,  # 31 s alone, 2026-12-03
    "integration/test_gpu_validate_script.py": 30,
    "planner/test_plan.py": 26,
    "ui/test_batch.py": 25,
    "ui/test_app_details.py": 25,
    "integration/test_disk_and_checkpoint_faults.py": 20,
    "trainer/test_deepseek_native.py": 20,
    "trainer/test_data.py": 15,
    "integration/test_bad_input_cli.py": 15,
    "ui/test_cli_calibration.py": 15,
    "trainer/test_family_models.py": 15,
    "ui/test_cli_help.py": 11,
    "planner/test_floors.py": 11,
    "trainer/test_model.py": 10,
    "planner/test_models.py": 10,
    # 2026-12-07 (--durations=0 of a whole run, -n 2, x 1.6 as the figures above): modules of 10 s or
    # more that were not listed, so ran in collection order (ui/ last), the browser ones among them:
    # one of 38 s started at the end kept its worker busy while the other idled.
    "ui/test_app_portfolio_browser.py": 60,
    "ui/test_app_fleet_browser.py": 37,
    "ui/test_app_run_losses_browser.py": 22,
    "ui/test_app_number_box_browser.py": 21,
    "trainer/test_data_safety.py": 21,
    "ui/test_app_warm_browser.py": 18,
    "integration/test_reliability_round3.py": 17,
    "ui/test_cli_warnings.py": 17,
    "ui/test_portfolio_helper_cli.py": 16,
    "trainer/test_report_bands.py": 16,
    "trainer/test_checkpoint_refusal.py": 16,
    "ui/test_app_fleet.py": 12,
}


def module_seconds(path) -> float:
    relative = path.relative_to(path.parents[1]).as_posix()  # "<folder>/test_x.py"
    return LONGEST_MODULES_S.get(relative, 0.0)


def pytest_collection_modifyitems(items):
    """Longest modules first (see LONGEST_MODULES_S); a stable sort keeps each module's own order
    and the other modules' collection order."""
    items.sort(key=lambda item: -module_seconds(item.path))
