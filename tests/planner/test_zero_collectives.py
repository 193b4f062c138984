"""DeepSpeed ZeRO's collectives as its code issues them (planner/model/zero_collectives.py):
bucketed all-reduces and the blocking post-step gather for ZeRO-1/2, per-module gathers and
persistent tensors for ZeRO-3; each count checked by hand on a known model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model import comm
from planner.model.candidates import single
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.settings_job import REDUCE_EVERY_MICROBATCH
from planner.model.stack_profiles import DEEPSPEED_SETTINGS, HF_TRAINER_SETTINGS
from planner.model.stage_params import busiest_stage_params, layers_per_stage
from planner.model.step_comm import comm_times
from planner.model.step_time import step_time
from planner.model.zero_collectives import bucket_calls, tensors, zero3_s, zero12_s
from planner.model.zero_config import HF_DOCUMENTED_ZERO, ZeroConfig

LLAMA = get_preset("llama3.1-8b")
GPU = load_catalog().gpu("h100-sxm")
TRAINING = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=4)
# DeepSpeed's FSDP2 twin: the same modules and loss, reduced every micro-batch as DeepSpeed does (HF
# Trainer's own profile skips that under no_sync: tests/planner/test_hf_trainer_no_sync.py).
FSDP2_HF = HF_TRAINER_SETTINGS.but(accum_sync=REDUCE_EVERY_MICROBATCH)


def table(num_gpus, sharding, pp=1, model=LLAMA):
    layout = Layout(pp=pp, sharding=sharding).resolve(num_gpus)
    return single(GPU, layout, TRAINING, gpus_per_node=8, network_bandwidth=50e9)


def args(c, model=LLAMA):
    link = comm.group_link(c, c.shard_group, c.tp, DEFAULT_SETTINGS)
    return busiest_stage_params(model, c) / c.tp, link, layers_per_stage(model, c)


def test_hf_modules_tensors_add_up_to_the_block():
    """Llama: q, k, v, o, gate, up, down (7 Linear modules) and two RMSNorm weights per block;
    the root is the embedding, the untied head and the final norm."""
    t = tensors(LLAMA)
    h = LLAMA.hidden_size
    assert t.modules_per_block == 9 and len(t.block) == 9
    assert sum(t.block) == LLAMA.param_counts().per_layer
    assert sorted(t.block)[:2] == [h, h]
    assert t.root == (LLAMA.vocab_size * h, LLAMA.vocab_size * h, h)


def test_a_family_with_one_qkv_module_holds_it_as_one_tensor():
    """GPT-2 (``c_attn``), GPT-NeoX and BLOOM (``query_key_value``), Phi-3 (``qkv_proj``): one
    attention input weight, so ZeRO-3 gathers one module, not three. GPT-2's block: c_attn,
    c_proj, c_fc, c_proj and two LayerNorms (weight and bias each one module's)."""
    gpt, phi = get_preset("gpt3-125m"), get_preset("phi3-mini")
    assert gpt.fused_qkv and phi.fused_qkv and not LLAMA.fused_qkv
    assert tensors(gpt).modules_per_block == 6
    assert sum(tensors(gpt).block) == gpt.param_counts().per_layer
    # Phi-3: qkv_proj, o_proj, gate_up_proj, down_proj and two RMSNorms
    assert tensors(phi).modules_per_block == 6


def test_a_tensor_of_a_whole_bucket_is_reduced_alone():
    assert bucket_calls([10, 5, 5, 20, 3], 10) == (2, 13.0)
    assert bucket_calls([], 10) == (0, 0.0)


def test_zero1_reduces_once_exposed_and_zero2_every_micro_batch_behind_the_backward():
    """ZeRO-1 (no overlap_comm): one set of all-reduces after the backward, on the compute
    stream. ZeRO-2 (overlap_comm): every micro-batch, the last bucket waited for. Both end with
    the post-step gather, one blocking call per parameter group."""
    z = HF_DOCUMENTED_ZERO
    one, two = table(64, Sharding.ZERO1), table(64, Sharding.ZERO2)
    local, link, layers = args(one)
    bytes_ = local * 2.0
    n = one.shard_group
    # 8B on one rank: 218M-element blocks share 5e8 buckets; the embedding and head (525M) go alone.
    calls = 2 + math.ceil((32 * LLAMA.param_counts().per_layer + LLAMA.hidden_size) / z.zero12_reduce_bucket_elements)
    gather = comm.all_gather_s(bytes_, n, link, z.param_groups)
    grads = comm.all_reduce_s(bytes_, n, link, calls)
    r1 = zero12_s(LLAMA, one, z, local, link, layers)
    assert r1.overlappable[0] == 0.0
    assert r1.serial[0] == pytest.approx((grads + gather)[0])
    r2 = zero12_s(LLAMA, two, z, local, link, layers)
    # Each micro-batch's epilogue waits for its last bucket.
    assert r2.serial[0] == pytest.approx((4 * grads / calls + gather)[0])
    assert r2.overlappable[0] == pytest.approx((4 * grads - 4 * grads / calls)[0])


def test_a_pipeline_engine_turns_overlap_off():
    c = table(64, Sharding.ZERO1, pp=2)
    local, link, layers = args(c)
    on = ZeroConfig(zero1_overlap_comm=True)
    assert zero12_s(LLAMA, c, on, local, link, layers).overlappable[0] == 0.0


def test_zero3_gathers_per_module_and_regathers_its_norms_after_the_step():
    """HF "auto": a 0.9 hidden^2 prefetch bucket is smaller than every 4096-wide projection, so
    each of the 7 gathers alone, forward and backward; the 65 RMSNorm weights (<= 10 hidden)
    stay whole and are re-gathered one by one after the step."""
    c = table(64, Sharding.FSDP)
    local, link, layers = args(c)
    n = c.shard_group
    z = HF_DOCUMENTED_ZERO
    r = zero3_s(LLAMA, c, z, local, link, layers)
    h = LLAMA.hidden_size
    gathers = 2 * 4 * comm.all_gather_s(local * 2.0, n, link, 32 * 7 + 2)
    # reduce buckets of hidden^2: q, o and the three MLP matrices alone; k + v (h^2/2) share one.
    rs_calls = 32 * 5 + 2 + math.ceil((32 * (2 * h * h // 4 + 2 * h) + h) / (h * h))
    reduces = 4 * comm.reduce_scatter_s(local * 2.0, n, link, rs_calls)
    post = comm.all_gather_s(65 * h * 2.0, n, link, 65)
    assert r.overlappable[0] == pytest.approx((gathers + reduces - reduces / rs_calls)[0])
    assert r.serial[0] == pytest.approx((reduces / rs_calls + post)[0])


def test_a_larger_prefetch_bucket_batches_the_gathers():
    c = table(256, Sharding.FSDP)
    local, link, layers = args(c)
    small = zero3_s(LLAMA, c, HF_DOCUMENTED_ZERO, local, link, layers).overlappable[0]
    big = zero3_s(LLAMA, c, ZeroConfig(zero3_prefetch_bucket_hidden_sq=100.0), local, link, layers).overlappable[0]
    assert big < small


def test_deepspeed_pays_its_collective_count_at_scale_not_on_one_node():
    """The same ZeRO-3 layout: on 8 GPUs the extra calls cost little; on 256 (ring latency per
    call grows with the ranks) DeepSpeed's ~7 gathers per block cost more than FSDP2's one. (On
    one node DeepSpeed may be the faster: it reduces in bf16, FSDP2 here in fp32.)"""
    for gpus, low, high in ((8, 0.95, 1.05), (256, 1.2, 10.0)):
        c = table(gpus, Sharding.FSDP)
        ds = step_time(LLAMA, c, DEEPSPEED_SETTINGS).step[0]
        fsdp2 = step_time(LLAMA, c, FSDP2_HF).step[0]
        assert low <= ds / fsdp2 <= high, (gpus, ds / fsdp2)


def test_other_stacks_keep_fsdp2_units_and_ddp_is_untouched():
    for sharding in (Sharding.ZERO1, Sharding.FSDP):
        c = table(64, sharding)
        assert float(np.asarray(comm_times(LLAMA, c, FSDP2_HF).dp_serial).max()) == 0.0
        assert comm_times(LLAMA, c, DEEPSPEED_SETTINGS).dp_serial[0] > 0.0
    ddp = table(64, Sharding.NONE)  # stage 0: its BF16_Optimizer's fp32 gradients (review s36)
    assert comm_times(LLAMA, ddp, DEEPSPEED_SETTINGS).dp[0] == comm_times(LLAMA, ddp, FSDP2_HF).dp[0]


def test_the_gradient_buckets_take_memory_only_under_deepspeed():
    """ZeRO-2 with overlap_comm double-buffers its 5e8-element bf16 bucket: 2 GB beside the rest;
    ZeRO-1 (no overlap_comm) keeps one."""
    from planner.model.memory import memory

    for sharding, buffers in ((Sharding.ZERO2, 2), (Sharding.ZERO1, 1)):
        c = table(8, sharding)
        extra = memory(LLAMA, c, DEEPSPEED_SETTINGS).misc[0] - memory(LLAMA, c, FSDP2_HF).misc[0]
        assert extra == pytest.approx(buffers * 5e8 * 2.0)
    ddp = table(8, Sharding.NONE)
    assert memory(LLAMA, ddp, DEEPSPEED_SETTINGS).misc[0] == memory(LLAMA, ddp, FSDP2_HF).misc[0]


def test_deepspeed_keeps_gradients_in_the_model_dtype_and_an_fp32_partition_at_the_step():
    """Trial s36: ZeRO-1 gradients were charged 4 bytes each. DeepSpeed's stage_1_and_2 keeps
    them in the model's dtype (grad_accum_dtype None: bf16) and makes the fp32 copy of the rank's
    own partition at the step (docs/deepspeed-zero-reading.md 1a)."""
    from planner.model.memory import memory, optimizer_grad_copy_bytes
    from planner.model.stage_params import busiest_stage

    for sharding in (Sharding.ZERO1, Sharding.ZERO2, Sharding.FSDP):
        c = table(8, sharding)
        ours, hf = memory(LLAMA, c, DEEPSPEED_SETTINGS), memory(LLAMA, c, FSDP2_HF)
        assert ours.grads[0] == pytest.approx(hf.grads[0] / 2)  # bf16, not fp32
        copy = optimizer_grad_copy_bytes(busiest_stage(LLAMA, c), c, DEEPSPEED_SETTINGS)[0]
        assert copy == pytest.approx(LLAMA.num_params() * 4 / 8, rel=1e-3)  # one rank's fp32 eighth
    zero1 = memory(LLAMA, table(8, Sharding.ZERO1), DEEPSPEED_SETTINGS)
    assert zero1.grads[0] == pytest.approx(LLAMA.num_params() * 2, rel=1e-3)
    # review s36: stage 0 runs BF16_Optimizer (fp32 gradients) and fp32 training keeps fp32 ones,
    # with no copy at the step
    ddp = table(8, Sharding.NONE)
    assert memory(LLAMA, ddp, DEEPSPEED_SETTINGS).grads[0] == memory(LLAMA, ddp, FSDP2_HF).grads[0]
    fp32 = single(GPU, Layout(sharding=Sharding.ZERO1).resolve(8), TRAINING.model_copy(update={"precision": "fp32"}),
                  gpus_per_node=8, network_bandwidth=50e9)  # fmt: skip
    assert memory(LLAMA, fp32, DEEPSPEED_SETTINGS).grads[0] == pytest.approx(LLAMA.num_params() * 4, rel=1e-3)
    assert optimizer_grad_copy_bytes(busiest_stage(LLAMA, fp32), fp32, DEEPSPEED_SETTINGS)[0] == 0.0
