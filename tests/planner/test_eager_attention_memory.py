"""The memory of attention that materialises its s x s scores (planner/model/attention_scores.py): Gemma 2's
eager soft-capped attention on the Hugging Face path, and Megatron-LM's unfused attention. What a
block saves of them is kept per block in flight, dropped by a checkpointed block (rebuilt for one
block during its backward), and changes which Gemma 2 plans fit."""

from __future__ import annotations

import pytest

from planner.api import PlanRequest, plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Implementation, Layout, TrainingConfig
from planner.model.candidates import single
from planner.model.memory import activation_bytes, fits, memory, recompute_bytes, score_backward_bytes
from planner.model.pipeline import pipeline_ranks
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stack_profiles import MEGATRON_LM_SETTINGS
from planner.units import GIB

GEMMA2 = get_preset("gemma2-9b")
FLASH_GEMMA2 = GEMMA2.model_copy(update={"attn_softcap": None})  # the same blocks under SDPA
SEQ = 8192
AC = ActivationCheckpointing


def candidates(tp: int, ac: AC = AC.NONE, impl: Implementation = Implementation.HF, micro_batch: int = 1):
    catalog = load_catalog()
    gpu = catalog.gpu("h100-sxm")
    return single(
        gpu,
        Layout(tp=tp).resolve(8),
        TrainingConfig(seq_len=SEQ, micro_batch=micro_batch, grad_accum=4, impl=impl, activation_checkpointing=ac),
        gpus_per_node=catalog.node(gpu.default_node).gpus_per_node,
        network_bandwidth=catalog.network(gpu.default_network).bandwidth_bytes_per_s_per_gpu,
    )


def block_scores(tp: int, micro_batch: int = 1) -> float:
    """Scores of one block and micro-batch on one rank: s x s for each of its 1/tp heads."""
    return micro_batch * SEQ * SEQ * GEMMA2.num_heads / tp


def acts(model, c, s=DEFAULT_SETTINGS) -> float:
    rank = pipeline_ranks(model.num_layers, c)[0]  # pp = 1: every rank holds all blocks
    return float(activation_bytes(model, c, s, rank)[0])


def test_the_saved_bytes_per_score_follow_eager_attention_forward():
    # tanh output (bf16) + fp32 softmax output + bf16 probabilities the AV matmul saves.
    assert DEFAULT_SETTINGS.eager_softcap_attention_saved_bytes_per_score == 2 + 4 + 2
    # Korthikanti et al. 2022: softmax output, dropout mask, dropout output (5as/h per sbh).
    assert DEFAULT_SETTINGS.unfused_attention_saved_bytes_per_score == 2 + 1 + 2


@pytest.mark.parametrize("tp, micro_batch", [(2, 1), (4, 2)])
def test_eager_gemma2_saves_its_scores_in_every_block_in_flight(tp, micro_batch):
    s = DEFAULT_SETTINGS
    c = candidates(tp, micro_batch=micro_batch)
    extra = acts(GEMMA2, c) - acts(FLASH_GEMMA2, c)
    per_block = block_scores(tp, micro_batch) * s.eager_softcap_attention_saved_bytes_per_score
    assert extra == pytest.approx(GEMMA2.num_layers * per_block)
    # Gemma2-9B at 8K: several GB a block and micro-batch (16 heads / tp = 2: 4.3 GB).
    assert block_scores(2) * s.eager_softcap_attention_saved_bytes_per_score > 4e9
    # The peak adds one block's score gradients during its backward (not under a larger loss peak).
    eager, flash = memory(GEMMA2, c, s), memory(FLASH_GEMMA2, c, s)
    grads = block_scores(tp, micro_batch) * s.eager_softcap_attention_backward_bytes_per_score
    assert float(score_backward_bytes(GEMMA2, c, s)[0]) == pytest.approx(grads)
    assert float(eager.peak_allocated[0] - flash.peak_allocated[0]) >= extra


