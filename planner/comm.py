"""Alpha-beta cost of collectives over the scale-up domain or the network.

Ring algorithms (Thakur et al. 2005; NCCL): an all-gather or reduce-scatter of S bytes over n
ranks sends (n-1)/n * S per rank in n-1 steps; an all-reduce is one of each. A group whose
ranks all sit in one NVLink/NVSwitch/Infinity-Fabric domain uses that fabric; otherwise the
slowest link is the per-GPU network share.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.candidates import Candidates
from planner.settings import ModelingSettings


@dataclass(frozen=True)
class Link:
    """Effective bandwidth (bytes/s per rank per direction) and per-step latency of a group."""

    bandwidth: np.ndarray
    latency: np.ndarray


def group_link(c: Candidates, size: np.ndarray, stride: np.ndarray, s: ModelingSettings) -> Link:
    """A mesh axis of ``size`` ranks spaced ``stride`` apart spans size*stride consecutive ranks;
    it stays inside a scale-up domain when that span fits in one (domains are node-aligned)."""
    span = size * stride
    domain = np.minimum(c.scaleup_domain_size, c.num_gpus)
    inside = span <= np.maximum(domain, 1)
    bandwidth = np.where(inside, c.scaleup_bandwidth * s.scaleup_bandwidth_fraction,
                         c.network_bandwidth * s.network_bandwidth_fraction)
    latency = np.where(inside, s.latency_scaleup_s, s.latency_network_s)
    return Link(bandwidth=bandwidth, latency=latency)


def all_gather_s(total_bytes, n, link: Link) -> np.ndarray:
    """Ring all-gather producing ``total_bytes`` on each of n ranks (same cost: reduce-scatter)."""
    n = np.asarray(n, dtype=float)
    steps = np.maximum(n - 1, 0)
    return np.where(n > 1, steps * link.latency + steps / n * total_bytes / link.bandwidth, 0.0)


reduce_scatter_s = all_gather_s


def all_reduce_s(total_bytes, n, link: Link) -> np.ndarray:
    """Ring all-reduce = reduce-scatter + all-gather."""
    return 2.0 * all_gather_s(total_bytes, n, link)


def p2p_s(num_bytes, link: Link) -> np.ndarray:
    return link.latency + num_bytes / link.bandwidth


def exposed_s(comm_s, compute_s, overlap: float) -> np.ndarray:
    """Communication left on the critical path when a fraction ``overlap`` of it can run under
    ``compute_s`` of independent compute: never less than the non-overlappable share."""
    return np.maximum(comm_s - overlap * compute_s, (1.0 - overlap) * comm_s)
