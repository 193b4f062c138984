"""The native decoder's sliding window: banded SDPA equals the dense-mask reference and never
builds or saves a seq x seq tensor (trial s37: the dense [seq, seq] mask was 16 GiB at 128K)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from trainer.sliding_window import sliding_window_attention


def _dense_reference(q, k, v, window):
    s = q.shape[2]
    i, j = torch.arange(s)[:, None], torch.arange(s)[None, :]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=(j <= i) & (j > i - window), enable_gqa=True)


@pytest.mark.parametrize(
    "batch, heads, kv_heads, seq, window",
    [(2, 4, 2, 37, 8), (1, 4, 4, 16, 8), (2, 2, 1, 9, 8), (1, 2, 2, 64, 16), (3, 4, 2, 50, 7)],
)
def test_banded_attention_equals_the_dense_mask(batch, heads, kv_heads, seq, window):
    torch.manual_seed(seq)
    q = torch.randn(batch, heads, seq, 8, dtype=torch.float64, requires_grad=True)
    k, v = (torch.randn(batch, kv_heads, seq, 8, dtype=torch.float64, requires_grad=True) for _ in range(2))
    grad = torch.randn(batch, heads, seq, 8, dtype=torch.float64)
    got = sliding_window_attention(q, k, v, window, gqa=kv_heads != heads)
    want = _dense_reference(q, k, v, window)
    torch.testing.assert_close(got, want)
    for a, b in zip(torch.autograd.grad(got, (q, k, v), grad), torch.autograd.grad(want, (q, k, v), grad), strict=True):
        torch.testing.assert_close(a, b)


def test_nothing_saved_grows_as_the_square_of_the_sequence():
    """Autograd keeps the bands (2 window keys a query), never a seq x seq tensor."""
    seq, window = 512, 16
    q = torch.randn(1, 2, seq, 8, requires_grad=True)
    k, v = (torch.randn(1, 2, seq, 8, requires_grad=True) for _ in range(2))
    sizes: list[int] = []

    def pack(t):
        sizes.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        sliding_window_attention(q, k, v, window, gqa=False).sum().backward()
    assert sizes and max(sizes) < seq * seq


def _saved_bytes(fn) -> int:
    storages: dict[int, int] = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return sum(storages.values())


@pytest.mark.parametrize("batch, seq", [(1, 1024), (2, 1024), (1, 1000), (2, 1000)])
def test_the_planner_counts_what_the_bands_save(batch, seq):
    """``band_saved_bytes_per_token`` is what autograd keeps beyond plain causal SDPA (q, k, v,
    output, LSE), less the one shared mask and the LSE's padding, within 2 %."""
    from planner.catalog.hardware import load_catalog
    from planner.catalog.models import get_preset
    from planner.layout import Layout, TrainingConfig
    from planner.model.candidates import single
    from planner.model.saved_bytes import band_saved_bytes_per_token
    from planner.model.settings import DEFAULT_SETTINGS

    heads, kv_heads, dim, window = 8, 2, 16, 128
    model = get_preset("mistral-7b-v0.1").model_copy(
        update={"num_heads": heads, "num_kv_heads": kv_heads, "head_dim": dim, "sliding_window": window}
    )
    gpu = load_catalog().gpu("h100-sxm")
    training = TrainingConfig(seq_len=seq, micro_batch=batch)
    c = single(gpu, Layout().resolve(1), training, gpus_per_node=8, network_bandwidth=1e9)
    predicted = float(band_saved_bytes_per_token(model, c, DEFAULT_SETTINGS)[0]) * batch * seq
    q = torch.randn(batch, heads, seq, dim, dtype=torch.bfloat16)
    k, v = (torch.randn(batch, kv_heads, seq, dim, dtype=torch.bfloat16) for _ in range(2))
    for t in (q, k, v):
        t.requires_grad_(True)
    plain = _saved_bytes(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
    banded = _saved_bytes(lambda: sliding_window_attention(q, k, v, window, gqa=True))
    mask = 2 * window * window * 2
    assert banded - plain - mask == pytest.approx(predicted, rel=0.02, abs=16 * 1024)


def test_trainplans_banded_window_is_timed_as_it_computes():
    """Trial s37: Mistral 7B v0.1 at 128K on trainplan's stack was timed as a window-skipping
    kernel (attention 2.1 s) and its emitted job would run the dense mask. The band computes 2w
    keys a query; a stack whose kernel skips the tiles (torchtitan) is timed at the window's own."""
    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import Layout, TrainingConfig
    from planner.model.attended_keys import band_window_keys, window_keys
    from planner.model.stacks import Stack

    model, training = get_preset("mistral-7b-v0.1"), TrainingConfig(seq_len=131072, activation_checkpointing="full")

    def attention_s(stack: Stack) -> float:
        plan = build_plan(model, "h100-sxm", Layout(), training, num_gpus=8, stack=stack)
        return plan.estimate.time.breakdown_s.attention

    ratio = float(band_window_keys(4096.0, 131072, True) / window_keys(4096.0, 131072, True))
    assert ratio == pytest.approx(1.98, abs=0.01)
    assert attention_s(Stack.TRAINPLAN) == pytest.approx(ratio * attention_s(Stack.TORCHTITAN), rel=1e-6)


def test_transformers_masked_window_is_timed_as_the_whole_square():
    """transformers' SDPA path passes a [s, s] mask with a window shorter than the sequence: every
    tile is computed, s keys a query, twice the causal attention of the same block without a window."""
    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import Layout, TrainingConfig

    training = TrainingConfig(seq_len=32768, activation_checkpointing="full", impl="hf")

    def attention_s(name: str) -> float:
        plan = build_plan(get_preset(name), "h100-sxm", Layout(), training, num_gpus=8)
        return plan.estimate.time.breakdown_s.attention

    assert attention_s("mistral-7b-v0.1") == pytest.approx(2.0 * attention_s("mistral-7b"), rel=1e-6)


def test_the_band_counts_the_padded_last_block():
    """Review s37: Phi-3-mini's 2,047-token window at 4,096 tokens pads the sequence to 3 blocks;
    the trainer computes 2 later blocks of w queries x 2w keys, which the count left out."""
    from planner.model.attended_keys import band_window_keys

    w, s = 2047.0, 4096.0
    computed = w * w / 2 + 2 * w * 2 * w  # the first block causally, then two padded later blocks
    assert float(band_window_keys(w, s, True)) == pytest.approx(computed / s)
    assert float(band_window_keys(4096.0, 131072.0, True)) == pytest.approx((4096 * 2048 + 31 * 4096 * 8192) / 131072)


def test_a_kernel_named_outside_sdpa_skips_the_window_on_hf_modules():
    """Review s37: transformers' flash_attention_2 (--attention flash2) passes window_size and skips
    the tiles outside the window; it was timed as the masked square."""
    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import Layout, TrainingConfig
    from planner.model.attention_kernels import AttentionKernel

    training = TrainingConfig(seq_len=32768, activation_checkpointing="full", impl="hf")

    def attention_s(name: str, kernel: AttentionKernel) -> float:
        plan = build_plan(get_preset(name), "h100-sxm", Layout(), training, num_gpus=8, attention=kernel)
        return plan.estimate.time.breakdown_s.attention

    windowed, full = (
        attention_s("mistral-7b-v0.1", AttentionKernel.FLASH2),
        attention_s("mistral-7b", AttentionKernel.FLASH2),
    )
    assert windowed < 0.3 * full  # the window's keys: 4,096 - 4,096^2 / 65,536 of 16,384 a query
