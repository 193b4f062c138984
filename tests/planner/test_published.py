"""The analytic model against published large-scale training runs (data/calibration/published_runs.csv).

Target (issue #2): tokens/s within 10 % on comparable published runs, counted in the source's
FLOP convention. The reader is checked row by row on known runs, the FLOP conventions against
the sources' own ratios, and the headline error on the comparable set (docs/validation.md).
"""

import pytest

from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing as AC
from planner.layout import Layout, Precision, Sharding, TrainingConfig
from planner.model.estimate import estimate
from validation.flop_conventions import FlopConvention, megatron_eq3_flops_per_token
from validation.published import compare_published, mean_abs_error
from validation.published_rows import (
    HELD_OUT_GPU_IDS,
    PARAM_COUNT_TOLERANCE,
    SkipReason,
    Stack,
    flops_per_token,
    gpu_id_for,
    read_published_runs,
)

# Issue #2 asks for 10 %; the comparable set sits at ~6 %, so a regression of a few points in
# any one source still fails here before it reaches users.
HEADLINE_MEAN_ERROR = 0.10
# No comparable row may be off by more than this (the worst today, S3's smallest model, is ~28 %).
WORST_ROW_ERROR = 0.35


@pytest.fixture(scope="module")
def read():
    return read_published_runs()


@pytest.fixture(scope="module")
def runs(read):
    return {run.row_id: run for run in read[0]}


@pytest.fixture(scope="module")
def comparisons(read):
    return compare_published(read[0])


def test_every_row_is_read_or_skipped_with_a_reason(read):
    runs, skipped = read
    assert len(runs) + len(skipped) == 139
    reasons = {s.row_id: s.reason for s in skipped}
    assert reasons[303] == SkipReason.TPU
    assert reasons[375] == SkipReason.GPU_NOT_IN_CATALOG  # GB300
    assert reasons[380] == SkipReason.PRECISION_NOT_MODELLED  # NVFP4 on GB200
    assert reasons[367] == SkipReason.NO_LAYOUT  # B200 table with inconsistent layout
    assert reasons[346] == SkipReason.NO_MODEL_DIMS  # GPT3-5B, dimensions not published


@pytest.mark.parametrize(
    "gpu_type, gpu_id",
    [
        ("A100-SXM4-80GB (Selene DGX A100)", "a100-80gb-sxm"),
        ("H100-SXM5-80GB (DGX H100)", "h100-sxm"),
        ("B200 (DGX-B200)", "b200"),
        ("GB200 (DGX-GB200 NVL72)", "gb200"),
        ("GB300 (DGX-GB300 NVL72)", None),
        ("TPU v4 (NOT a GPU)", None),
        ("", None),
    ],
)
def test_gpu_mapping(gpu_type, gpu_id):
    assert gpu_id_for(gpu_type) == gpu_id


def test_gb300_rows_are_read_only_as_a_held_out_check():
    """S14's GB300 rows stay out of the fitted set (validation/heldout.py reads read_published_runs'
    default) and are read alone for bench/validate_published.py --held-out-gpus."""
    runs, _ = read_published_runs(gpu_ids=HELD_OUT_GPU_IDS)
    held = [r for r in runs if r.gpu_id == "gb300"]
    assert len(held) == 13 and {r.source for r in held} == {"S14"}
    assert all(r.gpu_id in (None, "gb300") for r in runs)  # nothing else is read as a GPU
    assert all(r.gpu_id != "gb300" for r in read_published_runs()[0])


def test_layouts_multiply_to_the_gpu_count_and_models_match_their_published_size(runs):
    for run in runs.values():
        layout = run.layout.resolve(run.num_gpus)
        assert layout.dp * layout.tp * layout.pp * layout.cp == run.num_gpus, run.row_id
        if run.published_params is not None:
            assert run.model.num_params() == pytest.approx(run.published_params, rel=PARAM_COUNT_TOLERANCE)


