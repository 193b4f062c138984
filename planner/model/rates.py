"""Achievable kernel rates of a candidate's GPU: the catalog's figure where it has one, else the
datasheet figure times the model's global fraction (a scaled estimate, ModelingSettings).

One place for the choice, so the step-time terms never mix a measured rate with a fraction
applied on top of it. The catalog's figures and their provenance: docs/hardware.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.model import attention_kernels
from planner.model.attention_kernels import AttentionKernel
from planner.model.attention_scores import cp_calls_flash_only, eager_softcap_attention, named_kernel_cp_fallback
from planner.model.candidates import PREC_FP8, Candidates
from planner.model.cp_ring import ring_flash_shares
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec


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


def fp8_forward_gemm_speedup(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """How much faster than the catalog's FP8 GEMM rate the forward GEMMs run: the recipes'
    fast accumulation (``s.fp8_fast_accum_forward_speedup``) on FP8 rows of a GPU with the mode."""
    return np.where((c.precision == PREC_FP8) & c.fp8_fast_accum, s.fp8_fast_accum_forward_speedup, 1.0)


def attention_rates(c: Candidates, s: ModelingSettings, head_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Flash-attention forward and backward FLOP/s at ``head_dim`` over each candidate's causal
    sequence (``seq_len / cp`` keys per kernel call): the catalog's reference rates of the
    kernel the stack runs on that GPU (head dim 128, non-causal, 16K), times that kernel's
    published share at this head dim and causal length (planner/model/attention_kernels.py; cuDNN's
    of ``s.cudnn_generation``), the
    residual share of training steps (``attention_shape_fraction``) and the factor of a kernel
    the catalog does not measure (``attention_kernel_factor``).

    The kernel: cuDNN's where the stack prefers it (``cudnn_attention``) and the GPU's compute
    capability makes SDPA choose it (``Candidates.sdpa_cudnn``; TransformerEngine's rule,
    ``Candidates.te_cudnn``, for a stack on it), else FlashAttention-2. Its
    rate: the catalog's figure for that kernel, else FlashAttention-2's, else
    ``attention_peak_fraction`` of the bf16 peak."""
    fallback = c.bf16_peak_flops * s.attention_peak_fraction
    fwd = np.where(np.isnan(c.attention_fwd_flops), fallback, c.attention_fwd_flops)
    bwd = np.where(np.isnan(c.attention_bwd_flops), fallback, c.attention_bwd_flops)
    cudnn = cudnn_attention_rows(c, s)
    fwd = np.where(cudnn & ~np.isnan(c.cudnn_attention_fwd_flops), c.cudnn_attention_fwd_flops, fwd)
    bwd = np.where(cudnn & ~np.isnan(c.cudnn_attention_bwd_flops), c.cudnn_attention_bwd_flops, bwd)
    seq = c.seq_len / c.cp
    fa2_fwd, fa2_bwd = attention_kernels.shape_shares(attention_kernels.FLASH2, head_dim, seq)
    # a ring that calls the flash kernel on balanced halves: its later steps are non-causal (cp_ring.py)
    halves_fwd, halves_bwd = attention_kernels.flash2_non_causal_shares(head_dim, seq / 2.0)
    fa2_fwd = ring_flash_shares(s.cp_ring_loop, c.cp, fa2_fwd, halves_fwd)
    fa2_bwd = ring_flash_shares(s.cp_ring_loop, c.cp, fa2_bwd, halves_bwd)
    cudnn_fwd, cudnn_bwd = attention_kernels.shape_shares(
        attention_kernels.CUDNN_SHAPES[s.cudnn_generation], head_dim, seq
    )
    # a named kernel the stack's context parallelism cannot call runs as its flash kernel (factor 1)
    factor = np.where(named_kernel_cp_fallback(c, s), 1.0, s.attention_kernel_factor)
    scale = s.attention_shape_fraction * factor
    return (
        fwd * np.where(cudnn, cudnn_fwd, fa2_fwd) * scale,
        bwd * np.where(cudnn, cudnn_bwd, fa2_bwd) * scale,
    )


def cudnn_attention_rows(c: Candidates, s: ModelingSettings, cp_ok: bool = False) -> np.ndarray:
    """Where the stack's attention runs cuDNN's kernel (``attention_rates``): the stack prefers it
    and its rule (SDPA's or TransformerEngine's) picks it on the GPU, or the user named it; not
    under context parallelism unless the stack's CP runs it (``cp_ok``: as if it did). A GPU without
    cuDNN figures runs it at FlashAttention-2's (the rate unknown, the kernel not)."""
    prefers = c.te_cudnn if s.transformer_engine_attention else c.sdpa_cudnn
    chosen = np.asarray(s.cudnn_attention) & (prefers | (s.attention_kernel == AttentionKernel.CUDNN))
    return chosen & (~cp_calls_flash_only(c, s) | cp_ok)


