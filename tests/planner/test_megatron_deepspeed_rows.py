"""BigScience's and Lucie-Training's Megatron-DeepSpeed rows (validation/megatron_deepspeed_runs.py):
the reader is checked, not the model's error (bench/validate_megatron_deepspeed.py prints that), and
the one setting fitted on the Lucie rows is re-fitted. Each row's logged TFLOP/s
follows from its model, GPU count and logged seconds by the team's own formula, so a mis-typed
dimension or time fails here; BLOOM's shape matches its published parameter count; every layout
spans its GPUs with the published global batch; every row gets a finite prediction on its network."""

from __future__ import annotations

import csv
import math
from dataclasses import replace

import pytest

from planner.catalog.hardware import load_catalog
from planner.layout import Layout, Sharding
from planner.model.stack_profiles import MEGATRON_DEEPSPEED_HOST_S_PER_BLOCK
from validation.megatron_deepspeed_runs import (
    DEFAULT_ROWS,
    LUCIE_ROWS,
    LUCIE_SEQ_LEN,
    NETWORK,
    SEQ_LEN,
    Use,
    compare_megatron_deepspeed,
    predict,
    read_megatron_deepspeed_rows,
)

BLOOM_PARAMS = 176_247_271_424  # bigscience/bloom model card


def _bigscience_tflops(layers: int, hidden: int, vocab: int, gpus: int, seconds: float) -> float:
    """Megatron eq. 3 with recompute, as Megatron-DeepSpeed logs it (bigscience math/README.md):
    96 B s l h^2 (1 + s / 6h + V / 16 l h) / (t N), B = 2048 sequences of s = 2048."""
    batch, s = 2048, SEQ_LEN
    flops = 96 * batch * s * layers * hidden**2 * (1 + s / (6 * hidden) + vocab / (16 * layers * hidden))
    return flops / (seconds * gpus * 1e12)


@pytest.fixture(scope="module")
def rows():
    return read_megatron_deepspeed_rows(lucie=None)


@pytest.fixture(scope="module")
def lucie_rows():
    return [r for r in read_megatron_deepspeed_rows() if r.source == "S3"]


def test_the_logged_tflops_follow_from_each_rows_model_and_seconds(rows):
    with DEFAULT_ROWS.open(newline="", encoding="utf-8") as handle:
        raw = {r["row_id"]: r for r in csv.DictReader(handle)}
    for row in rows:
        first = float(raw[row.row_id]["seconds_per_iteration"].split(";")[0])
        m = row.model
        tflops = _bigscience_tflops(m.num_layers, m.hidden_size, m.vocab_size, row.num_gpus, first)
        assert tflops == pytest.approx(float(raw[row.row_id]["reported_tflops"]), rel=2e-4), row.row_id


def test_bloom_is_built_at_its_published_size_and_the_sweep_at_its_names(rows):
    by_id = {r.row_id: r for r in rows}
    assert by_id["R1"].model.num_params() == pytest.approx(BLOOM_PARAMS, rel=1e-3)
    named = {"B6": 195e9, "B10": 184e9, "B13": 178e9, "B17": 203e9}  # the sweep's own size labels
    for row_id, params in named.items():
        assert by_id[row_id].model.num_params() == pytest.approx(params, rel=0.01), row_id


def test_every_layout_spans_its_gpus_with_the_published_batch(rows):
    assert sum(r.use == Use.HELD_OUT for r in rows) >= 5
    for row in rows:
        layout = row.layout.resolve(row.num_gpus)
        assert layout.dp * layout.tp * layout.pp == row.num_gpus, row.row_id
        assert layout.dp * row.training.micro_batch * row.training.grad_accum == 2048, row.row_id


def test_every_row_is_predicted_on_jean_zays_network_under_its_stack(rows):
    for c in compare_megatron_deepspeed(rows):
        assert c.plan.network == NETWORK and c.plan.stack == "megatron-deepspeed"
        assert math.isfinite(c.error) and c.plan.estimate.time.step_s > 0


