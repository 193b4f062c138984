"""Megatron-DeepSpeed's --partition-activations (DeepSpeed's activation checkpointing under tp):
a checkpointed block keeps 1/tp of its input and all-gathers it, blocking, before its recompute."""

from __future__ import annotations

import pytest

from planner.api import build_plan, restack
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Layout, Sharding, TrainingConfig
from planner.model import comm
from planner.model.candidates import single
from planner.model.memory import activation_terms
from planner.model.pipeline import pipeline_ranks
from planner.model.stack_profiles import MEGATRON_DEEPSPEED_SETTINGS
from planner.model.stacks import Stack
from planner.model.step_comm import comm_times
from planner.stack_rules import partition_problem

MODEL = get_preset("gpt3-6.7b")
GPU = "a100-80gb-sxm"
TRAINING = TrainingConfig(
    seq_len=2048, micro_batch=2, grad_accum=8, activation_checkpointing=ActivationCheckpointing.FULL
)
LAYOUT = Layout(tp=4, pp=2, sharding=Sharding.ZERO1)


def table():
    return single(load_catalog().gpu(GPU), LAYOUT.resolve(32), TRAINING, gpus_per_node=8, network_bandwidth=6.25e9)


def test_the_checkpoint_keeps_one_tp_slice_and_is_gathered_before_each_recompute():
    c = table()
    on = MEGATRON_DEEPSPEED_SETTINGS.but(partition_activations=True)
    rank = pipeline_ranks(MODEL.num_layers, c)[0]
    whole = activation_terms(MODEL, c, MEGATRON_DEEPSPEED_SETTINGS, rank).kept[0]
    assert activation_terms(MODEL, c, on, rank).kept[0] == pytest.approx(whole / 4)
    tokens = 2 * 2048
    link = comm.group_link(c, c.tp, c.tp * 0 + 1, on)
    gather = comm.all_gather_s(tokens * MODEL.hidden_size * 2.0, c.tp, link)[0]
    layers = MODEL.num_layers // 2
    added = comm_times(MODEL, c, on).tp[0] - comm_times(MODEL, c, MEGATRON_DEEPSPEED_SETTINGS).tp[0]
    assert added == pytest.approx(layers * 8 * gather)


def test_only_megatron_deepspeed_partitions_and_restack_drops_it_elsewhere():
    assert partition_problem(Stack.MEGATRON_DEEPSPEED, True) is None
    assert "megatron-deepspeed" in str(partition_problem(Stack.MEGATRON_LM, True))
    assert partition_problem(Stack.TRAINPLAN, False) is None
    kwargs = dict(num_gpus=32, stack=Stack.MEGATRON_DEEPSPEED)
    plain = build_plan(MODEL, GPU, LAYOUT, TRAINING, **kwargs)
    parted = build_plan(MODEL, GPU, LAYOUT, TRAINING, partition_activations=True, **kwargs)
    assert parted.partition_activations and not plain.partition_activations
    assert parted.estimate.memory.breakdown_gib.activations < plain.estimate.memory.breakdown_gib.activations
    assert parted.estimate.time.step_s > plain.estimate.time.step_s
    assert not restack(parted, Stack.MEGATRON_LM).partition_activations
    with pytest.raises(ValueError, match="megatron-deepspeed"):
        build_plan(MODEL, GPU, LAYOUT, TRAINING, num_gpus=32, stack=Stack.MEGATRON_LM, partition_activations=True)