def test_megatron_gpt_row(runs):
    """S2 Table 1, 18.4B: GPT architecture, plain Megatron DP, full recompute, batch 1024 over dp 32."""
    run = runs[220]
    assert (run.model.mlp, run.model.norm, run.model.position) == ("gelu", "layernorm", "learned")
    assert run.model.num_params() == pytest.approx(18.4e9, rel=0.01)
    assert run.layout.sharding == Sharding.NONE and run.layout.dp_replicate == 32 and run.layout.tp == 8
    assert run.training.activation_checkpointing == AC.FULL
    assert run.training.micro_batch == 1 and not run.micro_batch_published
    assert run.training.grad_accum == 32
    assert run.stack == Stack.MEGATRON_LM and run.convention == FlopConvention.MEGATRON_HARDWARE


def test_llama_rows_use_presets_and_megatron_sharding(runs):
    fsdp = runs[418]  # Llama3-8B, 8 x H100, Megatron-FSDP, FP8
    assert fsdp.model == get_preset("llama3-8b")
    assert fsdp.gpu_id == "h100-sxm" and fsdp.training.precision == Precision.FP8
    assert fsdp.layout.sharding == Sharding.FSDP and fsdp.layout.dp_shard == 8
    assert fsdp.training.grad_accum == 16
    zero1 = runs[388]  # Llama3-70B, distributed optimizer, interleaved
    assert zero1.layout.sharding == Sharding.ZERO1
    assert (zero1.layout.tp, zero1.layout.pp, zero1.layout.dp_shard, zero1.layout.vpp) == (4, 8, 2, 5)
    assert runs[423].gpu_id == "gb200" and runs[423].stack == Stack.MEGATRON_CORE


def test_nemotron4_340b_report_rows_load_with_the_stated_layout(runs, comparisons):
    """S15, the Nemotron-4 340B report's Table 2: TP 8 x PP 12 (vpp 8 assumed) x DP 16 / 32 / 64 on
    DGX H100, bf16, distributed optimizer, micro-batch 1, batch 768 / 1,536 / 2,304 x 4096, read as
    tokens/s = batch x 4096 / iteration time (10.3 / 10.3 / 8.0 s); scored, held out."""
    table = {429: (1536, 16, 48, 768, 10.3), 430: (3072, 32, 48, 1536, 10.3), 431: (6144, 64, 36, 2304, 8.0)}
    scored = {c.run.row_id: c for c in comparisons}
    assert {r.row_id for r in runs.values() if r.source == "S15"} == set(table)
    for row_id, (gpus, dp, accum, batch, step_s) in table.items():
        run = runs[row_id]
        assert run.model == get_preset("nemotron4-340b") and run.gpu_id == "h100-sxm"
        assert run.stack == Stack.MEGATRON_CORE and run.num_gpus == gpus
        layout = run.layout
        assert (layout.tp, layout.pp, layout.vpp, layout.cp, layout.dp_shard) == (8, 12, 8, 1, dp)
        assert layout.sharding == Sharding.ZERO1
        t = run.training
        assert (t.seq_len, t.micro_batch, t.grad_accum, t.precision) == (4096, 1, accum, Precision.BF16)
        assert t.activation_checkpointing == AC.NONE and run.micro_batch_published
        assert t.micro_batch * t.grad_accum * dp == batch
        assert run.measured_tokens_per_s_per_gpu == pytest.approx(batch * 4096 / step_s / gpus, rel=1e-5)
        assert run.convention == FlopConvention.MODEL_NONCAUSAL and run.inferred == ()
        assert scored[row_id].excluded is None


def test_selective_recompute_maps_to_none_and_deepspeed_rows_are_not_scored(runs, comparisons):
    assert runs[253].training.activation_checkpointing == AC.NONE
    assert "selective=attention core" in runs[253].inferred
    assert runs[227].stack == Stack.DEEPSPEED and runs[227].layout.sharding == Sharding.FSDP
    excluded = {c.run.row_id: c.excluded for c in comparisons}
    assert excluded[227] is not None and excluded[260] is not None
    assert excluded[221] == "micro-batch not published, pp > 1"
    assert excluded[217] is None  # pp = 1: the guessed micro-batch sets no bubble


