"""A network whose all-reduce bus bandwidth was measured by message size (AWS p5 EFA, the Smol
Training Playbook's 16-node nccl-tests run) prices a cross-node collective at that curve's rate
for its per-call message; networks without a curve price exactly as before."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import CatalogError, _busbw_curve, load_catalog
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model import comm
from planner.model.candidates import single
from planner.model.settings import DEFAULT_SETTINGS as S
from planner.model.settings import TORCH_DDP_BUCKET_BYTES

P5 = load_catalog().network("efa-p5-3200")
MIB = 1024 * 1024


def candidates(curve, world: int = 128):
    layout = Layout(dp_replicate=world, sharding=Sharding.NONE).resolve(world)
    gpu = load_catalog().gpu("h100-sxm")
    return single(
        gpu,
        layout,
        TrainingConfig(seq_len=4096, micro_batch=1),
        gpus_per_node=8,
        network_bandwidth=P5.bandwidth_bytes_per_s_per_gpu,
        network_busbw_curve=curve,
    )


def ddp_link(curve, world: int = 128) -> comm.Link:
    return comm.group_link(candidates(curve, world), np.array([world]), np.array([1]), S)


def test_the_p5_entry_loads_its_curve_with_sources():
    assert P5.bandwidth_bytes_per_s_per_gpu == pytest.approx(400e9 / 8)
    assert P5.allreduce_busbw_nodes == 16
    sizes = [size for size, _ in P5.allreduce_busbw_curve]
    assert sizes == sorted(sizes) and sizes[0] == MIB and sizes[-1] == 8 * 1024 * MIB
    assert dict(P5.allreduce_busbw_curve)[16 * MIB] == pytest.approx(58.91e9)  # GB/s read as 1e9 B/s
    assert dict(P5.allreduce_busbw_curve)[8 * 1024 * MIB] == pytest.approx(328.99e9)
    for field in ("allreduce_busbw_nodes", "allreduce_busbw_message_bytes", "allreduce_busbw_gbyte_per_s"):
        assert "MEASURED" in P5.sources[field] and "nccl-multinode-bandwidth.json" in P5.sources[field]


def test_no_other_network_carries_a_curve():
    others = [n for n in load_catalog().networks.values() if n.id != P5.id]
    assert others and all(n.allreduce_busbw_curve is None for n in others)


def test_a_curve_needs_its_sizes_rates_and_node_count_together():
    with pytest.raises(CatalogError, match="expected all three"):
        _busbw_curve({"allreduce_busbw_message_bytes": [1.0, 2.0], "allreduce_busbw_gbyte_per_s": [1.0]}, "x")


def test_a_bucket_sized_all_reduce_runs_at_the_curves_rate():
    """torch DDP's 25 MiB bucket: log-log between the 16 MiB (58.91) and 32 MiB (70.99) points."""
    link = ddp_link(P5.allreduce_busbw_curve)
    total, n = 6.8e9, 128
    seconds = comm.all_reduce_s(total, n, link, message_bytes=TORCH_DDP_BUCKET_BYTES)[0]
    busbw = 2 * (n - 1) / n * total / seconds
    expected = 58.91e9 * (70.99 / 58.91) ** (np.log(25 / 16) / np.log(2))
    assert busbw == pytest.approx(expected, rel=1e-9)
    assert 60e9 < busbw < 70e9  # far below the line rate's share the model gives large messages
    assert busbw < 0.3 * link.bandwidth[0]


def test_a_large_all_reduce_runs_near_the_curves_top_and_never_above_the_model():
    link = ddp_link(P5.allreduce_busbw_curve)
    plain = ddp_link(None)
    total, n = 8 * 1024.0**3, 128
    seconds = comm.all_reduce_s(total, n, link)[0]
    assert seconds >= comm.all_reduce_s(total, n, plain)[0]  # never faster than the model
    assert 2 * (n - 1) / n * total / seconds == pytest.approx(328.99e9, rel=0.05)


def test_a_ring_with_fewer_gpus_a_node_leaves_through_fewer_nics():
    """Data parallelism across tp 2 groups holds 4 of each node's 8 GPUs: half the NICs the curve's
    rings used, so a large all-reduce takes about twice the curve's time; a latency-bound one stays
    at the ring model's own time (comm.fewer_nics_s adds the bandwidth-bound part only)."""
    c, n = candidates(P5.allreduce_busbw_curve), 64
    whole = comm.group_link(c, np.array([128]), np.array([1]), S)
    half = comm.group_link(c, np.array([n]), np.array([2]), S)
    assert half.curve_share == pytest.approx(0.5) and whole.curve_share == pytest.approx(1.0)
    large = 8 * 1024.0**3
    ratio = comm.all_reduce_s(large, n, half)[0] / comm.all_reduce_s(large, n, whole)[0]
    assert ratio == pytest.approx(2.0, rel=0.02)
    plain = comm.group_link(candidates(None), np.array([n]), np.array([2]), S)
    # 256 MiB: the curve at half the NICs is slower than the ring model's four NICs a node
    mid = 256.0 * MIB
    assert comm.all_reduce_s(mid, n, half)[0] > 1.2 * comm.all_reduce_s(mid, n, plain)[0]
    small = 2.0 * MIB
    assert comm.all_reduce_s(small, n, half)[0] == comm.all_reduce_s(small, n, plain)[0]


