"""Measured collectives: the ring fit inverts the model's own cost, and a calibration file's
scale-up fields replace the datasheet fraction in the estimate."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.calibration import CalibrationFile, apply_calibration, write_calibration
from planner.catalog.hardware import CatalogError, load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.model.comm import RING_PASSES, CollectiveSample, Link, all_gather_s, all_reduce_s, fit_ring
from planner.model.estimate import estimate
from planner.model.settings import DEFAULT_SETTINGS

MACHINE = dict(host="node-1", device="NVIDIA H100 80GB HBM3", driver="570.86", date="2026-12-01", software="torch 2.11")
BASE = DEFAULT_SETTINGS.collective_base_latency_s


def _samples(bandwidth: float, latency: float, ranks: int, noise: float = 0.0) -> list[CollectiveSample]:
    """Timings from the model itself (comm.py), optionally with multiplicative noise."""
    link = Link(bandwidth=np.array([bandwidth]), latency=np.array([latency]), base_latency=BASE)
    cost = {"all_reduce": all_reduce_s, "all_gather": all_gather_s, "reduce_scatter": all_gather_s}
    rng = np.random.default_rng(0)
    return [
        CollectiveSample(op, size, ranks, float(cost[op](size, ranks, link)[0]) * (1 + noise * rng.standard_normal()))
        for op in RING_PASSES
        for size in (2.0**16, 2.0**20, 2.0**24, 2.0**28)
    ]


def test_the_fit_recovers_the_model_it_inverts():
    fit = fit_ring(_samples(360e9, 2.5e-6, 8), BASE)
    assert fit.bandwidth == pytest.approx(360e9, rel=1e-9)
    assert fit.step_latency_s == pytest.approx(2.5e-6, rel=1e-6)
    assert fit.rms_relative_error < 1e-9
    noisy = fit_ring(_samples(360e9, 2.5e-6, 8, noise=0.03), BASE)
    assert noisy.bandwidth == pytest.approx(360e9, rel=0.1) and 0.0 < noisy.rms_relative_error < 0.1
    assert CollectiveSample("all_reduce", 2.0**28, 8, 2.0**28 / 360e9).bus_bandwidth == pytest.approx(2 * 7 / 8 * 360e9)


def test_the_fit_refuses_what_resolves_nothing():
    with pytest.raises(ValueError, match="two or more timed samples"):
        fit_ring(_samples(360e9, 2.5e-6, 8)[:1], BASE)
    flat = [CollectiveSample("all_gather", size, 2, 1e-3) for size in (1e3, 1e6)]  # larger is no slower
    with pytest.raises(ValueError, match="resolve no bandwidth"):
        fit_ring(flat, BASE)


def _dp_comm(catalog) -> float:
    model, training = get_preset("llama3-8b"), TrainingConfig(seq_len=4096, micro_batch=1)
    e = estimate(model, "h100-sxm", Layout(dp_shard=8), training, num_gpus=8, catalog=catalog)
    return e.time.breakdown_s.dp_comm


def test_measured_collectives_replace_the_datasheet_fraction(tmp_path):
    def calibrated(**fields):
        path = write_calibration(tmp_path / "c.toml", CalibrationFile(MACHINE, {"h100-sxm": fields}))
        return apply_calibration(load_catalog(), path)

    base = _dp_comm(load_catalog())
    slow = calibrated(scaleup_busbw_gbyte_per_s_achieved=50.0, scaleup_step_latency_us_achieved=3.4)
    assert _dp_comm(slow) > base
    gpu = slow.gpu("h100-sxm")
    assert gpu.rates.scaleup_bus_bandwidth_bytes_per_s == pytest.approx(50e9)
    assert gpu.rates.provenance["scaleup_busbw_gbyte_per_s_achieved"] == "MEASURED"
    laggy = calibrated(scaleup_busbw_gbyte_per_s_achieved=337.5, scaleup_step_latency_us_achieved=500.0)
    assert _dp_comm(laggy) > _dp_comm(calibrated(scaleup_busbw_gbyte_per_s_achieved=337.5))
    with pytest.raises(CatalogError, match=r"expected at most scaleup_gbyte_per_s 450"):
        calibrated(scaleup_busbw_gbyte_per_s_achieved=900.0)
