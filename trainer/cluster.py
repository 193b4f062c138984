"""What the job's cluster scripts pin besides the plan's counts (trainer/job_scripts.py): the GPU
resource and product label of the GPU's vendor on Kubernetes, whether a plan fills its nodes (Slurm's
``--exclusive``), and Slurm's time-limit syntax. Trial s49: slurm.sbatch and k8s.yaml asked for
"8 GPUs" of any kind and any network, so a mixed cluster could start the job on smaller GPUs, which
the probe found only after the queue wait."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.plan import Plan


@dataclass(frozen=True)
class K8sGPUVendor:
    """How one vendor's Kubernetes components expose its GPUs: the device plugin's resource a
    container requests, and the node label its labeller sets to the GPU's product name (the
    catalog's ``device_name``, the name the vendor's driver reports, rewritten as that labeller does)."""

    vendor_words: str  # the vendor as the manifest's notes name it
    resource: str  # the extended resource a container asks for (its count: GPUs per pod)
    product_label: str  # the node label naming the product
    labeller: str  # what sets that label, for the manifest's notes
    space: str  # what a space of the device name becomes in the label value
    dropped: str = ""  # characters of the device name the labeller leaves out
    collectives: str = "NCCL"  # the collective library, for the notes (RCCL is NCCL's port: same NCCL_* settings)

    def product(self, device_name: str) -> str:
        """The label value a node with this device carries."""
        return device_name.translate({ord(ch): None for ch in self.dropped}).replace(" ", self.space)


# NVIDIA's device plugin exposes nvidia.com/gpu; its GPU feature discovery (the GPU Operator installs
# it) labels a node nvidia.com/gpu.product with NVML's device name, spaces made '-'
# (github.com/NVIDIA/k8s-device-plugin internal/lm/resource.go, productLabel: "NVIDIA-H100-80GB-HBM3").
NVIDIA_K8S = K8sGPUVendor(
    vendor_words="NVIDIA",
    resource="nvidia.com/gpu",
    product_label="nvidia.com/gpu.product",
    labeller="NVIDIA GPU feature discovery, which the GPU Operator installs",
    space="-",
)
# AMD's GPU device plugin exposes amd.com/gpu (its default 'single' resource naming); its node
# labeller (its -product-name flag; the AMD GPU Operator deploys both) sets amd.com/gpu.product-name to
# the amdgpu driver's sysfs product_name, spaces made '_' and parentheses dropped, where a node holds
# one product (github.com/ROCm/k8s-device-plugin cmd/k8s-node-labeller/main.go and
# docs/user-guide/installation.md: an MI300X node, amd.com/gpu.product-name=AMD_Instinct_MI300X_OAM).
AMD_K8S = K8sGPUVendor(
    vendor_words="AMD",
    resource="amd.com/gpu",
    product_label="amd.com/gpu.product-name",
    labeller="the AMD GPU node labeller, which the AMD GPU Operator installs",
    space="_",
    dropped="()",
    collectives="RCCL",
)
K8S_VENDORS = {"nvidia": NVIDIA_K8S, "amd": AMD_K8S}  # by the catalog's GPUSpec.vendor


@dataclass(frozen=True)
class K8sGPU:
    """A plan's GPU as Kubernetes names it: its vendor's components, and the product label value
    (None where the catalog holds no device name: the manifest then selects no product)."""

    vendor: K8sGPUVendor
    product: str | None


def k8s_gpu(gpu_id: str) -> K8sGPU:
    """The catalog GPU's Kubernetes names. A GPU the catalog does not hold (a hand-edited plan), or
    of a vendor without an entry in K8S_VENDORS, keeps NVIDIA's resource and no product."""
    from planner.catalog.hardware import load_catalog

    try:
        gpu = load_catalog().gpu(gpu_id)
    except ValueError:
        return K8sGPU(NVIDIA_K8S, None)
    vendor = K8S_VENDORS.get(gpu.vendor, NVIDIA_K8S)
    return K8sGPU(vendor, None if gpu.device_name is None else vendor.product(gpu.device_name))


def node_gpus(plan: Plan) -> int | None:
    """GPUs in one node of the plan's GPU (its catalog node template); None for a GPU the catalog
    does not hold (a hand-edited plan: the scripts then claim no whole nodes)."""
    from planner.catalog.hardware import load_catalog

    catalog = load_catalog()
    try:  # a hand-edited plan's unknown GPU: trainer.worker refuses it with its own words
        return catalog.node(catalog.gpu(plan.gpu).default_node).gpus_per_node
    except ValueError:
        return None


def network_id(plan: Plan) -> str | None:
    """The catalog network the plan's multi-node step was estimated on (its own, else its GPU's default)."""
    from planner.catalog.hardware import load_catalog

    try:
        return plan.network or load_catalog().gpu(plan.gpu).default_network
    except ValueError:
        return None


def fills_nodes(plan: Plan) -> bool:
    """Whether the plan uses every GPU of its nodes (Slurm --exclusive: trial s49, a 1-GPU plan
    claimed a whole 8-GPU node)."""
    return node_gpus(plan) == plan.gpus_per_node


def slurm_time_s(text: str) -> int | None:
    """Seconds of a Slurm time limit (sbatch's formats: minutes, minutes:seconds,
    hours:minutes:seconds, days-hours[:minutes[:seconds]]); None for UNLIMITED/INFINITE."""
    if text in ("UNLIMITED", "INFINITE"):
        return None
    days, _, rest = text.partition("-") if "-" in text else ("0", "", text)
    parts = [int(p) for p in rest.split(":")]
    if "-" in text:  # days-hours[:minutes[:seconds]]
        hours, minutes, seconds = [*parts, 0, 0][:3]
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    else:  # minutes[:seconds]
        hours, (minutes, seconds) = 0, [*parts, 0][:2]
    return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds


def format_slurm_time(seconds: float) -> str:
    """A time limit as sbatch reads it, days-hours:minutes:seconds, rounded up to whole minutes."""
    minutes = math.ceil(seconds / 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:00"


def rdma_request(resource: str) -> tuple[str, int]:
    """``NAME[=COUNT]`` (emit --k8s-rdma-resource) as the resource's name and count (default 1)."""
    name, _, count = resource.partition("=")
    return name, int(count) if count else 1
