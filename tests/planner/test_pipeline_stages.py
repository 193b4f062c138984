"""Uneven pipeline stages: the split rule, its vectorised per-rank form, and what it changes."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig, max_pipeline_stages, stage_layer_counts, stage_layer_ranges
from planner.model import comm
from planner.model.candidates import single
from planner.model.estimate import estimate
from planner.model.pipeline import rank_layers
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.step_comm import tied_embedding_sync_s
from planner.search.space import pipeline_degrees


def test_llama3_405b_on_16_stages_is_metas_split():
    """Dubey et al. 2024 sec. 3.3.2: one block fewer on the first and the last stage."""
    assert stage_layer_counts(126, 16) == (7,) + (8,) * 14 + (7,)


@pytest.mark.parametrize("num_layers, num_stages", [(32, 8), (80, 16), (4, 2), (4, 4), (6, 3), (96, 96)])
def test_divisible_layers_keep_the_even_split(num_layers, num_stages):
    assert stage_layer_counts(num_layers, num_stages) == (num_layers // num_stages,) * num_stages


def test_stages_cover_every_block_once_in_order():
    for num_layers in range(1, 40):
        for num_stages in range(1, max_pipeline_stages(num_layers) + 1):
            ranges = stage_layer_ranges(num_layers, num_stages)
            assert [i for r in ranges for i in r] == list(range(num_layers))
            counts = stage_layer_counts(num_layers, num_stages)
            slots = [c + (s == 0) + (s == num_stages - 1) for s, c in enumerate(counts)] if num_stages > 1 else counts
            assert max(slots) - min(slots) <= 1  # weighted load balanced to one block


def test_the_embedding_and_the_head_may_have_stages_of_their_own():
    """Up to layers + 2 stages: the first may hold only the embedding, the last only the head
    (Megatron-Bridge's 405B recipes: 126 blocks on pp 16 x vpp 8)."""
    assert stage_layer_counts(4, 6) == (0, 1, 1, 1, 1, 0)
    assert stage_layer_counts(4, 5) == (1, 1, 1, 1, 0)
    assert stage_layer_counts(126, 128) == (0,) + (1,) * 126 + (0,)
    with pytest.raises(
        ValueError, match=r"pipeline stages need 1\.\.6 \(the layer count, the embedding and the head\)"
    ):
        stage_layer_counts(4, 7)


def test_vectorised_rank_layers_match_the_rule():
    for num_layers in (1, 2, 3, 5, 7, 16, 27, 32, 61, 126):
        for pp in range(1, max_pipeline_stages(num_layers) + 1):
            for vpp in range(1, max_pipeline_stages(num_layers) // pp + 1) if pp > 1 else (1,):
                counts = stage_layer_counts(num_layers, pp * vpp)
                want = [sum(counts[r + k * pp] for k in range(vpp)) for r in range(pp)]
                assert rank_layers(num_layers, pp, vpp, np.arange(pp)).tolist() == want, (num_layers, pp, vpp)


def test_search_grid_is_derived_from_the_layer_count():
    pp, vpp = pipeline_degrees(126)
    assert set(pp.tolist()) == {1, 2, 3, 4, 6, 7, 8, 9, 14, 16, 32, 64}
    assert (pp * vpp <= 128).all() and ((pp > 1) | (vpp == 1)).all() and vpp.max() == 8
    assert vpp[pp == 16].tolist() == [1, 2, 4, 8]  # 128 slots // 16: 8 stages of one block or the embedding/head
    assert pipeline_degrees(1)[0].tolist() == [1]


def test_metas_405b_layout_estimates_with_uneven_stages():
    """126 layers on pp=16 were refused before (not divisible); the first rank (7 blocks, the
    embedding, 16 micro-batches in flight) is the most loaded with no recompute."""
    e = estimate(
        get_preset("llama3.1-405b"),
        "h100-sxm",
        Layout(tp=8, pp=16, sharding="zero1"),
        TrainingConfig(seq_len=8192, micro_batch=1, grad_accum=16, activation_checkpointing="full"),
        num_gpus=16384,
    )
    assert e.feasible and e.layout.pp == 16
    one = e.memory.breakdown_gib.activations
    # Full recompute keeps each block's input: 7 or 8 blocks x 16 micro-batches x 8192 x 16384 x 2 / tp.
    per_block = 8192 * 16384 * 2 / 8 / 2**30
    assert 7 * 16 * per_block <= one <= 8 * 16 * per_block + 1.0


def test_tied_embeddings_pipeline_and_pay_one_gradient_all_reduce():
    """GPT-3 175B (tied head) on pp=8 is allowed; its pipeline traffic adds the once-per-step
    all-reduce of the tied weight's gradient between the first and the last rank."""
    model = get_preset("gpt3-175b")
    assert model.tied_embeddings
    layout, training = Layout(tp=8, pp=8, sharding="zero1"), TrainingConfig(seq_len=2048, micro_batch=1, grad_accum=16)
    e = estimate(model, "h100-sxm", layout, training, num_gpus=512)
    assert e.layout.pp == 8 and e.time.breakdown_s.pp_comm > 0
    c = single(load_catalog().gpu("h100-sxm"), layout.resolve(512), training, gpus_per_node=8, network_bandwidth=5e10)
    link = comm.group_link(c, np.full_like(c.pp, 2), c.dp * c.cp * c.tp, DEFAULT_SETTINGS)
    untied = model.model_copy(update={"tied_embeddings": False})
    assert tied_embedding_sync_s(untied, c, link, DEFAULT_SETTINGS)[0] == 0.0
    grad_bytes = model.vocab_size * model.hidden_size * 4 / 8 / 8  # fp32, / tp, / ZeRO-1 shards
    assert tied_embedding_sync_s(model, c, link, DEFAULT_SETTINGS)[0] >= grad_bytes / link.bandwidth[0]


def test_the_slowest_rank_sets_the_pace():
    """Stage imbalance: the step's compute is the slowest rank's. 126 blocks on pp=16: a middle
    rank's 8 blocks outweigh the last rank's 7 blocks + head (the head and loss cost less than one
    405B block); on pp=63 every rank has 2 blocks and the last one's head makes it the slowest."""
    from planner.model.step_time import compute_time_per_microbatch, rank_compute_time

    model = get_preset("llama3.1-405b")
    training = TrainingConfig(seq_len=8192, micro_batch=1, grad_accum=16)
    gpu = load_catalog().gpu("h100-sxm")
    for pp, middle, last in ((16, 8, 7), (63, 2, 2)):
        c = single(gpu, Layout(tp=8, pp=pp).resolve(8 * pp), training, gpus_per_node=8, network_bandwidth=5e10)
        busiest = sum(compute_time_per_microbatch(model, c, DEFAULT_SETTINGS).values())
        middle_s = sum(rank_compute_time(model, c, DEFAULT_SETTINGS, np.array([middle]), np.array([False])).values())
        last_s = sum(rank_compute_time(model, c, DEFAULT_SETTINGS, np.array([last]), np.array([True])).values())
        assert busiest == pytest.approx(max(middle_s, last_s))
        assert (middle_s > last_s) == (pp == 16)