def test_a_group_inside_one_node_ignores_the_curve():
    link = ddp_link(P5.allreduce_busbw_curve, world=8)
    plain = ddp_link(None, world=8)
    args = (64 * MIB, 8)
    assert comm.all_reduce_s(*args, link, message_bytes=MIB)[0] == comm.all_reduce_s(*args, plain)[0]


def test_without_a_curve_nothing_changes():
    """The regression guard: a network without a curve gets no curve column and the ring model's
    time, to the bit, whatever message size is asked for."""
    c = candidates(None)
    assert c.network_busbw_curve.shape == (1, 0)
    link = ddp_link(None)
    assert link.curve is None
    total, n = 6.8e9, np.array([128.0])
    steps = n - 1
    analytic = 2 * (link.base_latency + steps * link.latency + steps / n * total / link.bandwidth)
    for message in (None, MIB, TORCH_DDP_BUCKET_BYTES):
        assert comm.all_reduce_s(total, n, link, message_bytes=message)[0] == analytic[0]


def test_the_catalogs_default_networks_build_no_curve_column():
    from planner.catalog.models import get_preset
    from planner.catalog.networks import catalog_on_network
    from planner.model.configuration import catalog_row
    from planner.search.space import SearchSpace, build_candidates

    space = SearchSpace(seq_len=4096, global_batch_tokens=4 * 1024 * 1024)
    plain = build_candidates(get_preset("llama2-7b"), load_catalog(), {"h100-sxm": 16, "a100-80gb-sxm": 16}, space)
    assert plain.network_busbw_curve.shape == (len(plain), 0)
    on_p5 = catalog_on_network(load_catalog(), P5.id)
    rows = build_candidates(get_preset("llama2-7b"), on_p5, {"h100-sxm": 16}, space)
    assert np.isfinite(rows.network_busbw_curve).all() and rows.network_busbw_curve.shape[0] == len(rows)
    layout = Layout(dp_replicate=16).resolve(16)
    row = catalog_row(on_p5.gpu("h100-sxm"), layout, TrainingConfig(seq_len=4096), on_p5, gpus_per_node=8)
    assert row.network_busbw_curve[0, 0] == pytest.approx(6.54e9)


def test_ddp_reads_the_curve_at_its_bucket_or_at_a_block():
    """torch DDP (hf-trainer, nanotron) all-reduces 25 MiB buckets; trainplan's and torchtitan's
    replicate one FSDP2 unit (a block) per call: larger messages, a faster point of the curve."""
    from planner.catalog.models import get_preset
    from planner.model.saved_bytes import reduced_grad_bytes
    from planner.model.stage_params import busiest_stage_params, layers_per_stage
    from planner.model.step_comm import data_parallel_comm_s

    model = get_preset("llama2-7b")
    c = candidates(P5.allreduce_busbw_curve)
    n_layers = layers_per_stage(model, c)
    whole = busiest_stage_params(model, c) * reduced_grad_bytes(c, S)
    link = ddp_link(P5.allreduce_busbw_curve)
    bucketed = S.but(ddp_bucket_bytes=TORCH_DDP_BUCKET_BYTES)
    per_bucket = data_parallel_comm_s(model, c, bucketed, n_layers)[0]
    per_block = data_parallel_comm_s(model, c, S, n_layers)[0]
    assert per_bucket[0] == pytest.approx(comm.all_reduce_s(whole, 128, link, message_bytes=25 * MIB)[0])
    assert per_block[0] == pytest.approx(comm.all_reduce_s(whole, 128, link, message_bytes=whole / (n_layers + 1))[0])
    assert per_bucket[0] > 1.5 * per_block[0]


def test_only_torch_ddp_stacks_read_its_buckets():
    from planner.model.stacks import STACK_SETTINGS, Stack

    assert STACK_SETTINGS[Stack.HF_TRAINER].ddp_bucket_bytes == TORCH_DDP_BUCKET_BYTES == 25 * MIB
    for stack in (Stack.TRAINPLAN, Stack.TORCHTITAN, Stack.DEEPSPEED, Stack.MEGATRON_CORE, Stack.MEGATRON_LM):
        assert STACK_SETTINGS[stack].ddp_bucket_bytes is None, stack
