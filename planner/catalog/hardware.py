"""Hardware catalog: GPUs, node templates and networks, read from TOML and converted to SI once.

The data lives in ``hw_catalog/{gpus,nodes,networks}/<id>.toml`` at the repository root (see
docs/hardware.md for the format and the rules behind the numbers). Users add or override entries
by passing their own directories with the same layout to ``load_catalog``; a file whose id
already exists replaces the earlier entry as a whole.

Every number in a file carries a ``[sources]`` entry; loading rejects a file without one, so an
unsourced number cannot slip into a plan that someone pays for.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.catalog.achievable import (
    RATE_FIELD_NAMES,
    RATE_FIELDS,
    check_rates,
    rate_file_values,
    rates_from,
)
from planner.catalog.prices import file_price_basis, offered_price_basis, read_offers
from planner.catalog.specs import (
    NETWORK_KINDS,
    PEER_ACCESS,
    PRECISIONS,
    SCALEUP_KINDS,
    Catalog,
    GPUSpec,
    NetworkSpec,
    NodeTemplate,
    usable_memory_gib,
)
from planner.errors import CatalogError, CatalogViolation, RuleCode
from planner.units import GIB, HOURS_PER_DAY

# The catalog's types live in planner/catalog/specs.py; callers may import them from here too.
__all__ = [
    "BUILTIN_DIR",
    "GIB",
    "Catalog",
    "CatalogError",
    "GPUSpec",
    "NetworkSpec",
    "NodeTemplate",
    "load_catalog",
    "usable_memory_gib",
    "with_rates",
]

BUILTIN_DIR = Path(__file__).resolve().parents[2] / "hw_catalog"

# ----------------------------------------------------------------------------- file schema


@dataclass(frozen=True)
class _Num:
    low: float  # exclusive
    high: float  # inclusive
    integer: bool = False
    required: bool = True

    def check(self, value: Any, where: str) -> float | int:
        kind = "an integer" if self.integer else "a number"
        ok_type = isinstance(value, int) if self.integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type or not self.low < value <= self.high:
            raise CatalogError(f"{where}: expected {kind} in ({self.low:g}, {self.high:g}], got {value!r}")
        return value


@dataclass(frozen=True)
class _Text:
    choices: tuple[str, ...] = ()
    required: bool = True
    pattern: str | None = None  # a regular expression the whole value must match
    example: str = ""  # shown when it does not
    sourced: bool = False  # a fact read from somewhere (a name a device reports): needs a source, as a number does

    def check(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise CatalogError(f"{where}: expected a non-empty string, got {value!r}")
        if self.choices and value not in self.choices:
            raise CatalogError(f"{where}: expected one of {', '.join(self.choices)}, got {value!r}")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise CatalogError(f"{where}: expected a value like {self.example!r}, got {value!r}")
        return value


@dataclass(frozen=True)
class _NumList:
    """A non-empty list of numbers, each in (low, high]; ``increasing``: strictly ascending."""

    low: float
    high: float
    increasing: bool = False
    required: bool = False

    def check(self, value: Any, where: str) -> list[float]:
        numbers = isinstance(value, list) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        if not numbers or not value or not all(self.low < v <= self.high for v in value):
            raise CatalogError(f"{where}: expected a list of numbers in ({self.low:g}, {self.high:g}], got {value!r}")
        if self.increasing and any(b <= a for a, b in itertools.pairwise(value)):
            raise CatalogError(f"{where}: expected strictly increasing numbers, got {value!r}")
        return [float(v) for v in value]


_TFLOPS = _Num(0, 20_000)
_OPTIONAL_TFLOPS = _Num(0, 20_000, required=False)
GPU_FIELDS: dict[str, _Num | _Text] = {
    "id": _Text(),
    "name": _Text(),
    "vendor": _Text(),
    # NVIDIA's "major.minor" (developer.nvidia.com/cuda-gpus); kernel libraries choose by it.
    "compute_capability": _Text(required=False, pattern=r"\d+\.\d+", example="9.0"),
    # AMD's LLVM target (rocm.docs.amd.com "AMD GPU specifications"); its architecture: specs.AMD_ARCHITECTURES.
    "llvm_target": _Text(required=False, pattern=r"gfx[0-9a-f]+", example="gfx942"),
    "memory_gib": _Num(1, 2048),
    "hbm_bandwidth_tbps": _Num(0, 100),
    "bf16_tflops": _OPTIONAL_TFLOPS,
    "fp16_tflops": _OPTIONAL_TFLOPS,
    "fp8_tflops": _OPTIONAL_TFLOPS,
    "tf32_tflops": _OPTIONAL_TFLOPS,
    "fp32_tflops": _TFLOPS,
    "scaleup_kind": _Text(SCALEUP_KINDS),
    "peer_access": _Text(PEER_ACCESS, required=False),
    "scaleup_domain_size": _Num(0, 100_000, integer=True),
    "scaleup_gbyte_per_s": _Num(0, 100_000),
    "internode_gbit_per_s": _Num(0, 100_000),
    "pcie_gbyte_per_s": _Num(0, 10_000),
    "tdp_w": _Num(0, 10_000),
    "price_usd_per_gpu_hour": _Num(0, 1_000),
    "purchase_price_usd": _Num(0, 10_000_000, required=False),
    "failures_per_1k_gpu_days": _Num(0, 1_000, required=False),
    # host memory of this GPU's servers where they differ from its default node's class
    "host_memory_gib": _Num(1, 1_000_000, required=False),
    # host DRAM bandwidth (GB/s) of this GPU's servers where they differ from its default node's
    "host_memory_gbyte_per_s": _Num(1, 100_000, required=False),
    # maximum wall power of one server of this GPU (default node), GPUs, host and network included
    "node_power_w": _Num(0, 10_000_000, required=False),
    # achievable rates (optional; their sources start with a PROVENANCES word)
    **{f.name: _Num(f.low, f.high, required=False) for f in RATE_FIELDS},
    "default_node": _Text(),
    "default_network": _Text(),
    # The product name the vendor's driver reports for one device, which its Kubernetes labeller
    # publishes: NVML's device name for NVIDIA (nvidia-smi's "Name"; GPU feature discovery's
    # nvidia.com/gpu.product), the amdgpu driver's sysfs product_name for AMD (the AMD node
    # labeller's amd.com/gpu.product-name). Optional: a GPU without one gets no node selector.
    "device_name": _Text(required=False, sourced=True),
    # What torch.cuda.get_device_name reports, where it differs from device_name: on ROCm HIP's
    # marketing name (libdrm's amdgpu.ids by PCI id, "AMD Instinct MI325X"), not the board's sysfs
    # product_name ("AMD Instinct MI325 OAM"). The probe's "ran on another GPU" check and calibration
    # files see this form, so it, not the label's, must map back through trainplan detect's matcher.
    "torch_device_name": _Text(required=False, sourced=True),
    "notes": _Text(required=False),
}
NODE_FIELDS: dict[str, _Num | _Text] = {
    "id": _Text(),
    "name": _Text(),
    "gpus_per_node": _Num(0, 1024, integer=True),
    "scaleup_domain_size": _Num(0, 100_000, integer=True),
    "failures_per_1k_node_days": _Num(0, 1_000, required=False),
    "host_memory_gib": _Num(1, 1_000_000, required=False),
    "host_memory_gbyte_per_s": _Num(1, 100_000, required=False),
    "description": _Text(required=False),
}
NETWORK_FIELDS: dict[str, _Num | _Text | _NumList] = {
    "id": _Text(),
    "name": _Text(),
    "kind": _Text(NETWORK_KINDS),
    "gbit_per_s_per_gpu": _Num(0, 100_000),
    "latency_us": _Num(0, 10_000),
    "efficiency_note": _Text(required=False),
    "ring_busbw_gbit_per_s": _Num(0, 100_000, required=False),
    # nccl-tests all-reduce bus bandwidth by message size, measured over this many nodes
    "allreduce_busbw_nodes": _Num(1, 1_000_000, integer=True, required=False),
    "allreduce_busbw_message_bytes": _NumList(0, 1e15, increasing=True),
    "allreduce_busbw_gbyte_per_s": _NumList(0, 100_000),
}


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(BUILTIN_DIR.parent))
    except ValueError:
        return str(path)


def _read_entry(path: Path, fields: Mapping[str, _Num | _Text | _NumList]) -> tuple[dict[str, Any], dict[str, str]]:
    """Parse and validate one file; returns (values, sources)."""
    where = _show(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise CatalogError(f"{where}: invalid TOML: {err}") from None
    for key in raw:
        if key != "sources" and key not in fields:
            raise CatalogError(f"{where}: field '{key}': unknown field{_did_you_mean(key, fields)}")
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        if name in raw:
            values[name] = spec.check(raw[name], f"{where}: field '{name}'")
        elif spec.required:
            raise CatalogError(f"{where}: field '{name}': missing")
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", values["id"]):
        raise CatalogError(
            f"{where}: field 'id': expected lowercase letters, digits, '.', '_' or '-', got {values['id']!r}"
        )
    if values["id"] != path.stem:
        raise CatalogError(f"{where}: field 'id': must equal the file name '{path.stem}', got {values['id']!r}")
    return values, _read_sources(raw.get("sources"), values, fields, where)


def _read_sources(
    raw: Any, values: dict[str, Any], fields: Mapping[str, _Num | _Text | _NumList], where: str
) -> dict[str, str]:
    if not isinstance(raw, dict):
        got = "nothing" if raw is None else repr(raw)
        raise CatalogError(f"{where}: field 'sources': expected a table of field = \"source, date\", got {got}")
    for key, text in raw.items():
        if key not in fields:
            raise CatalogError(f"{where}: field 'sources.{key}': unknown field{_did_you_mean(key, fields)}")
        if not isinstance(text, str) or not text.strip():
            raise CatalogError(f"{where}: field 'sources.{key}': expected a non-empty string, got {text!r}")
    for name, spec in fields.items():
        if (isinstance(spec, _Num | _NumList) or spec.sourced) and name in values and name not in raw:
            what = "device name" if isinstance(spec, _Text) else "number"
            raise CatalogError(f"{where}: field 'sources.{name}': missing (every {what} needs a source and date)")
    return dict(raw)


def _did_you_mean(key: str, fields: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(key, fields, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def with_rates(gpu: GPUSpec, values: dict[str, float], source: str, where: str) -> GPUSpec:
    """The GPU with some achievable rates replaced (file-field units), each sourced ``source``
    (which names its provenance); checked like a catalog file's (CatalogError naming ``where``)."""
    ceilings = {
        "bf16_tflops": (gpu.dense_16bit_flops_per_s or 0.0) / 1e12,
        "hbm_bandwidth_tbps": gpu.hbm_bandwidth_bytes_per_s / 1e12,
        **({"fp8_tflops": gpu.peak_flops_per_s["fp8"] / 1e12} if "fp8" in gpu.peak_flops_per_s else {}),
        "scaleup_gbyte_per_s": gpu.scaleup_bandwidth_bytes_per_s / 1e9,
    }
    known = dict.fromkeys(RATE_FIELD_NAMES)
    for name, value in values.items():
        if name not in known:
            hint = _did_you_mean(name, known)
            raise CatalogViolation(RuleCode.CAL_NOT_A_RATE, {"where": where, "field": name, "hint": hint})
        GPU_FIELDS[name].check(value, f"{where}: field '{name}'")
    merged = {**rate_file_values(gpu.rates), **values}
    sources = {name: gpu.sources.get(name, source) for name in merged} | {name: source for name in values}
    check_rates({**ceilings, **merged}, sources, where)
    rates = rates_from(merged, sources)
    return gpu.model_copy(update={"rates": rates, "sources": {**gpu.sources, **sources}})


