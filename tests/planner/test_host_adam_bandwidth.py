"""Issue 27: the host's AdamW step under CPU offload is bound by the node's DRAM bandwidth."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from planner.catalog.hardware import BUILTIN_DIR, load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Layout, Sharding, TrainingConfig
from planner.model.candidates import single
from planner.model.host import host_adam_params_per_s, host_adam_seconds, host_memory_bandwidth
from planner.model.settings import (
    DEEPSPEED_SETTINGS,
    DEFAULT_SETTINGS,
    ZERO_OFFLOAD_ADAM_PARAMS,
    ZERO_OFFLOAD_CPU_ADAM_S,
    ZERO_OFFLOAD_HOST_MEMORY_BANDWIDTH,
    ZERO_OFFLOAD_PT_CPU_S,
)

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
    assert CATALOG.gpu("a100-80gb-sxm").host_memory_bandwidth_bytes_per_s_per_node is None


def test_the_rate_follows_the_host_bandwidth() -> None:
    c = _node("h200-sxm")
    s = DEEPSPEED_SETTINGS
    assert float(host_memory_bandwidth(c, s)[0]) == pytest.approx(563.2e9)
    doubled = replace(c, host_memory_bandwidth=c.host_memory_bandwidth * 2)
    np.testing.assert_allclose(host_adam_params_per_s(doubled, s), 2 * host_adam_params_per_s(c, s))
    np.testing.assert_allclose(host_adam_seconds(LLAMA8B, doubled, s), host_adam_seconds(LLAMA8B, c, s) / 2)
    # The whole 8B on one DGX H200 host under DeepSpeed: ~0.94 s, was 5.7 s at one rate for every host.
    assert float(host_adam_seconds(LLAMA8B, c, s)[0]) == pytest.approx(0.94, abs=0.01)


def test_a_node_without_a_bandwidth_uses_the_default_and_the_published_rates() -> None:
    c = _node("a100-80gb-sxm")
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
    text = text.replace("host_memory_gib = 1152\n", "host_memory_gib = 1152\nhost_memory_gbyte_per_s = 300\n", 1)
    text = text.replace("[sources]\n", '[sources]\nhost_memory_gbyte_per_s = "test template, read 2026-12-03"\n', 1)
    (tmp_path / "nodes" / "hgx-8.toml").write_text(text)
    catalog = load_catalog([tmp_path])
    assert catalog.gpu("a100-80gb-sxm").host_memory_bandwidth_bytes_per_s_per_node == pytest.approx(300e9)
    assert catalog.gpu("h200-sxm").host_memory_bandwidth_bytes_per_s_per_node == pytest.approx(563.2e9)  # its own
    assert float(host_memory_bandwidth(_node("a100-80gb-sxm", catalog), DEFAULT_SETTINGS)[0]) == pytest.approx(300e9)
