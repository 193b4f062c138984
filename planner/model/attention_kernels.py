"""How a flash-attention kernel's speed moves with head dim and with causal sequence length.

The catalog states each kernel's rate at one shape (head dim 128, non-causal, 16K tokens:
docs/hardware.md, "Achievable rates"). Training runs other shapes; these tables give the published
share of that rate each kernel reaches at them, read from the same benchmark figures:

- Shah et al. 2024, FlashAttention-3, arXiv:2407.08608, Fig. 5 (forward, H100 80GB SXM5, BF16,
  head dim 64 / 128 / 256, causal and non-causal, 512 to 16K tokens) and Fig. 6 (backward,
  non-causal), for PyTorch SDPA's FlashAttention-2 and cuDNN's fused attention (cuDNN 9, 2024).
- For FlashAttention-2 the backward is published non-causal only: its causal share at each length
  is the non-causal one times the forward's causal / non-causal ratio at that length (ESTIMATE:
  the causal mask skips the same tiles in both passes).
- cuDNN's causal shares by length come from NVIDIA's own 2026 benchmark of cuDNN 9.19 on an H200
  (both passes measured), the release generation the catalog's cuDNN rates are from; the FA3
  paper measured a 2024 cuDNN.
- Past 16K (to 128K), both kernels' causal shares follow NVIDIA's cudnn-frontend B200 benchmark
  (FA2 keeps rising a few per cent, cuDNN peaks at 32K and falls ~5 % by 128K).
- A run on an older cuDNN (its container's, 2024: 9.1) times that generation's table, measured by
  the same NVIDIA harness in May 2024 (``CUDNN_9_1``, ``CudnnGeneration``).

Between the published points the share is interpolated in log2 of the head dim or the length;
outside them it is held at the nearest point. Both factors multiply (head dim at 16K, length at
head dim 128: the figures do not give every pair).

Which kernel runs is decided here too, once, by the GPU's compute capability
(``sdpa_prefers_cudnn``): the model reads it from the catalog, ``trainplan calibrate`` from the
device it measures.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

# PyTorch's SDPA tries cuDNN's fused attention first on these compute capabilities (sm90, sm100)
# when its cuDNN is newer than 9.15: ``check_prefer_cudnn_attention`` returns
# ``(major == 9 || major == 10) && !minor`` (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp,
# torch 2.10; the wheels bundle such a cuDNN from 2.11 on, huggingface/transformers#48163).
# Elsewhere (Ampere sm80/86, Ada sm89, sm101/120) FlashAttention-2 comes first.
SDPA_CUDNN_FIRST_CAPABILITIES = frozenset({(9, 0), (10, 0)})


def sdpa_prefers_cudnn(capability: tuple[int, int] | None) -> bool:
    """Whether SDPA runs cuDNN's attention on a GPU of this (major, minor); None: not NVIDIA."""
    return capability in SDPA_CUDNN_FIRST_CAPABILITIES


# TransformerEngine's fused (cuDNN) attention is its backend on Hopper and on every datacenter
# Blackwell part (sm90, sm100, sm103: the flash-attn package it would fall back to has no sm100+
# kernels), where SDPA's rule above names sm90 and sm100 exactly (trial s24: Megatron-Core on a
# B300, sm103, was timed with FlashAttention-2's rates, 10 % slower than a B200).
TE_CUDNN_MAJORS = frozenset({9, 10})


def te_prefers_cudnn(capability: tuple[int, int] | None) -> bool:
    """Whether TransformerEngine runs cuDNN's attention on a GPU of this (major, minor)."""
    return capability is not None and capability[0] in TE_CUDNN_MAJORS


class AttentionKernel(StrEnum):
    """The attention kernel a run uses (``--attention``), when not the one its stack picks."""

    SDPA_FA2 = "sdpa-fa2"  # PyTorch SDPA's flash backend (FlashAttention-2)
    FLASH2 = "flash2"  # the flash-attn package's FlashAttention-2 (HF "flash_attention_2", llm-foundry "flash")
    FLASH3 = "flash3"  # FlashAttention-3 (Hopper only)
    CUDNN = "cudnn"  # cuDNN's fused flash attention (SDPA's cuDNN backend, TransformerEngine)
    TRITON = "triton"  # MPT's Triton flash kernel (llm-foundry attn_impl "triton")
    EAGER = "eager"  # unfused: QK^T, softmax and AV through HBM (HF "eager", SDPA's math backend)


