"""What a run measures of itself: step times, the memory peaks (reduced over ranks for the probe
and the report), MFU against the plan GPU's dense peak, and rank 0's GPU utilisation and power.

The session (trainer/session.py) times and trains; this holds the figures its metrics, its
probe (validation.json) and its report (report.json) are made of, so each is computed once.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from planner.plan import Plan
from planner.units import GIB
from trainer.metrics import GpuSampler, model_flops_per_token, peak_flops_per_s
from trainer.probe import MemoryReading


class RunMeter:
    """Step times and memory peaks of this launch (CUDA only for memory; None elsewhere)."""

    def __init__(self, plan: Plan, device: torch.device, is_rank0: bool):
        self.device = device
        self.step_times: list[float] = []
        self.max_peak_gib = 0.0
        self.max_reserved_gib = 0.0
        self.gpu = GpuSampler(device) if is_rank0 else None
        self.flops_per_token = model_flops_per_token(plan)
        self.peak_flops = peak_flops_per_s(plan.gpu, plan.training.precision.value) if device.type == "cuda" else None

    def mfu(self, tokens_per_s: float | None) -> float | None:
        """Model FLOPs utilisation of the whole job at ``tokens_per_s`` (None without a peak)."""
        if not self.peak_flops or not tokens_per_s:
            return None
        return self.flops_per_token * tokens_per_s / (dist.get_world_size() * self.peak_flops)

    def sample_gpu(self) -> tuple[float | None, float | None]:
        """(utilisation %, power W) of rank 0's GPU; (None, None) elsewhere."""
        return self.gpu.sample() if self.gpu is not None else (None, None)

    def reset_peaks(self) -> None:
        """Measure from here on (the probe's steps, not model building or checkpoint loading)."""
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)

    def track_memory(self) -> float | None:
        """This step's allocated peak (GiB), folded into the launch's peaks; None off CUDA."""
        if self.device.type != "cuda":
            return None
        peak = torch.cuda.max_memory_allocated(self.device) / GIB
        self.max_peak_gib = max(self.max_peak_gib, peak)
        self.max_reserved_gib = max(self.max_reserved_gib, torch.cuda.max_memory_reserved(self.device) / GIB)
        torch.cuda.reset_peak_memory_stats(self.device)
        return peak

    def reading(self) -> MemoryReading:
        """The largest peaks over all ranks (a collective: every rank calls it) and the capacity."""
        if self.device.type != "cuda":
            return MemoryReading(None, None, None)
        values = torch.tensor([self.max_peak_gib, self.max_reserved_gib], device=self.device)
        dist.all_reduce(values, op=dist.ReduceOp.MAX)
        capacity = torch.cuda.get_device_properties(self.device).total_memory / GIB
        return MemoryReading(values[0].item(), values[1].item(), capacity)

    def local_reading(self) -> MemoryReading:
        """This rank's own peaks, no collective: inside a signal handler each rank is at its own
        point of the step, and an all-reduce there pairs with another rank's step traffic."""
        if self.device.type != "cuda":
            return MemoryReading(None, None, None)
        capacity = torch.cuda.get_device_properties(self.device).total_memory / GIB
        return MemoryReading(self.max_peak_gib, self.max_reserved_gib, capacity)

    def oom_reading(self) -> MemoryReading:
        """What this rank reserved when it ran out of memory (no collective: others may be stuck)."""
        if self.device.type != "cuda":
            return MemoryReading(None, None, None)
        return MemoryReading(
            None,
            torch.cuda.max_memory_reserved(self.device) / GIB,
            torch.cuda.get_device_properties(self.device).total_memory / GIB,
        )
