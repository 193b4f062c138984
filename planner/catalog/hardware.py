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
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict

from planner.catalog.achievable import (
    RATE_FIELD_NAMES,
    RATE_FIELDS,
    AchievableRates,
    check_rates,
    rate_file_values,
    rates_from,
)
from planner.catalog.measured_job import MeasuredJob
from planner.catalog.prices import PriceBasis, PriceOffer, file_price_basis, read_offers
from planner.errors import CatalogError, CatalogViolation, RuleCode
from planner.units import GIB, HOURS_PER_DAY

BUILTIN_DIR = Path(__file__).resolve().parents[2] / "hw_catalog"

# Usable-capacity rule (docs/hardware.md). HBM parts: the H200 calibration run saw 139.80 GiB in
# PyTorch for a "141 GB" label; NVML shows the same label-to-total ratio on H100 (81,559 MiB for
# "80 GB") and H200 (140.40 GiB), so the ratio transfers across HBM parts.
HBM_USABLE_FRACTION = 139.80 / 141
# GDDR6 data-center cards run with ECC on, which carves out 1/16 (L4: 23,034 MiB of 24 GiB;
# L40S: 46,068 MiB of 48 GiB in nvidia-smi); PyTorch then sees what the H200 saw of NVML's total.
GDDR_ECC_USABLE_FRACTION = 15 / 16 * (139.80 / 140.40)

ScaleupKind = Literal["nvswitch", "nvlink_bridge", "infinity_fabric", "pcie", "nvlink_switch_rack"]
# How one GPU reaches another's memory: directly (GPUDirect P2P, over NVLink or PCIe), or staged
# through host memory where the driver disables peer access (GeForce cards: NCCL's SHM transport).
PeerAccess = Literal["direct", "host-staged"]
PEER_ACCESS: tuple[str, ...] = get_args(PeerAccess)
SCALEUP_KINDS: tuple[str, ...] = get_args(ScaleupKind)
NETWORK_KINDS = ("infiniband", "roce", "ethernet", "slingshot", "efa", "other")
PRECISIONS = ("bf16", "fp16", "fp8", "tf32", "fp32")


def usable_memory_gib(vendor_label_gb: float, gddr_ecc: bool = False) -> float:
    """Framework-visible capacity for a vendor "GB" label (read as GiB, as vendors print it)."""
    fraction = GDDR_ECC_USABLE_FRACTION if gddr_ecc else HBM_USABLE_FRACTION
    return round(vendor_label_gb * fraction, 2)


_FROZEN = ConfigDict(frozen=True, extra="forbid")

# NVIDIA architecture by compute capability, (major, -1) for a whole major version (NVIDIA's CUDA
# GPU Compute Capability table, developer.nvidia.com/cuda-gpus): sm80/86 Ampere, sm89 Ada Lovelace,
# sm90 Hopper, sm100/103/120 Blackwell.
ARCHITECTURES: dict[tuple[int, int], str] = {
    (8, 0): "Ampere",
    (8, 6): "Ampere",
    (8, 9): "Ada",
    (9, -1): "Hopper",
    (10, -1): "Blackwell",
    (12, -1): "Blackwell",
}


