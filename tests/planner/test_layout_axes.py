"""Mesh axes (planner/layout.py) and the candidate columns derived from the layout's fields."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.layout import (
    WORLD_AXES,
    ActivationCheckpointing,
    Implementation,
    Layout,
    MeshAxis,
    PipelineSchedule,
    Precision,
    Sharding,
    TrainingConfig,
)
from planner.model.candidates import KNOBS, Candidates, single


def test_every_mesh_axis_is_a_layout_degree_outermost_first():
    assert [str(a) for a in MeshAxis] == ["pp", "dp_replicate", "dp_shard", "cp", "tp", "ep"]
    # ep is carved out of dp_shard x cp (planner/layout.py): an axis of the experts' mesh only.
    assert [str(a) for a in WORLD_AXES] == ["pp", "dp_replicate", "dp_shard", "cp", "tp"]
    layout = Layout(dp_replicate=2, dp_shard=3, tp=4, pp=5, cp=6)
    assert layout.mesh_shape() == (
        (MeshAxis.PP, 5),
        (MeshAxis.DP_REPLICATE, 2),
        (MeshAxis.DP_SHARD, 3),
        (MeshAxis.CP, 6),
        (MeshAxis.TP, 4),
    )
    assert layout.describe() == "hsdp pp=5 dp_replicate=2 dp_shard=3 cp=6 tp=4"


def test_enabled_properties():
    plain = Layout().resolve(8)
    assert not any(
        [plain.pp_enabled, plain.tp_enabled, plain.cp_enabled, plain.dp_replicate_enabled, plain.vpp_enabled]
    )
    assert plain.dp_shard_enabled and plain.fsdp_enabled and not plain.hsdp_enabled
    big = Layout(dp_replicate=2, tp=2, pp=2, cp=2, vpp=2).resolve(16)
    assert all([big.pp_enabled, big.tp_enabled, big.cp_enabled, big.vpp_enabled, big.hsdp_enabled])
    assert not big.dp_shard_enabled
    with pytest.raises(AssertionError):
        _ = Layout().dp_shard_enabled  # unresolved


def test_every_layout_and_training_field_is_a_candidate_column():
    columns = {f.name for f in fields(Candidates)}
    for owner in (Layout, TrainingConfig):
        assert {k.field for k in KNOBS if k.owner is owner} == set(owner.model_fields)
    assert {k.column for k in KNOBS} <= columns


@pytest.mark.parametrize(
    "layout, training",
    [
        (Layout(), TrainingConfig()),
        (
            Layout(dp_replicate=2, tp=2, pp=2, vpp=2, cp=2, sharding=Sharding.ZERO2),
            TrainingConfig(
                seq_len=4096,
                micro_batch=2,
                grad_accum=4,
                activation_checkpointing=ActivationCheckpointing.SELECTIVE,
                precision=Precision.FP8,
                impl=Implementation.HF,
                compile=True,
                offload=True,
            ),
        ),
        (Layout(pp=4, pp_schedule=PipelineSchedule.GPIPE, sharding=Sharding.NONE), TrainingConfig()),
    ],
)
def test_a_configuration_round_trips_through_its_row(layout, training):
    layout = layout.resolve(64)
    c = single(load_catalog().gpu("h100-sxm"), layout, training, gpus_per_node=8, network_bandwidth=50e9)
    assert c.layout(0) == layout and c.training(0) == training


def test_knobs_left_out_take_their_defaults():
    c = Candidates.from_columns(3, **{f.name: np.arange(3) for f in fields(Candidates) if f.name not in {"vpp", "ac"}})
    assert c.vpp.tolist() == [1, 1, 1] and c.ac.tolist() == [0, 0, 0]