def test_megatron_eq3_matches_the_paper_formula(runs):
    run = runs[224]  # GPT-310B: l=96, h=16384, V=51200, s=2048
    l, h, v, s = 96, 16384, 51200, 2048  # noqa: E741 (the paper's symbols)
    paper = 96 * l * h**2 * (1 + s / (6 * h) + v / (16 * l * h))
    assert megatron_eq3_flops_per_token(run.model, s) == pytest.approx(paper, rel=1e-3)


def test_conventions_reproduce_the_sources_own_tflops_to_tokens_ratio(runs):
    """Rows publishing both TFLOP/s and tokens/s pin the FLOPs per token their source used:
    non-causal for NeMo 24.07 (S13), causal for Megatron-Bridge (S14). The two differ by 4-13 %
    at these lengths; three S14 rows are internally inconsistent by up to 2.3 % (rounding)."""
    checked = 0
    for run in runs.values():
        if run.measured_tflops_per_gpu is None or any(i.startswith("tokens/s from") for i in run.inferred):
            continue
        ratio = run.measured_tflops_per_gpu * 1e12 / run.measured_tokens_per_s_per_gpu
        assert flops_per_token(run) == pytest.approx(ratio, rel=0.025), run.row_id
        checked += 1
    assert checked >= 40


def test_headline_error_on_comparable_runs(comparisons):
    scored = [c for c in comparisons if c.excluded is None]
    assert len(scored) >= 60
    assert {c.run.source for c in scored} >= {"S2", "S4", "S13", "S14"}
    assert mean_abs_error(scored) < HEADLINE_MEAN_ERROR
    worst = max(scored, key=lambda c: abs(c.error))
    assert abs(worst.error) < WORST_ROW_ERROR, (worst.run.row_id, round(worst.error, 3))


def test_tflops_error_equals_tokens_error(comparisons):
    for c in comparisons:
        if c.run.measured_tflops_per_gpu and c.predicted_tflops_per_gpu and "tokens/s from TFLOP/s" in c.run.inferred:
            assert c.predicted_tflops_per_gpu / c.run.measured_tflops_per_gpu - 1 == pytest.approx(c.error, abs=1e-9)


# --- mechanisms the published runs exercise --------------------------------------------------

LLAMA70B = get_preset("llama3-70b")


def _step(layout, num_gpus, model=LLAMA70B, **training):
    cfg = dict(seq_len=4096, micro_batch=1, grad_accum=16) | training
    return estimate(model, "h100-sxm", layout, TrainingConfig(**cfg), num_gpus=num_gpus).time.breakdown_s


def test_interleaving_divides_the_bubble_by_vpp():
    plain = _step(Layout(tp=8, pp=4, sharding=Sharding.ZERO1), 64)
    interleaved = _step(Layout(tp=8, pp=4, vpp=5, sharding=Sharding.ZERO1), 64)
    assert interleaved.bubble == pytest.approx(plain.bubble / 5, rel=0.02)
    with pytest.raises(ValueError, match="vpp"):
        Layout(vpp=2)


def test_context_parallel_exchange_is_per_tensor_parallel_rank():
    model = get_preset("llama3.1-8b")  # 128K context
    tp1 = _step(Layout(cp=2, sharding=Sharding.ZERO1), 16, model, seq_len=65536, grad_accum=1)
    tp4 = _step(Layout(cp=2, tp=4, sharding=Sharding.ZERO1), 64, model, seq_len=65536, grad_accum=1)
    assert tp4.cp_comm < tp1.cp_comm / 2


def test_fsdp_across_nodes_uses_every_nic_of_the_node():
    """A dense FSDP group spanning nodes drives all eight NICs per node (NCCL rail rings), so
    doubling the nodes barely moves its exposed communication."""
    model = get_preset("llama3-8b")
    one_node = _step(Layout(), 8, model, micro_batch=1, grad_accum=1)
    four_nodes = _step(Layout(), 32, model, micro_batch=1, grad_accum=1)
    assert four_nodes.dp_comm < 3 * one_node.dp_comm + 0.05
