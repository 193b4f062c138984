"""One optimizer step (forward/backward over the accumulation window, clip, update) and evaluation.

A step whose loss or gradient norm is not finite makes no update (``skipped``). Both values
are reduced over all ranks before the decision, so every rank skips or steps together.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import loss_parallel

from planner.layout import Layout, MeshAxis
from trainer.context_parallel import ContextParallel
from trainer.loss import IGNORE_INDEX as IGNORE_INDEX  # re-exported: the loss lives in trainer/loss.py
from trainer.loss import LossHead
from trainer.loss import cross_entropy as cross_entropy
from trainer.moe import set_aux_loss_scale, update_router_bias
from trainer.optim import LossScaler, clip_gradients, global_grad_norm, multiply_gradients
from trainer.parallel import Meshes, set_micro_batch_sync
from trainer.pipeline import TiedEmbeddingSync, run_pipeline_step
from trainer.progress import HEARTBEAT_S  # a long step says how far it is this often

log = logging.getLogger(__name__)


class Heartbeat:
    """'step running: micro-batch 12 of 128 done, 31 s so far' every ``interval_s`` of a step
    (on rank 0: trainer/log.py)."""

    def __init__(self, interval_s: float | None = None):
        self.interval_s = HEARTBEAT_S if interval_s is None else interval_s
        self.micro_batch: tuple[int, int] | None = None  # (done, of): a stop signal's line says it
        self.start()

    def start(self) -> None:
        self.started = self.said = time.monotonic()
        self.micro_batch = None

    def tick(self, done: int, total: int) -> None:
        self.micro_batch = (done, total)
        now = time.monotonic()
        if now - self.said >= self.interval_s:
            log.info(f"step running: micro-batch {done:,} of {total:,} done, {now - self.started:,.0f} s so far")
            self.said = now


def model_loss(head: LossHead, output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss of a model output: logits, or the final-norm hidden states when the
    head computes a chunked loss (trainer/loss.py). Every loss of a step goes through here."""
    return head(getattr(output, "logits", output), labels)


def balance_groups(meshes: Meshes) -> list[dist.ProcessGroup]:
    """The ranks that route other tokens through this rank's MoE blocks (trainer/moe.py
    ``update_router_bias``): its data-parallel and context-parallel peers, one group per axis
    (the sums compose); not the pipeline stages (other blocks) nor tp (the same tokens)."""
    axes = (MeshAxis.DP_REPLICATE, MeshAxis.DP_SHARD, MeshAxis.CP)
    return [meshes.world[a.value].get_group() for a in axes if meshes.world[a.value].size() > 1]


def _local(value: torch.Tensor) -> torch.Tensor:
    return value.full_tensor() if isinstance(value, DTensor) else value


@dataclass(frozen=True)
class StepResult:
    loss: float  # mean over the global batch (nan/inf when not finite)
    lr: float  # the learning rate this step used
    grad_norm: float  # before clipping, unscaled
    skipped: bool  # no optimizer update
    overflow: bool  # fp16 only: gradients overflowed at a finite loss (scale lowered)