# FlashAttention-3 over FlashAttention-2 on H100 at the catalog's reference shape (head dim 128,
# non-causal, 16K): forward 648 / 370 = 1.75, backward 561 / 322 = 1.74 (Shah et al. 2024, FA3
# paper Fig. 5 and 6). ESTIMATE: FA2's shape tables times this factor (FA3 levels off by 8K as FA2
# does; nothing past 32K is published).
FLASH3_OVER_FLASH2 = 1.75
# Compute capability FlashAttention-3 runs on (its README: "Hopper GPUs").
FLASH3_CAPABILITY_MAJOR = 9
# MPT's Triton flash kernel over FlashAttention-2: "FlashAttention-2 ... 1.3-2.5x faster than
# FlashAttention in Triton" (Dao 2023, arXiv:2307.08691, sec. 4.1, A100), the geometric middle of
# the range, 1 / sqrt(1.3 x 2.5) = 0.56. ESTIMATE; the same ratio on Hopper.
TRITON_OVER_FLASH2 = 1.0 / (1.3 * 2.5) ** 0.5


@dataclass(frozen=True)
class KernelShapes:
    """Share of the reference rate (head dim 128, non-causal, 16K) by shape, forward and backward."""

    head_dim_fwd: tuple[tuple[int, float], ...]
    head_dim_bwd: tuple[tuple[int, float], ...]
    causal_seq_fwd: tuple[tuple[int, float], ...]
    causal_seq_bwd: tuple[tuple[int, float], ...]


def _causal_backward(non_causal: list[int], fwd_causal: list[int], fwd_non_causal: list[int]) -> list[float]:
    return [b * c / n for b, c, n in zip(non_causal, fwd_causal, fwd_non_causal, strict=True)]


_SEQS = (512, 1024, 2048, 4096, 8192, 16384)

# FlashAttention-2 (FA3 paper's "FlashAttention-2" bars). Forward non-causal hd128: 309 350 362
# 368 370 370; causal: 191 260 298 319 333 335; backward non-causal: 214 260 291 310 318 322;
# at 16K non-causal, head dim 64 / 256: forward 324 / 326, backward 291 / (not published: = 64).
_FA2_FWD_NC = [309, 350, 362, 368, 370, 370]
_FA2_FWD_C = [191, 260, 298, 319, 333, 335]
_FA2_BWD_NC = [214, 260, 291, 310, 318, 322]
# Past 16K (the FA3 paper stops there) FlashAttention-2's causal rate keeps rising a little as the
# masked diagonal becomes a smaller share: PyTorch SDPA's FA2 on a B200, causal, head dim 128,
# 128 query / 8 KV heads (NVIDIA cudnn-frontend benchmark/sdpa_benchmark_training/artifacts/
# sdpa_bf16_benchmark_results_NVIDIA_B200.csv at 0b1577c, NGC 25.09), forward 394.5 403.7 408.7
# 411.0 and backward 320.0 330.8 335.4 336.0 TFLOP/s at 16K 32K 64K 128K: those ratios to its 16K
# point carry the H100 table's 16K shares out to 128K (ESTIMATE: the same kernel on another GPU).
_LONG_SEQS = (32768, 65536, 131072)
_FA2_LONG_FWD = [403.7 / 394.5, 408.7 / 394.5, 411.0 / 394.5]
_FA2_LONG_BWD = [330.8 / 320.0, 335.4 / 320.0, 336.0 / 320.0]
_FA2_CAUSAL_BWD = _causal_backward(_FA2_BWD_NC, _FA2_FWD_C, _FA2_FWD_NC)
# Its non-causal shares by length, the same bars (the reference is their 16K point): a ring's steps
# after the first (planner/model/cp_ring.py). Held at 1 past 16K (ESTIMATE: flat from 4K already).
FLASH2_NON_CAUSAL_FWD = tuple(zip(_SEQS, [v / 370 for v in _FA2_FWD_NC], strict=True))
FLASH2_NON_CAUSAL_BWD = tuple(zip(_SEQS, [v / 322 for v in _FA2_BWD_NC], strict=True))
FLASH2 = KernelShapes(
    head_dim_fwd=((64, 324 / 370), (128, 1.0), (256, 326 / 370)),
    head_dim_bwd=((64, 291 / 322), (128, 1.0), (256, 291 / 322)),
    causal_seq_fwd=tuple(
        zip(_SEQS + _LONG_SEQS, [v / 370 for v in _FA2_FWD_C] + [r * 335 / 370 for r in _FA2_LONG_FWD], strict=True)
    ),
    causal_seq_bwd=tuple(
        zip(
            _SEQS + _LONG_SEQS,
            [v / 322 for v in _FA2_CAUSAL_BWD] + [r * _FA2_CAUSAL_BWD[-1] / 322 for r in _FA2_LONG_BWD],
            strict=True,
        )
    ),
)

