"""FLOPs per token: model FLOPs (MFU) and hardware FLOPs including recompute (HFU).

Kaplan et al. 2020 / PaLM (Chowdhery et al. 2022, App. B): a forward pass costs 2 FLOPs per
matmul parameter per token plus the attention score and value products; backward costs
twice the forward. Recompute adds forward work to the hardware count only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.model.attended_keys import attended_keys, band_window_keys, window_keys
from planner.model.attention_kernels import AttentionKernel
from planner.model.block import block_table, layer_tables, root_table
from planner.model.block_rows import Part
from planner.model.candidates import AC_ATTENTION, AC_BLOCKS, AC_FULL, AC_SELECTIVE, IMPL_HF, IMPL_NATIVE, Candidates
from planner.model.pipeline import max_rank_layers
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec


@dataclass(frozen=True)
class FlopsPerToken:
    """Forward FLOPs per token by part (whole model, before any parallel split)."""

    block_matmul: float  # q, k, v, o and MLP projections of all blocks (active experts)
    attention: np.ndarray  # QK^T and AV products of all blocks (depends on seq_len)
    lm_head: float

    @property
    def forward(self) -> np.ndarray:
        return self.block_matmul + self.attention + self.lm_head


def forward_flops_per_token(model: ModelSpec, seq_len: np.ndarray | float, s: ModelingSettings) -> FlopsPerToken:
    """2 FLOPs per weight; attention 2 * heads * (qk + v head dims) per attended key and block
    (half the keys when counted causally; a sliding window bounds them: ``attended_keys``)."""
    block = block_table(model)
    attention = attended_keys(model, seq_len, s.causal_attention_flops) * block.attention.flops_per_token_per_key
    head = root_table(model).lm_head
    weights = sum(n * table.matmul_weights for n, table in layer_tables(model))
    return FlopsPerToken(
        block_matmul=2.0 * weights,
        attention=np.asarray(attention, dtype=float),
        lm_head=2.0 * head.d_in * head.d_out,
    )


def model_flops_per_token(model: ModelSpec, seq_len: np.ndarray, s: ModelingSettings) -> np.ndarray:
    """Forward + backward = 3x forward (6N + attention): the MFU numerator."""
    return 3.0 * forward_flops_per_token(model, seq_len, s).forward


def checkpointed_blocks(c: Candidates, n_layers) -> np.ndarray:
    """Of a pp rank's ``n_layers`` blocks, those ``ActivationCheckpointing.BLOCKS`` checkpoints:
    its first ``ac_blocks`` (in stage order under vpp, trainer/parallel.py ``rank_ac_blocks``)."""
    return np.minimum(c.ac_blocks, n_layers)


def recompute_fraction(c: Candidates, n_layers) -> np.ndarray:
    """Share of the block forward work of a pp rank of ``n_layers`` blocks done again in backward:
    full 1, every-other-block 1/2, the first ``ac_blocks`` of the rank their share."""
    blocks = checkpointed_blocks(c, n_layers) / np.maximum(n_layers, 1)
    return np.select([c.ac == AC_FULL, c.ac == AC_SELECTIVE, c.ac == AC_BLOCKS], [1.0, 0.5, blocks], 0.0)


def attention_recompute_fraction(c: Candidates) -> np.ndarray:
    """Share of the blocks whose attention sub-layer (QKV, core attention, output projection) runs
    again in backward beyond whole recomputed blocks: every block under ``attention``."""
    return np.where(c.ac == AC_ATTENTION, 1.0, 0.0)


def attention_matmul_flops_per_token(model: ModelSpec) -> float:
    """Forward FLOPs per token of the attention sub-layers' projections, all blocks: 2 per weight."""
    weights = sum(
        n * sum(g.active_weights for g in table.gemms if g.part == Part.ATTENTION) for n, table in layer_tables(model)
    )
    return 2.0 * weights


def busiest_recompute_fraction(model: ModelSpec, c: Candidates) -> np.ndarray:
    """``recompute_fraction`` of the pp rank with the most blocks (whole-model and per-step
    figures: HFU, MoE all-to-alls), as memory and host time count that rank."""
    return recompute_fraction(c, max_rank_layers(model.num_layers, c))


def module_recompute_share(c: Candidates, n_layers) -> np.ndarray:
    """Share of the blocks whose recomputed modules (``ModelingSettings.recompute_modules``) run
    again in backward: the native blocks a checkpoint does not already re-run whole. Hugging Face
    modules recompute none (the stack's module recompute is Megatron-Core's)."""
    return (1.0 - recompute_fraction(c, n_layers)) * (c.impl != IMPL_HF)


