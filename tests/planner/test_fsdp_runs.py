"""Held-out FSDP rows (data/validation/fsdp_runs.csv, validation/fsdp_runs.py)."""

from __future__ import annotations

import collections
import csv

import pytest

from planner.catalog.hardware import load_catalog
from planner.layout import ActivationCheckpointing, Implementation, Precision, Sharding
from validation.fsdp_runs import (
    DEFAULT_FSDP_RUNS,
    GENERATIONS,
    SOURCE_STACKS,
    STACK_PROFILES,
    _model,
    compare_fsdp_runs,
    grand_teton_h100,
    predict_fsdp_run,
    read_fsdp_runs,
)

CATALOG = load_catalog()
RUNS = read_fsdp_runs()


def test_every_row_reads_with_a_profile_and_a_generation():
    with DEFAULT_FSDP_RUNS.open(newline="", encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    assert len(RUNS) == len(raw) == 258
    assert collections.Counter(r.source for r in RUNS) == {
        "torchtitan": 17,
        "fms-fsdp": 8,
        "llm-foundry": 209,
        "ml-engineering": 14,
        "accelerate": 3,
        "accelerate-deepspeed": 1,
        "fms-acceleration": 4,
        "torchao": 2,
    }
    for run in RUNS:
        assert (run.source, run.attention) in STACK_PROFILES
        assert run.source in SOURCE_STACKS
        assert run.gpu in GENERATIONS
        assert run.layout.resolve(run.num_gpus).world_size == run.num_gpus
        assert run.measured_tokens_per_s_per_gpu > 0
        assert run.locator


def test_rows_read_as_the_sources_state():
    first = RUNS[0]  # torchtitan Table 1 'FSDP': Llama 3.1 8B, 8 GPUs, 2 x 8192, selective AC
    assert (first.model.name, first.num_gpus, first.training.micro_batch, first.training.seq_len) == (
        "llama3.1-8b",
        8,
        2,
        8192,
    )
    assert first.training.activation_checkpointing == ActivationCheckpointing.SELECTIVE
    assert first.measured_tokens_per_s_per_gpu == 5762
    cp8 = next(r for r in RUNS if r.layout.cp == 8)
    assert cp8.training.seq_len == 262144 and cp8.training.precision == Precision.FP8 and cp8.training.compile
    hsdp = next(r for r in RUNS if r.source == "fms-fsdp" and r.gpu == "a100-80gb-sxm")
    assert hsdp.layout.dp_replicate == 16 and hsdp.layout.dp_shard == 8


@pytest.mark.parametrize(
    ("name", "seq", "published"),
    # llm-foundry's NumParams column: MPT-7B at 2048 and 65536 tokens (learned positions), 70B.
    [("mpt-7b", 2048, 6658859008), ("mpt-7b", 65536, 6918905856), ("mpt-70b", 2048, 64862437376)],
)
def test_mpt_models_match_the_published_parameter_counts(name, seq, published):
    assert abs(_model(name, seq).num_params() / published - 1.0) < 1e-3


def test_grand_teton_h100_is_the_sxm_part_at_500_w_on_hbm2e():
    sxm, tt = CATALOG.gpu("h100-sxm"), grand_teton_h100(CATALOG)
    clock = tt.peak_flops_per_s["bf16"] / sxm.peak_flops_per_s["bf16"]
    nvl = CATALOG.gpu("h100-nvl").peak_flops_per_s["bf16"] / sxm.peak_flops_per_s["bf16"]
    assert clock == pytest.approx((1.0 + nvl) / 2.0)
    assert tt.rates.gemm_flops_per_s["bf16"] == pytest.approx(sxm.rates.gemm_flops_per_s["bf16"] * clock)
    assert tt.hbm_bandwidth_bytes_per_s == 2.4e12 and tt.memory_bytes > sxm.memory_bytes
    # The same run predicts slower on it than on the catalog's 700 W SXM part.
    run = RUNS[0]
    on_tt = predict_fsdp_run(run, CATALOG).predicted_tokens_per_s_per_gpu
    sxm_run = type(run)(**{**run.__dict__, "gpu": "h100-sxm"})
    assert on_tt < predict_fsdp_run(sxm_run, CATALOG).predicted_tokens_per_s_per_gpu


def test_triton_rows_predict_slower_attention_than_flash_rows():
    triton = next(r for r in RUNS if r.attention == "triton" and r.gpu == "h100-sxm")
    flash = type(triton)(**{**triton.__dict__, "attention": "flash"})
    slow, fast = predict_fsdp_run(triton, CATALOG), predict_fsdp_run(flash, CATALOG)
    assert slow.breakdown["attention"] > fast.breakdown["attention"]


def test_errors_are_finite_and_signed():
    comparisons = compare_fsdp_runs(RUNS[:25], CATALOG)
    errors = [c.error for c in comparisons]
    assert all(-1.0 < e < 2.0 for e in errors)
    assert any(e > 0 for e in errors) and any(e < 0 for e in errors)


def test_the_deepspeed_pair_is_one_recipe_on_two_gpus():
    """ml-engineering's H200 / B200 decomposition run: the same job on both, HF modules, full logits."""
    h200, b200 = (r for r in RUNS if r.source == "ml-engineering" and r.attention == "fa3-fa4")
    assert (h200.gpu, b200.gpu) == ("h200-sxm", "b200")
    assert h200.layout == b200.layout and h200.training == b200.training
    assert h200.layout.sharding == Sharding.ZERO2 and h200.training.impl == Implementation.HF
    assert h200.settings.loss_chunk_tokens == 0
    # tokens/s = the published total TFLOP/s over the script's causal FLOPs per token
    assert (h200.measured_tokens_per_s_per_gpu, b200.measured_tokens_per_s_per_gpu) == (8957, 15115)


def test_the_deepspeed_sweep_rows_offload_the_optimizer_and_chunk_the_loss():
    """ml-engineering's sequence sweep: ZeRO-3, full AC, CPU AdamW offload and Liger's fused
    linear cross-entropy (no full logits), the same job at six lengths on each GPU."""
    sweep = [r for r in RUNS if r.attention == "fa3-fa4+liger"]
    assert len(sweep) == 12 and {r.gpu for r in sweep} == {"h200-sxm", "b200"}
    assert {r.training.seq_len for r in sweep} == {8192, 32768, 65536, 131072, 196608, 262144}
    for r in sweep:
        assert r.training.offload and r.layout.sharding == Sharding.FSDP
        assert r.training.activation_checkpointing == ActivationCheckpointing.FULL
        assert r.settings.loss_chunk_tokens > 0 and str(SOURCE_STACKS[r.source]) == "deepspeed"
    # offload on: the prediction carries the host optimizer step; off, it does not
    row = sweep[0]
    off = type(row)(**{**row.__dict__, "training": row.training.model_copy(update={"offload": False})})
    assert predict_fsdp_run(row, CATALOG).breakdown["optimizer"] > predict_fsdp_run(off, CATALOG).breakdown["optimizer"]


def test_llm_foundrys_fused_loss_holds_two_bf16_copies_of_the_logits():
    """flash-attn's Triton cross-entropy saves the bf16 logits and writes the gradient into an
    empty_like of them: 4 bytes per logit, not the 12 of an fp32 log-softmax (torchtitan's)."""
    from planner.model.candidates import single
    from planner.model.memory import logits_loss_bytes
    from planner.model.stacks import STACK_SETTINGS, Stack

    run = next(r for r in RUNS if r.source == "llm-foundry")
    c = single(CATALOG.gpu(run.gpu), run.layout.resolve(run.num_gpus), run.training, gpus_per_node=8,
               network_bandwidth=50e9)  # fmt: skip
    foundry = logits_loss_bytes(run.model, c, STACK_SETTINGS[Stack.LLM_FOUNDRY])[0]
    titan = logits_loss_bytes(run.model, c, STACK_SETTINGS[Stack.TORCHTITAN])[0]
    tokens = run.training.micro_batch * run.training.seq_len
    assert foundry == pytest.approx(4.0 * tokens * run.model.vocab_size)
    assert titan == pytest.approx(3 * foundry)


def test_the_llm_foundry_runs_that_ran_fit():
    """Every benchmark row ran, so the memory model should say it fits. With the fused loss's 4
    bytes per logit 195 of 209 do (MPT-30B on 8 GPUs and MPT-13B on 40 GB, the states' margin,
    are the rest); at 12 bytes per logit 94 did. Nothing was fitted on these rows."""
    rows = [r for r in compare_fsdp_runs([r for r in RUNS if r.source == "llm-foundry"], CATALOG)]
    fit = sum(r.fits for r in rows)
    assert len(rows) == 209 and fit >= 190
    big = {r.run.model.name for r in rows if not r.fits}
    assert big <= {"mpt-30b", "mpt-13b"}


def test_the_rows_that_print_memory_are_scored_on_it():
    """torchtitan's files print the reserved peak (its `memory:` log line): 13 rows carry it, each
    scored against the memory model's reserved peak; the others have none to score."""
    rows = compare_fsdp_runs([r for r in RUNS if r.source == "torchtitan"], CATALOG)
    scored = {c.run.row_id: c for c in rows if c.memory_error is not None}
    assert sorted(scored) == [*range(1, 12), 16, 17]
    first = scored[1]
    assert first.run.measured_reserved_gib == 82.4
    assert first.memory_error == pytest.approx(first.predicted_reserved_gib / 82.4 - 1)
    assert all(c.memory_error is None for c in compare_fsdp_runs([r for r in RUNS if r.row_id == 250], CATALOG))


def test_torchtitans_vanilla_tensor_parallel_hides_none_of_its_collectives():
    """torchtitan's TP is DTensor's plan (apply_tp at 9dec370): each sequence-parallel all-gather
    and reduce-scatter is waited on by the op that reads it, so a vanilla-TP row (Table 4 '2D',
    the asyncTP file's 'Vanilla TP' column) exposes all of its TP traffic, more than Megatron's
    unbuffered share (0.3, the default until session 52) leaves, and its step is that much longer."""
    from planner.model.stack_profiles import UNBUFFERED_TP_COMM_OVERLAP

    run = next(r for r in RUNS if r.source == "torchtitan" and r.layout.tp > 1)
    exposed = predict_fsdp_run(run, CATALOG)
    shared = predict_fsdp_run(run, CATALOG, run.settings.but(tp_comm_overlap=UNBUFFERED_TP_COMM_OVERLAP))
    assert exposed.breakdown["tp_comm"] > 1.2 * shared.breakdown["tp_comm"]
    assert exposed.predicted_tokens_per_s_per_gpu < shared.predicted_tokens_per_s_per_gpu
