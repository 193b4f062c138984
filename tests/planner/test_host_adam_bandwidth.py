"""Issue 27: the host's AdamW step under CPU offload is bound by the node's DRAM bandwidth."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from planner.catalog.hardware import BUILTIN_DIR, load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Layout, Sharding, TrainingConfig
from planner.model.candidates import single
from planner.model.host import host_adam_params_per_s, host_adam_seconds, host_memory_bandwidth
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.settings_job import (
    ZERO_OFFLOAD_ADAM_PARAMS,
    ZERO_OFFLOAD_CPU_ADAM_S,
    ZERO_OFFLOAD_HOST_MEMORY_BANDWIDTH,
    ZERO_OFFLOAD_PT_CPU_S,
)
from planner.model.stack_profiles import DEEPSPEED_SETTINGS
from planner.units import GIB

CATALOG = load_catalog()
LLAMA8B = get_preset("llama3.1-8b")
OFFLOAD = TrainingConfig(seq_len=8192, activation_checkpointing=ActivationCheckpointing.FULL, offload=True)


def _node(gpu: str, catalog=CATALOG):
    """One node of 8 ranks, fully sharded, optimizer offloaded."""
    layout = Layout(dp_shard=8, sharding=Sharding.FSDP).resolve(8)
    return single(catalog.gpu(gpu), layout, OFFLOAD, gpus_per_node=8, network_bandwidth=50e9)


def test_the_catalog_states_dgx_host_bandwidths_with_sources() -> None:
    # 2 x 8 DDR5 channels at two DIMMs per channel: 4400 MT/s (Sapphire Rapids), 4800 (Emerald Rapids).
    assert CATALOG.gpu("h200-sxm").host_memory_bandwidth_bytes_per_s_per_node == pytest.approx(2 * 8 * 4400e6 * 8)
    assert CATALOG.gpu("h100-sxm").host_memory_bandwidth_bytes_per_s_per_node == pytest.approx(2 * 8 * 4400e6 * 8)
    assert CATALOG.gpu("b200").host_memory_bandwidth_bytes_per_s_per_node == pytest.approx(2 * 8 * 4800e6 * 8)
    for gpu in ("h100-sxm", "h200-sxm", "b200"):
        assert "read 20" in CATALOG.gpu(gpu).sources["host_memory_gbyte_per_s"]


def test_the_h200_nvl_states_its_own_xeon_6_host() -> None:
    # Was on the DGX-2 default (256 GB/s, 512 GiB). Dell XE7740, 8x H200 NVL on 4-way bridges
    # (MLPerf Training v5.0): 2x Xeon 6787P, 16x 64GB DDR5, one per channel at 6400 (upper bound).
    gpu = CATALOG.gpu("h200-nvl")
    assert CATALOG.node(gpu.default_node).host_memory_bandwidth_bytes_per_s is None  # the template has none
    assert gpu.host_memory_bandwidth_bytes_per_s_per_node == pytest.approx(_dram(2, 8, 6400))
    assert gpu.host_memory_bytes_per_node == 1024 * GIB
    for field in ("host_memory_gbyte_per_s", "host_memory_gib"):
        assert "XE7740x8H200-NVL-141GB.json" in gpu.sources[field] and "read 2026-12-03" in gpu.sources[field]
    assert "ESTIMATE" in gpu.sources["host_memory_gbyte_per_s"]  # Dell states no DIMM speed


def test_the_rate_follows_the_host_bandwidth() -> None:
    c = _node("h200-sxm")
    s = DEEPSPEED_SETTINGS
    assert float(host_memory_bandwidth(c, s)[0]) == pytest.approx(563.2e9)
    doubled = replace(c, host_memory_bandwidth=c.host_memory_bandwidth * 2)
    np.testing.assert_allclose(host_adam_params_per_s(doubled, s), 2 * host_adam_params_per_s(c, s))
    np.testing.assert_allclose(host_adam_seconds(LLAMA8B, doubled, s), host_adam_seconds(LLAMA8B, c, s) / 2)
    # The whole 8B on one DGX H200 host under DeepSpeed: ~0.94 s, was 5.7 s at one rate for every host.
    assert float(host_adam_seconds(LLAMA8B, c, s)[0]) == pytest.approx(0.94, abs=0.01)


def test_a_node_without_a_bandwidth_uses_the_default_and_the_published_rates(tmp_path: Path) -> None:
    # Every built-in GPU resolves a bandwidth: a user's H200 NVL file without one falls back.
    (tmp_path / "gpus").mkdir()
    text = (BUILTIN_DIR / "gpus" / "h200-nvl.toml").read_text()
    lines = [line for line in text.splitlines() if not line.startswith("host_memory_gbyte_per_s")]
    (tmp_path / "gpus" / "h200-nvl.toml").write_text("\n".join(lines) + "\n")
    catalog = load_catalog([tmp_path])
    assert catalog.gpu("h200-nvl").host_memory_bandwidth_bytes_per_s_per_node is None
    c = _node("h200-nvl", catalog)
    assert np.isnan(c.host_memory_bandwidth).all()
    for s in (DEFAULT_SETTINGS, DEEPSPEED_SETTINGS):
        assert float(host_memory_bandwidth(c, s)[0]) == s.host_memory_bandwidth_bytes_per_s_per_node
    # The default is the DGX-2's, so such a node updates at ZeRO-Offload's Table 4 rates
    # (torch's with the host clipping pass added to its 80 bytes per parameter).
    assert DEFAULT_SETTINGS.host_memory_bandwidth_bytes_per_s_per_node == ZERO_OFFLOAD_HOST_MEMORY_BANDWIDTH
    deepspeed = float(host_adam_params_per_s(c, DEEPSPEED_SETTINGS)[0])
    assert deepspeed == pytest.approx(ZERO_OFFLOAD_ADAM_PARAMS / ZERO_OFFLOAD_CPU_ADAM_S)
    torch = float(host_adam_params_per_s(c, DEFAULT_SETTINGS)[0])
    assert torch == pytest.approx(ZERO_OFFLOAD_ADAM_PARAMS / ZERO_OFFLOAD_PT_CPU_S * 80 / 92)


def test_deepspeed_cpu_adam_beats_torch_adamw_on_the_same_host() -> None:
    c = _node("h200-sxm")
    torch = host_adam_params_per_s(c, DEFAULT_SETTINGS)
    deepspeed = host_adam_params_per_s(c, DEEPSPEED_SETTINGS)
    assert (deepspeed > 5 * torch).all()
    assert DEEPSPEED_SETTINGS.host_adam_bytes_per_param < DEFAULT_SETTINGS.host_adam_bytes_per_param
    assert DEEPSPEED_SETTINGS.host_adam_bandwidth_fraction > DEFAULT_SETTINGS.host_adam_bandwidth_fraction


def test_a_node_template_bandwidth_reaches_its_gpus(tmp_path: Path) -> None:
    (tmp_path / "nodes").mkdir()
    text = (BUILTIN_DIR / "nodes" / "hgx-8.toml").read_text()
    assert "host_memory_gbyte_per_s = 375.4\n" in text
    (tmp_path / "nodes" / "hgx-8.toml").write_text(text.replace("gbyte_per_s = 375.4\n", "gbyte_per_s = 300\n", 1))
    catalog = load_catalog([tmp_path])
    assert catalog.gpu("a100-80gb-sxm").host_memory_bandwidth_bytes_per_s_per_node == pytest.approx(300e9)
    assert catalog.gpu("h200-sxm").host_memory_bandwidth_bytes_per_s_per_node == pytest.approx(563.2e9)  # its own
    assert float(host_memory_bandwidth(_node("a100-80gb-sxm", catalog), DEFAULT_SETTINGS)[0]) == pytest.approx(300e9)


# Host DRAM bandwidth per node: sockets x channels x MT/s x 8 bytes (a 64-bit channel), GB/s.
def _dram(sockets: int, channels: int, mts: int) -> float:
    return sockets * channels * mts * 1e6 * 8


def _node_of(gpu: str):
    return CATALOG.node(CATALOG.gpu(gpu).default_node)


def test_every_gpu_resolves_a_sourced_host_bandwidth() -> None:
    for gpu_id, gpu in CATALOG.gpus.items():
        assert gpu.host_memory_bandwidth_bytes_per_s_per_node is not None, gpu_id  # none on the default
        own = gpu.sources.get("host_memory_gbyte_per_s")
        source = own or _node_of(gpu_id).sources["host_memory_gbyte_per_s"]
        assert re.search(r"read 20\d\d-\d\d-\d\d", source) and " x " in source, gpu_id


def test_a_gpu_file_states_a_bandwidth_only_where_its_host_differs_from_its_template() -> None:
    for gpu_id, gpu in CATALOG.gpus.items():
        if "host_memory_gbyte_per_s" in gpu.sources:
            template = _node_of(gpu_id).host_memory_bandwidth_bytes_per_s
            assert gpu.host_memory_bandwidth_bytes_per_s_per_node != template, gpu_id
    # A800 is the A100 80GB SXM with NVLink cut: the same HGX A100 host, from the template.
    assert "host_memory_gbyte_per_s" not in CATALOG.gpu("a800-80gb-sxm").sources
    assert (
        CATALOG.gpu("a800-80gb-sxm").host_memory_bandwidth_bytes_per_s_per_node
        == CATALOG.gpu("a100-40gb-sxm").host_memory_bandwidth_bytes_per_s_per_node
        == CATALOG.node("hgx-8").host_memory_bandwidth_bytes_per_s
    )


@pytest.mark.parametrize(
    ("gpu", "sockets", "channels", "mts"),
    [
        ("a100-80gb-sxm", 2, 8, 2933),  # HGX A100: 2x EPYC 7713, 16x DDR4-2933
        ("l40s", 2, 8, 3200),  # 2x EPYC 7742, 16x DDR4-3200
        ("h100-pcie", 2, 8, 3200),  # Gigabyte G482-Z54, 2x EPYC 7742 (upper bound)
        ("h100-nvl", 2, 8, 4400),  # 2x Xeon 8480+, 32x DDR5-4800 at two per channel
        ("h200-nvl", 2, 8, 6400),  # Dell XE7740: 2x Xeon 6787P, 16x DDR5 (6400 an upper bound)
        ("h800", 2, 8, 4400),  # the H100 SXM's host
        ("b300", 2, 8, 5200),  # 2x Xeon 6747P, 32x DDR5-6400 at two per channel
        ("mi300x", 2, 12, 4800),  # 2x EPYC 9374F, 24x DDR5-4800
        ("mi325x", 2, 12, 6000),  # 2x EPYC 9965, 24x DDR5-6400 run at 6000
        ("mi350x", 2, 12, 6000),  # 2x EPYC 9575F, 24x DDR5-6400, the same server at 6000
        ("mi355x", 2, 12, 6000),  # 2x EPYC 9575F, 24x DDR5-6400 (6000: ESTIMATE)
        ("mi250x", 1, 8, 3200),  # Frontier: one EPYC 7A53, DDR4-3200
    ],
)
def test_host_bandwidth_is_sockets_times_channels_times_transfer_rate(
    gpu: str, sockets: int, channels: int, mts: int
) -> None:
    value = CATALOG.gpu(gpu).host_memory_bandwidth_bytes_per_s_per_node
    assert value == pytest.approx(_dram(sockets, channels, mts), rel=2e-4)


def test_a_grace_blackwell_node_is_one_tray_of_two_grace_at_the_racks_lpddr5x_rate() -> None:
    nvl72 = CATALOG.node("nvl72")
    # A node is one compute tray: 4 GPUs and 2 Grace CPUs, 18 trays per NVLink domain.
    assert nvl72.gpus_per_node == 4 and nvl72.nodes_per_scaleup_domain == 18
    # GB200/GB300 NVL72: 17 TB of LPDDR5X at 14 TB/s over the rack's 18 trays (36 Grace).
    per_tray = 14e12 / 18
    for gpu in ("gb200", "gb300"):
        assert CATALOG.gpu(gpu).host_memory_bandwidth_bytes_per_s_per_node == pytest.approx(per_tray, rel=1e-4)
        assert "host_memory_gbyte_per_s" not in CATALOG.gpu(gpu).sources  # the template's, once
    # Per Grace ~389 GB/s: below the 512 GB/s of smaller-capacity Grace parts, within NVIDIA's
    # STREAM expectation for a 480 GB Grace (288-342 GB/s triad is 80-95 % of ~360-390).
    assert 342e9 < per_tray / 2 < 512e9
