"""The analytic model against real FSDP2 runs on one H200 (data/calibration, from shared/).

Targets (issue #2): mean error of the allocated peak within 5 %, of the step time within 10 %.
Per-row bounds catch a formula that is right on average but wrong for one regime.
"""

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Layout, TrainingConfig
from planner.model.candidates import single
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.step_time import host_time
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
    # The worst run is llama-350m b4 s2048 (host-bound, -10.7 %). The recompute runs were the worst
    # (llama-124m b4 s4096 ac -20.6 %) while a recomputed block's host dispatch was counted as a
    # third of its forward + backward; it is now recompute_host_share (0.7, settings.py).
    assert max(abs(e) for e in errors) < 0.12, [(c.name, round(c.error, 3)) for c in comparison["step"]]


def test_a_recomputed_block_adds_its_share_of_host_dispatch():
    """Full recompute re-runs every block's forward under torch.utils.checkpoint: the host time per
    block grows by ``recompute_host_share`` of the plain block's, the per-step part does not."""
    gpu = load_catalog().gpu("h200-sxm")
    model, s = get_preset("llama3.2-3b"), DEFAULT_SETTINGS.but(recompute_host_share=0.9)

    def host(ac: ActivationCheckpointing) -> float:
        training = TrainingConfig(seq_len=2048, activation_checkpointing=ac)
        c = single(gpu, Layout().resolve(1), training, gpus_per_node=8, network_bandwidth=50e9)
        return float(host_time(model, c, s)[0]) - s.host_overhead_per_step_s

    assert host(ActivationCheckpointing.FULL) == pytest.approx(1.9 * host(ActivationCheckpointing.NONE))
