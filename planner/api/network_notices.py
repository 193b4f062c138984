"""What a plan is told of a network's measured all-reduce curve read at another node count than it was
measured at (review56: efa-p5-3200's curve, measured over 16 nodes, priced a 128-node plan without a word;
planner/model/comm.py ``curve_bus_bandwidth`` reads it at every count across nodes)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.hardware import load_catalog
from planner.plan import Plan

# The same nccl-tests file's all-reduce bus bandwidth at 256 MiB by node count (the Smol Training Playbook,
# nccl-multinode-bandwidth.json, mirror isLinXu/smol-training-playbook dcc3fbcb0483: 2 nodes 369.72,
# 4 nodes 273.17, 16 nodes 149.44 GB/s; read 2026-12-07): fewer nodes reached more, and no count past 16
# was measured.
CURVE_BY_NODES_WORDS = "256 MiB: 370 GB/s over 2 nodes, 273 over 4, 149 over 16"


@dataclass(frozen=True)
class CurveElsewhere:
    """A plan on ``nodes`` nodes of ``network``, whose all-reduce curve was measured over
    ``measured_nodes``; ``slower``: more nodes than measured (its collectives likely slower than timed)."""

    network: str
    measured_nodes: int
    nodes: int

    @property
    def slower(self) -> bool:
        return self.nodes > self.measured_nodes

    def words(self) -> str:
        likely = "slower" if self.slower else "faster"
        return (
            f"{self.network}: its all-reduce curve was measured over {self.measured_nodes} nodes and is read as-is"
            f" over this plan's {self.nodes}; the same runs reached more over fewer nodes ({CURVE_BY_NODES_WORDS}),"
            f" so its cross-node collectives are likely {likely} than timed here (not in the band)"
        )


def curve_elsewhere(p: Plan) -> CurveElsewhere | None:
    """The plan spans more than one node of a network with a measured curve, at another node count."""
    catalog = load_catalog()
    network = catalog.network(p.network or catalog.gpu(p.gpu).default_network)
    measured = network.allreduce_busbw_nodes
    if network.allreduce_busbw_curve is None or measured is None or p.num_nodes <= 1 or p.num_nodes == measured:
        return None
    return CurveElsewhere(network.id, measured, p.num_nodes)


def curve_elsewhere_warnings(p: Plan) -> tuple[str, ...]:
    """The CLI's words of ``curve_elsewhere``."""
    found = curve_elsewhere(p)
    return () if found is None else (found.words(),)
