"""MLPerf Training's LLM pre-training rows (validation/mlperf.py), held out.

The reader is checked, not the model's error (bench/validate_mlperf.py prints that): every row
is built or skipped with a reason, the layout multiplies out to the logged batch, the newer GPUs
the calibration reader skips are read, NVIDIA's own model FLOPs per sample match the built
models, and every scored row gets a finite positive prediction.
"""

from __future__ import annotations

import csv
import math

import pytest

from planner.layout import Precision, Sharding
from validation.mlperf import DEFAULT_MLPERF_RUNS, compare_mlperf, read_mlperf
from validation.nemo_blackwell import BlackwellSkipReason
from validation.nemo_flops import flop_check
from validation.published_rows import gpu_id_for

# NVIDIA's MODEL_TFLOP_PER_SAMPLE against the nearer Megatron convention of the built model.
FLOP_TOLERANCE = 0.001


@pytest.fixture(scope="module")
def read():
    return read_mlperf()


def _csv_rows() -> list[dict[str, str]]:
    with DEFAULT_MLPERF_RUNS.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_every_row_is_built_or_skipped_and_only_nvfp4_is_skipped(read):
    ids = [r["row_id"] for r in _csv_rows()]
    assert sorted(ids) == sorted([r.row_id for r in read.runs] + [s.row_id for s in read.skipped])
    assert len(read.runs) == 47 and len(read.skipped) == 6
    assert {s.reason for s in read.skipped} == {BlackwellSkipReason.PRECISION_NOT_MODELLED}
    nvfp4 = {r["row_id"] for r in _csv_rows() if "nvfp4" in r["precision"].lower()}
    assert {s.row_id for s in read.skipped} == nvfp4


def test_layouts_multiply_out_to_the_logged_batch(read):
    logged = {r["row_id"]: r for r in _csv_rows()}
    for run in read.runs:
        row, t = logged[run.row_id], run.training
        assert run.layout.tp * run.layout.pp * run.layout.cp * run.layout.dp == run.num_gpus, run.row_id
        assert run.layout.dp * t.micro_batch * t.grad_accum == int(row["gbs"]), run.row_id
        assert f"GA {t.grad_accum};" in row["notes"], run.row_id
        assert run.layout.sharding == Sharding.ZERO1 and t.precision == Precision.FP8


def test_the_newer_gpus_are_read_here_and_still_skipped_by_the_calibration_reader(read):
    gpus = {run.gpu_id for run in read.runs}
    assert gpus == {"h100-sxm", "h200-sxm", "b200", "gb200", "gb300"}
    assert gpu_id_for("GB300") is None and gpu_id_for("H200-SXM5-141GB") is None  # published_runs unchanged


def test_nvidias_own_model_flops_match_the_built_models(read):
    checks = [c for run in read.runs if (c := flop_check(run)) is not None]
    assert len(checks) == 26  # the Llama rows (GPT-3's configs state no FLOPs per sample)
    assert all(abs(c.deviation) < FLOP_TOLERANCE for c in checks), [(c.run.row_id, c.deviation) for c in checks]


def test_every_row_gets_a_finite_positive_prediction(read):
    comparisons = compare_mlperf(read)
    assert len(comparisons) == len(read.runs)
    assert all(
        math.isfinite(c.predicted_tokens_per_s_per_gpu) and c.predicted_tokens_per_s_per_gpu > 0 for c in comparisons
    )