def chunked_loss(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Where the LM head + loss runs over token chunks (``s.loss_chunk_tokens``): wherever the
    head is not tensor-parallel, as trainer/loss.py does (with tp > 1 it keeps the full local
    logits of the vocabulary-parallel loss)."""
    return (s.loss_chunk_tokens > 0) & (c.tp == 1)


def head_recompute_fraction(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Share of the LM head's forward done again in backward: the chunked loss recomputes each
    chunk's logits (one more head GEMM), the full-logits loss nothing."""
    return np.where(chunked_loss(c, s), 1.0, 0.0)


def recomputed_module_flops_per_token(model: ModelSpec, s: ModelingSettings) -> float:
    """Forward GEMM FLOPs per token of the modules the stack recomputes (``s.recompute_modules``:
    MLA's up projections), all blocks: 2 per weight."""
    weights = sum(
        n * sum(g.active_weights for g in table.gemms if g.recompute in s.recompute_modules)
        for n, table in layer_tables(model)
    )
    return 2.0 * weights


def hf_dense_experts(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Where every expert runs on every token: Hugging Face's modules of a family whose MoE layer
    is one batched GEMM over all experts (``ModelShape.hf_experts_dense``)."""
    return np.asarray((c.impl == IMPL_HF) & model.hf_experts_dense)


def unrouted_expert_flops_per_token(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Forward FLOPs per token of the experts a token was not routed to, where they run anyway
    (``hf_dense_experts``): (E / k - 1) x the routed experts' 2 FLOPs per weight. Not model FLOPs
    (MFU counts the routed work), hardware FLOPs."""
    routed = sum(n * sum(g.active_weights for g in t.gemms if g.experts > 1) for n, t in layer_tables(model))
    unrouted = 2.0 * routed * (model.hf_expert_work_factor - 1.0)
    return np.where(hf_dense_experts(model, c), unrouted, 0.0)


# Kernels SDPA is asked for with a mask: its own choice, or one a run forces through SDPA. A kernel
# named outside SDPA (flash-attn's FlashAttention-2/3 with ``window_size``, HF's
# flash_attention_2) skips the tiles outside the window (review s37: HF + --attention flash2 was
# timed as the whole square, 8.5x its window).
SDPA_MASKED_KERNELS = (None, AttentionKernel.CUDNN, AttentionKernel.SDPA_FA2)


def _windowed(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Rows with windowed blocks shorter than the sequence, run by SDPA with a mask."""
    window = model.sliding_window or 0
    return np.asarray((s.attention_kernel in SDPA_MASKED_KERNELS) & (model.sliding_layers > 0) & (c.seq_len > window))


def banded_window_rows(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Rows whose windowed blocks run trainplan's banded attention: its own modules
    (``s.sliding_window_band``, trainplan's trainer) with a window shorter than the sequence."""
    return np.asarray(s.sliding_window_band & (c.impl == IMPL_NATIVE) & _windowed(model, c, s))


def masked_window_rows(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Rows whose windowed blocks run transformers' SDPA path (Hugging Face modules,
    ``hf_attention_implementation`` sdpa) with a window shorter than the sequence: it passes a
    [s, s] mask, so the kernel computes every tile of the whole square."""
    sdpa = model.hf_attention_implementation == "sdpa"
    return np.asarray(sdpa & (c.impl == IMPL_HF) & _windowed(model, c, s))


def masked_window_flops_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Forward attention FLOPs per token a windowed block's kernel computes beyond the window's
    own keys (``window_keys``), all windowed blocks: trainplan's band (``band_window_keys``) or
    transformers' masked square (s keys a query, every tile: ``masked_window_rows``); 0 where the
    kernel skips the tiles outside the window. Hardware FLOPs, not model FLOPs: the mask drops them."""
    w = float(model.sliding_window or 0)
    causal = s.causal_attention_flops
    own = window_keys(w, c.seq_len, causal)
    computed = np.select(
        [banded_window_rows(model, c, s), masked_window_rows(model, c, s)],
        [band_window_keys(w, c.seq_len, causal), c.seq_len],
        own,
    )
    return (computed - own) * model.sliding_layers * block_table(model).attention.flops_per_token_per_key


@dataclass(frozen=True)
class HardwareFlops:
    """The HFU numerator per token by term (arrays over candidate rows): the model FLOPs, then
    the work the hardware does beyond them, each forward + backward (+ recompute where it runs
    again), so ``explain`` can name them (trial s52: all of it was called "recompute")."""

    model: np.ndarray  # 6N + attention: the MFU numerator
    masked_window: np.ndarray  # the keys a window's mask drops but its kernel computes
    unrouted_experts: np.ndarray  # experts run on tokens not routed to them (hf_dense_experts)
    recompute_blocks: np.ndarray  # checkpointed block forwards
    recompute_attention: np.ndarray  # checkpointed attention sub-layers (ac attention)
    recompute_modules: np.ndarray  # the stack's recomputed modules (MLA's up projections)
    head_recompute: np.ndarray  # the chunked loss's second LM-head GEMM

    @property
    def recompute(self) -> np.ndarray:
        return self.recompute_blocks + self.recompute_attention + self.recompute_modules

    @property
    def total(self) -> np.ndarray:
        return (
            self.model
            + self.masked_window
            + self.unrouted_experts
            + self.recompute_blocks
            + self.recompute_attention
            + self.recompute_modules
            + self.head_recompute
        )


def hardware_flops(model: ModelSpec, c: Candidates, s: ModelingSettings) -> HardwareFlops:
    """Model FLOPs plus the recomputed block forwards, attention sub-layers, modules and LM head,
    experts run on tokens not routed to them and the keys a window's mask drops."""
    f = forward_flops_per_token(model, c.seq_len, s)
    recompute = recompute_fraction(c, max_rank_layers(model.num_layers, c))
    attention = attention_recompute_fraction(c)
    return HardwareFlops(
        model=3.0 * f.forward,
        masked_window=(3.0 + recompute + attention) * masked_window_flops_per_token(model, c, s),
        unrouted_experts=(3.0 + recompute) * unrouted_expert_flops_per_token(model, c),
        recompute_blocks=recompute * (f.block_matmul + f.attention),
        recompute_attention=attention * (attention_matmul_flops_per_token(model) + f.attention),
        recompute_modules=module_recompute_share(c, max_rank_layers(model.num_layers, c))
        * recomputed_module_flops_per_token(model, s),
        head_recompute=head_recompute_fraction(c, s) * f.lm_head,
    )


def hardware_flops_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """The HFU numerator: ``hardware_flops``' terms summed."""
    return hardware_flops(model, c, s).total