def _check_gpu_consistency(values: dict[str, Any], where: str) -> None:
    """Cross-field checks that catch a sparse or mis-columned number entered as dense."""
    bf16 = values.get("bf16_tflops") or values.get("fp16_tflops")
    if bf16 is None:
        raise CatalogError(f"{where}: field 'bf16_tflops': missing (a GPU needs bf16_tflops or fp16_tflops)")
    if values.get("fp8_tflops", math.inf) < bf16:
        raise CatalogError(
            f"{where}: field 'fp8_tflops': expected at least the 16-bit rate {bf16:g}, got {values['fp8_tflops']!r}"
        )
    for name in ("tf32_tflops", "fp32_tflops"):
        if values.get(name, 0) > bf16:
            raise CatalogError(
                f"{where}: field '{name}': expected at most the 16-bit rate {bf16:g}, got {values[name]!r}"
            )


def _per_hour(failures_per_1k_days: float) -> float:
    """Failures per 1,000 unit-days (how cluster studies report them) as failures per unit-hour."""
    return failures_per_1k_days / 1000 / HOURS_PER_DAY


def _capability(text: str | None) -> tuple[int, int] | None:
    """Text "9.0" as (9, 0), the form torch.cuda.get_device_capability returns."""
    if text is None:
        return None
    major, minor = text.split(".")
    return int(major), int(minor)


