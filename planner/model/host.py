"""The host side of optimizer offload: host memory per node and the CPU AdamW step (issue 28).

With offload (``TrainingConfig.offload``; FSDP2's CPUOffloadPolicy, DeepSpeed's ZeRO-Offload) a
rank's fp32 master parameters, gradients and AdamW moments live in host memory and the host
runs the optimizer step. All the ranks of a node share its host: their states must fit in its
memory (``host_fits``), and their optimizer steps share its DRAM bandwidth, which bounds the
step (``host_adam_seconds``). Where gradients are reduced every micro-batch the stacks also move
each micro-batch's gradients to the host and accumulate them there (``offload_accum_s``).
docs/model.md ("Host memory and time of offload").
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.fix_codes import FixCode
from planner.model.accum_sync import reductions_per_step
from planner.model.candidates import SHARD_FSDP, SHARD_ZERO1, SHARD_ZERO2, Candidates
from planner.model.memory import fits, offload_keeps_grads, state_bytes
from planner.model.saved_bytes import grad_element_bytes
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stage_params import busiest_stage
from planner.model.zero_collectives import zero12_overlap_comm
from planner.plan import FixHint
from planner.units import FP32_BYTES, GIB

__all__ = [
    "host_adam_params_per_s",
    "host_adam_seconds",
    "host_capacity_bytes",
    "host_fits",
    "host_memory_bandwidth",
    "host_memory_gib",
    "host_memory_words",
    "host_need_bytes",
    "offload_accum_s",
    "ranks_per_node",
    "row_fits",
]


def ranks_per_node(c: Candidates) -> np.ndarray:
    """The ranks that share one host: a whole node, or every GPU of a job smaller than one."""
    return np.minimum(c.num_gpus, c.gpus_per_node)


def host_need_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Host memory the offloaded states of one node's ranks take (0 without offload): per rank
    the fp32 parameters, gradients and moments ``state_bytes`` would keep on the GPU, on the
    busiest pipeline stage."""
    if not c.offload.any():  # the search without --allow-offload: nothing to score
        return np.zeros(len(c))
    on_device = replace(c, offload=np.zeros(len(c), dtype=bool))
    # The CPU optimizer keeps fp32 masters whatever the GPU would (review s40: 16-bit remainders
    # shrank the host's copy).
    # (and its 16-bit ZeRO-3 shard stays on the GPU: ``lp_param_shard_bytes``)
    host = s.but(master_param_bytes=FP32_BYTES, lp_param_shard_bytes=0.0)
    params, grads, moments = state_bytes(busiest_stage(model, c), on_device, host)
    # where unsharded gradients stay on the GPU (``s.offload_unsharded_grads`` off), the host holds
    # each rank's share of them for its optimizer step only (review s31: they were counted twice)
    grads = np.where(offload_keeps_grads(c.sharding, s), grads / np.maximum(c.shard_group, 1), grads)
    # The host's copy is fp32 whatever the GPU's gradient dtype: the CPU optimizer steps on fp32
    # partitions (DeepSpeed's ZeRO-Offload: its fp32 partition on the host, stage_1_and_2.py).
    grads = grads * FP32_BYTES / grad_element_bytes(c, s)
    return (params + grads + moments) * ranks_per_node(c) * c.offload.astype(bool)


