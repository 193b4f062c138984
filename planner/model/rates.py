"""Achievable kernel rates of a candidate's GPU: the catalog's figure where it has one, else the
datasheet figure times the model's global fraction (a scaled estimate, ModelingSettings).

One place for the choice, so the step-time terms never mix a measured rate with a fraction
applied on top of it. The catalog's figures and their provenance: docs/hardware.md.
"""

from __future__ import annotations

import numpy as np

from planner.model.settings import ModelingSettings
from planner.search.candidates import PREC_FP8, Candidates

# Head dim at which the catalog's attention rates are stated (FlashAttention-2/3 papers' default).
ATTENTION_REFERENCE_HEAD_DIM = 128


def shape_factor(dims: list, s: ModelingSettings) -> np.ndarray:
    """Fraction of the large-GEMM rate a GEMM whose smaller dims are ``dims`` reaches: wave
    quantisation and short K loops, ``d / (d + matmul_half_dim)`` per dim."""
    factor = np.asarray(1.0)
    for d in dims:
        d = np.asarray(d, dtype=float)
        factor = factor * d / (d + s.matmul_half_dim)
    return factor


def gemm_rate(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Large dense GEMM FLOP/s in the row's precision (FP8: the raw FP8 GEMM, scaling casts are
    a separate memory-bound term)."""
    fraction = np.where(c.precision == PREC_FP8, s.fp8_matmul_peak_fraction, s.matmul_peak_fraction)
    return np.where(np.isnan(c.gemm_flops), c.matmul_peak_flops * fraction, c.gemm_flops)


def bf16_gemm_rate(c: Candidates, s: ModelingSettings) -> np.ndarray:
    return np.where(np.isnan(c.bf16_gemm_flops), c.bf16_peak_flops * s.matmul_peak_fraction, c.bf16_gemm_flops)


def attention_rates(c: Candidates, s: ModelingSettings, head_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Flash-attention forward and backward FLOP/s at ``head_dim``: the catalog's head-dim-128
    rates of the stack's kernel (``cudnn_attention``: cuDNN's, else SDPA's FlashAttention-2; a
    GPU without a FlashAttention-2 figure gets ``attention_peak_fraction`` of its bf16 peak, one
    without a cuDNN figure its FlashAttention-2 rate), times the share of them training shapes
    reach (``attention_shape_fraction``), the GEMM shape factor relative to head dim 128 and
    the factor of a kernel the catalog does not measure (``attention_kernel_factor``)."""
    fallback = c.bf16_peak_flops * s.attention_peak_fraction
    relative = shape_factor([head_dim], s) / shape_factor([ATTENTION_REFERENCE_HEAD_DIM], s)
    scale = relative * s.attention_shape_fraction * s.attention_kernel_factor
    fwd = np.where(np.isnan(c.attention_fwd_flops), fallback, c.attention_fwd_flops)
    bwd = np.where(np.isnan(c.attention_bwd_flops), fallback, c.attention_bwd_flops)
    if s.cudnn_attention:
        fwd = np.where(np.isnan(c.cudnn_attention_fwd_flops), fwd, c.cudnn_attention_fwd_flops)
        bwd = np.where(np.isnan(c.cudnn_attention_bwd_flops), bwd, c.cudnn_attention_bwd_flops)
    return fwd * scale, bwd * scale


def unfused_attention_rate(c: Candidates, s: ModelingSettings, head_dim: int) -> np.ndarray:
    """Without flash attention (Megatron-LM before 2022) QK^T and AV are batched cuBLAS GEMMs
    whose inner (QK^T) or output (AV) dimension is the head dim."""
    return bf16_gemm_rate(c, s) * shape_factor([head_dim], s)


def copy_bandwidth(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes/s of a large streaming read-modify-write (measured device copy where known)."""
    return np.where(np.isnan(c.copy_bandwidth), c.hbm_bandwidth * s.streaming_bandwidth_fraction, c.copy_bandwidth)


def eager_bandwidth(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes/s the many small eager elementwise kernels reach: the same share of the copy
    bandwidth as on the H200 rows it was calibrated on (hbm_bandwidth_fraction of the datasheet,
    streaming_bandwidth_fraction of it being the copy)."""
    return copy_bandwidth(c, s) * s.hbm_bandwidth_fraction / s.streaming_bandwidth_fraction
