"""A fabric whose NCCL rings do not reach all of a node's NICs (Jean Zay's Omni-Path: two
collective channels through one hfi1 NIC, BigScience's all_reduce_bench log) caps a cross-node
group at the bus bandwidth measured there (NetworkSpec.ring_bus_bandwidth_bytes_per_s)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.layout import Layout, TrainingConfig
from planner.model import comm
from planner.model.candidates import single
from planner.model.settings import DEFAULT_SETTINGS as S

OPA = load_catalog().network("opa-4x100-per-8")


def candidates(ring: float | None):
    layout = Layout(dp_shard=64).resolve(64)
    training = TrainingConfig(seq_len=4096, micro_batch=1)
    gpu = load_catalog().gpu("a100-80gb-sxm")
    per_gpu = OPA.bandwidth_bytes_per_s_per_gpu
    return single(gpu, layout, training, gpus_per_node=8, network_bandwidth=per_gpu, network_ring_bandwidth=ring)


def test_omni_path_carries_its_measured_ring_rate():
    assert OPA.ring_bus_bandwidth_bytes_per_s == pytest.approx(40.5e9 / 8)
    assert "MEASURED" in OPA.sources["ring_busbw_gbit_per_s"]
    assert load_catalog().network("ib-ndr-400").ring_bus_bandwidth_bytes_per_s is None


def test_a_ring_filling_its_nodes_runs_at_the_measured_rate_not_four_nics():
    line = OPA.bandwidth_bytes_per_s_per_gpu * S.network_bandwidth_fraction
    full = np.array([64]), np.array([1])  # 8 ranks in each of 8 nodes
    assert comm.group_link(candidates(None), *full, S).bandwidth[0] == pytest.approx(8 * line)
    capped = comm.group_link(candidates(OPA.ring_bus_bandwidth_bytes_per_s), *full, S).bandwidth[0]
    assert capped == pytest.approx(OPA.ring_bus_bandwidth_bytes_per_s)


def test_one_rank_per_node_is_slower_than_the_cap_and_keeps_its_share():
    line = OPA.bandwidth_bytes_per_s_per_gpu * S.network_bandwidth_fraction
    assert line < OPA.ring_bus_bandwidth_bytes_per_s
    one_each = np.array([8]), np.array([8])
    link = comm.group_link(candidates(OPA.ring_bus_bandwidth_bytes_per_s), *one_each, S)
    assert link.bandwidth[0] == pytest.approx(line)


def test_the_catalogs_rows_carry_the_network_they_are_estimated_on():
    from planner.catalog.networks import catalog_on_network
    from planner.model.configuration import catalog_row

    catalog = catalog_on_network(load_catalog(), OPA.id)
    layout = Layout(dp_shard=64).resolve(64)
    c = catalog_row(catalog.gpu("a100-80gb-sxm"), layout, TrainingConfig(seq_len=4096), catalog, gpus_per_node=8)
    assert c.network_ring_bandwidth[0] == pytest.approx(OPA.ring_bus_bandwidth_bytes_per_s)


def test_the_searchs_rows_carry_the_network_they_are_planned_on():
    """Review s32: only the estimate's row was tested; the search builds its own columns."""
    from planner.catalog.models import get_preset
    from planner.catalog.networks import catalog_on_network
    from planner.search.space import SearchSpace, build_candidates

    space = SearchSpace(seq_len=4096, global_batch_tokens=4 * 1024 * 1024)
    catalog = catalog_on_network(load_catalog(), OPA.id)
    rows = build_candidates(get_preset("llama2-7b"), catalog, {"a100-80gb-sxm": 16}, space)
    assert len(rows) and np.allclose(rows.network_ring_bandwidth, OPA.ring_bus_bandwidth_bytes_per_s)
    plain = build_candidates(get_preset("llama2-7b"), load_catalog(), {"a100-80gb-sxm": 16}, space)
    assert np.isnan(plain.network_ring_bandwidth).all()
