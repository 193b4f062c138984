"""``trainplan calibrate``: measure this machine's achievable rates for the catalog.

What it runs, each the fastest of timed repeats after warm-ups (noise only adds time, as
Python's ``timeit`` advises; a loaded CPU once made a median 500x slow): a square dense GEMM in the training
dtype (bf16 on CUDA, fp32 on CPU, where only the file format and the merge are of use), each flash
attention kernel the catalog has a field for (PyTorch SDPA's flash backend, FlashAttention-2,
into ``attention_*``; cuDNN's fused attention, where the build has it, into ``cudnn_attention_*``),
forward and backward, at the shape those fields are stated at (head dim 128, non-causal, a long
sequence; FLOPs counted as FlashAttention-2 does: forward 2 x 2 s^2 d per head, backward 2.5 x
forward), and a large device copy (bytes read + written). The result is a calibration file
(planner/catalog/calibration.py) that ``--calibration`` merges over the catalog. Collectives by
message size: trainer/calibrate_comm.py (``--collectives``).
"""

from __future__ import annotations

import datetime
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from planner.catalog.calibration import CPU_DEVICE_PREFIX
from planner.model.attention_kernels import sdpa_prefers_cudnn

# The catalog's attention fields and the SDPA backend each describes (docs/hardware.md).
ATTENTION_KERNELS = (
    ("attention", SDPBackend.FLASH_ATTENTION),
    ("cudnn_attention", SDPBackend.CUDNN_ATTENTION),
)


@dataclass(frozen=True)
class Sizes:
    """Problem sizes of one sweep; ``quick`` and the CPU use smaller ones."""

    gemm_n: int
    attention_seq: int
    attention_heads: int
    copy_bytes: int
    repeats: int
    warmups: int


def sizes_for(device: torch.device, quick: bool) -> Sizes:
    if device.type == "cpu":  # tiny: a CPU run checks the format, not the numbers
        return Sizes(gemm_n=128, attention_seq=128, attention_heads=2, copy_bytes=1 << 20, repeats=5, warmups=1)
    if quick:
        return Sizes(gemm_n=4096, attention_seq=4096, attention_heads=16, copy_bytes=1 << 30, repeats=5, warmups=2)
    return Sizes(gemm_n=8192, attention_seq=16384, attention_heads=16, copy_bytes=4 << 30, repeats=10, warmups=3)


def _seconds(device: torch.device, fn: Callable[[], object], sizes: Sizes) -> float:
    """Fastest wall time of ``fn`` over the repeats (synchronised on CUDA): the achievable rate."""

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(sizes.warmups):
        fn()
    sync()
    times = []
    for _ in range(sizes.repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return min(times)


def gemm_tflops(device: torch.device, dtype: torch.dtype, sizes: Sizes) -> float:
    n = sizes.gemm_n
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    return 2.0 * n**3 / _seconds(device, lambda: a @ b, sizes) / 1e12


def attention_tflops(
    device: torch.device, dtype: torch.dtype, sizes: Sizes, backend: SDPBackend = SDPBackend.FLASH_ATTENTION
) -> tuple[float, float]:
    """(forward, backward) TFLOP/s of non-causal SDPA at head dim 128 on ``backend`` (the shape
    the catalog's figures are stated at; the model applies the training shapes' share)."""
    shape = (1, sizes.attention_heads, sizes.attention_seq, 128)
    q, k, v = (torch.randn(shape, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
    forward_flops = 4.0 * sizes.attention_heads * sizes.attention_seq**2 * 128
    with sdpa_kernel(backend):
        fwd = _seconds(device, lambda: F.scaled_dot_product_attention(q, k, v), sizes)
        out = F.scaled_dot_product_attention(q, k, v)
    grad = torch.randn_like(out)

    def backward() -> None:  # the backward alone, on one kept graph: (forward + backward) - forward
        # subtracts two noisy timings and can come out near zero on a busy host
        torch.autograd.grad(out, (q, k, v), grad, retain_graph=True)

    bwd = _seconds(device, backward, sizes)
    return forward_flops / fwd / 1e12, 2.5 * forward_flops / bwd / 1e12


def runs_cudnn_attention(device: torch.device) -> bool:
    """Whether PyTorch's SDPA puts cuDNN first on this device, by the planner's one rule
    (planner/model/attention_kernels.py ``sdpa_prefers_cudnn``): the model reads cuDNN's figure
    only on such GPUs, so only they are measured for it."""
    return device.type == "cuda" and sdpa_prefers_cudnn(torch.cuda.get_device_capability(device))


def kernel_attention_fields(device: torch.device, dtype: torch.dtype, sizes: Sizes) -> dict[str, float]:
    """The attention fields of every kernel this build runs on ``device``; a kernel it lacks
    (cuDNN on a CPU, on a build without it, or on a GPU it does not support) is left out, and
    cuDNN on a GPU where SDPA does not prefer it (``runs_cudnn_attention``)."""
    fields = {}
    for name, backend in ATTENTION_KERNELS:
        if backend == SDPBackend.CUDNN_ATTENTION and not runs_cudnn_attention(device):
            continue
        try:
            fwd, bwd = attention_tflops(device, dtype, sizes, backend)
        except RuntimeError:  # "No available kernel": SDPA refuses the backend here
            continue
        fields[f"{name}_fwd_tflops_achieved"] = fwd
        fields[f"{name}_bwd_tflops_achieved"] = bwd
    return fields


def copy_tbps(device: torch.device, sizes: Sizes) -> float:
    src = torch.empty(sizes.copy_bytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    return 2.0 * sizes.copy_bytes / _seconds(device, lambda: dst.copy_(src), sizes) / 1e12


def machine_info(device: torch.device, driver: str | None) -> dict[str, str]:
    cpu = f"{CPU_DEVICE_PREFIX}{platform.processor() or 'host'})"
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu
    return {
        "host": platform.node() or "unknown",
        "device": name,
        "driver": driver or ("unknown" if device.type == "cuda" else "none (cpu)"),
        "date": datetime.date.today().isoformat(),
        "software": f"torch {torch.__version__}",
    }


def measure(device: torch.device, quick: bool, progress: Callable[[int, int, str], None]) -> dict[str, float]:
    """The achievable-rate fields of one GPU (file units), measured on ``device``."""
    sizes = sizes_for(device, quick)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    progress(0, 3, f"GEMM {sizes.gemm_n}^3 {str(dtype).removeprefix('torch.')}")
    gemm = gemm_tflops(device, dtype, sizes)
    progress(1, 3, f"SDPA flash kernels, {sizes.attention_heads} heads x {sizes.attention_seq} tokens x 128")
    attention = kernel_attention_fields(device, dtype, sizes)
    progress(2, 3, f"copy {sizes.copy_bytes / 2**20:,.0f} MiB")
    copy = copy_tbps(device, sizes)
    progress(3, 3, "done")
    return {"gemm_bf16_tflops_achieved": gemm, **attention, "hbm_copy_tbps_achieved": copy}
