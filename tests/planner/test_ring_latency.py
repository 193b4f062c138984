"""A ring's latency as NCCL's tuning model charges it: only the steps between nodes pay the
network's (src/graph/tuning.cc, ``(nsteps - nInterSteps) intraLat + nInterSteps interLat``)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.layout import Layout, TrainingConfig
from planner.model import comm
from planner.model.candidates import single
from planner.model.settings import DEFAULT_SETTINGS as S


def candidates(num_gpus: int):
    layout = Layout(dp_shard=num_gpus).resolve(num_gpus)
    training = TrainingConfig(seq_len=4096, micro_batch=1)
    gpu = load_catalog().gpu("b200")
    return single(gpu, layout, training, gpus_per_node=8, network_bandwidth=50e9, num_gpus=num_gpus)


def test_a_ring_over_nodes_pays_the_network_latency_once_per_node_crossing():
    c = candidates(256)
    link = comm.group_link(c, np.array([256]), np.array([1]), S)  # 8 ranks in each of 32 nodes
    intra = comm.scaleup_rate(c, S)[1][0]
    expected = ((256 - 32) * intra + 31 * S.latency_network_s) / 255
    assert link.latency[0] == pytest.approx(expected)
    # the trial case: MLPerf's 8B on 256 B200 was charged 255 network steps a call, 3.6 ms
    assert link.latency[0] < S.latency_network_s / 2.9  # 3x less than that


def test_one_rank_per_node_pays_the_network_on_every_step_and_one_node_never():
    c = candidates(256)
    across = comm.group_link(c, np.array([32]), np.array([8]), S)  # one rank in each node
    assert across.latency[0] == pytest.approx(S.latency_network_s)
    inside = comm.group_link(c, np.array([8]), np.array([1]), S)
    assert inside.latency[0] == pytest.approx(comm.scaleup_rate(c, S)[1][0])


def test_a_ring_over_pcie_nodes_pays_pcie_latency_inside_them():
    """NCCL's intraLat follows the ring's path inside the node: PCIe cards pay hwLat PCI (5.7 us)."""
    gpu = load_catalog().gpu("l40s")
    c = single(gpu, Layout(dp_shard=16).resolve(16), TrainingConfig(seq_len=4096), gpus_per_node=8,
               network_bandwidth=25e9, num_gpus=16)  # fmt: skip
    link = comm.group_link(c, np.array([16]), np.array([1]), S)
    assert link.latency[0] == pytest.approx((14 * S.latency_pcie_s + 1 * S.latency_network_s) / 15)
    inside = comm.group_link(c, np.array([8]), np.array([1]), S)
    assert inside.latency[0] == pytest.approx(S.latency_pcie_s)


def test_ring_attention_and_point_to_point_pay_the_slowest_hop():
    """Every rank of a ring-attention step waits for its neighbour: the node-crossing hop sets the
    step (review s29: cp 16 over two nodes had paid the pipelined mean, 4.1 us, not 14 us)."""
    c = candidates(16)
    link = comm.group_link(c, np.array([16]), np.array([1]), S)
    assert link.latency[0] < S.latency_network_s / 3
    assert link.slowest_hop[0] == pytest.approx(S.latency_network_s)
    assert comm.p2p_s(0.0, link)[0] == pytest.approx(S.collective_base_latency_s + S.latency_network_s)


def test_a_rack_domain_is_one_node_to_the_ring():
    """GB200 NVL72: 72 GPUs in one NVLink domain, trays of 4; a 64-rank ring never leaves it."""
    gpu = load_catalog().gpu("gb200")
    c = single(gpu, Layout(dp_shard=64).resolve(64), TrainingConfig(seq_len=4096), gpus_per_node=4,
               network_bandwidth=50e9, num_gpus=64)  # fmt: skip
    link = comm.group_link(c, np.array([64]), np.array([1]), S)
    assert link.latency[0] == pytest.approx(comm.scaleup_rate(c, S)[1][0])
