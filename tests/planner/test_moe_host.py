"""MoE host dispatch: router/dispatcher launches and the token dispatcher's host sync
(planner/model/moe.py ``dispatch_launch_s``/``post_sync_host_s``, step_time.py
``host_sync_exposed_s`` and the host-stall combination; docs/model.md, "Host sync of the token
dispatcher")."""

from __future__ import annotations

import numpy as np
import pytest
from support.rows import h100_row as candidates

from planner.catalog.models import get_preset
from planner.layout import Layout, Precision
from planner.model import moe
from planner.model.memory import compute_dtype_bytes
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS
from planner.model.stage_params import layers_per_stage
from planner.model.step_time import block_gemm_time_per_token, host_sync_exposed_s, host_time, step_time

MIXTRAL = get_preset("mixtral-8x7b")
DENSE = get_preset("llama3-8b")


def test_dispatch_launches_follow_their_counts():
    s = MEGATRON_CORE_SETTINGS
    c = candidates(Layout(ep=8), 8)
    launches = s.moe_dispatch_launches_pre_sync + s.moe_dispatch_launches_post_sync + s.moe_dispatch_launches_backward
    assert launches > 0
    assert moe.dispatch_launch_s(MIXTRAL, c, s)[0] == pytest.approx(launches * s.moe_launch_s)
    # They add to the host time once per MoE block and micro-batch.
    without = s.but(
        moe_dispatch_launches_pre_sync=0.0, moe_dispatch_launches_post_sync=0.0, moe_dispatch_launches_backward=0.0
    )
    extra = host_time(MIXTRAL, c, s) - host_time(MIXTRAL, c, without)
    blocks = layers_per_stage(MIXTRAL, c) * c.grad_accum
    assert extra[0] == pytest.approx((blocks * launches * s.moe_launch_s)[0])


@pytest.mark.parametrize("precision, casts", [(Precision.BF16, 0.0), (Precision.FP8, 1.0)])
def test_post_sync_host_is_the_dispatcher_tail_and_the_local_experts_forward_launches(precision, casts):
    s = MEGATRON_CORE_SETTINGS
    for ep in (1, 8):
        c = candidates(Layout(ep=ep), 8, precision=precision)
        per_expert = (
            s.moe_forward_gemm_launches_per_local_expert + casts * s.moe_forward_fp8_cast_launches_per_local_expert
        )
        launches = s.moe_dispatch_launches_post_sync + MIXTRAL.num_experts / ep * per_expert
        assert moe.post_sync_host_s(MIXTRAL, c, s)[0] == pytest.approx(launches * s.moe_launch_s)
    assert moe.post_sync_host_s(MIXTRAL, c, s.but(moe_host_sync=False))[0] == 0.0


def test_sync_exposure_is_post_sync_host_over_its_gpu_work_per_forward():
    """Many post-sync launches make that stretch host-bound: exposed = forwards x (host - GPU)."""
    s = MEGATRON_CORE_SETTINGS.but(moe_dispatch_launches_post_sync=400.0)
    c = candidates(Layout(ep=8), 8, micro_batch=1, grad_accum=4)
    tokens = c.micro_batch * c.seq_len / c.cp
    gpu = tokens * block_gemm_time_per_token(MIXTRAL, c, s, routed_only=True) + moe.one_all_to_all_s(
        MIXTRAL, c, s, compute_dtype_bytes(c)
    )
    host = moe.post_sync_host_s(MIXTRAL, c, s)
    assert host[0] > gpu[0]
    forwards = layers_per_stage(MIXTRAL, c) * c.grad_accum
    assert host_sync_exposed_s(MIXTRAL, c, s)[0] == pytest.approx((forwards * (host - gpu))[0])
    # The step waits for it even though the whole step's dispatch is shorter than its GPU time.
    t = step_time(MIXTRAL, c, s)
    assert host_time(MIXTRAL, c, s)[0] < (t.step - t.host_stall)[0]
    assert t.host_stall[0] == pytest.approx(host_sync_exposed_s(MIXTRAL, c, s)[0])


def test_gpu_bound_post_sync_stretch_exposes_nothing():
    s = MEGATRON_CORE_SETTINGS.but(moe_launch_s=1e-9)
    c = candidates(Layout(ep=8), 8)
    assert host_sync_exposed_s(MIXTRAL, c, s)[0] == 0.0


def test_sync_free_configuration_is_unchanged():
    """Without the sync the host stall is the whole-step rule, whatever the launch counts."""
    s = MEGATRON_CORE_SETTINGS.but(moe_host_sync=False, moe_launch_s=2e-4)
    c = candidates(Layout(ep=8), 8)
    assert host_sync_exposed_s(MIXTRAL, c, s)[0] == 0.0
    t = step_time(MIXTRAL, c, s)
    host, gpu = host_time(MIXTRAL, c, s), t.step - t.host_stall
    expected = np.maximum(host - gpu, 0.0) + (1.0 - s.host_overlap) * np.minimum(host, gpu)
    assert t.host_stall[0] == pytest.approx(expected[0])


@pytest.mark.parametrize("settings", [DEFAULT_SETTINGS, MEGATRON_CORE_SETTINGS])
def test_dense_models_are_unchanged(settings):
    c = candidates(Layout(tp=2), 8)
    assert moe.dispatch_launch_s(DENSE, c, settings)[0] == 0.0
    assert host_sync_exposed_s(DENSE, c, settings)[0] == 0.0
    plain = settings.but(
        moe_host_sync=False,
        moe_dispatch_launches_pre_sync=0.0,
        moe_dispatch_launches_post_sync=0.0,
        moe_dispatch_launches_backward=0.0,
    )
    assert step_time(DENSE, c, settings).step[0] == step_time(DENSE, c, plain).step[0]


def test_trainplan_profile_syncs_but_counts_no_dispatch_launches_yet():
    """trainer/moe.py calls ``counts.tolist()`` every forward (a sync); its launches are not
    counted apart from the block's dispatch, so its post-sync host time, and exposure, is 0."""
    c = candidates(Layout(ep=8), 8)
    assert DEFAULT_SETTINGS.moe_host_sync
    assert moe.post_sync_host_s(MIXTRAL, c, DEFAULT_SETTINGS)[0] == 0.0
    assert host_sync_exposed_s(MIXTRAL, c, DEFAULT_SETTINGS)[0] == 0.0


def test_hierarchical_dispatch_sends_a_token_once_per_other_node():
    """DeepEP/HybridEP-style dispatch (``moe_hierarchical_dispatch``): over 2 nodes a token's 8
    copies visit the other node with probability 1 - 2^-8 and cross once; inside a node nothing
    changes."""
    s = MEGATRON_CORE_SETTINGS
    flex = s.but(moe_hierarchical_dispatch=True)
    two_nodes = candidates(Layout(ep=16), 16)
    copies = moe.network_copies_per_token(MIXTRAL, two_nodes, flex)[0]
    k = MIXTRAL.experts_per_token
    assert copies == pytest.approx(2.0 * (1.0 - 0.5**k))
    assert moe.network_copies_per_token(MIXTRAL, two_nodes, s)[0] == k
    dtype = compute_dtype_bytes(two_nodes)
    assert (
        moe.one_all_to_all_s(MIXTRAL, two_nodes, flex, dtype)[0] < moe.one_all_to_all_s(MIXTRAL, two_nodes, s, dtype)[0]
    )
    one_node = candidates(Layout(ep=8), 8)
    assert (
        moe.one_all_to_all_s(MIXTRAL, one_node, flex, dtype)[0] == moe.one_all_to_all_s(MIXTRAL, one_node, s, dtype)[0]
    )
