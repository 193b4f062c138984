"""HSDP's (replicate, shard) mesh without the root-mesh slice of a flattened dim that torch 2.11+
warns of on every rank (runner53 M4), on a fake process group: no processes are started."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.distributed as dist
from torch.testing._internal.distributed.fake_pg import FakeStore

from planner.layout import Layout
from trainer.parallel import build_meshes


@pytest.mark.parametrize(
    ("layout", "rank"),
    [
        (Layout(dp_replicate=2, dp_shard=2), 0),
        (Layout(dp_replicate=2, dp_shard=2), 3),
        (Layout(dp_replicate=2, dp_shard=2, cp=2), 5),
        (Layout(dp_replicate=2, dp_shard=2, tp=2), 6),
        (Layout(dp_replicate=2, dp_shard=2, pp=2), 7),
    ],
    ids=lambda value: value.describe() if isinstance(value, Layout) else f"rank{value}",
)
def test_hsdp_mesh_holds_this_ranks_replicas_and_shards_without_a_warning(layout: Layout, rank: int) -> None:
    world_size = layout.world_size
    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world_size)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch's deprecation warning fails the test
            meshes = build_meshes(layout, "cpu")
        shape = tuple(degree for _, degree in layout.mesh_shape())  # (pp, dp_replicate, dp_shard, cp, tp)
        grid = torch.arange(world_size).view(shape)
        pp_i, _, _, _, tp_i = (int(i) for i in (grid == rank).nonzero()[0])
        expected = grid[pp_i, :, :, :, tp_i].reshape(layout.dp_replicate, layout.dp_shard * layout.cp)
        assert meshes.hsdp and meshes.fsdp.mesh_dim_names == ("dp_replicate", "dp_shard_cp")
        assert meshes.fsdp.mesh.tolist() == expected.tolist()
    finally:
        dist.destroy_process_group()
