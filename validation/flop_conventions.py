"""How each source turned a step into TFLOP/s or MFU (published_runs_sources.md): the FLOP
counts per token of its convention, and which convention a row states. Split out of
validation/published_rows.py, which reads the rows."""

from __future__ import annotations

from enum import StrEnum

from planner.model.flops import forward_flops_per_token
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.spec import ModelSpec


class FlopConvention(StrEnum):
    """How a source turned a step into TFLOP/s (published_runs_sources.md)."""

    MEGATRON_HARDWARE = "megatron_eq3_with_recompute"  # S2, S5 (and BLOOM-style hardware TFLOPs)
    MODEL_NONCAUSAL = "model_noncausal"  # S3, S4, S13, PaLM-style MFU (S10)
    MODEL_CAUSAL = "model_causal"  # S14 Megatron-Bridge


def megatron_eq3_flops_per_token(model: ModelSpec, seq_len: int) -> float:
    """Narayanan et al. 2021 eq. 3 per token: every block forward counted four times (forward,
    backward = 2x, full recompute), attention non-causal, LM head three times. For a GPT block
    (ffn 4h, multi-head) this is exactly 96 l h^2 (1 + s/6h + V/16lh)."""
    f = forward_flops_per_token(model, seq_len, DEFAULT_SETTINGS.but(causal_attention_flops=False))
    return float(4.0 * (f.block_matmul + f.attention) + 3.0 * f.lm_head)


def model_flops_noncausal_per_token(model: ModelSpec, seq_len: int) -> float:
    """Megatron-Core ``num_floating_point_operations`` (r0.8), NeMo "model TFLOP/s" and PaLM
    App. B (6N + 12 L H Q T): 3x the forward, no recompute, the full s x s score matrix."""
    f = forward_flops_per_token(model, seq_len, DEFAULT_SETTINGS.but(causal_attention_flops=False))
    return float(3.0 * f.forward)


def model_flops_causal_per_token(model: ModelSpec, seq_len: int) -> float:
    """As above with causal attention (half the score matrix). Megatron-Bridge's published
    TFLOP/s/GPU divided by its tokens/s/GPU matches this count (28 of 31 rows within 0.5 %), not
    the non-causal one that published_runs_sources.md states (4-13 % higher)."""
    f = forward_flops_per_token(model, seq_len, DEFAULT_SETTINGS.but(causal_attention_flops=True))
    return float(3.0 * f.forward)


CONVENTIONS = {
    FlopConvention.MEGATRON_HARDWARE: megatron_eq3_flops_per_token,
    FlopConvention.MODEL_NONCAUSAL: model_flops_noncausal_per_token,
    FlopConvention.MODEL_CAUSAL: model_flops_causal_per_token,
}


def convention_for(row: dict[str, str]) -> FlopConvention | None:
    """The FLOP count behind a row's TFLOP/s and MFU; None when the source does not say."""
    if row["source_id"].startswith("S14") or "megatron-bridge" in row["source"].lower():
        return FlopConvention.MODEL_CAUSAL
    basis = f"{row['tflops_basis']} {row['utilization_basis']}".lower()
    if "no recompute" not in basis and ("recompute" in basis or "hardware" in basis):
        return FlopConvention.MEGATRON_HARDWARE
    if "model" in basis or "mfu" in basis:
        return FlopConvention.MODEL_NONCAUSAL
    return None
