"""Megatron-DeepSpeed with DeepSpeed's bf16 optimizer and pipeline engine
(planner/model/stack_profiles.py MEGATRON_DEEPSPEED_SETTINGS): each term read from DeepSpeed's
code, checked against its arithmetic; the other stacks' predictions keep the old terms."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model import comm, rates
from planner.model.attention_scores import scores_per_microbatch
from planner.model.candidates import single
from planner.model.flops import recompute_fraction
from planner.model.pipeline import pipeline_ranks
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stack_profiles import (
    MEGATRON_DEEPSPEED_HOST_S_PER_BLOCK,
    MEGATRON_DEEPSPEED_SETTINGS,
    MEGATRON_LM_SETTINGS,
)
from planner.model.stage_params import stage_params
from planner.model.step_comm import comm_times, tied_embedding_sync_s
from planner.model.step_time import (
    compute_time_per_microbatch,
    grad_accumulation_s,
    host_time,
    step_time,
    unfused_attention_bytes,
)

GPU = load_catalog().gpu("a100-80gb-sxm")
TRAINING = TrainingConfig(seq_len=2048, micro_batch=2, grad_accum=16)


def table(model, tp=4, pp=4, dp=2, sharding=Sharding.ZERO1):
    layout = Layout(tp=tp, pp=pp, sharding=sharding).resolve(tp * pp * dp)
    return single(GPU, layout, TRAINING, gpus_per_node=8, network_bandwidth=6.25e9)


def test_the_defaults_add_nothing():
    assert DEFAULT_SETTINGS.grad_accum_bytes_per_param == 0.0
    assert DEFAULT_SETTINGS.pp_transfers_per_microbatch == 2.0
    assert not DEFAULT_SETTINGS.tied_grad_fp32_unsharded
    c = table(get_preset("gpt3-2.7b"))
    rank = pipeline_ranks(32, c)[0]
    assert grad_accumulation_s(get_preset("gpt3-2.7b"), c, MEGATRON_LM_SETTINGS, rank)[0] == 0.0


def test_fp32_gradient_accumulation_is_18_bytes_per_local_parameter_per_micro_batch():
    """bf16_optimizer.py: cast (2 read, 4 written) and add (4 + 4 read, 4 written), every
    micro-batch, on every rank: it joins the slowest rank's memory-bound time."""
    model = get_preset("gpt3-2.7b")
    c = table(model)
    s = MEGATRON_DEEPSPEED_SETTINGS
    for rank in pipeline_ranks(model.num_layers, c):
        expected = stage_params(model, c, rank).total[0] / 4 * 18 / rates.copy_bandwidth(c, s)[0]
        assert grad_accumulation_s(model, c, s, rank)[0] == pytest.approx(expected)
    with_accum = compute_time_per_microbatch(model, c, s)["memory_bound"][0]
    without = compute_time_per_microbatch(model, c, s.but(grad_accum_bytes_per_param=0.0))["memory_bound"][0]
    assert with_accum > without


def test_blocking_pipeline_transfers_double_the_point_to_point_time():
    """TrainSchedule's SendActivation, RecvGrad, RecvActivation, SendGrad: 4 transfers per
    micro-batch on the critical path instead of 2 (the model has no tied embedding here)."""
    model = get_preset("gpt3-2.7b").model_copy(update={"tied_embeddings": False})
    c = table(model)
    two = comm_times(model, c, MEGATRON_LM_SETTINGS).pp[0]
    four = comm_times(model, c, MEGATRON_DEEPSPEED_SETTINGS).pp[0]
    assert two > 0 and four == pytest.approx(2 * two)
    assert MEGATRON_DEEPSPEED_SETTINGS.pp_comm_overlap == 0.0


