"""Energy at the wall: the one rule the estimate, the fleet sizing and the app all price power by.

A GPU's share of its server's wall power while it trains is

    wall_w = power_fraction_of_max x max_w

where ``max_w`` is the server's maximum system power divided by its GPUs: the GPU file's
``node_power_w`` (a vendor's "system power usage, max", which counts the GPUs at their TDP, the
CPUs, memory, NICs, NVSwitches, fans and power-supply losses; NVIDIA DGX H100: 10.2 kW for 8
GPUs), or, for a GPU whose servers have no such figure, its TDP plus the host's share
``host_power_fraction_of_tdp x TDP`` (ModelingSettings). The facility draws ``PUE`` times that
(cooling, power conversion), so a GPU-hour of training costs

    energy_kwh = gpu_hours x wall_w x PUE / 1000

Every input is a named setting with its source (planner/model/settings.py "power") or a
sourced catalog figure (docs/hardware.md, "Power").
"""

from __future__ import annotations

import numpy as np

from planner.catalog.hardware import GPUSpec
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings

__all__ = ["energy_kwh", "energy_usd", "gpu_wall_power_w", "max_power_w", "power_basis_words", "wall_power_w"]


def max_power_w(tdp_w, node_power_w_per_gpu, settings: ModelingSettings = DEFAULT_SETTINGS):
    """A GPU's share of its server's maximum wall power (W): the catalog's server figure over its
    GPUs where there is one (finite), else TDP x (1 + host share). Works on arrays (NaN: none)."""
    node = np.asarray(node_power_w_per_gpu, dtype=float)
    fallback = np.asarray(tdp_w, dtype=float) * (1.0 + settings.host_power_fraction_of_tdp)
    out = np.where(np.isfinite(node), node, fallback)
    return float(out) if out.ndim == 0 else out


def wall_power_w(tdp_w, node_power_w_per_gpu, settings: ModelingSettings = DEFAULT_SETTINGS):
    """A GPU's share of its server's wall power while it trains (W, before PUE)."""
    return settings.power_fraction_of_max * max_power_w(tdp_w, node_power_w_per_gpu, settings)


def gpu_wall_power_w(gpu: GPUSpec, settings: ModelingSettings = DEFAULT_SETTINGS) -> float:
    """:func:`wall_power_w` of one catalog GPU."""
    node = np.nan if gpu.node_power_w_per_gpu is None else gpu.node_power_w_per_gpu
    return float(wall_power_w(gpu.tdp_watts, node, settings))


def energy_kwh(gpu_hours, wall_w, pue: float):
    """Facility energy (kWh) of ``gpu_hours`` GPU-hours at ``wall_w`` W each at the wall."""
    out = np.asarray(gpu_hours, dtype=float) * np.asarray(wall_w, dtype=float) * pue / 1000.0
    return float(out) if out.ndim == 0 else out


def energy_usd(gpu_hours, wall_w, pue: float, usd_per_kwh: float):
    """What :func:`energy_kwh` costs at ``usd_per_kwh``."""
    return energy_kwh(gpu_hours, wall_w, pue) * usd_per_kwh


def power_basis_words(settings: ModelingSettings = DEFAULT_SETTINGS) -> str:
    """What every energy figure assumes, in the words the CLI's energy line ends with and the app
    card's energy help reads (ui/i18n.py "card_energy_help"): "servers drawing 80% of their maximum
    power whatever the MFU, PUE 1.25" (review s48: the line did not say it)."""
    return (
        f"servers drawing {settings.power_fraction_of_max:.0%} of their maximum power whatever the MFU,"
        f" PUE {settings.pue:g}"
    )
