"""Attention that materialises its s x s score matrix in HBM: which candidates run it, how many
scores one rank holds per block and micro-batch, and the bytes per score it saves for backward.

Two paths do: a stack without flash attention (``ModelingSettings.flash_attention`` False,
Megatron-LM before 2022) and Hugging Face's eager attention, which the trainer builds for soft-
capped scores (Gemma 2: ``ModelSpec.hf_attention_implementation``). The step-time model streams
the scores through HBM (``step_time.unfused_attention_bytes``), the memory model keeps what
autograd saves of them (``memory.block_activation_bytes_per_token``); both count them here.
"""

from __future__ import annotations

import numpy as np

from planner.model.attention_kernels import AttentionKernel
from planner.model.candidates import IMPL_HF, Candidates
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec


def eager_softcap_attention(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Candidates whose attention runs eager in Hugging Face modules, materialising the scores:
    the trainer builds them with ``model.hf_attention_implementation`` (trainer/hf_model.py),
    "eager" for soft-capped scores (Gemma 2)."""
    return np.asarray((model.hf_attention_implementation == "eager") & (c.impl == IMPL_HF))


def flash_attention_on(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Candidates whose attention keeps the scores on chip (``s.flash_attention``, or a named
    unfused path the stack's cp replaces with the flash kernel: ``named_kernel_cp_fallback``;
    except the eager soft-capped attention of ``eager_softcap_attention``)."""
    flash = np.asarray(s.flash_attention) | named_kernel_cp_fallback(c, s)
    return flash & ~eager_softcap_attention(model, c)


def named_kernel_cp_fallback(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Rows where the kernel a user named (FlashAttention-3, llm-foundry's Triton flash, the unfused
    path: review s37) would run
    but for the stack's context parallelism, which calls the flash kernel: PyTorch's all-gather and
    ring CP reach SDPA's flash or efficient kernel only (``cudnn_attention_under_cp``, False there;
    TransformerEngine's CP, True, runs the kernel chosen per chunk). Trial s37: `--attention flash3`
    with cp 8 on trainplan's stack was timed 1.75x faster, where the named cuDNN fell back."""
    named = s.attention_kernel in (AttentionKernel.FLASH3, AttentionKernel.TRITON, AttentionKernel.EAGER)
    return named & cp_calls_flash_only(c, s)


def cp_calls_flash_only(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Rows under a context parallelism that reaches SDPA's flash or efficient kernel only,
    whatever kernel runs without it (``cudnn_attention_under_cp`` False: PyTorch's all-gather and
    ring CP; TransformerEngine's runs the kernel chosen per chunk)."""
    return (c.cp > 1) & (not s.cudnn_attention_under_cp)


def scores_per_token(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Scores one rank computes per local query token in one block: every key of the sequence
    (masked ones and those outside a sliding window too: the unfused paths add a mask, they
    skip nothing) for each of its 1/tp of the heads. Under context parallelism a rank's queries
    are its 1/cp of the sequence, their keys the whole of it."""
    return c.seq_len * model.num_heads / c.tp


def scores_per_microbatch(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Scores of one block and micro-batch on one rank (``scores_per_token`` x local tokens)."""
    return c.micro_batch * c.seq_len / c.cp * scores_per_token(model, c)


def materialised_bytes_per_score(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes per score the attention forward keeps for backward: none under flash attention
    (it keeps the fp32 log-sum-exp only, a block row), ``s.eager_softcap_attention_saved_bytes
    _per_score`` for eager soft-capped attention, ``s.unfused_attention_saved_bytes_per_score``
    otherwise."""
    unfused = np.where(
        eager_softcap_attention(model, c),
        s.eager_softcap_attention_saved_bytes_per_score,
        s.unfused_attention_saved_bytes_per_score,
    )
    return np.where(flash_attention_on(model, c, s), 0.0, unfused)


def core_recomputed(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Candidates whose stack re-runs the attention core in backward (``s.recompute_attention
    _core``, Megatron-LM's selective recompute); Hugging Face's eager attention never does."""
    return np.asarray(s.recompute_attention_core) & ~eager_softcap_attention(model, c)


def saved_bytes_per_score(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes per score a block keeps until its backward: ``materialised_bytes_per_score``,
    none where the attention core is recomputed."""
    return np.where(core_recomputed(model, c, s), 0.0, materialised_bytes_per_score(model, c, s))


def backward_bytes_per_score(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes per score one block's attention backward holds above what the block saved: the
    gradient temporaries of the score chain (``s.*_attention_backward_bytes_per_score``), and
    the rebuilt scores themselves where the attention core is recomputed."""
    unfused = np.where(
        eager_softcap_attention(model, c),
        s.eager_softcap_attention_backward_bytes_per_score,
        s.unfused_attention_backward_bytes_per_score,
    )
    grads = np.where(flash_attention_on(model, c, s), 0.0, unfused)
    return grads + np.where(core_recomputed(model, c, s), materialised_bytes_per_score(model, c, s), 0.0)
