"""Achievable rates: what kernels really reach on one GPU (docs/hardware.md, "Achievable rates").

One table, ``RATE_FIELDS``, names each optional catalog field, the ``AchievableRates`` value it
fills, its unit's factor to SI and the datasheet field it cannot exceed; reading a file, checking
it and writing the values back (``rate_file_values``, for a calibration merge) all go through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from planner.errors import CatalogError, CatalogViolation, RuleCode
from planner.frozen import FROZEN

# Each source names how the number was obtained, with one of these prefixes, so a plan can say
# which of its inputs were measured.
PROVENANCES = ("MEASURED", "PUBLISHED", "ESTIMATE")


class AchievableRates(BaseModel):
    """What kernels really reach on one GPU, in SI units; None = no data, the model then uses
    its global fraction of the datasheet figure (ModelingSettings, a scaled estimate).

    ``gemm_flops_per_s`` is a large, aligned dense GEMM (the shape model of step_time.py scales
    it down for narrow shapes); ``attention_*`` the flash-attention kernel PyTorch SDPA's flash
    backend runs (FlashAttention-2), ``cudnn_attention_*`` cuDNN's fused flash attention (what
    TransformerEngine runs), both at head dim 128 and long sequences, non-causal, forward and
    backward FLOPs counted as the FlashAttention papers do (backward = 2.5 forward);
    ``copy_bandwidth_bytes_per_s`` a large device-to-device copy, bytes read + written."""

    model_config = FROZEN
    gemm_flops_per_s: dict[str, float] = {}  # precision -> FLOP/s (bf16, fp8)
    attention_fwd_flops_per_s: float | None = None
    attention_bwd_flops_per_s: float | None = None
    cudnn_attention_fwd_flops_per_s: float | None = None
    cudnn_attention_bwd_flops_per_s: float | None = None
    copy_bandwidth_bytes_per_s: float | None = None
    # Collectives over the scale-up domain (trainplan calibrate --collectives), fitted to the ring
    # model of planner/model/comm.py: bus bandwidth per GPU and latency per ring step.
    scaleup_bus_bandwidth_bytes_per_s: float | None = None
    scaleup_step_latency_s: float | None = None
    provenance: dict[str, str] = {}  # field in the file -> MEASURED / PUBLISHED / ESTIMATE


@dataclass(frozen=True)
class RateField:
    """One file field: the ``AchievableRates`` value it fills (``precision``: a key of
    ``gemm_flops_per_s``), the factor from its unit to SI, the datasheet field it cannot pass and
    the range a value must lie in, in the file's unit (``low`` exclusive, ``high`` inclusive)."""

    name: str
    attribute: str
    si: float
    ceiling: str | None
    precision: str | None = None
    low: float = 0.0
    high: float = 20_000.0  # TFLOP/s: a sanity bound, ~4x today's largest dense FP8 figure


# The smallest share of its datasheet figure an achievable rate may be: a CPU measured in place
# of the GPU (calibrate --device cpu) reaches ~1e-4 of an H100's bf16 rate; 1e-300 TFLOP/s is a typo.
MIN_SHARE_OF_CEILING = 1e-7

RATE_FIELDS = (
    RateField("gemm_bf16_tflops_achieved", "gemm_flops_per_s", 1e12, "bf16_tflops", "bf16"),
    RateField("gemm_fp8_tflops_achieved", "gemm_flops_per_s", 1e12, "fp8_tflops", "fp8"),
    RateField("attention_fwd_tflops_achieved", "attention_fwd_flops_per_s", 1e12, "bf16_tflops"),
    RateField("attention_bwd_tflops_achieved", "attention_bwd_flops_per_s", 1e12, "bf16_tflops"),
    RateField("cudnn_attention_fwd_tflops_achieved", "cudnn_attention_fwd_flops_per_s", 1e12, "bf16_tflops"),
    RateField("cudnn_attention_bwd_tflops_achieved", "cudnn_attention_bwd_flops_per_s", 1e12, "bf16_tflops"),
    RateField("hbm_copy_tbps_achieved", "copy_bandwidth_bytes_per_s", 1e12, "hbm_bandwidth_tbps", high=100),
    # A ring's bus bandwidth cannot pass the per-direction link rate (switch reductions, NVLS, can:
    # the ring model does not describe them, so such a fit is refused rather than mis-modelled).
    RateField(
        "scaleup_busbw_gbyte_per_s_achieved",
        "scaleup_bus_bandwidth_bytes_per_s",
        1e9,
        "scaleup_gbyte_per_s",
        high=100_000,
    ),
    # 0 is allowed: a latency below what the fit resolved.
    RateField("scaleup_step_latency_us_achieved", "scaleup_step_latency_s", 1e-6, None, low=-1e-12, high=10_000),
)
RATE_FIELD_NAMES = tuple(f.name for f in RATE_FIELDS)


def check_rates(values: dict[str, Any], sources: dict[str, str], where: str) -> None:
    """An achievable rate stays under its datasheet figure and says how it was obtained."""
    for field in RATE_FIELDS:
        name, ceiling = field.name, field.ceiling
        if name not in values:
            continue
        if ceiling is not None and ceiling not in values:
            raise CatalogError(f"{where}: field '{name}': needs '{ceiling}' (the datasheet figure it is a share of)")
        if ceiling is not None and values[name] > values[ceiling]:
            over = {"where": where, "field": name, "ceiling": ceiling, "limit": values[ceiling], "value": values[name]}
            raise CatalogViolation(RuleCode.CAL_OVER_CEILING, over)
        if ceiling is not None and values[name] < values[ceiling] * MIN_SHARE_OF_CEILING:
            raise CatalogError(
                f"{where}: field '{name}': expected at least {MIN_SHARE_OF_CEILING:g} of {ceiling} "
                f"{values[ceiling]:g} (a CPU's rate passes; a smaller one is a unit or typing error), got {values[name]!r}"
            )
        if not sources[name].startswith(PROVENANCES):
            raise CatalogError(
                f"{where}: field 'sources.{name}': must start with one of {', '.join(PROVENANCES)} (how it was obtained)"
            )


def rates_from(values: dict[str, Any], sources: dict[str, str]) -> AchievableRates:
    """The file fields present in ``values`` (their units), in SI, with each one's provenance."""
    present = [f for f in RATE_FIELDS if f.name in values]
    gemm = {f.precision: values[f.name] * f.si for f in present if f.precision is not None}
    scalars = {f.attribute: values[f.name] * f.si for f in present if f.precision is None}
    provenance = {f.name: sources[f.name].split(":")[0].split()[0] for f in present}
    return AchievableRates(gemm_flops_per_s=gemm, provenance=provenance, **scalars)


def rate_file_values(rates: AchievableRates) -> dict[str, float]:
    """The rates in the units of the file fields (the inverse of ``rates_from``)."""
    values = {}
    for f in RATE_FIELDS:
        value = getattr(rates, f.attribute)
        value = value.get(f.precision) if f.precision is not None else value
        if value is not None:
            values[f.name] = value / f.si
    return values