def test_the_tied_gradient_is_reduced_in_fp32_and_whole():
    """_exec_reduce_tied_grads all-reduces ``weight._hp_grad``: 4 bytes, not ZeRO-sharded."""
    model = get_preset("gpt3-2.7b")
    assert model.tied_embeddings
    c = table(model, dp=8)
    link = comm.group_link(c, np.full_like(c.pp, 2), c.dp * c.cp * c.tp, DEFAULT_SETTINGS)
    bf16_sharded = tied_embedding_sync_s(model, c, link, MEGATRON_LM_SETTINGS.but(grad_bytes=2.0))[0]
    whole = tied_embedding_sync_s(model, c, link, MEGATRON_DEEPSPEED_SETTINGS.but(grad_bytes=2.0))[0]
    payload = model.vocab_size * model.hidden_size / c.tp[0]
    assert whole > bf16_sharded
    assert whole == pytest.approx(comm.all_reduce_s(np.array([payload * 4.0]), np.array([2]), link)[0])


def test_alibi_adds_its_bias_in_every_unfused_forward():
    """baddbmm with the ALiBi bias as its C input: 4 more bytes per score per forward (full
    recompute: two forwards); nothing with flash attention."""
    rope = get_preset("gpt3-2.7b")
    alibi = rope.model_copy(update={"position": "alibi"})
    c = table(rope, pp=1, dp=8)
    s = MEGATRON_LM_SETTINGS
    n_layers = np.array([rope.num_layers])
    extra = unfused_attention_bytes(alibi, c, s, n_layers)[0] - unfused_attention_bytes(rope, c, s, n_layers)[0]
    forwards = 1.0 + recompute_fraction(c, n_layers)[0]
    assert extra == pytest.approx(rope.num_layers * scores_per_microbatch(rope, c)[0] * 4.0 * forwards)
    assert unfused_attention_bytes(alibi, c, DEFAULT_SETTINGS, n_layers)[0] == 0.0  # flash: no scores


def test_launch_blocking_adds_the_whole_host_dispatch_to_the_gpus_time():
    """CUDA_LAUNCH_BLOCKING=1 (both sources' scripts): every launch waits for its kernel, so the
    step is the GPU's work plus all the host's dispatch, however small; Megatron-LM's host runs
    ahead, so only the larger of the two counts."""
    model = get_preset("gpt3-2.7b")
    c = table(model)
    blocking = step_time(model, c, MEGATRON_DEEPSPEED_SETTINGS)
    host = host_time(model, c, MEGATRON_DEEPSPEED_SETTINGS)[0]
    layers = model.num_layers / 4  # pp 4
    per_block = MEGATRON_DEEPSPEED_HOST_S_PER_BLOCK * (1 + recompute_fraction(c, layers)[0] * 0.7)
    assert host == pytest.approx(layers * TRAINING.grad_accum * per_block + DEFAULT_SETTINGS.host_overhead_per_step_s)
    assert blocking.host_stall[0] == pytest.approx(host)
    gpu = blocking.step[0] - host
    asynchronous = step_time(model, c, MEGATRON_DEEPSPEED_SETTINGS.but(host_overlap=1.0))
    assert asynchronous.step[0] == pytest.approx(max(gpu, host))
    assert blocking.step[0] == pytest.approx(gpu + host)


def test_a_serial_host_lengthens_the_pipelines_idle_slots_too():
    """Review s32: under CUDA_LAUNCH_BLOCKING=1 every micro-batch slot holds its host time, the
    fill and drain's idle ones too: (pp - 1) / vpp of one micro-batch's compute, tp and host."""
    model = get_preset("gpt3-2.7b")
    c = table(model)  # pp 4, 16 micro-batches
    t = step_time(model, c, MEGATRON_DEEPSPEED_SETTINGS)
    host = host_time(model, c, MEGATRON_DEEPSPEED_SETTINGS)[0]
    compute = t.matmul[0] + t.attention[0] + t.memory_bound[0] + t.measured_correction[0]
    assert t.bubble[0] == pytest.approx(3 * (compute + t.tp_comm[0] + host) / TRAINING.grad_accum)
    ahead = step_time(model, c, MEGATRON_DEEPSPEED_SETTINGS.but(host_overlap=1.0))
    assert ahead.bubble[0] == pytest.approx(3 * (compute + ahead.tp_comm[0]) / TRAINING.grad_accum)