def _gpu_from(values: dict[str, Any], sources: dict[str, str]) -> GPUSpec:
    return GPUSpec(
        id=values["id"],
        name=values["name"],
        vendor=values["vendor"],
        memory_bytes=round(values["memory_gib"] * GIB),
        hbm_bandwidth_bytes_per_s=values["hbm_bandwidth_tbps"] * 1e12,
        peak_flops_per_s={p: values[f"{p}_tflops"] * 1e12 for p in PRECISIONS if f"{p}_tflops" in values},
        compute_capability=_capability(values.get("compute_capability")),
        llvm_target=values.get("llvm_target"),
        device_name=values.get("device_name"),
        torch_device_name=values.get("torch_device_name"),
        scaleup_kind=values["scaleup_kind"],
        peer_access=values.get("peer_access", "direct"),
        scaleup_domain_size=values["scaleup_domain_size"],
        scaleup_bandwidth_bytes_per_s=values["scaleup_gbyte_per_s"] * 1e9,
        internode_bandwidth_bytes_per_s=values["internode_gbit_per_s"] * 1e9 / 8,
        pcie_bandwidth_bytes_per_s=values["pcie_gbyte_per_s"] * 1e9,
        tdp_watts=float(values["tdp_w"]),
        price_per_gpu_hour_usd=float(values["price_usd_per_gpu_hour"]),
        price_basis=file_price_basis(sources.get("price_usd_per_gpu_hour", "")),
        purchase_price_usd=values.get("purchase_price_usd"),
        failure_rate_per_gpu_hour=(
            None if "failures_per_1k_gpu_days" not in values else _per_hour(values["failures_per_1k_gpu_days"])
        ),
        host_memory_bytes_per_node=_gib_or_none(values.get("host_memory_gib")),
        host_memory_bandwidth_bytes_per_s_per_node=_gbyte_or_none(values.get("host_memory_gbyte_per_s")),
        default_node=values["default_node"],
        default_network=values["default_network"],
        sources=sources,
        rates=rates_from(values, sources),
    )


