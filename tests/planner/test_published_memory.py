"""The memory model against published runs (issue #10): runs that ran must fit, runs that ran
out of memory must not.

Every readable row of data/calibration/published_runs.csv ran, so the memory model's verdict on
its published layout (``PublishedComparison.fits``, each row under its stack profile and recipe)
should be "fits". The one OOM the sources report (NeMo's long-sequence table, LLAMA3-8B on B200
at 1M tokens without context parallelism, row 374's note) must stay infeasible.
"""

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing as AC
from planner.layout import Layout, Precision, Sharding, TrainingConfig
from planner.model.candidates import single
from planner.model.estimate import estimate
from planner.model.memory import activation_bytes, block_activation_bytes_per_token, fits, memory
from planner.model.pipeline import pipeline_ranks
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS, TE_FUSED_CE_BYTES_PER_LOGIT
from validation.published import STACK_SETTINGS, compare_published, predict, published_candidates, recipe_settings
from validation.published_rows import read_published_runs

# docs/validation.md: 88 of the 96 readable rows fit; the rest are named there (Meta's own stack
# for S10, S2's ZeRO-3 row 230 and the 405B pp16 vpp4 GB200 rows 0.1 GiB over the fit rule's
# headroom). Issue #10 asks for 90 %.
FEASIBLE_FRACTION = 0.90


@pytest.fixture(scope="module")
def comparisons():
    return compare_published(read_published_runs()[0])


def test_published_runs_that_ran_are_judged_to_fit(comparisons):
    fitting = sum(c.fits for c in comparisons)
    assert fitting / len(comparisons) >= FEASIBLE_FRACTION, [c.run.row_id for c in comparisons if not c.fits]


def test_every_megatron_lm_paper_run_fits(comparisons):
    """Narayanan et al. 2021 (S2) and Korthikanti et al. 2022 (S4) on A100-80GB, 175B-1T
    included: they fit only with the in-place vocabulary-parallel loss, the contiguous gradient
    buffer and sequence-parallel inputs kept as 1/tp shards."""
    megatron = [c for c in comparisons if c.run.source in ("S2", "S4") and c.run.stack.value == "megatron-lm"]
    assert megatron and all(c.fits for c in megatron), [c.run.row_id for c in megatron if not c.fits]


def test_nemotron_340b_fits_with_its_nemo_launcher_recipe(comparisons):
    """NeMo 24.07's Nemotron-340B row (128 H100, TP 8 x PP 8 x VPP 12, dp 2) ran with the
    launcher's nemotron_340b.yaml under apex's DistributedFusedAdam: bf16 gradient buffers
    (``grad_sync_dtype: bf16``) and 16-bit master remainders. Under Megatron-Core's fp32
    gradients and master weights it does not fit, nor with the bf16 gradients alone."""
    row = next(c for c in comparisons if c.run.row_id == 355)
    assert row.run.model_name == "Nemotron-340B" and row.fits
    profile, catalog = STACK_SETTINGS[row.run.stack], load_catalog()
    assert not predict(row.run, catalog, profile).fits
    assert not predict(row.run, catalog, profile.but(grad_bytes=2.0)).fits


LLAMA3_8B = get_preset("llama3-8b").model_copy(update={"max_seq_len": 1 << 20})


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_nemo_long_sequence_oom_without_context_parallelism_stays_infeasible(tp):
    """NeMo 25.04 long-sequence table, LLAMA3-8B FP8 on DGX-B200 at 1,048,576 tokens: "Best
    no-CP config: n/a (OOM)". Its rows state no recompute (read as none, as row 374 is) and the
    no-CP layout is not given: no tensor-parallel layout within a node fits."""
    layout = Layout(dp_shard=8 // tp, tp=tp, cp=1, sharding=Sharding.ZERO1)
    training = TrainingConfig(
        seq_len=1 << 20, micro_batch=1, grad_accum=1, activation_checkpointing=AC.NONE, precision=Precision.FP8
    )
    result = estimate(LLAMA3_8B, "b200", layout, training, num_gpus=8, settings=MEGATRON_CORE_SETTINGS)
    assert not result.feasible


def _llama_block_bytes_per_token(settings, precision):
    catalog = load_catalog()
    gpu = catalog.gpu("h100-sxm")
    c = single(
        gpu,
        Layout().resolve(1),
        TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=1, precision=precision),
        gpus_per_node=8,
        network_bandwidth=catalog.network(gpu.default_network).bandwidth_bytes_per_s_per_gpu,
        num_gpus=1,
    )
    return float(sum(block_activation_bytes_per_token(LLAMA3_8B, c, settings).values())[0])


