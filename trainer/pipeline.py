"""Pipeline parallelism with torch.distributed.pipelining.

The model's blocks are cut into ``pp x vpp`` stages of consecutive blocks, uneven where the
layers do not divide (``planner.layout.stage_layer_counts``, the rule the planner models: the
embedding and the head each weigh one block, so the first and last stages may hold one block
fewer); stage 0 also holds the embedding, the last stage the final norm and LM head. Rank
``r`` of the pp axis runs stages ``r, r + pp, r + 2 pp, ...`` (``vpp`` of them: one unless the
plan interleaves). One training step feeds the ``grad_accum x micro_batch`` batch to the
schedule, which splits it into ``grad_accum`` pipeline micro-batches: GPipe runs all forwards
then all backwards; 1F1B interleaves them, at most ``pp`` micro-batches' activations alive at
once; with ``vpp > 1`` the interleaved 1F1B schedule (Narayanan et al. 2021, sec. 2.2) cuts the
bubble by ``vpp`` for ``vpp`` times the stage-boundary traffic.

Each stage is its own module (FSDP root, compile and checkpoint wrappers apply per stage);
:class:`StageChunks` gathers a rank's stages under the plain model's parameter names for the
optimizer and checkpoints, so checkpoints stay layout-independent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B
from torch.distributed.tensor import DTensor

from planner.fmt import counted
from planner.layout import Layout, PipelineSchedule, Precision, stage_layer_ranges
from planner.model.spec import ModelSpec
from trainer.model import build_native_model

if TYPE_CHECKING:
    from torch.distributed.pipelining.stage import _PipelineStageBase

SCHEDULES = {PipelineSchedule.GPIPE: ScheduleGPipe, PipelineSchedule.ONE_F_ONE_B: Schedule1F1B}


def local_stage_ids(pp_rank: int, pp_size: int, vpp: int) -> list[int]:
    """The global stages one pp rank runs (looped placement, as Megatron and torch assume)."""
    return [pp_rank + chunk * pp_size for chunk in range(vpp)]


def stage_layer_ids(num_layers: int, stage: int, num_stages: int) -> range:
    """The global block indices of one stage (uneven stages, planner/layout.py)."""
    return stage_layer_ranges(num_layers, num_stages)[stage]


def build_native_stage(spec: ModelSpec, seq_len: int, stage: int, num_stages: int) -> nn.Module:
    """One stage of the native model on the meta device: its own blocks only (building a 405B's
    126 blocks per stage to drop most of them cost ~0.3 s of CPU each, ``pp x vpp`` times), the
    embedding on the first stage, the final norm and head on the last."""
    model = build_native_model(spec, seq_len, stage_layer_ids(spec.num_layers, stage, num_stages))
    # setattr: Module's typed __setattr__ takes a Tensor or Module, not the None that drops a part
    dropped: list[str] = []
    if stage != 0:
        dropped += ["tok_embeddings", "pos_embeddings"]
    if stage != num_stages - 1:
        dropped += ["norm", "output"]
    for part in dropped:
        setattr(model, part, None)
    return model


class StageChunks(nn.Module):
    """A rank's interleaved stages seen as one model: the union of their blocks, embedding,
    norm and head under the plain model's names (the modules are shared, not copied).
    Never called: the pipeline schedule runs each stage."""

    def __init__(self, chunks: list[nn.Module]):
        super().__init__()
        self.args = chunks[0].args
        self.layers = nn.ModuleDict()
        for chunk in chunks:
            # torch's stub takes a Mapping only, though update() accepts a ModuleDict (its own check)
            self.layers.update(cast(nn.ModuleDict, chunk.layers))  # type: ignore[arg-type]
        for part in ("tok_embeddings", "pos_embeddings", "norm", "output"):
            setattr(self, part, next((getattr(c, part) for c in chunks if getattr(c, part) is not None), None))
        self.context_parallel = chunks[0].context_parallel

    def forward(self, *args):
        raise RuntimeError("StageChunks is not callable: the pipeline schedule runs its stages")


# A pipelined tied embedding: the last stage's LM head is its own copy of the first stage's
# embedding weight (same initial values, trainer.train's init aliases), so it is one parameter
# name per rank and not a shared tensor.
TIED_HEAD_ALIASES = {"output.weight": "tok_embeddings.weight"}


class TiedEmbeddingSync:
    """Keeps a tied embedding and LM head one weight when they sit on different pipeline ranks.

    The first pp rank holds it as the embedding, the last as the head (the same shards: both
    are ``[vocab, hidden]`` split along the vocabulary by tp and along dim 0 by FSDP). After the
    backward their gradients are summed between the two ranks of each pp group, as one weight's
    would be (Megatron's embedding group; Narayanan et al. 2021), so both copies take the same
    optimizer step and stay equal. The gradient norm counts the first rank's copy only.
    """

    def __init__(self, model: nn.Module, pp_mesh: DeviceMesh):
        pp_rank, pp_size = pp_mesh.get_local_rank(), pp_mesh.size()
        self.weight: nn.Parameter | None = None
        self.counted_in_norm = True
        self.group = None
        if pp_rank not in (0, pp_size - 1):
            return
        part = cast(nn.Module, model.tok_embeddings if pp_rank == 0 else model.output)
        self.weight = cast(nn.Parameter, part.weight)
        self.counted_in_norm = pp_rank == 0
        ranks = pp_mesh.mesh.flatten().tolist()
        # Only the two members create (and join) their group.
        self.group = dist.new_group([ranks[0], ranks[-1]], use_local_synchronization=True)

    @torch.no_grad()
    def sync(self) -> None:
        if self.weight is None or self.weight.grad is None:
            return
        grad = self.weight.grad
        local = grad.to_local() if isinstance(grad, DTensor) else grad
        dist.all_reduce(local, group=self.group)


def build_pipeline_schedule(
    stage_modules: list[nn.Module],
    pp_mesh: DeviceMesh,
    device: torch.device,
    num_microbatches: int,
    schedule: PipelineSchedule,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
):
    """One stage per rank (GPipe / 1F1B) or ``vpp`` of them (interleaved 1F1B); gradients are
    averaged over the micro-batches."""
    pp_rank, pp_size, vpp = pp_mesh.get_local_rank(), pp_mesh.size(), len(stage_modules)
    stages: list[_PipelineStageBase] = [
        PipelineStage(module, stage_index=stage, num_stages=pp_size * vpp, device=device, group=pp_mesh.get_group())
        for module, stage in zip(stage_modules, local_stage_ids(pp_rank, pp_size, vpp), strict=True)
    ]
    if vpp > 1:
        assert schedule == PipelineSchedule.ONE_F_ONE_B, "the structural rules allow vpp > 1 with 1f1b only"
        return ScheduleInterleaved1F1B(stages, n_microbatches=num_microbatches, loss_fn=loss_fn, scale_grads=True)
    return SCHEDULES[schedule](stages[0], n_microbatches=num_microbatches, loss_fn=loss_fn, scale_grads=True)


def run_pipeline_step(
    schedule, pp_mesh: DeviceMesh, input_ids: torch.Tensor, labels: torch.Tensor, train: bool
) -> torch.Tensor | None:
    """Forward (+ backward when ``train``) of one whole batch; the last stage returns the mean loss."""
    pp_rank, pp_size = pp_mesh.get_local_rank(), pp_mesh.size()
    is_last = pp_rank == pp_size - 1
    losses: list[torch.Tensor] | None = [] if is_last else None
    args = (input_ids,) if pp_rank == 0 else ()
    target = labels if is_last else None
    if train:
        schedule.step(*args, target=target, losses=losses, return_outputs=False)
    else:
        schedule.eval(*args, target=target, losses=losses)
    if not is_last:
        return None
    assert losses is not None  # the last stage collects its losses in the list made above
    return torch.stack([loss.detach().float() for loss in losses]).mean()


# How the start line and the report say a pure-bf16 run (the plan's ``optimizer_precision.pure_bf16``).
PURE_BF16_WORDS = ", pure (weights, gradients and AdamW states bf16, no fp32 master)"


def describe_run(
    layout: Layout,
    precision: Precision,
    world_size: int,
    device: torch.device,
    pipeline: PipelineSchedule | None,
    num_local_stages: int,
    pure_bf16: bool = False,
) -> str:
    """``layout: fsdp pp=2 dp_shard=2 vpp=2 on 4 cpu processes, bf16; pipeline: interleaved 1f1b,
    stages 0, 2 on pp rank 0 of 2``: what this run built, printed once at the start (``pure_bf16``:
    "bf16, pure: no fp32 master")."""
    # trial s45 L6: "1 cpu processes"
    processes = counted(world_size, f"{device.type} process", f"{device.type} processes")
    line = f"layout: {layout.describe()} on {processes}, {precision.value}" + (PURE_BF16_WORDS if pure_bf16 else "")
    if pipeline is not None:
        stages = ", ".join(str(s) for s in local_stage_ids(0, layout.pp, num_local_stages))
        kind = f"interleaved {pipeline.value}" if num_local_stages > 1 else pipeline.value
        line += f"; pipeline: {kind}, stages {stages} on pp rank 0 of {layout.pp}"
    return line