def _node_from(values: dict[str, Any], sources: dict[str, str], where: str) -> NodeTemplate:
    per_node, domain = values["gpus_per_node"], values["scaleup_domain_size"]
    if per_node % domain and domain % per_node:
        raise CatalogError(
            f"{where}: field 'scaleup_domain_size': {domain} neither divides nor is a multiple "
            f"of gpus_per_node {per_node}"
        )
    return NodeTemplate(
        id=values["id"],
        name=values["name"],
        gpus_per_node=per_node,
        scaleup_domain_size=domain,
        failure_rate_per_node_hour=(
            None if "failures_per_1k_node_days" not in values else _per_hour(values["failures_per_1k_node_days"])
        ),
        host_memory_bytes=_gib_or_none(values.get("host_memory_gib")),
        host_memory_bandwidth_bytes_per_s=_gbyte_or_none(values.get("host_memory_gbyte_per_s")),
        sources=sources,
    )


def _gib_or_none(gib: float | None) -> float | None:
    return None if gib is None else float(gib) * GIB


def _gbyte_or_none(gbyte_per_s: float | None) -> float | None:
    """A catalog figure in GB/s (decimal) as bytes/s, or None."""
    return None if gbyte_per_s is None else float(gbyte_per_s) * 1e9


def _network_from(values: dict[str, Any], sources: dict[str, str], where: str) -> NetworkSpec:
    return NetworkSpec(
        id=values["id"],
        name=values["name"],
        bandwidth_bytes_per_s_per_gpu=values["gbit_per_s_per_gpu"] * 1e9 / 8,
        sources=sources,
        ring_bus_bandwidth_bytes_per_s=(
            None if values.get("ring_busbw_gbit_per_s") is None else values["ring_busbw_gbit_per_s"] * 1e9 / 8
        ),
        allreduce_busbw_curve=_busbw_curve(values, where),
        allreduce_busbw_nodes=values.get("allreduce_busbw_nodes"),
    )


def _busbw_curve(values: dict[str, Any], where: str) -> tuple[tuple[float, float], ...] | None:
    """The measured all-reduce curve as (message bytes, bus bytes/s) pairs, GB/s read as 1e9 bytes/s
    (nccl-tests' unit); None where the file has none. Sizes, rates and node count come together."""
    names = ("allreduce_busbw_message_bytes", "allreduce_busbw_gbyte_per_s", "allreduce_busbw_nodes")
    present = [n in values for n in names]
    if not any(present):
        return None
    sizes, rates = values.get(names[0], []), values.get(names[1], [])
    if not all(present) or len(sizes) != len(rates):
        raise CatalogError(f"{where}: fields {', '.join(names)}: expected all three, as many sizes as rates")
    return tuple((size, rate * 1e9) for size, rate in zip(sizes, rates, strict=True))


# ----------------------------------------------------------------------------- loading


def _catalog_files(dirs: list[Path], kind: str) -> dict[str, Path]:
    """id -> file for one kind; a later directory overrides an earlier one."""
    files: dict[str, Path] = {}
    for directory in dirs:
        for path in sorted((directory / kind).glob("*.toml")):
            files[path.stem] = path
    return files


