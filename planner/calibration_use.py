"""Which of a calibration file's rates a plan's estimate used (calib50 M2: a file's
FlashAttention-2 rates were counted as applied to a plan that times cuDNN attention on sm90,
where they change nothing).

The rules follow the model's own choices of a rate: planner/model/rates.py ``attention_rates``
(the timed kernel's rate; cuDNN's, else FlashAttention-2's), the FP8 GEMM rate only for FP8
GEMMs, and the scale-up collective fit only where a plan has more than one GPU.
"""

from __future__ import annotations

from pydantic import BaseModel

from planner.catalog.hardware import load_catalog
from planner.frozen import FROZEN
from planner.layout import Precision
from planner.model.attention_kernels import AttentionKernel
from planner.plan import Plan

FLASH_FIELDS = ("attention_fwd_tflops_achieved", "attention_bwd_tflops_achieved")
CUDNN_FIELDS = ("cudnn_attention_fwd_tflops_achieved", "cudnn_attention_bwd_tflops_achieved")
FP8_GEMM_FIELD = "gemm_fp8_tflops_achieved"
SCALEUP_FIELDS = ("scaleup_busbw_gbyte_per_s_achieved", "scaleup_step_latency_us_achieved")
# Kernels timed at FlashAttention-2's rate (times a kernel factor: FA3, Triton); eager attention
# runs through HBM at the copy rate, cuDNN at its own where known.
FLASH_RATE_KERNELS = frozenset(
    {AttentionKernel.SDPA_FA2, AttentionKernel.FLASH2, AttentionKernel.FLASH3, AttentionKernel.TRITON}
)


class UnusedRate(BaseModel):
    """A rate a calibration file gives the plan's GPU that its estimate did not use, and why."""

    model_config = FROZEN
    field: str  # the file field, e.g. attention_fwd_tflops_achieved
    reason: str  # "the plan runs cuDNN attention; the file has no cudnn_attention_*"


def unused_rates(plan: Plan) -> tuple[UnusedRate, ...]:
    """The rates the plan's calibration file gives its GPU that the estimate did not use, in file
    order; () without a file, or for a plan file too old to name its attention kernel."""
    entry = None if plan.calibration is None else plan.calibration.entry(plan.gpu)
    if entry is None:
        return ()
    reasons = _attention_reasons(plan, entry.rates)
    if plan.training.precision != Precision.FP8:
        reasons[FP8_GEMM_FIELD] = f"the plan's GEMMs run in {plan.training.precision.value}"
    if plan.num_gpus == 1:
        reasons.update(dict.fromkeys(SCALEUP_FIELDS, "a single GPU runs no collective"))
    return tuple(UnusedRate(field=name, reason=reasons[name]) for name in entry.rates if name in reasons)


def _attention_reasons(plan: Plan, rates: tuple[str, ...]) -> dict[str, str]:
    """Why each attention field of ``rates`` went unused by the kernel the plan timed."""
    kernel = plan.estimate.attention_kernel_timed
    if kernel is None:  # a plan file before the typed kernel: which rate it used is unknown
        return {}
    runs = f"the plan runs {plan.estimate.attention_kernel or kernel.value} attention"
    reasons = {}
    if kernel != AttentionKernel.CUDNN:
        reasons.update(dict.fromkeys(CUDNN_FIELDS, runs))
    cudnn_known = any(name in rates for name in CUDNN_FIELDS) or (
        load_catalog().gpu(plan.gpu).rates.cudnn_attention_fwd_flops_per_s is not None
    )
    if kernel == AttentionKernel.CUDNN and cudnn_known:
        has = "" if any(name in rates for name in CUDNN_FIELDS) else "; the file has no cudnn_attention_*"
        reasons.update(dict.fromkeys(FLASH_FIELDS, runs + has))
    elif kernel not in FLASH_RATE_KERNELS and kernel != AttentionKernel.CUDNN:
        reasons.update(dict.fromkeys(FLASH_FIELDS, runs))
    return reasons
