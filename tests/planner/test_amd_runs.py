"""The AMD Instinct rows (validation/amd_runs.py), held out.

The reader is checked, not the model's error (bench/validate_amd.py prints that): every row is
built or skipped with a reason, the layout multiplies out to the logged batch, the AMD parts are
read onto their catalog entries, the logs' own model FLOPs match the built models, every scored
row gets a finite positive prediction, and the bench's per-source / per-generation table counts
every row (the MLPerf v5.1 MI355X / MI350X rows scored since those parts joined the catalog).
"""

from __future__ import annotations

import csv
import math

import pytest

from planner.layout import ActivationCheckpointing, Sharding
from validation.amd_runs import DEFAULT_AMD_RUNS, by_source_generation, compare_amd, generation_for, read_amd
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


def test_every_row_is_built_now_that_the_cdna4_parts_are_in_the_catalog(read):
    ids = [r["row_id"] for r in _csv_rows()]
    assert sorted(ids) == sorted([r.row_id for r in read.runs] + [s.row_id for s in read.skipped])
    assert {r.row_id for r in read.runs} == {f"AMD00{i}" for i in range(1, 9)}
    assert not read.skipped


def test_the_mlperf_rows_multiply_out_to_their_logged_batch():
    mlperf = [r for r in _csv_rows() if r["source"] == "MLPERF_TRAINING_V5.1"]
    assert len(mlperf) == 5 and {r["gpu"] for r in mlperf} == {"MI355X", "MI350X"}
    for row in mlperf:
        dp = int(row["num_gpus"]) // (int(row["tp"]) * int(row["pp"]) * int(row["cp"]))
        assert dp * int(row["mbs"]) * 2 == int(row["gbs"]) and row["notes"].startswith("GA 2;"), row["row_id"]
        # tokens/s/GPU = samples/s x 8192 / 8: the notes' median of run medians gives it back
        medians = [float(x) for x in row["notes"].split("medians (")[1].split(")")[0].split(";")]
        samples_per_s = sorted(medians)[4:6]
        assert min(samples_per_s) * 1024 <= float(row["tokens_per_s_per_gpu"]) <= max(samples_per_s) * 1024


def test_the_bench_counts_every_row_per_source_and_generation(read):
    groups = {(g.source, g.generation): g for g in by_source_generation(read, compare_amd(read))}
    assert set(groups) == {("PRIMUS_AAC11", "CDNA3"), ("MLPERF_TRAINING_V5.1", "CDNA4")}
    primus, mlperf = groups[("PRIMUS_AAC11", "CDNA3")], groups[("MLPERF_TRAINING_V5.1", "CDNA4")]
    assert (primus.rows, primus.skipped, len(primus.errors)) == (3, 0, 3)
    assert primus.mean_abs is not None and primus.mean_signed is not None
    assert primus.mean_abs >= abs(primus.mean_signed)
    assert (mlperf.rows, mlperf.skipped, len(mlperf.errors)) == (5, 0, 5)
    assert mlperf.mean_abs is not None and mlperf.mean_abs >= abs(mlperf.mean_signed)
    assert generation_for("mi325x") == "CDNA3" and generation_for("MI355X") == "CDNA4"


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
    assert {run.gpu_id for run in read.runs} == {"mi325x", "mi355x", "mi350x"}
    assert {r.row_id: r.gpu_id for r in read.runs if r.source == "MLPERF_TRAINING_V5.1"} == {
        "AMD004": "mi355x",
        "AMD005": "mi355x",
        "AMD006": "mi355x",
        "AMD007": "mi350x",
        "AMD008": "mi350x",
    }
    assert gpu_id_for("MI325X") is None and gpu_id_for("MI300X") is None  # published_runs unchanged
    assert gpu_id_for("MI355X") is None and gpu_id_for("MI350X") is None


def test_the_logs_model_flops_match_the_built_models(read):
    checks = [flop_check(run) for run in read.runs if run.measured_tflops_per_gpu is not None]
    assert len(checks) == 3  # the Primus logs print TFLOP/s/GPU; the MLPerf logs do not
    assert all(c is not None and abs(c.ratio_noncausal - 1) <= FLOP_TOLERANCE for c in checks)


def test_every_row_gets_a_finite_positive_prediction_that_fits(read):
    comparisons = compare_amd(read)
    assert len(comparisons) == len(read.runs)
    for c in comparisons:
        assert math.isfinite(c.predicted_tokens_per_s_per_gpu) and c.predicted_tokens_per_s_per_gpu > 0
        assert c.fits, c.run.row_id


def test_the_mlperf_rows_score_on_the_cdna4_parts(read):
    """The five MLPerf v5.1 rows are predicted on mi355x / mi350x, fit, and their held-out error is
    a finite number the bench reports (its size is docs/validation.md's, not asserted here)."""
    scored = {c.run.row_id: c for c in compare_amd(read) if c.run.source == "MLPERF_TRAINING_V5.1"}
    assert sorted(scored) == ["AMD004", "AMD005", "AMD006", "AMD007", "AMD008"]
    for c in scored.values():
        assert c.fits and math.isfinite(c.error) and abs(c.error) < 1, c.run.row_id
    # same recipe on the same silicon: the 2.4 GHz part is predicted faster than the 2.2 GHz one
    assert scored["AMD004"].predicted_tokens_per_s_per_gpu > scored["AMD007"].predicted_tokens_per_s_per_gpu
