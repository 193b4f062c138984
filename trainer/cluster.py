"""What the job's cluster scripts pin besides the plan's counts (trainer/job_scripts.py): the GPU
product Kubernetes' GPU feature discovery labels nodes with, whether a plan fills its nodes (Slurm's
``--exclusive``), and Slurm's time-limit syntax. Trial s49: slurm.sbatch and k8s.yaml asked for
"8 GPUs" of any kind and any network, so a mixed cluster could start the job on smaller GPUs, which
the probe found only after the queue wait."""

from __future__ import annotations

import math

from planner.plan import Plan

# The device names NVML reports (nvidia-smi's "Name") of the catalog's NVIDIA GPUs, as the
# catalog's own matcher reads them (planner/catalog/detect.py; tests check each one matches its
# entry). NVIDIA's GPU feature discovery labels a node nvidia.com/gpu.product with that name, its
# spaces made dashes ("NVIDIA-H100-80GB-HBM3"; the GPU Operator installs it). GPUs not listed
# (AMD's, or a name not seen on a device) get no selector, and the manifest says so.
NVML_NAMES = {
    "a10": "NVIDIA A10",
    "a30": "NVIDIA A30",
    "a100-40gb-sxm": "NVIDIA A100-SXM4-40GB",
    "a100-80gb-sxm": "NVIDIA A100-SXM4-80GB",
    "a100-80gb-pcie": "NVIDIA A100 80GB PCIe",
    "a800-80gb-sxm": "NVIDIA A800-SXM4-80GB",
    "b200": "NVIDIA B200",
    "b300": "NVIDIA B300 SXM6 AC",
    "gb200": "NVIDIA GB200",
    "gb300": "NVIDIA GB300",
    "h20": "NVIDIA H20",
    "h100-sxm": "NVIDIA H100 80GB HBM3",
    "h100-pcie": "NVIDIA H100 PCIe",
    "h100-nvl": "NVIDIA H100 NVL",
    "h200-sxm": "NVIDIA H200",
    "h200-nvl": "NVIDIA H200 NVL",
    "h800": "NVIDIA H800 80GB HBM3",
    "l4": "NVIDIA L4",
    "l20": "NVIDIA L20",
    "l40": "NVIDIA L40",
    "l40s": "NVIDIA L40S",
    "rtx-4090": "NVIDIA GeForce RTX 4090",
}
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


def gpu_product(gpu_id: str) -> str | None:
    """The nvidia.com/gpu.product label value of a catalog GPU; None where its device name is not known."""
    name = NVML_NAMES.get(gpu_id)
    return None if name is None else name.replace(" ", "-")


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