def test_megatron_core_llama_block_saves_what_transformer_engine_keeps():
    """Per token of a Megatron-Core Llama block on TransformerEngine (bytes): each fused
    LayerNormLinear keeps its input (2h) and its FP8 ln_out (h); the attention keeps q, k, v and
    its output in bf16 (2q + 4kv + 2q) plus fp32 LSE (4 heads), linear_proj an FP8 copy of its
    input (q); the fused SwiGLU its input, gate and up (4f), fc2 its FP8 input (f). In bf16 the
    linear inputs are 2 bytes and linear_proj shares the attention output."""
    m = LLAMA3_8B
    h, q, kv, f, heads = m.hidden_size, m.q_size, m.kv_size, m.ffn_hidden_size, m.num_heads
    lse = 4 * heads
    fp8 = _llama_block_bytes_per_token(MEGATRON_CORE_SETTINGS, Precision.FP8)
    assert fp8 == 2 * (2 * h + h) + (2 * q + 4 * kv + 2 * q + lse + q) + (4 * f + f)
    bf16 = _llama_block_bytes_per_token(MEGATRON_CORE_SETTINGS, Precision.BF16)
    assert bf16 == 2 * (2 * h + 2 * h) + (2 * q + 4 * kv + 2 * q + lse) + (4 * f + 2 * f)


def test_megatron_fsdp_gb200_rows_fit_only_with_their_recipes_offload(comparisons):
    """The Megatron-FSDP GB200 recipes keep 40 of the 70B's 80 blocks (31 of the 405B's 126) on
    the device: the other blocks' activations leave the device, and only the kept share counts."""
    rows = [c for c in comparisons if c.run.source == "S14" and c.run.layout.sharding == Sharding.FSDP]
    offloading = [c for c in rows if c.run.gpu_id == "gb200"]
    assert len(offloading) == 5 and all(c.fits for c in offloading)
    for c in offloading:
        settings = recipe_settings(c.run, MEGATRON_CORE_SETTINGS)
        cand = published_candidates(c.run, load_catalog())
        layers = c.run.model.num_layers

        def activations(offloaded, run=c.run, cand=cand, settings=settings, layers=layers):
            rank = pipeline_ranks(layers, cand)[0]  # pp 1: the one rank, embedding and head
            return activation_bytes(run.model, cand, settings.but(offloaded_activation_blocks=offloaded), rank)[0]

        resident = layers - settings.offloaded_activation_blocks
        assert 0 < resident < layers
        # The final norm's saved input (what is left with every block offloaded) stays.
        norm = activations(layers)
        assert activations(settings.offloaded_activation_blocks) - norm == pytest.approx(
            (activations(0) - norm) * resident / layers
        )
        if c.run.model_name == "LLAMA3_70B":  # without the offload the 70B would not fit
            everything = memory(c.run.model, cand, settings.but(offloaded_activation_blocks=0))
            assert not fits(everything.device_total, cand.memory_bytes, settings.memory_headroom)[0]


def test_transformer_engine_loss_holds_only_the_bf16_logits():
    """TE's fused cross-entropy writes its gradient into the bf16 logits: 2 bytes per logit,
    a third of Megatron's own vocabulary-parallel loss (an fp32 copy beside them)."""
    catalog = load_catalog()
    gpu = catalog.gpu("b200")
    training = TrainingConfig(seq_len=8192, micro_batch=2, grad_accum=1, precision=Precision.FP8)
    c = single(
        gpu,
        Layout().resolve(8),
        training,
        gpus_per_node=8,
        network_bandwidth=catalog.network(gpu.default_network).bandwidth_bytes_per_s_per_gpu,
        num_gpus=8,
    )
    te = memory(LLAMA3_8B, c, MEGATRON_CORE_SETTINGS.but(loss_bytes_per_logit=TE_FUSED_CE_BYTES_PER_LOGIT))
    own = memory(LLAMA3_8B, c, MEGATRON_CORE_SETTINGS)
    logits = 2 * 8192 * LLAMA3_8B.vocab_size
    assert float(te.logits_loss[0]) == pytest.approx(2.0 * logits)
    assert float(own.logits_loss[0]) == pytest.approx(6.0 * logits)


@pytest.mark.parametrize("stack_settings", ["megatron", "fsdp2"])
def test_a_persistent_gradient_buffer_is_counted_at_one_micro_batch(stack_settings):
    """Trial s34: at grad_accum 1 a Megatron-Core layout left its gradient buffer out of the peak
    at the start of backward (56.2 GiB, "fits") while the same layout at grad_accum 2 needed
    76.2 GiB (does not fit). Megatron's buffer is allocated once and always there; FSDP2 creates
    gradients in backward, so its peak at one micro-batch is lower."""
    from planner.model.settings import DEFAULT_SETTINGS

    settings = MEGATRON_CORE_SETTINGS if stack_settings == "megatron" else DEFAULT_SETTINGS
    model = get_preset("llama3-8b")
    peaks = {}
    for accum in (1, 2):
        training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=accum, activation_checkpointing=AC.NONE)
        layout = Layout(dp_shard=8, sharding=Sharding.ZERO1)
        peaks[accum] = estimate(model, "h100-sxm", layout, training, num_gpus=8, settings=settings).memory
    if stack_settings == "megatron":
        assert peaks[1].peak_gib == pytest.approx(peaks[2].peak_gib)
        assert peaks[1].breakdown_gib.activations > 10.0 and peaks[1].breakdown_gib.grads > 25.0
    else:
        assert peaks[1].peak_gib < peaks[2].peak_gib - 5.0
