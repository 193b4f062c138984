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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.model.busbw_curve import GRID_BYTES, log_interp
from planner.model.candidates import Candidates
from planner.model.rowwise import once_per_table
from planner.model.settings import ModelingSettings


@dataclass(frozen=True)
class Link:
    """Effective bandwidth (bytes/s per rank per direction), the mean latency of a pipelined ring
    step of the group (``ring_step_latency``), the fixed cost of launching one collective on it and
    the latency of its slowest hop: what a step whose ranks all wait for their neighbours pays
    (point-to-point, ring attention; review s29). ``hop_latency`` None: ``latency``. ``curve``: the
    network's measured all-reduce bus bandwidth on busbw_curve.GRID_BYTES for the rows whose group
    crosses nodes (NaN elsewhere; None: no row has one); ``curve_share``: the share of each node's
    GPUs (and so of its NICs) the group's ring holds there, against the curve's whole nodes."""

    bandwidth: np.ndarray
    latency: np.ndarray
    base_latency: float = 0.0
    hop_latency: np.ndarray | None = None
    curve: np.ndarray | None = None
    curve_share: np.ndarray | float = 1.0

    @property
    def slowest_hop(self) -> np.ndarray:
        return self.latency if self.hop_latency is None else self.hop_latency


def scaleup_rate(c: Candidates, s: ModelingSettings) -> tuple[np.ndarray, np.ndarray]:
    """(bytes/s per rank, seconds per ring step) inside a scale-up domain: the collectives measured
    on the GPU's own domain (``trainplan calibrate --collectives``, a ring fit, ``fit_ring``),
    else ``scaleup_bandwidth_fraction`` of the datasheet link rate and ``latency_scaleup_s``.
    All-to-all was not measured; it shares the rate, as it shares the fraction without one.
    Kept for the last table: each mesh axis's link asks for it."""
    return once_per_table("scaleup_rate", c, s, lambda: _scaleup_rate(c, s))


def _scaleup_rate(c: Candidates, s: ModelingSettings) -> tuple[np.ndarray, np.ndarray]:
    measured = ~np.isnan(c.scaleup_bus_bandwidth)
    bandwidth = np.where(measured, c.scaleup_bus_bandwidth, c.scaleup_bandwidth * s.scaleup_bandwidth_fraction)
    latency = np.where(np.isnan(c.scaleup_step_latency), s.latency_scaleup_s, c.scaleup_step_latency)
    return bandwidth, latency


