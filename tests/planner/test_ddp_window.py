"""A DDP reduction (sharding none) hides under the last micro-batch's backward on the PyTorch
stacks (torch DDP's Reducer, FSDP2's replicate: backward hooks, no sync on inner micro-batches);
Megatron keeps the whole step's window (session 39's trial)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model.candidates import single
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.model.step_time import backward_share, dp_window_s

MODEL = get_preset("llama2-7b")


def row(sharding: Sharding, grad_accum: int = 4):
    layout = Layout(dp_replicate=16, sharding=sharding) if sharding == Sharding.NONE else Layout(dp_shard=16)
    training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=grad_accum)
    gpu = load_catalog().gpu("h100-sxm")
    return single(gpu, layout.resolve(16), training, gpus_per_node=8, network_bandwidth=50e9)


def test_ddp_hides_under_the_last_backward_only():
    c = row(Sharding.NONE)
    window = dp_window_s(MODEL, c, DEFAULT_SETTINGS, np.array([8.0]))
    assert window[0] == pytest.approx(8.0 / 4 * backward_share(MODEL, c)[0])
    assert window[0] == pytest.approx(8.0 / 4 * 2 / 3)  # no recomputation: two of three passes


def test_sharded_rows_and_megatron_keep_the_whole_step():
    assert dp_window_s(MODEL, row(Sharding.FSDP), DEFAULT_SETTINGS, np.array([8.0]))[0] == 8.0
    ddp = row(Sharding.NONE)
    for stack in (Stack.MEGATRON_CORE, Stack.MEGATRON_LM, Stack.DEEPSPEED):
        assert dp_window_s(MODEL, ddp, STACK_SETTINGS[stack], np.array([8.0]))[0] == 8.0, stack
    for stack in (Stack.TRAINPLAN, Stack.TORCHTITAN, Stack.HF_TRAINER):
        assert STACK_SETTINGS[stack].ddp_reduces_in_backward, stack


def test_a_pipeline_reduces_after_its_last_backward():
    """review56: torch.distributed.pipelining holds an FSDP2 stage's reduction until after its last
    backward (stage.py perform_reduce_grad), so a DDP row with pp > 1 hides none of it on the PyTorch
    stacks; Megatron's rows keep the whole step's window."""
    training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=8)
    layout = Layout(dp_replicate=4, pp=4, sharding=Sharding.NONE).resolve(16)
    gpu = load_catalog().gpu("h100-sxm")
    c = single(gpu, layout, training, gpus_per_node=8, network_bandwidth=50e9)
    assert dp_window_s(MODEL, c, DEFAULT_SETTINGS, np.array([8.0]))[0] == 0.0
    assert dp_window_s(MODEL, c, STACK_SETTINGS[Stack.MEGATRON_CORE], np.array([8.0]))[0] == 8.0


def test_torchtitans_ddp_reduces_every_micro_batch_under_its_own_backward():
    """review56: torchtitan's trainer (b5bcd76) runs loss.backward() per accumulation step on fully_shard
    without set_requires_gradient_sync, so its DDP all-reduces each micro-batch, each under that
    backward: m reductions a step, hidden under every backward; trainplan's once, under the last."""
    from planner.model.step_comm import data_parallel_comm_s

    c = row(Sharding.NONE, grad_accum=4)
    titan, plain = STACK_SETTINGS[Stack.TORCHTITAN], STACK_SETTINGS[Stack.TRAINPLAN]
    window = dp_window_s(MODEL, c, titan, np.array([8.0]))[0]
    assert window == pytest.approx(8.0 * backward_share(MODEL, c)[0])
    titan_dp, plain_dp = (data_parallel_comm_s(MODEL, c, s, MODEL.num_layers)[0][0] for s in (titan, plain))
    assert titan_dp == pytest.approx(4 * plain_dp)
