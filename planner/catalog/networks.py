"""Another scale-out network for the GPUs of a plan or an estimate (``--network``).

A GPU's catalog entry names the network its reference server ships with (``default_network``: a
DGX A100's HDR InfiniBand, one 200 Gb/s NIC per GPU). A cluster may have another: BLOOM's Jean Zay
nodes had four 100 Gb/s Omni-Path links per 8 A100, a quarter of that per GPU; an AWS p4d has
400 Gb/s of EFA per instance. The model reads the fabric through ``default_network`` alone
(``Candidates.network_bandwidth``, planner/model/comm.py), so re-pointing it is the whole change.
"""

from __future__ import annotations

from planner.catalog.hardware import Catalog, GPUSpec, NetworkSpec


def on_network(gpu: GPUSpec, network: NetworkSpec) -> GPUSpec:
    """The GPU in servers on ``network`` (its per-GPU rate shown in the catalog table follows)."""
    return gpu.model_copy(
        update={"default_network": network.id, "internode_bandwidth_bytes_per_s": network.bandwidth_bytes_per_s_per_gpu}
    )


def canonical_network(catalog: Catalog, network_id: str | None) -> str | None:
    """The catalog's own spelling of ``network_id`` (ids match case-blind, as GPU ids do), what a
    plan records; None stays None. ValueError for an id the catalog lacks."""
    return None if network_id is None else catalog.network(network_id).id


def catalog_on_network(catalog: Catalog, network_id: str | None) -> Catalog:
    """Every GPU of the catalog on network ``network_id`` (None: each on its own default).
    Raises ValueError, one line naming the known networks, for an id the catalog lacks."""
    if network_id is None:
        return catalog
    network = catalog.network(network_id)
    return catalog.model_copy(update={"gpus": {g: on_network(spec, network) for g, spec in catalog.gpus.items()}})
