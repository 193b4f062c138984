"""The hardware catalog's types: GPUs, node templates and networks in SI units, with the
usable-capacity rule and the architecture table. ``planner/catalog/hardware.py`` reads them from
the catalog's TOML files (and re-exports them)."""

from __future__ import annotations

import difflib
import math
from typing import Any, Literal, get_args

from pydantic import BaseModel

from planner.catalog.achievable import AchievableRates
from planner.catalog.measured_job import MeasuredJob
from planner.catalog.prices import PriceBasis, PriceOffer
from planner.frozen import FROZEN

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


# The architecture of an NVIDIA GPU whose compute capability ARCHITECTURES does not name.
UNNAMED_NVIDIA_ARCHITECTURE = "NVIDIA"
NVIDIA_ARCHITECTURES = frozenset(ARCHITECTURES.values()) | {UNNAMED_NVIDIA_ARCHITECTURE}

# AMD Instinct architecture by LLVM target, AMD's counterpart of the compute capability (ROCm
# documentation, "AMD GPU specifications", rocm.docs.amd.com/en/latest/reference/gpu-specs.html:
# MI250X gfx90a CDNA2; MI300X, MI325X gfx942 CDNA3; MI350X, MI355X gfx950 CDNA4). Session 46: every
# AMD part read as one "AMD" architecture, so a CDNA 3 plan would have read CDNA 4 rows as its own.
AMD_ARCHITECTURES: dict[str, str] = {"gfx90a": "CDNA2", "gfx942": "CDNA3", "gfx950": "CDNA4"}


def vendor_of(generation: str) -> str:
    """The ``GPUSpec.vendor`` behind a ``GPUSpec.generation`` label, the inverse of its rule:
    'nvidia' for NVIDIA's architectures and the parts judged apart within one ('Hopper (h20)'),
    'amd' for AMD's, else the vendor the label upper-cases ('INTEL' -> 'intel')."""
    base = generation.partition(" (")[0]
    if base in NVIDIA_ARCHITECTURES:
        return "nvidia"
    return "amd" if base in AMD_ARCHITECTURES.values() else base.lower()


class GPUSpec(BaseModel):
    """One accelerator (as software sees it: an MI250X GCD is one GPU), in SI units."""

    model_config = FROZEN
    id: str
    name: str
    vendor: str
    memory_bytes: int
    hbm_bandwidth_bytes_per_s: float
    peak_flops_per_s: dict[str, float]  # dense; a missing key means unsupported
    # (major, minor) of an NVIDIA GPU; None for other vendors. Kernel libraries pick their
    # kernels by it (planner/model/attention_kernels.py sdpa_prefers_cudnn).
    compute_capability: tuple[int, int] | None = None
    # An AMD GPU's LLVM target ('gfx942'); None for other vendors (AMD_ARCHITECTURES).
    llvm_target: str | None = None
    # The product name the vendor's driver reports for one device (hardware.GPU_FIELDS
    # "device_name"); None: not known from a source.
    device_name: str | None = None
    # What torch.cuda.get_device_name reports where it differs from device_name (AMD: HIP's
    # marketing name, hardware.GPU_FIELDS "torch_device_name"); None: the same, or not known.
    torch_device_name: str | None = None
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
        capability, AMD's by LLVM target, other vendors' by vendor."""
        if self.compute_capability is None:
            return AMD_ARCHITECTURES.get(self.llvm_target or "", self.vendor.upper())
        major = ARCHITECTURES.get((self.compute_capability[0], -1), UNNAMED_NVIDIA_ARCHITECTURE)
        return ARCHITECTURES.get(self.compute_capability, major)

    def reports(self, device: str) -> bool:
        """Whether a device reporting ``device`` (NVML's or torch's name) is this entry by its sourced
        names: ``device_name`` or, where the vendor's runtime says otherwise, ``torch_device_name``."""
        return device in {self.device_name, self.torch_device_name} - {None}

    @property
    def price_estimated(self) -> bool:
        """The price is an estimate, with no listed offer behind it (an export part priced as its
        source die): of two plans alike in time and cost, the search takes the one whose price is
        sourced (trial s28c: an exact H800 / H100 tie went to the H800)."""
        return self.price_basis.estimated

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

    model_config = FROZEN
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

    model_config = FROZEN
    id: str
    name: str
    bandwidth_bytes_per_s_per_gpu: float  # per direction
    sources: dict[str, str]
    # MEASURED bus bandwidth of one NCCL ring whose ranks fill their nodes, where the fabric's
    # collectives reach less than its NICs together (Omni-Path: a ring leaves each node through
    # one NIC); None: the line rate's share (planner/model/comm.py group_link).
    ring_bus_bandwidth_bytes_per_s: float | None = None
    # MEASURED all-reduce bus bandwidth by message size (nccl-tests), as (message bytes, bytes/s)
    # pairs in ascending size, over ``allreduce_busbw_nodes`` nodes; None: not measured
    # (planner/model/comm.py ``curve_bus_bandwidth``).
    allreduce_busbw_curve: tuple[tuple[float, float], ...] | None = None
    allreduce_busbw_nodes: int | None = None

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
    model_config = FROZEN
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