# cuDNN. Head dim, FA3 paper's "cuDNN" bars (cuDNN 9, 2024; at 16K non-causal, head dim 64 / 128 /
# 256: forward 413 / 595 / 581, backward 433 / 516 / not published, = 128). Causal length, NVIDIA
# cudnn-frontend benchmark/sdpa_benchmark_training/results/h200_919_only_cudnn/
# llama3.1_20260227_034703.csv (H200, cuDNN 9.19.1, BF16, 64 query / 8 KV heads, head dim 128,
# batch 1; read 2026-12-02), the same release generation as the catalog's Hopper and GB200 cuDNN
# rates: causal ("top_left") forward 484 591 644 673 at 2K 4K 8K 16K over 702 non-causal at 16K,
# backward 370 474 541 579 over 612, both passes measured. That file starts at 2K; at 512 and 1K
# the FA3 paper's cuDNN causal ratios to its 2K point carry the 2K share down (ESTIMATE): forward
# 315 / 410 of 484; backward (its non-causal x the forward's causal ratio) 193.3 / 291.4 of 364.8.
# Longer: the same H200 file's 32K point (causal forward 688, backward 581: cuDNN peaks at 16K-32K),
# then cuDNN 9.13's decline on a B200 from 32K to 64K and 128K (the cudnn-frontend B200 file above,
# forward 1419 1382 1355, backward 1109 1073 1048), ESTIMATE for the catalog's 9.19 (its files stop
# at 32K); GB200's cuDNN 9.17 falls further by 128K (-13 %), not used.
_CUDNN_FWD_C = [484, 591, 644, 673, 688, 688 * 1382 / 1419, 688 * 1355 / 1419]
_CUDNN_BWD_C = [370, 474, 541, 579, 581, 581 * 1073 / 1109, 581 * 1048 / 1109]
_CUDNN_FWD_SHORT = [315 / 484, 410 / 484]
_CUDNN_BWD_SHORT = [193.3 / 364.8, 291.4 / 364.8]
CUDNN = KernelShapes(
    head_dim_fwd=((64, 413 / 595), (128, 1.0), (256, 581 / 595)),
    head_dim_bwd=((64, 433 / 516), (128, 1.0)),
    causal_seq_fwd=tuple(
        zip(
            _SEQS + _LONG_SEQS,
            [r * 484 / 702 for r in _CUDNN_FWD_SHORT] + [v / 702 for v in _CUDNN_FWD_C],
            strict=True,
        )
    ),
    causal_seq_bwd=tuple(
        zip(
            _SEQS + _LONG_SEQS,
            [r * 370 / 612 for r in _CUDNN_BWD_SHORT] + [v / 612 for v in _CUDNN_BWD_C],
            strict=True,
        )
    ),
)


