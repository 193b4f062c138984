"""Which context-parallel degrees the search tries, and the twins it names (trial s29b)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from planner.api import PlanRequest, plan
from planner.catalog.models import get_preset
from planner.model.candidates import SHARD_NONE, SHARD_ZERO1, SHARD_ZERO2
from planner.model.stacks import Stack
from planner.search.space import SearchSpace, searched_cp
from planner.search.ties import tie_order


def test_cp_2_is_searched_from_8k_tokens_and_every_degree_from_16k():
    """MLPerf Training v5.x ran Llama 3.1 405B and 8B at CP 2 on 8K sequences; the search had tried
    context parallelism from 16K only, so it could not reach those layouts."""

    def degrees(seq_len: int) -> list[int]:
        space = SearchSpace(seq_len=seq_len, global_batch_tokens=4 * 2**20)
        return [cp for cp in (2, 4, 8, 16) if searched_cp(space, cp)]

    assert degrees(4096) == []
    assert degrees(8192) == [2]
    assert degrees(16384) == [2, 4, 8, 16]
    assert not searched_cp(SearchSpace(seq_len=32768, global_batch_tokens=2**22, allow_cp=False), 2)


def test_a_405b_on_gb200_at_8k_finds_the_published_cp_2_layout():
    request = PlanRequest(
        model=get_preset("llama3.1-405b"),
        training_tokens=15e12,
        seq_len=8192,
        deadline_days=90,
        stack=Stack.MEGATRON_CORE,
        gpus={"gb200": None},
        precision="fp8",
        top_k=0,
    )
    layout = plan(request).plan.layout
    assert (layout.tp, layout.pp, layout.cp, layout.vpp) == (4, 8, 2, 8)  # MLPerf v5.0's GB200 recipe
    assert layout.sharding.value == "zero1"  # Megatron's distributed optimizer, not its zero2 twin


def test_of_twins_alike_in_time_the_lesser_sharding_goes_first():
    """Under a pipeline ZeRO-2 times as ZeRO-1: "zero2 pp=4" had been chosen under megatron-core."""
    table = SimpleNamespace(
        extra={
            "sharding": np.array([SHARD_ZERO2, SHARD_ZERO1, SHARD_ZERO2]),
            "uncapped_time_s": np.array([1.0, 1.0, 0.5]),
            "price_estimated": np.zeros(3, dtype=bool),
        }
    )
    assert tie_order(table, np.arange(3)).tolist() == [2, 1, 0]  # type: ignore[arg-type]
    # DDP holds every optimizer state: of DDP / ZeRO-1 twins, ZeRO-1 (review s29b: by code DDP came first)
    twins = SimpleNamespace(extra={"sharding": np.array([SHARD_NONE, SHARD_ZERO1]), "uncapped_time_s": np.ones(2)})
    assert tie_order(twins, np.arange(2)).tolist() == [1, 0]  # type: ignore[arg-type]
