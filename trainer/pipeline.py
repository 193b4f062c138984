"""Pipeline parallelism with torch.distributed.pipelining.

Each pp rank keeps one contiguous slice of the blocks (``num_layers / pp`` of them), the
first stage also the embedding, the last the final norm and LM head. One training step
feeds the ``grad_accum x micro_batch`` batch to the schedule, which splits it into
``grad_accum`` pipeline micro-batches (GPipe: all forwards then all backwards; 1F1B:
interleaved, at most ``pp`` micro-batches' activations alive at once).
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

from planner.layout import PipelineSchedule

SCHEDULES = {PipelineSchedule.GPIPE: ScheduleGPipe, PipelineSchedule.ONE_F_ONE_B: Schedule1F1B}


def stage_layer_ids(num_layers: int, pp_rank: int, pp_size: int) -> range:
    per_stage = num_layers // pp_size
    return range(pp_rank * per_stage, (pp_rank + 1) * per_stage)


def split_native_for_stage(model: nn.Module, pp_rank: int, pp_size: int) -> None:
    """Drop (still on meta, so for free) what this stage does not run."""
    if pp_size == 1:
        return
    keep = {str(i) for i in stage_layer_ids(len(model.layers), pp_rank, pp_size)}
    for name in [name for name in model.layers if name not in keep]:
        del model.layers[name]
    if pp_rank != 0:
        model.tok_embeddings = None
    if pp_rank != pp_size - 1:
        model.norm = None
        model.output = None


def build_pipeline_schedule(stage_module: nn.Module, pp_mesh: DeviceMesh, device: torch.device,
                            num_microbatches: int, schedule: PipelineSchedule,
                            loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]):
    """A single-stage-per-rank schedule; gradients are averaged over the micro-batches."""
    pp_rank, pp_size = pp_mesh.get_local_rank(), pp_mesh.size()
    stage = PipelineStage(stage_module, stage_index=pp_rank, num_stages=pp_size, device=device,
                          group=pp_mesh.get_group())
    return SCHEDULES[schedule](stage, n_microbatches=num_microbatches, loss_fn=loss_fn, scale_grads=True)


def run_pipeline_step(schedule, pp_mesh: DeviceMesh, input_ids: torch.Tensor, labels: torch.Tensor,
                      train: bool) -> torch.Tensor | None:
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
    return torch.stack([loss.detach().float() for loss in losses]).mean()