def test_the_layouts_that_ran_fit_and_the_one_that_ran_out_of_memory_does_not(rows):
    """S2's 184B at TP 4 x PP 6 x DP 16 ran out of memory (chronicles-prequel.md:919-920, so the team
    ran TP 8 x PP 6); every layout the team timed fit. A regression test of the two terms looked
    for on that row (the BF16 optimizer's bf16 gradients beside its fp32 accumulator, the unsplit
    block inputs without sequence parallelism), not a validation of them."""
    catalog = load_catalog()
    assert all(c.plan.estimate.feasible for c in compare_megatron_deepspeed(rows, catalog))
    b10 = next(r for r in rows if r.row_id == "B10")
    oom = replace(
        b10,
        layout=Layout(dp_shard=16, tp=4, pp=6, sharding=Sharding.ZERO1),
        training=b10.training.model_copy(update={"grad_accum": 2048 // (16 * b10.training.micro_batch)}),
    )
    assert not predict(oom, catalog).plan.estimate.feasible


def test_the_lucie_sweeps_logged_tflops_follow_from_its_rows(lucie_rows):
    """The sweep's TFLOPs are Megatron-DeepSpeed's formula over the logged samples per second
    (without recompute: 72 B s l h^2 (1 + s / 6h + V / 16 l h)): vocabulary and batch as read."""
    with LUCIE_ROWS.open(newline="", encoding="utf-8") as handle:
        raw = {r["row_id"]: r for r in csv.DictReader(handle)}
    plain = [r for r in lucie_rows if raw[r.row_id]["recompute"] == "none"]
    assert len(plain) == len(lucie_rows) - 1
    for row in plain:
        m, s = row.model, LUCIE_SEQ_LEN
        batch = row.layout.resolve(row.num_gpus).dp * row.training.micro_batch * row.training.grad_accum
        shape = 1 + s / (6 * m.hidden_size) + m.vocab_size / (16 * m.num_layers * m.hidden_size)
        flops = 72 * batch * s * m.num_layers * m.hidden_size**2 * shape
        assert batch == int(raw[row.row_id]["global_batch"]), row.row_id
        tflops = flops / (row.measured_step_s * row.num_gpus * 1e12)
        assert tflops == pytest.approx(float(raw[row.row_id]["reported_tflops"]), rel=2e-4), row.row_id


def test_the_lucie_layouts_span_their_gpus_and_fit(lucie_rows):
    assert len(lucie_rows) == 44 and sum(r.use == Use.HELD_OUT for r in lucie_rows) == 40
    for c in compare_megatron_deepspeed(lucie_rows):
        layout = c.row.layout.resolve(c.row.num_gpus)
        assert layout.dp * layout.tp * layout.pp == c.row.num_gpus, c.row.row_id
        assert c.plan.estimate.feasible and c.plan.network == NETWORK, c.row.row_id


def test_the_blocking_host_time_is_the_grid_point_the_single_node_rows_choose(lucie_rows):
    """MEGATRON_DEEPSPEED_HOST_S_PER_BLOCK is fitted on the sweep's one-node rows alone (no network
    in them): of the grid 6 / 8 / 10 / 12 ms it gives them the least mean absolute error."""
    fitted = [r for r in lucie_rows if r.use == Use.FITTED]
    assert fitted and all(r.num_gpus == 8 for r in fitted)
    catalog = load_catalog()

    def mean_abs(per_block: float) -> float:
        errors = [
            predict(replace(r, settings=r.settings.but(host_overhead_per_block_s=per_block)), catalog).error
            for r in fitted
        ]
        return sum(map(abs, errors)) / len(errors)

    grid = (6e-3, 8e-3, 10e-3, 12e-3)
    assert min(grid, key=mean_abs) == MEGATRON_DEEPSPEED_HOST_S_PER_BLOCK
