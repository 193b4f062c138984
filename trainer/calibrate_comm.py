"""``trainplan calibrate --collectives N``: time all-reduce, all-gather and reduce-scatter over N
local devices at a few message sizes (torch.distributed: NCCL on CUDA, gloo on the CPU, where
only the format and the fit are of use) and fit the ring model of planner/model/comm.py.

Each size: warm-ups, then timed repeats between barriers; the median of each rank, the slowest
rank's counted (a collective ends when its last rank does). One process per device, started
here with torch.multiprocessing (spawn) and a file rendezvous in a temporary directory.
"""

from __future__ import annotations

import json
import signal
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from planner.model.comm import RING_PASSES, CollectiveSample
from trainer.collectives import all_gather_single, reduce_scatter_single

# Message sizes (bytes of the all-reduced tensor / gathered output / reduce-scattered input).
CUDA_BYTES = (1 << 16, 1 << 20, 1 << 24, 1 << 28)  # 64 KiB to 256 MiB: latency- to bandwidth-bound
CUDA_QUICK_BYTES = (1 << 16, 1 << 20, 1 << 24)
CPU_BYTES = (1 << 16, 1 << 20, 1 << 23)  # small: a CPU run checks the format and the fit
REPEATS, WARMUPS = 5, 2


def _elements(total_bytes: int, ranks: int) -> int:
    """float32 elements of the full tensor: ``total_bytes`` rounded to whole shards of ``ranks``."""
    return max(total_bytes // 4 // ranks, 1) * ranks


def _collective(op: str, total_bytes: int, ranks: int, device: torch.device):
    """The call timed for ``op`` (float32 tensors sized as planner/model/comm.py counts bytes)."""
    elements = _elements(total_bytes, ranks)
    full = torch.ones(elements, device=device)
    shard = torch.ones(elements // ranks, device=device)
    if op == "all_reduce":
        return lambda: dist.all_reduce(full)
    if op == "all_gather":
        return lambda: all_gather_single(full, shard)
    return lambda: reduce_scatter_single(shard, full)


def time_collectives(device: torch.device, sizes: tuple[int, ...]) -> list[CollectiveSample]:
    """Every op at every size, in the initialised default group (all ranks call it)."""
    ranks = dist.get_world_size()
    samples = []
    for op in RING_PASSES:
        for total_bytes in sizes:
            call = _collective(op, total_bytes, ranks, device)
            times = []
            for i in range(WARMUPS + REPEATS):
                dist.barrier()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                start = time.perf_counter()
                call()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                if i >= WARMUPS:
                    times.append(time.perf_counter() - start)
            slowest = torch.tensor([statistics.median(times)], dtype=torch.float64, device=device)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            samples.append(CollectiveSample(op, float(_elements(total_bytes, ranks) * 4), ranks, float(slowest.item())))
    return samples


def _worker(rank: int, ranks: int, device_type: str, sizes: tuple[int, ...], workdir: str) -> None:
    backend = "nccl" if device_type == "cuda" else "gloo"
    device = torch.device(device_type, rank) if device_type == "cuda" else torch.device("cpu")
    if device_type == "cuda":
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(1)
    init = f"file://{Path(workdir) / 'rendezvous'}"
    dist.init_process_group(backend, init_method=init, rank=rank, world_size=ranks, device_id=None)
    try:
        samples = time_collectives(device, sizes)
        if rank == 0:
            (Path(workdir) / "samples.json").write_text(json.dumps([asdict(x) for x in samples]))
    finally:
        dist.destroy_process_group()


def measure_collectives(device_type: str, ranks: int, quick: bool) -> list[CollectiveSample]:
    """Time the collectives over ``ranks`` local devices (processes on the CPU)."""
    if ranks < 2:
        raise ValueError("--collectives: needs at least 2 devices")
    if device_type == "cuda" and ranks > torch.cuda.device_count():
        raise ValueError(f"--collectives {ranks}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    sizes = CPU_BYTES if device_type == "cpu" else (CUDA_QUICK_BYTES if quick else CUDA_BYTES)
    with tempfile.TemporaryDirectory(prefix="trainplan-collectives-") as workdir:
        # The workers start with Ctrl-C ignored (an ignored signal stays so across exec, and Python
        # installs no KeyboardInterrupt handler then): only this process answers it, stopping them
        # (trial s38: each spawned worker printed its own KeyboardInterrupt traceback).
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            args = (ranks, device_type, sizes, workdir)
            context = mp.start_processes(_worker, args=args, nprocs=ranks, join=False, start_method="spawn")
        finally:
            signal.signal(signal.SIGINT, previous)
        try:
            while not context.join():
                pass
        except KeyboardInterrupt:
            for process in context.processes:
                process.kill()
                process.join()
            raise
        return [CollectiveSample(**x) for x in json.loads((Path(workdir) / "samples.json").read_text())]