def group_link(c: Candidates, size: np.ndarray, stride: np.ndarray, s: ModelingSettings) -> Link:
    """A mesh axis of ``size`` ranks spaced ``stride`` apart spans size*stride consecutive ranks;
    it stays inside a scale-up domain when that span fits in one (domains are node-aligned), else
    inside a node, whose GPUs outside one domain reach each other over their PCIe links (a PCIe
    card's only path, NVLink pairs' path to the other pairs; trial s24: 8 L20 were timed at the
    NIC's 3 GB/s, not PCIe's). Past the node each node holds ``k = reach / stride`` of its ranks
    (at least 1, at most ``size``) whose NICs carry the ring in parallel, up to the bus bandwidth a
    ring was measured at on a fabric whose collectives do not reach all its NICs (Jean Zay's
    Omni-Path: NCCL's rings leave each node through one NIC; NetworkSpec)."""
    span = size * stride
    domain = np.maximum(np.minimum(c.scaleup_domain_size, c.num_gpus), 1)
    node = np.maximum(np.minimum(c.gpus_per_node, c.num_gpus), 1)
    scaleup, scaleup_latency = scaleup_rate(c, s)
    pcie = np.minimum(scaleup, c.pcie_bandwidth * s.scaleup_bandwidth_fraction)
    reach = np.maximum(domain, node)  # the ranks one node's NICs serve
    inner = np.where(domain >= node, scaleup, pcie)  # the link inside that reach
    ranks_per_reach = np.clip(reach // np.maximum(stride, 1), 1, np.maximum(size, 1))
    network = np.minimum(inner, ranks_per_reach * c.network_bandwidth * s.network_bandwidth_fraction)
    # ... and no more than a ring measured on the fabric carries, where one was (NetworkSpec).
    network = np.fmin(network, c.network_ring_bandwidth)
    bandwidth = np.where(span <= domain, scaleup, np.where(span <= node, pcie, network))
    # NCCL's intraLat is the ring's path inside the node: PCIe wherever a step leaves a domain there.
    intra = np.where((span <= domain) | (domain >= node), scaleup_latency, s.latency_pcie_s)
    crossing = span > reach
    latency = ring_step_latency(size, np.where(crossing, ranks_per_reach, size), intra, s)
    hop = np.where(crossing, s.latency_network_s, intra)
    curve = None
    if c.network_busbw_curve.shape[1]:  # a measured curve: the rows whose group leaves the node
        leaves = (span > domain) & (span > node)
        curve = np.where(leaves[:, None], c.network_busbw_curve, np.nan)
    # The curve was measured with every GPU of each node in the ring (NetworkSpec); a group with
    # fewer ranks a node (data parallelism across tp groups) leaves it through fewer NICs.
    return Link(bandwidth, latency, s.collective_base_latency_s, hop, curve, ranks_per_reach / reach)


def ring_step_latency(size, ranks_per_node, intra_latency, s: ModelingSettings) -> np.ndarray:
    """The mean latency of a ring step over a group of ``size`` ranks, ``ranks_per_node`` of them in
    each node (or scale-up domain; ``size`` of them: one): of its n - 1 steps only nodes - 1 cross
    the network, the rest pay ``intra_latency``. NCCL's own ring model (src/graph/tuning.cc:
    ``(nsteps - nInterSteps) * intraLat + nInterSteps * interLat``, nInterSteps = nNodes - 1 for a
    reduce-scatter or all-gather; an all-reduce, one of each here, pays 2 (nNodes - 1), where
    some NCCL releases charge 2 nNodes: two network steps more). Every step at the
    network's latency had charged a 256-rank ring over 32 nodes 255 network steps, not 31
    (MLPerf's Llama 3.1 8B on 256 B200: 0.24 s of a 0.22 s step). A stride that does not divide
    the node counts a node more than the ranks fill, as the bandwidth rule does: the groups of such
    an axis do not start on node boundaries, and the step waits for one that straddles two (review
    s29's ranks 0, 3, 6 share a node; ranks 2, 5, 8 of the same axis do not)."""
    size = np.maximum(np.asarray(size, dtype=float), 1.0)
    nodes = np.ceil(size / np.clip(ranks_per_node, 1, size))
    steps = np.maximum(size - 1.0, 1.0)
    return ((size - nodes) * intra_latency + (nodes - 1.0) * s.latency_network_s) / steps


def all_gather_s(total_bytes, n, link: Link, calls=1, message_bytes=None) -> np.ndarray:
    """Ring all-gather producing ``total_bytes`` on each of n ranks (same cost: reduce-scatter),
    issued as ``calls`` collectives (each pays the n-1 step latencies once); on a link with a
    measured curve, no faster than the curve's rate at the per-call message (``message_bytes``,
    default ``total_bytes / calls``; ``curve_bus_bandwidth``)."""
    n = np.asarray(n, dtype=float)
    steps = np.maximum(n - 1, 0)
    latency = calls * (link.base_latency + steps * link.latency)
    ring_bytes = steps / n * total_bytes  # what each rank sends around the ring
    modelled = np.where(n > 1, latency + ring_bytes / link.bandwidth, 0.0)
    if link.curve is None:
        return modelled
    message = np.asarray(total_bytes / np.asarray(calls, dtype=float) if message_bytes is None else message_bytes)
    measured = ring_bytes / curve_bus_bandwidth(link.curve, message) + fewer_nics_s(ring_bytes, link)
    return np.fmax(modelled, np.where(n > 1, measured, np.nan))


def fewer_nics_s(ring_bytes, link: Link) -> np.ndarray:
    """What a ring holding ``curve_share`` of each node's GPUs adds to the curve's time: its
    bandwidth-bound part (the bytes at the curve's largest message, where latency no longer counts)
    runs through that share of the node's NICs, 1 / share times as long; a latency-bound message
    gains little. On p5 a tp 2 group's ring has 4 of each node's 8 GPUs, the 16 NICs of their
    PCIe switches (Smol Training Playbook: 4 EFA NICs a GPU), half the 32 the curve's rings used."""
    assert link.curve is not None
    asymptote = link.curve[:, -1]
    return ring_bytes * (1.0 / link.curve_share - 1.0) / asymptote


reduce_scatter_s = all_gather_s


def all_reduce_s(total_bytes, n, link: Link, calls=1, message_bytes=None) -> np.ndarray:
    """Ring all-reduce = reduce-scatter + all-gather."""
    return 2.0 * all_gather_s(total_bytes, n, link, calls, message_bytes)


def curve_bus_bandwidth(curve: np.ndarray, message_bytes) -> np.ndarray:
    """Each row's measured all-reduce bus bandwidth at its per-call ``message_bytes`` (NaN where
    the row has no curve). nccl-tests' bus bandwidth of a ring all-reduce of S bytes over n ranks
    is 2 (n-1)/n x S / t, so t = 2 (n-1)/n x S / busbw: the time comes from the curve alone, whose
    timings hold the collective's launch and step latencies (no latency term is added). An
    all-gather or reduce-scatter of S bytes (one ring pass) is read at the all-reduce's rate for
    S: ESTIMATE, the Smol Training Playbook measured all-reduce only (NetworkSpec). The curve is
    one node count's (NetworkSpec.allreduce_busbw_nodes), read at any count across nodes."""
    message = np.broadcast_to(np.asarray(message_bytes, dtype=float), curve.shape[:1])
    return log_interp(GRID_BYTES, curve, message)


def p2p_s(num_bytes, link: Link) -> np.ndarray:
    return link.base_latency + link.slowest_hop + num_bytes / link.bandwidth


def exposed_s(comm_s, compute_s, overlap: float | np.ndarray) -> np.ndarray:
    """Communication left on the critical path when a fraction ``overlap`` of it can run under
    ``compute_s`` of independent compute: never less than the non-overlappable share."""
    return np.maximum(comm_s - overlap * compute_s, (1.0 - overlap) * comm_s)


def within_window(raw: Sequence[np.ndarray], exposed: Sequence[np.ndarray], window_s) -> list[np.ndarray]:
    """``exposed`` (each ``exposed_s`` of its ``raw`` collective time, the axis judged alone) where
    the axes together hide no more than ``window_s``, the compute they all run under: where their
    hidden shares add up to more, each is scaled back by the same factor. Each axis' overlap
    fraction was set alone; added together (dp's 0.85 and tp's 0.3 of every second of compute)
    a second of added compute would hide more than a second of traffic, and recomputing would
    shorten a step. An ESTIMATE of how concurrent collectives share the window (they also share
    SMs and memory bandwidth): the bound, not a measurement."""
    hidden = [r - e for r, e in zip(raw, exposed, strict=True)]
    total = sum(hidden)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(total > window_s, window_s / total, 1.0)
    return [r - h * scale for r, h in zip(raw, hidden, strict=True)]


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
    scaleup, scaleup_latency = scaleup_rate(c, s)
    network = c.network_bandwidth * s.network_bandwidth_fraction
    per_peer = send_bytes / np.maximum(n, 1)
    network_per_peer = per_peer if network_send_bytes is None else network_send_bytes / np.maximum(n, 1)
    transfer = np.maximum((local - 1) * per_peer / scaleup, (n - local) * network_per_peer / network)
    latency = np.where(n > local, s.latency_network_s, scaleup_latency)
    return np.where(n > 1, s.collective_base_latency_s + (n - 1) * latency + transfer, 0.0)


# ----------------------------------------------------------------------------- measured collectives

# Ring passes per collective in the model above: an all-reduce is a reduce-scatter + an all-gather.
RING_PASSES = {"all_reduce": 2.0, "all_gather": 1.0, "reduce_scatter": 1.0}
# The transfer term must explain this share of the largest message's time for a bandwidth to count.
MIN_BANDWIDTH_SHARE = 0.05
# A ring fit whose rms relative error on its own samples passes this is warned of (trainplan
# calibrate --collectives; calib50 M5: 58 % over 2 CPU ranks was written unsaid): NCCL timings on
# an idle node repeat within a few %, and the model's whole-step 80 % band is about -12 % to +14 %,
# so a fit off by more than 20 % on the very timings it was made from describes the link worse
# than the step's own band admits (a loaded node, a transport the ring model does not describe).
MAX_RING_FIT_RMS = 0.20


@dataclass(frozen=True)
class CollectiveSample:
    """One timed collective: ``total_bytes`` as the model counts them (the all-reduced tensor, the
    gathered output, the reduce-scattered input) over ``ranks`` ranks, median ``seconds``."""

    op: str  # a RING_PASSES key
    total_bytes: float
    ranks: int
    seconds: float

    @property
    def bus_bandwidth(self) -> float:
        """nccl-tests' bus bandwidth, bytes/s: the ring's per-rank traffic over the time."""
        return RING_PASSES[self.op] * (self.ranks - 1) / self.ranks * self.total_bytes / self.seconds


@dataclass(frozen=True)
class RingFit:
    bandwidth: float  # bytes/s per rank (the model's Link.bandwidth)
    step_latency_s: float  # seconds per ring step (Link.latency)
    rms_relative_error: float  # of the fitted times against the samples


def fit_ring(samples: list[CollectiveSample], base_latency_s: float) -> RingFit:
    """Fit the model's ring cost, ``passes x (base + (n-1) x latency + (n-1)/n x bytes / bandwidth)``,
    to measured collectives: least squares on relative error (small messages count as much as
    large ones), the launch cost ``base_latency_s`` (ModelingSettings.collective_base_latency_s)
    held. ValueError when the samples do not resolve a bandwidth."""
    if len(samples) < 2 or any(x.ranks < 2 or not x.seconds > 0 for x in samples):
        raise ValueError("fitting collectives needs two or more timed samples over at least 2 ranks")
    per_pass = np.array([x.seconds / RING_PASSES[x.op] for x in samples])
    steps = np.array([x.ranks - 1.0 for x in samples])
    traffic = np.array([(x.ranks - 1.0) / x.ranks * x.total_bytes for x in samples])
    target = per_pass - base_latency_s
    rows = np.stack([steps, traffic], axis=1) / per_pass[:, None]
    latency, inverse_bandwidth = np.linalg.lstsq(rows, target / per_pass, rcond=None)[0]
    if latency < 0:  # latency below what the samples resolve: bandwidth alone
        latency = 0.0
        inverse_bandwidth = float(np.linalg.lstsq(rows[:, 1:], target / per_pass, rcond=None)[0][0])
    largest = int(np.argmax(traffic))
    if not inverse_bandwidth * traffic[largest] > MIN_BANDWIDTH_SHARE * per_pass[largest]:
        raise ValueError("the collective timings resolve no bandwidth (messages too small for their latency)")
    fitted = base_latency_s + steps * latency + traffic * inverse_bandwidth
    error = float(np.sqrt(np.mean((fitted / per_pass - 1.0) ** 2)))
    return RingFit(bandwidth=float(1.0 / inverse_bandwidth), step_latency_s=float(latency), rms_relative_error=error)
