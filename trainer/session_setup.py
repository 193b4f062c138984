"""What a training session (trainer/session.py) is built from: the optimizer, its LR schedule and
the stepper that drives them, with the loss head and, under pp > 1, the pipeline schedule
(``build_step_parts``); the data, prepared by rank 0 for every rank (``prepare_data_once``); and this
rank's loader of a split (``split_loader``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import NamedTuple

import torch
import torch.distributed as dist
from torch.optim.lr_scheduler import LambdaLR

from planner.errors import DiskFullError
from planner.layout import Implementation, Layout, PipelineSchedule, TrainingConfig
from trainer.data import CHECKED_SHARDS_ENV, prepare_data
from trainer.job_spec import RunSettings
from trainer.loader import ResumableLoader, build_loader
from trainer.loss import build_loss_head, chunk_tokens_for
from trainer.optim import LossScaler, build_optimizer, build_scheduler
from trainer.parallel import Meshes
from trainer.pipeline import build_pipeline_schedule
from trainer.step import Stepper, pipeline_loss_fn, uses_loss_parallel

log = logging.getLogger(__name__)


class StepParts(NamedTuple):
    """What trains: the optimizer and its schedule, stepped by ``stepper``; ``pipeline_kind``: the
    pipeline schedule under pp > 1, else None."""

    optimizer: torch.optim.AdamW
    scheduler: LambdaLR
    pipeline_kind: PipelineSchedule | None
    stepper: Stepper


def build_step_parts(
    model: torch.nn.Module,
    stage_modules: list[torch.nn.Module],
    run: RunSettings,
    training: TrainingConfig,
    layout: Layout,
    meshes: Meshes,
    device: torch.device,
    scaler: LossScaler,
) -> StepParts:
    """The optimizer over ``model``, the stepper over this rank's ``stage_modules``."""
    fused = device.type == "cuda" and not training.offload
    optimizer = build_optimizer(model, run, fused=fused)
    scheduler = build_scheduler(optimizer, run)
    schedule, pipeline_kind = None, None
    loss_head = build_loss_head(stage_modules, chunk_tokens_for(run.loss_chunk_tokens, layout.tp))
    if layout.pp > 1:
        kind = layout.pp_schedule  # the plan's, run overrides applied at emit
        pipeline_kind = kind
        schedule = build_pipeline_schedule(
            stage_modules,
            meshes.pp,
            device,
            training.grad_accum,
            kind,
            pipeline_loss_fn(scaler, loss_head),
        )
    native = training.impl == Implementation.NATIVE
    stepper = Stepper(
        model,
        optimizer,
        scheduler,
        scaler,
        layout,
        meshes,
        device,
        run.grad_clip,
        schedule,
        training.grad_accum,
        uses_loss_parallel(layout, native),
        getattr(model, "context_parallel", None),  # set on the native model when cp > 1
        loss_head,
    )
    return StepParts(optimizer, scheduler, pipeline_kind, stepper)


def prepare_data_once(run: RunSettings, job_dir: Path, vocab_size: int, seq_len: int, is_rank0: bool) -> None:
    """Rank 0 prepares (idempotent) while the others wait; a failure stops every rank the same way."""
    result: list[tuple[str, str] | None] = [None]
    if is_rank0:
        try:
            info = prepare_data(run, job_dir, vocab_size, seq_len, os.environ.get(CHECKED_SHARDS_ENV))
            if info.loss_floor is not None:
                log.info(f"data: synthetic, best achievable loss {info.loss_floor:.3f}")
        except ValueError as exc:
            result[0] = ("invalid", str(exc))
        except DiskFullError as exc:
            result[0] = ("disk full", str(exc))
    dist.broadcast_object_list(result, src=0)
    if result[0] is not None:
        kind, message = result[0]
        raise DiskFullError(message) if kind == "disk full" else ValueError(message)


def split_loader(
    run: RunSettings,
    job_dir: Path,
    split: str,
    training: TrainingConfig,
    meshes: Meshes,
    vocab_size: int,
    device: torch.device,
) -> ResumableLoader:
    """This rank's loader of ``split``: its share of the batches among the data-parallel ranks."""
    return build_loader(
        run,
        job_dir,
        split,
        training.seq_len,
        training.micro_batch,
        meshes.dp.get_local_rank(),
        meshes.dp.size(),
        vocab_size,
        pin_memory=device.type == "cuda",
    )
