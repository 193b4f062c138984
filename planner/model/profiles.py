"""How far a stack's settings profile reaches: the attention kernel it runs anyway (naming it is
no choice of the user's) and the one model a run-specific profile was measured on."""

from __future__ import annotations

from planner.model.attention_choice import with_attention
from planner.model.attention_kernels import AttentionKernel
from planner.model.spec import ModelSpec
from planner.model.stacks import STACK_SETTINGS, Stack

__all__ = ["is_kernel_choice", "kernel_choice", "own_kernel_switches", "own_model_profile", "own_model_profile_warning"]


# DeepSeek-V3's shape: layers, hidden size, routed experts (arXiv:2412.19437 sec. 4.2). A family
# name is not enough: Kimi-K2's config reads as deepseek_v3 with 384 experts (review s31).
DEEPSEEK_V3_SHAPE = (61, 7168, 256)


def own_model_profile(model: ModelSpec, stack: Stack) -> bool:
    """Whether ``stack`` is a profile of one model's own training run that ``model`` is not: the
    deepseek-v3 profile is DeepSeek's in-house stack as its report describes it (DualPipe's
    overlaps, its FP8 recipe, node-limited routing), measured on DeepSeek-V3 alone (trial s31: a
    dense Llama under it was estimated without a word). DeepSeek-R1 has V3's shape: no warning."""
    shape = (model.num_layers, model.hidden_size, model.num_experts)
    return stack == Stack.DEEPSEEK_V3 and (model.family != "deepseek_v3" or shape != DEEPSEEK_V3_SHAPE)


def own_model_profile_warning(model: ModelSpec, stack: Stack) -> str | None:
    """The CLI's words of ``own_model_profile``."""
    if not own_model_profile(model, stack):
        return None
    # Review s31: not "DualPipe's overlaps, its FP8 recipe" for a dense bf16 model, where neither applies.
    return (
        f"--stack {stack.value} is DeepSeek's in-house stack as its report describes it, measured on"
        f" DeepSeek-V3 alone: {model.name} under it is timed with that run's settings, which no run of this"
        " model measured"
    )


def own_kernel_switches(stack: Stack) -> frozenset[AttentionKernel]:
    """Kernels a stack switches to by its own flag, which measured rows of it ran: SDPA's flash
    backend, its dispatch's pick before torch 2.11 (review s31), and Megatron-DeepSpeed's
    --use-flash-attn-v2, which Lucie-Training's rows ran (review s32: naming it left the envelope
    those rows validate)."""
    if stack.attention_via_sdpa:
        return frozenset({AttentionKernel.SDPA_FA2})
    if stack == Stack.MEGATRON_DEEPSPEED:
        return frozenset({AttentionKernel.FLASH2})
    return frozenset()


def is_kernel_choice(stack: Stack, attention: AttentionKernel | None) -> bool:
    """Whether ``attention`` is a kernel choice of the user's, one that times the rows unlike the
    stack's own (the band's ``Feature.KERNEL``): naming the kernel a stack runs anyway, llm-foundry's
    FlashAttention-2, is what its measured rows ran (trial s31: it lost "validated")."""
    if attention is None:
        return False
    if attention in own_kernel_switches(stack):
        return False
    own = STACK_SETTINGS[stack]
    return with_attention(own, attention).but(attention_kernel=own.attention_kernel) != own


def kernel_choice(stack: Stack, attention: AttentionKernel | None) -> str:
    """``attention``'s name where it is a kernel choice of the user's (``is_kernel_choice``), else "":
    the kernel a band's regime is judged by (``Regime.kernel``), as a validation row's."""
    return str(attention) if attention is not None and is_kernel_choice(stack, attention) else ""