class GPUSpec(BaseModel):
    """One accelerator (as software sees it: an MI250X GCD is one GPU), in SI units."""

    model_config = _FROZEN
    id: str
    name: str
    vendor: str
    memory_bytes: int
    hbm_bandwidth_bytes_per_s: float
    peak_flops_per_s: dict[str, float]  # dense; a missing key means unsupported
    # (major, minor) of an NVIDIA GPU; None for other vendors. Kernel libraries pick their
    # kernels by it (planner/model/attention_kernels.py sdpa_prefers_cudnn).
    compute_capability: tuple[int, int] | None = None
    scaleup_kind: ScaleupKind
    peer_access: PeerAccess = "direct"
    scaleup_domain_size: int
    scaleup_bandwidth_bytes_per_s: float  # per GPU, per direction
    internode_bandwidth_bytes_per_s: float  # per GPU, per direction, on the default network
    pcie_bandwidth_bytes_per_s: float  # per direction
    tdp_watts: float
    price_per_gpu_hour_usd: float  # the default price (the file's; planner/catalog/prices.py for kinds)
    price_basis: PriceBasis = PriceBasis.CATALOG  # where that price comes from
    # Providers' dated, sourced offers (hw_catalog/prices), read at load.
    offers: tuple[PriceOffer, ...] = ()
    # GPUs rented together at ``price_per_gpu_hour_usd``: a job pays for whole units (1: per GPU,
    # the default price; a price kind sets the smallest unit its offers rent, planner/catalog/prices.py).
    rent_unit_gpus: int = 1
    purchase_price_usd: float | None = None
    # Interruptions per GPU-hour of a training job (GPU, network and system software), from a
    # published cluster study; None: ModelingSettings.failure_rate_per_gpu_hour.
    failure_rate_per_gpu_hour: float | None = None
    # Host failures per node-hour of the default node template (NodeTemplate), copied at load.
    node_failure_rate_per_node_hour: float | None = None
    # Of those, spot preemptions per node-hour (a spot price kind adds them, planner/catalog/
    # prices.py): each also waits for capacity (ModelingSettings.spot_capacity_wait_s).
    spot_preemptions_per_node_hour: float = 0.0
    # Host (CPU) memory of one node of this GPU: the file's ``host_memory_gib`` where the GPU's
    # servers differ from its node template's class (Hopper hosts of 2 TiB on the HGX template
    # whose A100 hosts have 1,152 GiB), else the template's, resolved at load; None: neither
    # states it (ModelingSettings.host_memory_bytes_per_node). Offload's fit rule reads it.
    host_memory_bytes_per_node: float | None = None
    # Host DRAM bandwidth of one node of this GPU, bytes/s (sockets x channels x transfer rate x
    # 8 bytes): the file's ``host_memory_gbyte_per_s``, else its node template's, resolved at load
    # as host memory is; None: ModelingSettings.host_memory_bandwidth_bytes_per_s_per_node.
    # Offload's host AdamW step reads it (planner/model/host.py).
    host_memory_bandwidth_bytes_per_s_per_node: float | None = None
    # The GPU's share of its server's maximum wall power, W: the file's ``node_power_w`` (a
    # vendor's maximum system power) over the default node's GPUs, resolved at load; None: the
    # file states none (planner/model/energy.py falls back to TDP plus a host share).
    node_power_w_per_gpu: float | None = None
    default_node: str
    default_network: str
    sources: dict[str, str]
    rates: AchievableRates = AchievableRates()
    # A real job's measured/predicted corrections (calibration file, planner/catalog/measured_job.py).
    measured_job: MeasuredJob | None = None

    @property
    def dense_16bit_flops_per_s(self) -> float | None:
        """The dense bf16 peak, else fp16's (None: neither)."""
        return self.peak_flops_per_s.get("bf16", self.peak_flops_per_s.get("fp16"))

    @property
    def fp8_fast_accumulation(self) -> bool:
        """Whether FP8 GEMMs here have a fast-accumulation mode that trades accuracy for speed:
        Hopper's (sm90) FP8 tensor-core instructions accumulate at reduced precision unless the
        kernel periodically promotes the partial sums to FP32 (cuBLASLt
        ``CUBLASLT_MATMUL_DESC_FAST_ACCUM``; DeepSeek-AI 2024, DeepSeek-V3 report sec. 3.3.2);
        Blackwell (sm100) accumulates in FP32 at full rate and has no such mode
        (NVIDIA/TransformerEngine#2748: "there is no fastAccuMode for sm100")."""
        return self.compute_capability is not None and self.compute_capability[0] == 9

    @property
    def generation(self) -> str:
        """The architecture the GPU belongs to (``Hopper``: H100 and H200 alike), which groups the
        measured rows a prediction is judged against (planner/accuracy): NVIDIA's by compute
        capability, other vendors' by vendor."""
        if self.compute_capability is None:
            return self.vendor.upper()
        return ARCHITECTURES.get(self.compute_capability, ARCHITECTURES.get((self.compute_capability[0], -1), "NVIDIA"))

    @property
    def price_estimated(self) -> bool:
        """The price is an estimate, with no listed offer behind it (an export part priced as its
        source die): of two plans alike in time and cost, the search takes the one whose price is
        sourced (trial s28c: an exact H800 / H100 tie went to the H800)."""
        return self.price_basis == PriceBasis.ESTIMATE

    def peak_flops(self, precision: str) -> float:
        key = getattr(precision, "value", precision)
        if key not in self.peak_flops_per_s:
            raise ValueError(f"{self.id} has no dense {key} tensor throughput")
        return self.peak_flops_per_s[key]

    def with_price(self, usd_per_hour: float) -> GPUSpec:
        if not (isinstance(usd_per_hour, (int, float)) and math.isfinite(usd_per_hour) and usd_per_hour > 0):
            raise ValueError(f"price for {self.id} must be a positive number of USD per GPU-hour, got {usd_per_hour!r}")
        sources = {**self.sources, "price_usd_per_gpu_hour": "user override"}
        # a user's quote is per GPU: no whole-node rounding (rent_unit_gpus)
        update = {
            "price_per_gpu_hour_usd": float(usd_per_hour),
            "price_basis": PriceBasis.USER,
            "sources": sources,
            "rent_unit_gpus": 1,
        }
        return self.model_copy(update=update)