def test_full_recompute_keeps_no_scores_but_rebuilds_one_blocks():
    s = DEFAULT_SETTINGS
    c = candidates(2, AC.FULL)
    assert acts(GEMMA2, c) == pytest.approx(acts(FLASH_GEMMA2, c))  # block inputs only
    # The recomputed block saves its scores again during its backward, beside their gradients.
    rebuilt = recompute_bytes(GEMMA2, c, s) - recompute_bytes(FLASH_GEMMA2, c, s)
    assert float(rebuilt[0]) == pytest.approx(block_scores(2) * s.eager_softcap_attention_saved_bytes_per_score)
    grads = block_scores(2) * s.eager_softcap_attention_backward_bytes_per_score
    assert float(score_backward_bytes(GEMMA2, c, s)[0]) == pytest.approx(grads)
    # That one block's transient competes with the loss peak (the larger counts: here the loss).
    assert float(memory(GEMMA2, c, s).peak_allocated[0]) >= float(memory(FLASH_GEMMA2, c, s).peak_allocated[0])
    # Layer-selective recompute (every other block) keeps the scores of half the blocks.
    c = candidates(2, AC.SELECTIVE)
    kept = -(-GEMMA2.num_layers // 2) * block_scores(2) * s.eager_softcap_attention_saved_bytes_per_score
    assert acts(GEMMA2, c) - acts(FLASH_GEMMA2, c) == pytest.approx(kept)


def test_native_blocks_and_flash_stacks_keep_no_scores():
    for model, c in ((GEMMA2, candidates(2, impl=Implementation.NATIVE)), (FLASH_GEMMA2, candidates(2))):
        assert float(score_backward_bytes(model, c, DEFAULT_SETTINGS)[0]) == 0.0
    native = candidates(2, impl=Implementation.NATIVE)
    assert acts(GEMMA2, native) == pytest.approx(acts(FLASH_GEMMA2, native))


def test_megatron_unfused_attention_saves_its_scores_unless_the_core_is_recomputed():
    c = candidates(2, impl=Implementation.NATIVE)
    saved = MEGATRON_LM_SETTINGS.but(recompute_attention_core=False)
    per_block = block_scores(2) * saved.unfused_attention_saved_bytes_per_score
    assert acts(FLASH_GEMMA2, c, saved) - acts(FLASH_GEMMA2, c, saved.but(flash_attention=True)) == pytest.approx(
        GEMMA2.num_layers * per_block, rel=1e-9
    )
    # Korthikanti et al.'s selective recompute (the profile's default): no scores kept, one
    # block's rebuilt with their gradients during its backward.
    assert acts(FLASH_GEMMA2, c, MEGATRON_LM_SETTINGS) == pytest.approx(
        acts(FLASH_GEMMA2, c, saved.but(flash_attention=True))
    )
    rebuilt = block_scores(2) * (
        MEGATRON_LM_SETTINGS.unfused_attention_saved_bytes_per_score
        + MEGATRON_LM_SETTINGS.unfused_attention_backward_bytes_per_score
    )
    assert float(score_backward_bytes(FLASH_GEMMA2, c, MEGATRON_LM_SETTINGS)[0]) == pytest.approx(rebuilt)


def plan_8k(model):
    return plan(PlanRequest(model=model, training_tokens=2e10, seq_len=SEQ, gpus={"h100-sxm": 8}, top_k=0)).plan


def test_a_gemma2_plan_leaves_room_for_its_scores():
    flash_pick, eager_pick = plan_8k(FLASH_GEMMA2), plan_8k(GEMMA2)
    s = DEFAULT_SETTINGS
    per_score = s.eager_softcap_attention_saved_bytes_per_score
    capacity = load_catalog().gpu("h100-sxm").memory_bytes

    def kept_scores(p) -> float:
        """Eager scores the plan's layout keeps on one GPU (blocks not recomputed)."""
        n = GEMMA2.num_layers / p.layout.pp
        blocks = n - min(p.training.ac_blocks, n)  # the first ac_blocks of the rank are recomputed
        kept = {AC.NONE: n, AC.SELECTIVE: -(-n // 2), AC.FULL: 0, AC.BLOCKS: blocks}[
            p.training.activation_checkpointing
        ]
        return kept * block_scores(p.layout.tp, p.training.micro_batch) * per_score

    # The pick the same blocks get under flash attention (before this memory term, Gemma 2 got
    # it too: zero1 dp_shard=2 tp=4, no recompute) would keep ~90 GB of scores on an 80 GB GPU.
    assert flash_pick.training.impl == Implementation.HF
    assert not fits(kept_scores(flash_pick), capacity, s.memory_headroom)
    assert fits(kept_scores(eager_pick), capacity, s.memory_headroom)
    assert eager_pick.estimate.feasible
    assert eager_pick.estimate.memory.breakdown_gib.activations * GIB >= kept_scores(eager_pick)