def host_capacity_bytes(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """What the fit rule lets the offloaded states take of a node's host memory: the catalog's
    host memory (else ``s.host_memory_bytes_per_node``) x ``s.host_memory_usable_fraction``."""
    host = np.where(np.isfinite(c.host_memory_bytes), c.host_memory_bytes, s.host_memory_bytes_per_node)
    return host * s.host_memory_usable_fraction


def host_fits(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """The host fit rule: a node's offloaded states <= its host memory x the usable fraction
    (always true without offload)."""
    return host_need_bytes(model, c, s) <= host_capacity_bytes(c, s)


def row_fits(model: ModelSpec, c: Candidates, device_total: np.ndarray, s: ModelingSettings) -> np.ndarray:
    """A row's fit rule, as the estimate judges it: the device's reserved peak (``device_total``,
    planner/model/memory.py) within its memory less the headroom, and the host's offloaded states
    within the node's (``host_fits``)."""
    return fits(device_total, c.memory_bytes, s.memory_headroom) & host_fits(model, c, s)


def host_memory_bandwidth(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """A node's host DRAM bandwidth, bytes/s: the catalog's (sockets x channels x transfer rate x
    8 bytes; GPUSpec.host_memory_bandwidth_bytes_per_s_per_node), else
    ``s.host_memory_bandwidth_bytes_per_s_per_node``."""
    stated = np.isfinite(c.host_memory_bandwidth)
    return np.where(stated, c.host_memory_bandwidth, s.host_memory_bandwidth_bytes_per_s_per_node)


def host_adam_params_per_s(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Parameters a node's host updates per second: the step is DRAM-bandwidth bound, so its
    bandwidth x the share the implementation reaches / the bytes it moves per parameter
    (``s.host_adam_bandwidth_fraction``, ``s.host_adam_bytes_per_param``: torch's AdamW or
    DeepSpeed's CPU-Adam, calibrated on ZeRO-Offload's DGX-2 timings, settings.py)."""
    return host_memory_bandwidth(c, s) * s.host_adam_bandwidth_fraction / s.host_adam_bytes_per_param


def host_adam_seconds(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """The host's AdamW step per training step (0 without offload): the parameters the node's
    ranks update (each its optimizer shard of the busiest stage) at ``host_adam_params_per_s``,
    the node's ranks sharing its memory bandwidth."""
    if not c.offload.any():
        return np.zeros(len(c))
    stage = busiest_stage(model, c)
    shard = np.where(c.sharding >= SHARD_ZERO1, np.maximum(c.shard_group, 1), 1)
    params = stage.total / c.tp / shard * ranks_per_node(c)
    return np.where(c.offload.astype(bool), params / host_adam_params_per_s(c, s), 0.0)


def offload_accum_s(model: ModelSpec, c: Candidates, s: ModelingSettings, backward_s: np.ndarray) -> np.ndarray:
    """Seconds per step that gradient accumulation under offload adds to the GPU's time (0 without
    offload, with one micro-batch, and where gradients are reduced once a step:
    ``reductions_per_step``). Each micro-batch after the first (the first too where
    ``from_first_microbatch``) moves the rank's gradient shard over the host link and, where the
    stack adds on the CPU, adds it there at ``host_adam_params_per_s``'s share of the DRAM
    bandwidth, the node's ranks adding at once (settings_job.py ``AccumOffload``: each stack's
    reading). A blocking copy and its add are exposed whole (FSDP2: the thread that drives the
    backward waits); a side-stream copy only where it outlasts the micro-batch's backward it runs
    under (``backward_s``), the last buckets' tail after that backward not counted."""
    if not c.offload.any():
        return np.zeros(len(c))
    full = c.sharding == SHARD_FSDP
    fsdp, zero2 = s.offload_accum_fsdp, s.offload_accum_zero2
    micro_batches = reductions_per_step(c, s)
    first = np.where(full, fsdp.from_first_microbatch, zero2.from_first_microbatch)
    copies = np.where(micro_batches > 1, micro_batches - 1.0 + first, 0.0) * c.offload.astype(bool)
    shard_params = busiest_stage(model, c).total / c.tp / np.maximum(c.shard_group, 1)
    link_bytes = np.where(full, fsdp.link_bytes_per_param, zero2.link_bytes_per_param)
    add_bytes = np.where(full, fsdp.host_add_bytes_per_param, zero2.host_add_bytes_per_param)
    link_s = shard_params * link_bytes / s.host_link_bandwidth
    host_rate = host_memory_bandwidth(c, s) * s.host_adam_bandwidth_fraction
    add_s = shard_params * ranks_per_node(c) * add_bytes / host_rate
    blocking = np.where(full, fsdp.blocking, zero2.blocking)
    if s.deepspeed_zero is not None:  # ZeRO-2 copies on the compute stream without overlap_comm
        blocking = blocking | ((c.sharding == SHARD_ZERO2) & ~zero12_overlap_comm(c, s.deepspeed_zero))
    exposed = np.where(blocking, link_s, np.maximum(link_s - backward_s, 0.0)) + add_s
    return copies * exposed


def host_memory_words(
    model: ModelSpec, c: Candidates, s: ModelingSettings, row: int = 0
) -> tuple[str, tuple[FixHint, ...]]:
    """The reason and fix of a configuration whose offloaded states overflow the host."""
    need = float(host_need_bytes(model, c, s)[row]) / GIB
    usable = float(host_capacity_bytes(c, s)[row]) / GIB
    reason = (
        f"host memory: the offloaded states of a node's {int(ranks_per_node(c)[row])} ranks take {need:,.0f} GiB, "
        f"its host allows {usable:,.0f} GiB ({usable / s.host_memory_usable_fraction:,.0f} GiB x "
        f"{s.host_memory_usable_fraction:.0%})"
    )
    return reason, (FixHint(code=FixCode.HOST_OFFLOAD),)


def host_memory_gib(model: ModelSpec, c: Candidates, s: ModelingSettings, row: int = 0) -> dict[str, float]:
    """``MemoryEstimate``'s host fields of one row: what a node's offloaded states take and what
    the fit rule allows (none without offload)."""
    if not c.offload[row]:
        return {}
    return {
        "host_gib_per_node": float(host_need_bytes(model, c, s)[row]) / GIB,
        "host_allowed_gib": float(host_capacity_bytes(c, s)[row]) / GIB,
    }