def _check_dirs(dirs: list[Path]) -> None:
    for directory in dirs:
        if not directory.is_dir():
            raise CatalogError(f"{directory}: catalog directory does not exist")
        if not any((directory / kind).is_dir() for kind in ("gpus", "nodes", "networks", "prices")):
            raise CatalogError(f"{directory}: catalog directory has no gpus/, nodes/, networks/ or prices/ folder")


def _check_references(
    gpu_files: dict[str, Path],
    gpus: dict[str, GPUSpec],
    nodes: dict[str, NodeTemplate],
    networks: dict[str, NetworkSpec],
) -> None:
    for gpu_id, gpu in gpus.items():
        where = _show(gpu_files[gpu_id])
        if gpu.default_node not in nodes:
            raise CatalogError(
                f"{where}: field 'default_node': unknown node '{gpu.default_node}' (known: {', '.join(sorted(nodes))})"
            )
        if gpu.default_network not in networks:
            raise CatalogError(
                f"{where}: field 'default_network': unknown network '{gpu.default_network}' "
                f"(known: {', '.join(sorted(networks))})"
            )
        node_domain = nodes[gpu.default_node].scaleup_domain_size
        if node_domain != gpu.scaleup_domain_size:
            raise CatalogError(
                f"{where}: field 'scaleup_domain_size': {gpu.scaleup_domain_size} disagrees with "
                f"default_node '{gpu.default_node}' ({node_domain})"
            )


def _node_power_per_gpu(gpu: GPUSpec, node_power_w: float | None, node: NodeTemplate, where: str) -> float | None:
    """A server's maximum wall power per GPU; it counts its GPUs at TDP, so it cannot be less."""
    if node_power_w is None:
        return None
    per_gpu = node_power_w / node.gpus_per_node
    if per_gpu < gpu.tdp_watts:
        raise CatalogError(
            f"{where}: field 'node_power_w': {node_power_w:g} W for {node.gpus_per_node} GPUs is less "
            f"than their TDP ({gpu.tdp_watts:g} W each)"
        )
    return per_gpu


def _build(dirs: list[Path]) -> Catalog:
    _check_dirs(dirs)
    gpu_files = _catalog_files(dirs, "gpus")
    gpus, node_power = {}, {}
    for gpu_id, path in gpu_files.items():
        values, sources = _read_entry(path, GPU_FIELDS)
        _check_gpu_consistency(values, _show(path))
        check_rates(values, sources, _show(path))
        gpus[gpu_id] = _gpu_from(values, sources)
        node_power[gpu_id] = values.get("node_power_w")
    nodes = {
        node_id: _node_from(*_read_entry(path, NODE_FIELDS), _show(path))
        for node_id, path in _catalog_files(dirs, "nodes").items()
    }
    networks = {
        net_id: _network_from(*_read_entry(path, NETWORK_FIELDS), _show(path))
        for net_id, path in _catalog_files(dirs, "networks").items()
    }
    _check_references(gpu_files, gpus, nodes, networks)
    offers = read_offers(dirs, set(gpus))
    gpus = {
        gpu_id: gpu.model_copy(
            update={
                "node_failure_rate_per_node_hour": nodes[gpu.default_node].failure_rate_per_node_hour,
                "host_memory_bytes_per_node": gpu.host_memory_bytes_per_node
                or nodes[gpu.default_node].host_memory_bytes,
                "host_memory_bandwidth_bytes_per_s_per_node": gpu.host_memory_bandwidth_bytes_per_s_per_node
                or nodes[gpu.default_node].host_memory_bandwidth_bytes_per_s,
                "node_power_w_per_gpu": _node_power_per_gpu(
                    gpu, node_power[gpu_id], nodes[gpu.default_node], _show(gpu_files[gpu_id])
                ),
                "offers": offers.get(gpu_id, ()),
                "price_basis": offered_price_basis(
                    gpu.price_basis, sum(o.kind == "on-demand" for o in offers.get(gpu_id, ()))
                ),
            }
        )
        for gpu_id, gpu in gpus.items()
    }
    return Catalog(gpus=gpus, nodes=nodes, networks=networks)


@functools.cache
def _builtin_catalog() -> Catalog:
    return _build([BUILTIN_DIR])


def load_catalog(extra_dirs: list[Path] | None = None) -> Catalog:
    """The built-in catalog (cached), plus user directories that add or replace entries by id."""
    if not extra_dirs:
        return _builtin_catalog()
    return _build([BUILTIN_DIR, *(Path(d) for d in extra_dirs)])