class Stepper:
    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler,
        scaler: LossScaler,
        layout: Layout,
        meshes: Meshes,
        device: torch.device,
        grad_clip: float,
        pipeline_schedule=None,
        pipeline_microbatches: int = 1,
        use_loss_parallel: bool = False,
        context_parallel: ContextParallel | None = None,
        loss_head: LossHead | None = None,
    ):
        self.model, self.optimizer, self.scheduler, self.scaler = model, optimizer, scheduler, scaler
        self.layout, self.meshes, self.device, self.grad_clip = layout, meshes, device, grad_clip
        self.schedule = pipeline_schedule
        self.pipeline_microbatches = pipeline_microbatches
        self.use_loss_parallel = use_loss_parallel
        self.context_parallel = context_parallel
        self.loss_head = loss_head or LossHead(None, 0)  # default: full-logits cross-entropy
        self.params = [p for p in model.parameters() if p.requires_grad]
        # A tied embedding split over the pipeline: one copy on the first rank, one on the last.
        args = getattr(model, "args", None)
        tied = layout.pp > 1 and args is not None and args.tied_embeddings
        self.tied = TiedEmbeddingSync(model, meshes.pp) if tied else None
        uncounted = self.tied.weight if self.tied is not None and not self.tied.counted_in_norm else None
        self.norm_params = [p for p in self.params if p is not uncounted]
        pp_rank = meshes.pp.get_local_rank()
        self.holds_loss = pp_rank == layout.pp - 1  # the last pipeline stage computes the loss
        self.loss_ranks = dist.get_world_size() // layout.pp
        self.balance_groups = balance_groups(meshes)
        self.heartbeat = Heartbeat()

    # ------------------------------------------------------------------ contexts

    def _context(self):
        return loss_parallel() if self.use_loss_parallel else contextlib.nullcontext()

    def _local_tokens(self, input_ids: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """On the device; under context parallelism only this rank's share of the sequence."""
        input_ids = input_ids.to(self.device, non_blocking=True)
        labels = labels.to(self.device, non_blocking=True)
        if self.context_parallel is not None:
            input_ids, labels = self.context_parallel.shard(input_ids), self.context_parallel.shard(labels)
        return input_ids, labels

    # ------------------------------------------------------------------ forward/backward

    def _forward_backward(self, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """Summed mean loss over the accumulation window on this rank (0 off the last stage)."""
        if self.schedule is not None:
            input_ids, labels = self._local_tokens(
                torch.cat([x for x, _ in batches]), torch.cat([y for _, y in batches])
            )
            with self._context():
                loss = run_pipeline_step(self.schedule, self.meshes.pp, input_ids, labels, train=True)
            return _local(loss) / self.scaler.scale if loss is not None else torch.zeros((), device=self.device)
        total = torch.zeros((), device=self.device)
        self.heartbeat.start()
        for index, (input_ids, labels) in enumerate(batches):
            self.heartbeat.tick(index, len(batches))
            input_ids, labels = self._local_tokens(input_ids, labels)
            set_micro_batch_sync(self.model, self.layout.sharding, index == len(batches) - 1)
            with self._context():
                output = self.model(input_ids)
                loss = model_loss(self.loss_head, output, labels) / len(batches)
                (loss * self.scaler.scale).backward()
            total += _local(loss.detach()).float()
        return total

    def _global_mean(self, local_loss: torch.Tensor) -> torch.Tensor:
        """Average over the ranks that hold a loss (data-parallel replicas; tp copies agree)."""
        value = local_loss.detach().float().clone() if self.holds_loss else torch.zeros((), device=self.device)
        dist.all_reduce(value)
        return value / self.loss_ranks

    def train_step(self, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> StepResult:
        # The pipeline schedule divides the gradients by its micro-batches itself.
        set_aux_loss_scale(self.model, 1 if self.schedule is not None else len(batches), self.scaler.scale)
        loss = self._global_mean(self._forward_backward(batches))
        if self.tied is not None:
            self.tied.sync()
        if self.scaler.enabled:
            multiply_gradients(self.params, 1.0 / self.scaler.scale)
        grad_norm = global_grad_norm(
            self.norm_params, self.meshes.pp.get_group() if self.layout.pp > 1 else None, self.device
        )
        loss_value, norm_value = loss.item(), grad_norm.item()
        finite = math.isfinite(loss_value) and math.isfinite(norm_value)
        lr = self.optimizer.param_groups[0]["lr"]
        if finite:
            clip_gradients(self.params, self.grad_clip, norm_value)
            self.optimizer.step()
        update_router_bias(self.model, self.balance_groups, update=finite)
        self.scheduler.step()
        self.scaler.update(found_non_finite=not finite)
        self.optimizer.zero_grad(set_to_none=True)
        overflow = self.scaler.enabled and not finite and math.isfinite(loss_value)
        return StepResult(loss=loss_value, lr=lr, grad_norm=norm_value, skipped=not finite, overflow=overflow)

    # ------------------------------------------------------------------ evaluation

    @torch.no_grad()
    def eval_loss(self, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
        """Mean loss over ``batches`` (one micro-batch each; grouped per pipeline call under pp)."""
        self.model.eval()
        total, count = torch.zeros((), device=self.device), 0
        if self.schedule is not None:
            group = self.pipeline_microbatches
            for start in range(0, len(batches) - group + 1, group):
                chunk = batches[start : start + group]
                input_ids, labels = self._local_tokens(
                    torch.cat([x for x, _ in chunk]), torch.cat([y for _, y in chunk])
                )
                with self._context():
                    loss = run_pipeline_step(self.schedule, self.meshes.pp, input_ids, labels, train=False)
                total += (_local(loss) / self.scaler.scale) if loss is not None else 0.0
                count += 1
        else:
            for input_ids, labels in batches:
                input_ids, labels = self._local_tokens(input_ids, labels)
                with self._context():
                    output = self.model(input_ids)
                    total += _local(model_loss(self.loss_head, output, labels)).float()
                count += 1
        self.model.train()
        return self._global_mean(total / max(count, 1)).item()


def uses_loss_parallel(layout: Layout, native: bool) -> bool:
    """Vocabulary-parallel loss whenever the native LM head is tensor-parallel."""
    return native and layout.tp > 1


def pipeline_loss_fn(scaler: LossScaler, head: LossHead | None = None):
    """The pipeline schedule's loss on the last stage (scaled for fp16; the schedule averages
    gradients over micro-batches)."""
    loss_head = head or LossHead(None, 0)

    def loss_fn(output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return model_loss(loss_head, output, labels) * scaler.scale

    return loss_fn
