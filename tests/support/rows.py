"""One-row candidate tables for the planner tests: a layout on the catalog's H100 node."""

from __future__ import annotations

from planner.catalog.hardware import load_catalog
from planner.layout import Layout, TrainingConfig
from planner.model.candidates import Candidates, single


def h100_row(layout: Layout, num_gpus: int, **training) -> Candidates:
    """``layout`` resolved over ``num_gpus`` H100s of the default node and network; training
    fields as given (sequence length 4096 unless given)."""
    catalog = load_catalog()
    gpu = catalog.gpu("h100-sxm")
    node, net = catalog.node(gpu.default_node), catalog.network(gpu.default_network)
    return single(
        gpu,
        layout.resolve(num_gpus),
        TrainingConfig(**{"seq_len": 4096, **training}),
        gpus_per_node=node.gpus_per_node,
        network_bandwidth=net.bandwidth_bytes_per_s_per_gpu,
    )
