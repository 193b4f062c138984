"""The AMD Instinct rows (validation/amd_runs.py), held out.

The reader is checked, not the model's error (bench/validate_amd.py prints that): every row is
built or skipped with a reason, the layout multiplies out to the logged batch, the AMD parts are
read onto their catalog entries, the logs' own model FLOPs match the built models, and every
scored row gets a finite positive prediction.
"""

from __future__ import annotations

import csv
import math

import pytest

from planner.layout import ActivationCheckpointing, Sharding
from validation.amd_runs import DEFAULT_AMD_RUNS, compare_amd, read_amd
from validation.nemo_flops import flop_check
from validation.published_rows import gpu_id_for

# The logs' TFLOP/s/GPU (Megatron-LM's non-causal count) against the built model's.
FLOP_TOLERANCE = 0.001


@pytest.fixture(scope="module")
def read():
    return read_amd()


def _csv_rows() -> list[dict[str, str]]:
    with DEFAULT_AMD_RUNS.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_every_row_is_built_and_none_is_skipped(read):
    ids = [r["row_id"] for r in _csv_rows()]
    assert sorted(ids) == sorted(r.row_id for r in read.runs)
    assert len(read.runs) == 3 and not read.skipped


def test_layouts_multiply_out_to_the_logged_batch(read):
    logged = {r["row_id"]: r for r in _csv_rows()}
    for run in read.runs:
        row, t = logged[run.row_id], run.training
        assert run.layout.tp * run.layout.pp * run.layout.cp * run.layout.dp == run.num_gpus, run.row_id
        assert run.layout.dp * t.micro_batch * t.grad_accum == int(row["gbs"]), run.row_id
        assert f"GA {t.grad_accum};" in row["notes"], run.row_id


def test_the_70b_row_is_fsdp_with_full_recompute(read):
    run = next(r for r in read.runs if r.model_name == "LLAMA2-70B")
    assert run.layout.sharding == Sharding.FSDP
    assert run.training.activation_checkpointing == ActivationCheckpointing.FULL


def test_the_amd_parts_are_read_here_and_not_by_the_calibration_reader(read):
    assert {run.gpu_id for run in read.runs} == {"mi325x"}
    assert gpu_id_for("MI325X") is None and gpu_id_for("MI300X") is None  # published_runs unchanged


def test_the_logs_model_flops_match_the_built_models(read):
    checks = [flop_check(run) for run in read.runs]
    assert all(c is not None and abs(c.ratio_noncausal - 1) <= FLOP_TOLERANCE for c in checks)


def test_every_row_gets_a_finite_positive_prediction_that_fits(read):
    comparisons = compare_amd(read)
    assert len(comparisons) == len(read.runs)
    for c in comparisons:
        assert math.isfinite(c.predicted_tokens_per_s_per_gpu) and c.predicted_tokens_per_s_per_gpu > 0
        assert c.fits, c.run.row_id
