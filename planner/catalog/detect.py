"""Find the local NVIDIA GPUs through NVML and match each one to a catalog entry.

Matching (``match_gpu_name``) is a pure function of the NVML name and memory, so it is tested
without a GPU. Rules, in order:

1. Family: every segment of a catalog id but its form factor and memory size ("h100" of "h100-sxm",
   "rtx" and "4090" of "rtx-4090") must be a whole token of the device name ("NVIDIA H100 80GB HBM3"
   -> h100, 80gb, hbm3). "A10G" therefore does not match "a10", nor "RTX 3090" "rtx-4090".
2. Form factor: a name with a "pcie" token matches ids with a "pcie" segment, "nvl" matches "nvl",
   anything else (SXM boards name no form, or say "SXM4") matches ids with neither.
3. Memory: among the remaining entries, the one whose usable capacity is closest to the NVML total
   wins, if within 10%; otherwise there is no match (an unlisted variant such as a 64 GB H100 must
   not borrow the 80 GB entry's numbers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.catalog.hardware import Catalog, GPUSpec
from planner.errors import NoGPUDriver

MEMORY_TOLERANCE = 0.10
_VENDOR_TOKENS = {"nvidia", "amd", "instinct", "tesla"}
NO_DRIVER_MESSAGE = "no NVIDIA driver found (NVML could not be loaded); trainplan detect needs an NVIDIA GPU"


@dataclass(frozen=True)
class DetectedGPU:
    index: int
    name: str  # as NVML reports it
    memory_bytes: int  # NVML total; PyTorch sees slightly less
    driver_version: str
    spec: GPUSpec | None  # catalog match; None when the device is not in the catalog


def _name_tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[\s\-_/]+", name.lower()) if t and t not in _VENDOR_TOKENS]


def _family_segments(gpu_id: str) -> list[str]:
    """A catalog id's segments that name the part: all but its form factor and memory size."""
    return [s for s in gpu_id.split("-") if s not in ("sxm", "pcie", "nvl") and not re.fullmatch(r"\d+gb", s)]


def _form_of(tokens: list[str]) -> str:
    if "pcie" in tokens:
        return "pcie"
    if "nvl" in tokens:
        return "nvl"
    return "sxm"


def match_gpu_name(name: str, memory_bytes: int | None, catalog: Catalog) -> GPUSpec | None:
    """The catalog entry for an NVML device name and memory total, or None (see module docstring)."""
    tokens = _name_tokens(name)
    form = _form_of(tokens)
    candidates = [
        spec
        for spec in catalog.gpus.values()
        if all(segment in tokens for segment in _family_segments(spec.id)) and _form_of(spec.id.split("-")) == form
    ]
    if not candidates:
        return None
    if not memory_bytes:
        return candidates[0] if len(candidates) == 1 else None
    best = min(candidates, key=lambda spec: abs(spec.memory_bytes - memory_bytes))
    if abs(best.memory_bytes - memory_bytes) > MEMORY_TOLERANCE * best.memory_bytes:
        return None
    return best


def _load_nvml():
    try:
        import pynvml
    except ImportError:
        raise NoGPUDriver(
            "nvidia-ml-py (pynvml) is not installed: it comes with pip install 'trainplan[train]';"
            " trainplan detect needs it and an NVIDIA GPU (planning does not)"
        ) from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        raise NoGPUDriver(NO_DRIVER_MESSAGE) from None
    return pynvml


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def detect_gpus(catalog: Catalog) -> list[DetectedGPU]:
    """Every NVIDIA GPU NVML sees, with its catalog match; raises NoGPUDriver without a driver."""
    nvml = _load_nvml()
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        found = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = _text(nvml.nvmlDeviceGetName(handle))
            memory = int(nvml.nvmlDeviceGetMemoryInfo(handle).total)
            found.append(DetectedGPU(index, name, memory, driver, match_gpu_name(name, memory, catalog)))
        return found
    except nvml.NVMLError as exc:
        raise NoGPUDriver(f"NVML could not read the GPUs ({exc}); check the NVIDIA driver") from None
    finally:
        nvml.nvmlShutdown()
