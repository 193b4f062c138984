"""Alpha-beta cost of collectives over the scale-up domain or the network.

Ring algorithms (Thakur et al. 2005; NCCL): an all-gather or reduce-scatter of S bytes over n
ranks sends (n-1)/n * S per rank in n-1 steps; an all-reduce is one of each. A group whose
ranks all sit in one NVLink/NVSwitch/Infinity-Fabric domain uses that fabric.

A group that spans domains runs one ring channel per NIC (NCCL's rail-aligned rings): with k of
its ranks in each domain, the k NICs carry the inter-domain share in parallel, so the ring
moves k x the per-GPU network bandwidth, capped by the scale-up fabric. This is what nccl-tests
show: inter-node all-reduce bus bandwidth ~ (NICs per node x NIC rate) / GPUs per node x GPUs in
the ring per node, e.g. 4 x HDR per 8-GPU node -> 100 GB/s (NVIDIA/nccl-tests#119), "up to the
NVLink intra-node bandwidth" with more NICs (NVIDIA/nccl#412). A group with one rank per domain
(data parallelism across tensor-parallel groups) gets one NIC.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.model.settings import ModelingSettings
from planner.search.candidates import Candidates


@dataclass(frozen=True)
class Link:
    """Effective bandwidth (bytes/s per rank per direction), per-step latency of a group and the
    fixed cost of launching one collective on it."""

    bandwidth: np.ndarray
    latency: np.ndarray
    base_latency: float = 0.0


def group_link(c: Candidates, size: np.ndarray, stride: np.ndarray, s: ModelingSettings) -> Link:
    """A mesh axis of ``size`` ranks spaced ``stride`` apart spans size*stride consecutive ranks;
    it stays inside a scale-up domain when that span fits in one (domains are node-aligned).
    Otherwise each domain holds ``k = domain / stride`` of its ranks (at least 1, at most
    ``size``) whose NICs carry the ring in parallel."""
    span = size * stride
    domain = np.maximum(np.minimum(c.scaleup_domain_size, c.num_gpus), 1)
    inside = span <= domain
    scaleup = c.scaleup_bandwidth * s.scaleup_bandwidth_fraction
    ranks_per_domain = np.clip(domain // np.maximum(stride, 1), 1, np.maximum(size, 1))
    network = np.minimum(scaleup, ranks_per_domain * c.network_bandwidth * s.network_bandwidth_fraction)
    bandwidth = np.where(inside, scaleup, network)
    latency = np.where(inside, s.latency_scaleup_s, s.latency_network_s)
    return Link(bandwidth=bandwidth, latency=latency, base_latency=s.collective_base_latency_s)


def all_gather_s(total_bytes, n, link: Link, calls=1) -> np.ndarray:
    """Ring all-gather producing ``total_bytes`` on each of n ranks (same cost: reduce-scatter),
    issued as ``calls`` collectives (each pays the n-1 step latencies once)."""
    n = np.asarray(n, dtype=float)
    steps = np.maximum(n - 1, 0)
    latency = calls * (link.base_latency + steps * link.latency)
    return np.where(n > 1, latency + steps / n * total_bytes / link.bandwidth, 0.0)


reduce_scatter_s = all_gather_s


def all_reduce_s(total_bytes, n, link: Link, calls=1) -> np.ndarray:
    """Ring all-reduce = reduce-scatter + all-gather."""
    return 2.0 * all_gather_s(total_bytes, n, link, calls)


def p2p_s(num_bytes, link: Link) -> np.ndarray:
    return link.base_latency + link.latency + num_bytes / link.bandwidth


def exposed_s(comm_s, compute_s, overlap: float) -> np.ndarray:
    """Communication left on the critical path when a fraction ``overlap`` of it can run under
    ``compute_s`` of independent compute: never less than the non-overlappable share."""
    return np.maximum(comm_s - overlap * compute_s, (1.0 - overlap) * comm_s)


def all_to_all_s(c: Candidates, send_bytes, n, stride, s: ModelingSettings, network_send_bytes=None) -> np.ndarray:
    """All-to-all in which each of ``n`` ranks (``stride`` apart) sends ``send_bytes``, 1/n to
    every rank of the group (itself included): pairwise exchange, ``n - 1`` steps of
    ``send_bytes / n`` each (Thakur, Rabenseifner and Gropp 2005, sec. 3.6). The peers in the
    sender's scale-up domain are reached over NVLink, the others through its own NIC at the same
    time (NCCL sends to every peer at once): the slower of the two shares sets the time.
    ``network_send_bytes``: what leaves the node when it differs from ``send_bytes`` (MoE
    node-limited routing sends a token once per node, planner/model/moe.py)."""
    n = np.asarray(n, dtype=float)
    domain = np.maximum(np.minimum(c.scaleup_domain_size, c.num_gpus), 1)
    local = np.clip(domain // np.maximum(stride, 1), 1, np.maximum(n, 1))
    scaleup = c.scaleup_bandwidth * s.scaleup_bandwidth_fraction
    network = c.network_bandwidth * s.network_bandwidth_fraction
    per_peer = send_bytes / np.maximum(n, 1)
    network_per_peer = per_peer if network_send_bytes is None else network_send_bytes / np.maximum(n, 1)
    transfer = np.maximum((local - 1) * per_peer / scaleup, (n - local) * network_per_peer / network)
    latency = np.where(n > local, s.latency_network_s, s.latency_scaleup_s)
    return np.where(n > 1, s.collective_base_latency_s + (n - 1) * latency + transfer, 0.0)
