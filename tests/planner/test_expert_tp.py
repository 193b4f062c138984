"""Expert tensor parallelism off (``Layout.expert_tp`` False, Megatron-Core's expert tp = 1):
whole experts on each tp rank, which routes its own sequence shard and lends its rank to ep."""

from __future__ import annotations

import numpy as np
import pytest
from support.rows import h100_row as candidates

from planner.catalog.models import get_preset
from planner.layout import Layout, Sharding
from planner.model.estimate import score
from planner.model.memory import block_activation_bytes_per_token
from planner.model.moe import all_to_all_s, held_fraction, tokens_per_expert
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS
from planner.model.stage_params import busiest_stage
from planner.model.step_comm import comm_times
from planner.model.step_time import block_gemm_time_per_token

MIXTRAL, LLAMA = get_preset("mixtral-8x7b"), get_preset("llama3-8b")
SETTINGS = MEGATRON_CORE_SETTINGS.but(moe_grouped_mlp=True)


def zero1(**degrees) -> Layout:
    return Layout(sharding=Sharding.ZERO1, **degrees)


@pytest.mark.parametrize(
    "layout, world, ok",
    [
        (zero1(tp=2, ep=8, expert_tp=False), 16, True),  # ep borrows 2 tp x 4 dp_shard ranks
        (zero1(tp=2, ep=8), 16, True),  # expert tp = tp: 8 of dp_shard's 8
        (zero1(tp=2, ep=16, expert_tp=False), 16, True),  # all tp x dp_shard ranks
        (zero1(tp=2, ep=16), 16, False),  # dp_shard is 8: ep 16 cannot borrow from it alone
        (zero1(tp=4, ep=2, expert_tp=False), 16, False),  # ep must hold whole tp groups
    ],
)
def test_without_expert_tp_ep_borrows_the_tensor_parallel_ranks(layout, world, ok):
    if ok:
        assert layout.resolve(world).ep == layout.ep
    else:
        with pytest.raises(ValueError, match="ep="):
            layout.resolve(world)


def test_expert_tp_changes_nothing_at_tp_1_or_for_a_dense_model():
    for model, degrees, world in ((MIXTRAL, dict(ep=8), 8), (LLAMA, dict(tp=4), 8)):
        on = score(model, candidates(zero1(**degrees), world), SETTINGS)
        off = score(model, candidates(zero1(expert_tp=False, **degrees), world), SETTINGS)
        assert off.time.step == pytest.approx(on.time.step, rel=1e-12)
        assert off.memory.device_total == pytest.approx(on.memory.device_total, rel=1e-12)


def test_whole_experts_on_twice_the_ep_ranks_hold_and_compute_what_split_ones_do():
    """tp 2 with expert tp off over ep 8 holds 1/8 of each block's experts per rank, as expert
    tp 2 over ep 4 does, and spends the same routed FLOPs; it sends half the tokens per rank
    through the all-to-all and skips the routed MLP's tp collectives."""
    split = candidates(zero1(tp=2, ep=4), 16)
    whole = candidates(zero1(tp=2, ep=8, expert_tp=False), 16)
    assert held_fraction(split) * 1 / 2 == pytest.approx(1 / 8)
    assert held_fraction(whole) / 2 == pytest.approx(1 / 8)
    stage_split, stage_whole = busiest_stage(MIXTRAL, split), busiest_stage(MIXTRAL, whole)
    assert stage_whole.held == pytest.approx(stage_split.held)
    # Per-expert batch: 8 ranks x 2048 tokens x 2 / 8 experts, the same as 4 x 4096 x 2 / 8.
    assert tokens_per_expert(MIXTRAL, whole) == pytest.approx(tokens_per_expert(MIXTRAL, split))
    # Same routed FLOPs per rank; the whole experts' dims are twice as wide (a better shape).
    routed_split = block_gemm_time_per_token(MIXTRAL, split, SETTINGS, routed_only=True)
    routed_whole = block_gemm_time_per_token(MIXTRAL, whole, SETTINGS, routed_only=True)
    assert 0.9 * routed_split < routed_whole < routed_split
    # Half the routed copies leave each rank (8-rank all-to-all inside one node either way).
    one_split, one_whole = (all_to_all_s(MIXTRAL, c, SETTINGS, 2.0) for c in (split, whole))
    assert one_whole < one_split
    # The attention's tp pair stays; the routed MLP's goes (Mixtral has no shared expert).
    tp_split, tp_whole = comm_times(MIXTRAL, split, SETTINGS).tp, comm_times(MIXTRAL, whole, SETTINGS).tp
    assert tp_whole == pytest.approx(tp_split / 2)


def test_whole_experts_keep_the_dispatched_copies_of_their_own_tokens_only():
    """Grouped expert MLP: each tp rank saves its own tokens' routed copies (h wide, whole),
    half what a rank of an expert-tp pair saves of them."""
    split = candidates(zero1(tp=2, ep=4), 16)
    whole = candidates(zero1(tp=2, ep=8, expert_tp=False), 16)
    saved_split = block_activation_bytes_per_token(MIXTRAL, split, SETTINGS)["mlp"]
    saved_whole = block_activation_bytes_per_token(MIXTRAL, whole, SETTINGS)["mlp"]
    assert saved_whole < saved_split


def test_expert_tp_flag_reaches_the_candidates_table():
    c = candidates(zero1(tp=2, ep=8, expert_tp=False), 16)
    assert (c.etp[0], c.expert_token_split[0], c.expert_shard_group[0]) == (1, 2, 2)
    assert np.all(candidates(zero1(tp=2, ep=4), 16).etp == 2)
