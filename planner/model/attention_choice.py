"""The attention kernel a user or a recipe names (``--attention``), applied to the modelling
settings: :func:`with_attention`, and what each kernel changes (``KERNEL_FACTORS``)."""

from __future__ import annotations

from planner.model.attention_kernels import FLASH3_OVER_FLASH2, TRITON_OVER_FLASH2, AttentionKernel
from planner.model.settings import ModelingSettings

# What each named kernel changes (``with_attention``): cuDNN's own rates, or FlashAttention-2's
# times a factor (planner/model/attention_kernels.py), or no flash kernel at all.
KERNEL_FACTORS = {
    AttentionKernel.SDPA_FA2: 1.0,
    AttentionKernel.FLASH2: 1.0,
    AttentionKernel.FLASH3: FLASH3_OVER_FLASH2,
    AttentionKernel.CUDNN: 1.0,
    AttentionKernel.TRITON: TRITON_OVER_FLASH2,
    AttentionKernel.EAGER: 1.0,
}


def with_attention(settings: ModelingSettings, kernel: AttentionKernel | None) -> ModelingSettings:
    """``settings`` with the attention kernel a user or a recipe names (None: unchanged): its
    catalog rates (cuDNN's, else FlashAttention-2's), its factor over them, or the unfused path
    (``eager``); the stack's own factor is replaced, unless the kernel named is the one the stack
    picks anyway (cuDNN where it prefers it: review s34, `--stack megatron-core --attention cudnn`
    dropped its fitted 0.6 and timed attention 40 % faster than the same run unnamed). Under
    context parallelism the stack's CP still calls what it calls (``cudnn_attention_under_cp`` is
    the stack's: trial s34, a named cuDNN with cp 2 on trainplan's stack, whose all-gather CP runs
    the flash kernel, was timed 26 % faster as cuDNN)."""
    if kernel is None:
        return settings
    cudnn = kernel == AttentionKernel.CUDNN
    own = cudnn and settings.cudnn_attention
    return settings.but(
        attention_kernel=kernel,
        cudnn_attention=cudnn,
        flash_attention=kernel != AttentionKernel.EAGER,
        attention_kernel_factor=settings.attention_kernel_factor if own else KERNEL_FACTORS[kernel],
    )
