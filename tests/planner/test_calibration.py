"""The analytic model against real FSDP2 runs on one H200 (data/calibration, from shared/).

Targets (issue #2): mean error of the allocated peak within 5 %, of the step time within 10 %.
Per-row bounds catch a formula that is right on average but wrong for one regime.
"""

import pytest

from validation.calibration import DEFAULT_H200_RUNS, compare_h200, read_h200_runs


@pytest.fixture(scope="module")
def comparison():
    return compare_h200(read_h200_runs(DEFAULT_H200_RUNS))


def mean_abs(errors):
    return sum(abs(e) for e in errors) / len(errors)


def test_every_calibration_row_is_read():
    rows = read_h200_runs(DEFAULT_H200_RUNS)
    assert len(rows) == 9
    assert {r.training.activation_checkpointing.value for r in rows} == {"none", "full"}


def test_peak_allocated_memory_within_5_percent(comparison):
    errors = [c.error for c in comparison["peak_alloc"]]
    assert mean_abs(errors) < 0.05
    assert max(abs(e) for e in errors) < 0.05, [(c.name, round(c.error, 3)) for c in comparison["peak_alloc"]]


def test_reserved_memory_within_10_percent(comparison):
    errors = [c.error for c in comparison["reserved"]]
    assert mean_abs(errors) < 0.05
    assert max(abs(e) for e in errors) < 0.10


def test_step_time_within_10_percent(comparison):
    errors = [c.error for c in comparison["step"]]
    assert mean_abs(errors) < 0.10
    # The worst run is llama-124m b4 s4096 ac (head dim 64, host-bound): -19.1 % with the FA3 paper's
    # 2024 cuDNN rates, -20.6 % since the catalog's Hopper cuDNN rates are cuDNN 9.19's (702 / 612
    # against 595 / 516 TFLOP/s), which cut the held-out H100 error from -13 % to -8 %.
    assert max(abs(e) for e in errors) < 0.21, [(c.name, round(c.error, 3)) for c in comparison["step"]]