@dataclass(frozen=True)
class TimedKernel:
    """The attention kernel a row is timed with, and the kernel that would run but for the stack's
    context parallelism, which calls the flash kernel (the estimate says both: trial s24, a run that
    went from cuDNN to FlashAttention-2 under cp lost 38-62 % of its speed unexplained)."""

    kernel: AttentionKernel
    cp_fallback_from: AttentionKernel | None = None

    @property
    def cp_fallback(self) -> bool:
        return self.cp_fallback_from is not None

    @property
    def words(self) -> str:
        fallback = "" if self.cp_fallback_from is None else cp_fallback_words(self.cp_fallback_from)
        return KERNEL_WORDS[self.kernel] + fallback


CP_FALLBACK_WORDS = " ({kernel} without cp: this stack's context parallelism calls the flash kernel)"


def cp_fallback_words(kernel: AttentionKernel) -> str:
    """' (cuDNN without cp: this stack's context parallelism calls the flash kernel)'."""
    return CP_FALLBACK_WORDS.format(kernel=KERNEL_WORDS[kernel])


# Beside a cuDNN kernel that SDPA's dispatch picked (planner/model/estimate.py ``sdpa_note``): the
# torch it assumes, and the way to time the other.
SDPA_CUDNN_NOTE = " (SDPA's pick from torch 2.11 on; --attention sdpa-fa2 for older torch)"
# Beside FlashAttention-2 that SDPA picks on a GPU whose cuDNN attention it leaves out (sm103).
SDPA_SKIPS_CUDNN_NOTE = (
    " (SDPA's pick on this GPU; cuDNN's fused attention, which a run can force with"
    " sdpa_kernel(SDPBackend.CUDNN_ATTENTION), is --attention cudnn)"
)


def timed_attention_kernels(model: ModelSpec, c: Candidates, s: ModelingSettings) -> list[TimedKernel]:
    """The attention kernel each row is timed with. Hugging Face's eager attention (no SDPA path:
    ALiBi, sinks, soft-capped scores) is unfused whatever the stack's kernel (trial s26: BLOOM under
    hf-trainer read "FlashAttention-2")."""
    if not s.flash_attention:  # unfused, but where the stack's cp calls the flash kernel (named eager)
        return _named_kernels(AttentionKernel.EAGER, c, s)
    eager = eager_softcap_attention(model, c).tolist()
    return [TimedKernel(AttentionKernel.EAGER) if e else k for e, k in zip(eager, _flash_kernels(c, s), strict=True)]


def _flash_kernels(c: Candidates, s: ModelingSettings) -> list[TimedKernel]:
    """The flash kernel each row's stack runs (``timed_attention_kernels``)."""
    if s.attention_kernel not in (None, AttentionKernel.CUDNN):
        return _named_kernels(s.attention_kernel, c, s)
    cudnn, without_cp = cudnn_attention_rows(c, s), cudnn_attention_rows(c, s, cp_ok=True)
    return [
        TimedKernel(AttentionKernel.CUDNN)
        if a
        else TimedKernel(AttentionKernel.FLASH2, AttentionKernel.CUDNN if b else None)
        for a, b in zip(cudnn.tolist(), without_cp.tolist(), strict=True)
    ]


def _named_kernels(kernel: AttentionKernel, c: Candidates, s: ModelingSettings) -> list[TimedKernel]:
    """A named ``kernel`` on every row, FlashAttention-2 where the stack's cp cannot call it."""
    return [
        TimedKernel(AttentionKernel.FLASH2, kernel) if f else TimedKernel(kernel)
        for f in named_kernel_cp_fallback(c, s).tolist()
    ]


KERNEL_WORDS = {
    AttentionKernel.SDPA_FA2: "FlashAttention-2 (SDPA)",
    AttentionKernel.FLASH2: "FlashAttention-2",
    AttentionKernel.FLASH3: "FlashAttention-3",
    AttentionKernel.CUDNN: "cuDNN",
    AttentionKernel.TRITON: "Triton flash (llm-foundry)",
    AttentionKernel.EAGER: "unfused (scores through HBM)",
}


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
