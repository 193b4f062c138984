"""Small tables for the planner tests: a layout on the catalog's H100 node, scored H100 rows."""

from __future__ import annotations

import numpy as np

from planner.catalog.hardware import load_catalog
from planner.layout import Layout, TrainingConfig
from planner.model.candidates import Candidates, single
from planner.search.ilp import ScoredTable


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


def h100_table(counts, hours, cost_usd, batch_tokens) -> ScoredTable:
    """A scored table of H100 rows that pass every check but the limits: GPU counts, hours to
    train, costs and global batches (arrays of one length)."""
    n = len(counts)
    return ScoredTable(
        gpu_id=np.array(["h100-sxm"] * n, dtype=object),
        num_gpus=np.asarray(counts),
        fits_memory=np.ones(n, dtype=bool),
        memory_need_gib=np.full(n, 40.0),
        capacity_gib=np.full(n, 80.0),
        time_to_train_s=np.asarray(hours, dtype=float) * 3600.0,
        cost_usd=np.asarray(cost_usd, dtype=float),
        batch_ok=np.ones(n, dtype=bool),
        divisible=np.ones(n, dtype=bool),
        label=np.array([f"row {i}" for i in range(n)], dtype=object),
        extra={"batch_tokens": np.asarray(batch_tokens)},
    )