# cuDNN of 2024, the generation a run whose container carries cuDNN 9.1 or older ran
# (``CudnnGeneration.CUDNN_9_1``). Causal length, both passes measured: NVIDIA cudnn-frontend
# benchmark/benchmark_results.csv at 505fcfe (2024-05-07: NGC PyTorch 24.03 with the CUDA
# repository's cuDNN, whose run in the README prints backend 90100; clocks locked at 1980 MHz per
# the README; 16 heads, head dim 128, BF16), causal forward 542.3 572.9 586.8 577.3 567.0 and
# backward 443.6 463.5 497.7 499.7 503.8 TFLOP/s at 4K 8K 16K 32K 64K, over the catalog's 9.19
# reference rates (702 / 612) like the table above: the same harness, two years apart. Below 4K
# the FA3 paper's cuDNN causal ratios to its 4K point (ESTIMATE): forward 315 / 410 / 484 of 518,
# backward 193.3 / 291.4 / 364.8 of 424.4 (its non-causal 305 408 465 499 x the forward's causal
# ratio). The FA3 paper measured the same generation (cuDNN 9.1.1.17, its appendix C.1) at a
# fixed 1830 MHz: its 16K non-causal 595 forward and causal 539 are this file's 642 / 587 times
# 1830 / 1980, so the 2024-to-2026 gap is ~13 % at 16K-32K here, not the ~20 % its raw bars read.
_CUDNN_9_1_FWD_C = [542.3, 572.9, 586.8, 577.3, 567.0]
_CUDNN_9_1_BWD_C = [443.6, 463.5, 497.7, 499.7, 503.8]
_CUDNN_9_1_FWD_SHORT = [315 / 518, 410 / 518, 484 / 518]
_CUDNN_9_1_BWD_SHORT = [193.3 / 424.4, 291.4 / 424.4, 364.8 / 424.4]
_CUDNN_9_1_SEQS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
CUDNN_9_1 = KernelShapes(
    head_dim_fwd=CUDNN.head_dim_fwd,
    head_dim_bwd=CUDNN.head_dim_bwd,
    causal_seq_fwd=tuple(
        zip(
            _CUDNN_9_1_SEQS,
            [r * 542.3 / 702 for r in _CUDNN_9_1_FWD_SHORT] + [v / 702 for v in _CUDNN_9_1_FWD_C],
            strict=True,
        )
    ),
    causal_seq_bwd=tuple(
        zip(
            _CUDNN_9_1_SEQS,
            [r * 443.6 / 612 for r in _CUDNN_9_1_BWD_SHORT] + [v / 612 for v in _CUDNN_9_1_BWD_C],
            strict=True,
        )
    ),
)


class CudnnGeneration(StrEnum):
    """The cuDNN release generation whose attention a run times (``ModelingSettings.cudnn_generation``).

    A plan runs today's (9.19, the catalog's rates). A validation row runs its container's:
    ``CUDNN_9_1`` where the container carries cuDNN 9.1 or older (validation/published.py
    ``cudnn_generation_for``). A container between 9.1 and 9.19 runs the 9.19 table: the one
    measurement in between (the same cudnn-frontend file at 61100c8, September 2024, cuDNN version
    not printed) has its causal forward within 4 % of 9.19's at 16K (650 vs 673), its backward
    still 9.1's (489 vs 579), and no release is pinned to it."""

    CUDNN_9_19 = "9.19"
    CUDNN_9_1 = "9.1"


CUDNN_SHAPES = {CudnnGeneration.CUDNN_9_19: CUDNN, CudnnGeneration.CUDNN_9_1: CUDNN_9_1}


def share(table: tuple[tuple[int, float], ...], x: np.ndarray | float) -> np.ndarray:
    """The table's share at ``x``, interpolated in log2(x), held at the end points."""
    xs = np.log2([p for p, _ in table])
    return np.interp(np.log2(np.maximum(np.asarray(x, dtype=float), 1.0)), xs, [v for _, v in table])


def shape_shares(kernel: KernelShapes, head_dim: int, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) share of the kernel's reference rate for causal attention over ``seq``
    keys at ``head_dim``."""
    fwd = share(kernel.head_dim_fwd, head_dim) * share(kernel.causal_seq_fwd, seq)
    bwd = share(kernel.head_dim_bwd, head_dim) * share(kernel.causal_seq_bwd, seq)
    return fwd, bwd


def flash2_non_causal_shares(head_dim: int, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) share of FlashAttention-2's reference rate for non-causal attention over
    ``seq`` tokens at ``head_dim``."""
    fwd = share(FLASH2.head_dim_fwd, head_dim) * share(FLASH2_NON_CAUSAL_FWD, seq)
    bwd = share(FLASH2.head_dim_bwd, head_dim) * share(FLASH2_NON_CAUSAL_BWD, seq)
    return fwd, bwd