class NodeTemplate(BaseModel):
    """A server layout; the scale-up domain may be part of a node (bridged pairs) or span nodes (NVL72)."""

    model_config = _FROZEN
    id: str
    name: str
    gpus_per_node: int
    scaleup_domain_size: int
    # Interruptions per node-hour from host parts (CPU, NIC, SSD, PSU, DRAM, host maintenance);
    # None: ModelingSettings.failure_rate_per_node_hour.
    failure_rate_per_node_hour: float | None = None
    # Host (CPU) memory per node, bytes: the smallest typical server of the template's class;
    # None: ModelingSettings.host_memory_bytes_per_node.
    host_memory_bytes: float | None = None
    # Host DRAM bandwidth per node, bytes/s; None: ModelingSettings.host_memory_bandwidth_bytes_per_s_per_node.
    host_memory_bandwidth_bytes_per_s: float | None = None
    sources: dict[str, str]

    @property
    def scaleup_domains_per_node(self) -> int:
        return max(1, self.gpus_per_node // self.scaleup_domain_size)

    @property
    def nodes_per_scaleup_domain(self) -> int:
        return max(1, self.scaleup_domain_size // self.gpus_per_node)

    def scaleup_domain_holding(self, gpus_per_node: int) -> int:
        """GPUs that share one scale-up domain when each node holds only ``gpus_per_node`` of its
        slots: a domain inside a node keeps the GPUs placed there (eight 1-GPU DGX H100 nodes share
        no NVLink); a domain spanning nodes (NVL72) spans the same nodes' GPUs."""
        if self.scaleup_domain_size <= self.gpus_per_node:
            return min(self.scaleup_domain_size, gpus_per_node)
        return self.nodes_per_scaleup_domain * gpus_per_node


class NetworkSpec(BaseModel):
    """Scale-out network at line rate; efficiencies belong to the analytic model, not here.

    The files' ``kind``, ``latency_us`` and ``efficiency_note`` are checked and sourced but not kept:
    the model reads the bandwidth only."""

    model_config = _FROZEN
    id: str
    name: str
    bandwidth_bytes_per_s_per_gpu: float  # per direction
    sources: dict[str, str]
    # MEASURED bus bandwidth of one NCCL ring whose ranks fill their nodes, where the fabric's
    # collectives reach less than its NICs together (Omni-Path: a ring leaves each node through
    # one NIC); None: the line rate's share (planner/model/comm.py group_link).
    ring_bus_bandwidth_bytes_per_s: float | None = None

    @property
    def gbit_per_s_per_gpu(self) -> float:
        """The line rate as its file states it (what the CLI and the app show)."""
        return self.bandwidth_bytes_per_s_per_gpu * 8 / 1e9

    @property
    def ring_busbw_gbit_per_s(self) -> float | None:
        """The measured ring's bus bandwidth as its file states it (None: not measured)."""
        ring = self.ring_bus_bandwidth_bytes_per_s
        return None if ring is None else ring * 8 / 1e9


class Catalog(BaseModel):
    model_config = _FROZEN
    gpus: dict[str, GPUSpec]
    nodes: dict[str, NodeTemplate]
    networks: dict[str, NetworkSpec]

    def gpu(self, gpu_id: str) -> GPUSpec:
        return _lookup(self.gpus, gpu_id, "GPU")

    def node(self, node_id: str) -> NodeTemplate:
        return _lookup(self.nodes, node_id, "node template")

    def network(self, network_id: str) -> NetworkSpec:
        return _lookup(self.networks, network_id, "network")


def _lookup(entries: dict[str, Any], key: str, what: str) -> Any:
    normalized = key.strip().lower()
    if normalized in entries:
        return entries[normalized]
    # Ids that start with what was typed first ('a800' -> a800-80gb-sxm), then the closest spellings.
    starting = sorted(e for e in entries if e.startswith(normalized) or normalized.startswith(e))
    close = [
        *starting,
        *(c for c in difflib.get_close_matches(normalized, entries, n=3, cutoff=0.5) if c not in starting),
    ][:3]
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(sorted(entries))}"
    raise ValueError(f"unknown {what} '{key}'; {hint}")


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

    def check(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise CatalogError(f"{where}: expected a non-empty string, got {value!r}")
        if self.choices and value not in self.choices:
            raise CatalogError(f"{where}: expected one of {', '.join(self.choices)}, got {value!r}")
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise CatalogError(f"{where}: expected a value like {self.example!r}, got {value!r}")
        return value


_TFLOPS = _Num(0, 20_000)
_OPTIONAL_TFLOPS = _Num(0, 20_000, required=False)
GPU_FIELDS: dict[str, _Num | _Text] = {
    "id": _Text(),
    "name": _Text(),
    "vendor": _Text(),
    # NVIDIA's "major.minor" (developer.nvidia.com/cuda-gpus); kernel libraries choose by it.
    "compute_capability": _Text(required=False, pattern=r"\d+\.\d+", example="9.0"),
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
NETWORK_FIELDS: dict[str, _Num | _Text] = {
    "id": _Text(),
    "name": _Text(),
    "kind": _Text(NETWORK_KINDS),
    "gbit_per_s_per_gpu": _Num(0, 100_000),
    "latency_us": _Num(0, 10_000),
    "efficiency_note": _Text(required=False),
    "ring_busbw_gbit_per_s": _Num(0, 100_000, required=False),
}


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(BUILTIN_DIR.parent))
    except ValueError:
        return str(path)


def _read_entry(path: Path, fields: dict[str, _Num | _Text]) -> tuple[dict[str, Any], dict[str, str]]:
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


def _read_sources(raw: Any, values: dict[str, Any], fields: dict[str, _Num | _Text], where: str) -> dict[str, str]:
    if not isinstance(raw, dict):
        got = "nothing" if raw is None else repr(raw)
        raise CatalogError(f"{where}: field 'sources': expected a table of field = \"source, date\", got {got}")
    for key, text in raw.items():
        if key not in fields:
            raise CatalogError(f"{where}: field 'sources.{key}': unknown field{_did_you_mean(key, fields)}")
        if not isinstance(text, str) or not text.strip():
            raise CatalogError(f"{where}: field 'sources.{key}': expected a non-empty string, got {text!r}")
    for name, spec in fields.items():
        if isinstance(spec, _Num) and name in values and name not in raw:
            raise CatalogError(f"{where}: field 'sources.{name}': missing (every number needs a source and date)")
    return dict(raw)


def _did_you_mean(key: str, fields: dict[str, Any]) -> str:
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


def _network_from(values: dict[str, Any], sources: dict[str, str]) -> NetworkSpec:
    return NetworkSpec(
        id=values["id"],
        name=values["name"],
        bandwidth_bytes_per_s_per_gpu=values["gbit_per_s_per_gpu"] * 1e9 / 8,
        sources=sources,
        ring_bus_bandwidth_bytes_per_s=(
            None if values.get("ring_busbw_gbit_per_s") is None else values["ring_busbw_gbit_per_s"] * 1e9 / 8
        ),
    )


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
        net_id: _network_from(*_read_entry(path, NETWORK_FIELDS))
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
