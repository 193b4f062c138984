"""BigScience's Megatron-DeepSpeed rows (validation/megatron_deepspeed_runs.py): the reader is checked,
not the model's error (bench/validate_megatron_deepspeed.py prints that). Each row's logged TFLOP/s
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
from validation.megatron_deepspeed_runs import (
    DEFAULT_ROWS,
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
    return read_megatron_deepspeed_rows()


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
