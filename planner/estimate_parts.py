"""The records an ``Estimate`` (planner/plan.py) is made of: memory and step time term by term,
throughput, and the run's goodput. Frozen pydantic models, read back from plan files as written.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel

from planner.frozen import FROZEN
from planner.model.goodput import step_factor
from planner.model.memory import usable_capacity


class PeakMoment(StrEnum):
    """When in the step the allocated peak falls (planner/model/memory.py ``StageTerms._peaks``;
    trial s41: a breakdown without activations did not say it was the end of the backward)."""

    BACKWARD = "backward"  # the start of the last micro-batch's backward: activations and the loss held
    END_OF_BACKWARD = "end_of_backward"  # every gradient materialised, the activations freed


class MemoryTerms(BaseModel):
    """GiB per GPU on the most loaded pipeline stage, term by term (they add up to the allocated
    peak). Iterating yields ``(term, GiB)`` in this order; a term absent from a file reads as 0."""

    model_config = FROZEN
    params: float = 0.0  # sharded master weights (fp32)
    grads: float = 0.0  # gradients (fp32), at the peak
    optimizer: float = 0.0  # AdamW moments
    unsharded_params: float = 0.0  # compute-dtype copies: FSDP all-gather buffers / autocast cache
    activations: float = 0.0  # saved for backward, all in-flight micro-batches
    # the larger of the loss's backward (logits, fp32 log-softmax, grads) and a recomputed block's
    # backward working set (where unfused attention's scores live): TERM_WORDS
    logits_loss: float = 0.0
    misc: float = 0.0  # workspaces and small buffers
    measured_correction: float = 0.0  # a measured job's correction of the peak (calibration file)

    @property
    def states(self) -> float:
        """Parameters, gradients and optimizer states: what sharding splits."""
        return self.params + self.grads + self.optimizer

    @property
    def total(self) -> float:
        return sum(value for _, value in self)


# A term's words where its field name says less than it holds (trial s24: eager attention's scores,
# a recomputed block's backward working set, were read as "logits loss"); else the name, spaced.
TERM_WORDS = {
    "logits_loss": "loss / backward transient",
    "offload_accum": "offload: accumulated gradients to the host",
}


def term_words(name: str) -> str:
    """'loss / backward transient', 'dp comm': a MemoryTerms or TimeTerms field in words."""
    return TERM_WORDS.get(name, name.replace("_", " "))


class TimeTerms(BaseModel):
    """Seconds per optimizer step, term by term (they add up to the step time). Iterating
    yields ``(term, seconds)`` in this order; a term absent from a file reads as 0."""

    model_config = FROZEN
    matmul: float = 0.0  # block and LM-head GEMMs, recompute included
    attention: float = 0.0  # fused attention kernels
    memory_bound: float = 0.0  # norms, activations, rotary, residuals, loss
    optimizer: float = 0.0  # AdamW + clipping (+ offload's once-a-step host link and host AdamW)
    shard_copies: float = 0.0  # FSDP / ZeRO cast and copy kernels around each collective
    # offload under gradient accumulation: each later micro-batch's gradients to the host
    offload_accum: float = 0.0
    host_stall: float = 0.0  # host dispatch time the GPU waits for
    dp_comm: float = 0.0  # exposed FSDP/ZeRO/DDP collectives
    tp_comm: float = 0.0  # exposed tensor-parallel collectives
    pp_comm: float = 0.0  # exposed pipeline send/recv
    cp_comm: float = 0.0  # exposed context-parallel KV exchange
    ep_comm: float = 0.0  # exposed MoE dispatch/combine all-to-alls
    bubble: float = 0.0  # pipeline fill and drain
    measured_correction: float = 0.0  # a measured job's correction of the compute (calibration file)
    efficiency_ceiling: float = 0.0  # held at the best measured efficiency of its regime (planner/accuracy)

    @property
    def exposed_comm(self) -> float:
        """Communication the step waits for, over all parallel axes."""
        return self.dp_comm + self.tp_comm + self.pp_comm + self.cp_comm + self.ep_comm

    @property
    def total(self) -> float:
        return sum(value for _, value in self)


class MemoryEstimate(BaseModel):
    model_config = FROZEN
    peak_gib: float  # predicted max_memory_allocated
    reserved_gib: float  # predicted max_memory_reserved (caching allocator)
    capacity_gib: float  # usable device memory
    headroom_fraction: float  # the fit rule: reserved <= capacity * (1 - headroom)
    breakdown_gib: MemoryTerms
    # With CPU offload: the host memory one node's offloaded states take, and what the host fit
    # rule allows of it (planner/model/host.py); None without offload.
    host_gib_per_node: float | None = None
    host_allowed_gib: float | None = None
    # The stack's loss as counted (trial s36: an HF Trainer user could not see it): the tokens the LM
    # head + cross-entropy runs over at once (0: the whole micro-batch's logits) and the bytes per
    # logit its backward holds (planner/model/memory.py ``logits_loss_bytes``); None: plan files before.
    loss_chunk_tokens: int | None = None
    loss_bytes_per_logit: float | None = None
    # Whether ``selective`` was counted as torchtitan's per-op policy (planner/model/op_checkpoint.py):
    # False for every other stack and mode, and where its rule is not written (MoE, MLA).
    selective_per_op: bool = False
    # When the allocated peak falls; the breakdown is that moment's (None: plan files before).
    peak_moment: PeakMoment | None = None

    @property
    def usable_gib(self) -> float:
        """What the fit rule lets the reserved peak (plus the CUDA context) reach."""
        return float(usable_capacity(self.capacity_gib, self.headroom_fraction))


class TimeEstimate(BaseModel):
    model_config = FROZEN
    step_s: float
    breakdown_s: TimeTerms


class ThroughputEstimate(BaseModel):
    model_config = FROZEN
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float  # model FLOPs (6N + attention) / dense peak
    hfu: float  # hardware FLOPs incl. recompute / dense peak
    model_flops_per_token: float
    hardware_flops_per_token: float
    # hardware_flops_per_token beyond the model's, by term (planner/model/flops.py HardwareFlops);
    # 0 in a plan file written before they were kept.
    recompute_flops_per_token: float = 0.0
    masked_window_flops_per_token: float = 0.0
    unrouted_expert_flops_per_token: float = 0.0
    head_recompute_flops_per_token: float = 0.0


class GoodputEstimate(BaseModel):
    """Failures, checkpoints and restarts (planner/model/goodput.py). ``mttf_h`` and the
    interval are None when the failure rate is 0; ``expected_interruptions`` without a token
    budget."""

    model_config = FROZEN
    mttf_h: float | None  # mean time to failure of the whole job
    expected_interruptions: float | None = None  # over the time-to-train
    checkpoint_interval_min: float | None  # Young/Daly optimum, whole steps
    checkpoint_interval_steps: int | None = None
    # Young/Daly's own interval, and whether the run is shorter so it checkpoints once (explain:
    # trial s33, a 12.7 s interval cut to the run was called Young/Daly's 2.1 h)
    young_daly_min: float | None = None
    interval_cut_to_run: bool = False
    checkpoint_write_s: float = 0.0  # one save, sharded over all ranks
    restart_s: float = 0.0  # restart overhead + restore, per failure
    # The run's other losses (planner/model/goodput.py run_losses), as shares of the step time:
    straggler_fraction: float = 0.0  # the slowest rank
    evaluation_fraction: float = 0.0
    data_stall_fraction: float = 0.0
    planned_restarts: float | None = None  # expected over the time-to-train
    spot_preemptions: float | None = None  # a spot price's, over the time-to-train (among the interruptions)
    capacity_wait_s: float = 0.0  # each preemption's wait for capacity (ModelingSettings.spot_capacity_wait_s)
    startup_s: float = 0.0
    goodput_fraction: float  # useful time / wall time

    @property
    def step_factor(self) -> float:
        """Wall seconds per second of the model's steps before failures and restarts: the goodput
        model's rule (planner/model/goodput.py RunLosses.step_factor), for one row."""
        return float(step_factor(self.straggler_fraction, self.evaluation_fraction, self.data_stall_fraction))
