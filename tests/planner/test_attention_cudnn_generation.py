"""cuDNN's attention by release generation: a plan times today's (9.19), a validation row its
container's (planner/model/attention_kernels.py ``CudnnGeneration``, validation/published.py
``cudnn_generation_for``)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.layout import Layout, TrainingConfig
from planner.model import attention_kernels, rates
from planner.model.attention_kernels import CudnnGeneration
from planner.model.candidates import single
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS
from validation.published import STACK_SETTINGS, cudnn_generation_for, predict, recipe_settings
from validation.published_rows import read_published_runs


def _h100_rates(seq: int, generation: CudnnGeneration) -> tuple[float, float]:
    table = single(
        load_catalog().gpu("h100-sxm"),
        Layout(dp_shard=1),
        TrainingConfig(seq_len=seq),
        gpus_per_node=8,
        network_bandwidth=25e9,
    )
    fwd, bwd = rates.attention_rates(table, DEFAULT_SETTINGS.but(cudnn_generation=generation), 128)
    return float(fwd[0]), float(bwd[0])


@pytest.mark.parametrize(
    ("seq", "fwd_tflops", "bwd_tflops"),
    # NVIDIA cudnn-frontend benchmark_results.csv at 505fcfe (cuDNN 9.1, May 2024), causal
    [(4096, 542.3, 443.6), (16384, 586.8, 497.7), (32768, 577.3, 499.7), (65536, 567.0, 503.8)],
)
def test_cudnn_9_1_times_the_2024_measurements_on_hopper(seq, fwd_tflops, bwd_tflops):
    assert _h100_rates(seq, CudnnGeneration.CUDNN_9_1) == (
        pytest.approx(fwd_tflops * 1e12),
        pytest.approx(bwd_tflops * 1e12),
    )


def test_a_plan_times_cudnn_9_19_and_the_2024_release_is_slower_at_long_sequences():
    assert DEFAULT_SETTINGS.cudnn_generation == MEGATRON_CORE_SETTINGS.cudnn_generation == CudnnGeneration.CUDNN_9_19
    assert _h100_rates(16384, CudnnGeneration.CUDNN_9_19) == (pytest.approx(673e12), pytest.approx(579e12))
    for seq in (16384, 32768):
        old, new = _h100_rates(seq, CudnnGeneration.CUDNN_9_1), _h100_rates(seq, CudnnGeneration.CUDNN_9_19)
        assert 0.82 < old[0] / new[0] < 0.9 and 0.82 < old[1] / new[1] < 0.9
    # the FA3 paper's cuDNN 9.1.1 bars, at its fixed 1830 MHz, are the same generation: its 16K
    # causal forward (539) is the 2024 file's within the clock ratio to 1980 MHz (arXiv:2407.08608 C.1)
    assert pytest.approx(_h100_rates(16384, CudnnGeneration.CUDNN_9_1)[0] / 1e12, rel=0.01) == 539 * 1980 / 1830
    # head dim is shared: both generations' head-dim shares are the FA3 paper's 2024 bars
    shares = [attention_kernels.shape_shares(t, 64, np.array(16384.0)) for t in attention_kernels.CUDNN_SHAPES.values()]
    assert shares[0][0] / attention_kernels.share(attention_kernels.CUDNN.causal_seq_fwd, 16384.0) == pytest.approx(
        shares[1][0] / attention_kernels.share(attention_kernels.CUDNN_9_1.causal_seq_fwd, 16384.0)
    )


def test_only_containers_pinned_at_cudnn_9_1_or_older_run_the_2024_release():
    assert cudnn_generation_for("24.03.01") == cudnn_generation_for("24.07") == CudnnGeneration.CUDNN_9_1
    for release in ("", "25.02", "25.04.01", "25.09", "26.04.01"):
        assert cudnn_generation_for(release) == CudnnGeneration.CUDNN_9_19
    runs, _ = read_published_runs()
    old = [r for r in runs if recipe_settings(r, MEGATRON_CORE_SETTINGS).cudnn_generation == CudnnGeneration.CUDNN_9_1]
    assert old and {(r.source, r.gpu_id) for r in old} == {("S13", "h100-sxm")}
    assert {r.release for r in old} == {"24.03.01", "24.07"}


def test_the_s13_long_sequence_rows_are_predicted_slower_on_their_2024_cudnn():
    """NeMo 24.03.01's Llama 2 7B sweep (16K-1M tokens): the older cuDNN's attention takes longer,
    more so as attention's share grows with the sequence."""
    catalog = load_catalog()
    runs, _ = read_published_runs()
    sweep = sorted(
        (r for r in runs if r.release == "24.03.01" and r.training.seq_len >= 16384), key=lambda r: r.training.seq_len
    )
    assert len(sweep) >= 6
    speedups = []
    for run in sweep:
        as_run = recipe_settings(run, STACK_SETTINGS[run.stack])
        assert as_run.cudnn_generation == CudnnGeneration.CUDNN_9_1
        newer = predict(run, catalog, as_run.but(cudnn_generation=CudnnGeneration.CUDNN_9_19))
        speedups.append(
            newer.predicted_tokens_per_s_per_gpu / predict(run, catalog, as_run).predicted_tokens_per_s_per_gpu
        )
    assert all(s > 1.02 for s in speedups)
    assert speedups[-1] > speedups[0]
