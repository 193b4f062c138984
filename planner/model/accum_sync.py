"""How often a step gathers parameters and reduces gradients under gradient accumulation, and the
unsharded gradients a stack that defers the reduction holds meanwhile (``ModelingSettings.
accum_sync``: each stack's reading is in planner/model/settings_job.py, ``AccumSync``)."""

from __future__ import annotations

import numpy as np

from planner.model.candidates import SHARD_FSDP, SHARD_ZERO2, Candidates
from planner.model.saved_bytes import compute_dtype_bytes
from planner.model.settings import ModelingSettings
from planner.model.stage_params import StageParams


def reductions_per_step(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """How often a step reduces its gradients: every micro-batch under fsdp and zero2 (FSDP2's
    reduce-scatter after each backward; DeepSpeed's ZeRO-2/3 hooks), once under zero1 / none (they
    accumulate whole gradients), with a pipeline, whose schedule reduces once whatever the sharding
    (trainer/parallel.py ``set_micro_batch_sync`` and its module docstring), and where the stack
    skips the reduction on inner micro-batches (``s.accum_sync``: HF Trainer's no_sync)."""
    every = (c.sharding >= SHARD_ZERO2) & (c.pp == 1) & s.accum_sync.reduce_every_microbatch
    return np.where(every, c.grad_accum, 1.0)


def ddp_reductions_per_step(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """How often a DDP step (sharding none) all-reduces its whole gradient: once, or every micro-batch
    where the stack does not skip the inner ones (``s.accum_sync.ddp_reduce_every_microbatch``:
    torchtitan), without a pipeline, whose schedule reduces once."""
    every = (c.pp == 1) & s.accum_sync.ddp_reduce_every_microbatch
    return np.where(every, c.grad_accum, 1.0)


def gathers_per_step(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Parameter all-gather passes per step: fsdp gathers for each forward and each backward;
    zero1 / zero2 gather once and keep them through the accumulation window, or zero2 once per
    micro-batch where the stack reshards after every backward (``s.accum_sync``: FSDP2 under
    accelerate). Pipelines and no_sync gather as the sharding does."""
    zero2 = c.grad_accum if s.accum_sync.zero2_gather_every_microbatch else 1.0
    return np.where(c.sharding == SHARD_FSDP, 2.0 * c.grad_accum, np.where(c.sharding == SHARD_ZERO2, zero2, 1.0))


def defers_reduction(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Rows whose inner micro-batches keep whole gradients where the layout would shard them (fsdp,
    zero2, no pipeline, several micro-batches) because the stack skips their reduction."""
    sharded = (c.sharding >= SHARD_ZERO2) & (c.pp == 1) & (c.grad_accum > 1)
    return sharded & (not s.accum_sync.reduce_every_microbatch)


def deferred_grad_bytes(stage: StageParams, c: Candidates) -> np.ndarray:
    """The whole gradients such a step holds on each GPU from its first backward to its last
    micro-batch's reduction: every parameter the rank computes (its tp share, its ep rank's
    experts), in the compute dtype (the reduce dtype accelerate sets equal to it), on the GPU even
    under offload (FSDP1 offloads only after the sync). One copy: later micro-batches add into it."""
    return stage.held / c.tp * compute_dtype_bytes(c)
