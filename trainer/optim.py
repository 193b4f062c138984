"""AdamW, the warmup + cosine schedule, DTensor-aware gradient clipping and fp16 loss scaling."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.tensor import DTensor
from torch.optim.lr_scheduler import LambdaLR

from trainer.job_spec import RunSettings


def decays(p: nn.Parameter) -> bool:
    """Whether weight decay applies: matrices, not vectors (norm weights, biases)."""
    return p.ndim >= 2


def build_optimizer(model: nn.Module, run: RunSettings, fused: bool) -> torch.optim.AdamW:
    """AdamW; no weight decay on vectors (norm weights, biases), as is standard for LLMs."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not trainable:
        raise ValueError("no trainable parameters (freeze_layers leaves nothing to train?)")
    decay = [p for p in trainable if decays(p)]
    no_decay = [p for p in trainable if not decays(p)]
    groups = [{"params": decay, "weight_decay": run.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(
        [g for g in groups if g["params"]],
        lr=run.lr,
        betas=(0.9, 0.95),
        eps=1e-8,
        fused=fused or None,
        foreach=None if fused else True,
    )


def lr_factor(step: int, run: RunSettings) -> float:
    """Multiplier of ``run.lr`` for optimizer step ``step`` (0-based): linear warmup, cosine decay."""
    if step < run.warmup_steps:
        return (step + 1) / run.warmup_steps
    decay_steps = max(1, run.steps - run.warmup_steps)
    progress = min(1.0, (step - run.warmup_steps) / decay_steps)
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
    return run.min_lr_ratio + (1.0 - run.min_lr_ratio) * cosine


def build_scheduler(optimizer: torch.optim.Optimizer, run: RunSettings) -> LambdaLR:
    return LambdaLR(optimizer, lambda step: lr_factor(step, run))


def apply_schedule(scheduler: LambdaLR) -> None:
    """Each group's learning rate as this run's schedule gives it at the restored step. A resumed
    optimizer holds the rate its checkpoint's schedule set, which LambdaLR replaces only after the
    next step (trial s27: `run --steps 34` on a finished 30-step job trained step 31 at the old
    schedule's 3.0e-5, then followed the stretched one)."""
    rates = [
        base * rate(scheduler.last_epoch) for base, rate in zip(scheduler.base_lrs, scheduler.lr_lambdas, strict=True)
    ]
    for group, lr in zip(scheduler.optimizer.param_groups, rates, strict=True):
        group["lr"] = lr
    scheduler._last_lr = rates  # what get_last_lr() reports, as after a step


def adopt_run(optimizer: torch.optim.Optimizer, scheduler: LambdaLR, run: RunSettings) -> list[str]:
    """After a resume, the job's peak learning rate and weight decay rather than the checkpoint's
    (job.json is what a run trains by; trial s33: a re-emitted --lr 1e-2 resumed at the old 3e-4
    peak); returns what changed, in words. The schedule's shape already follows ``run``."""
    changed = []
    if any(base != run.lr for base in scheduler.base_lrs):
        changed.append(f"peak learning rate {scheduler.base_lrs[0]:g} -> {run.lr:g}")
        scheduler.base_lrs = [run.lr] * len(scheduler.base_lrs)
        for group in optimizer.param_groups:
            group["initial_lr"] = run.lr
    for group in optimizer.param_groups:
        decay = run.weight_decay if all(decays(p) for p in group["params"]) else 0.0  # build_optimizer's groups
        if group["weight_decay"] != decay:
            changed.append(f"weight decay {group['weight_decay']:g} -> {decay:g}")
            group["weight_decay"] = decay
    return changed


def _grad_groups(params: list[nn.Parameter]) -> dict[object, list[torch.Tensor]]:
    """Gradients grouped by DTensor mesh + placements (a norm can only reduce within one layout)."""
    groups: dict[object, list[torch.Tensor]] = {}
    for p in params:
        if p.grad is None:
            continue
        key = (p.grad.device_mesh, p.grad.placements) if isinstance(p.grad, DTensor) else None
        groups.setdefault(key, []).append(p.grad)
    return groups


def global_grad_norm(
    params: list[nn.Parameter], pp_group: dist.ProcessGroup | None, device: torch.device
) -> torch.Tensor:
    """L2 norm of all gradients of the model, across shards, TP ranks and pipeline stages."""
    squares = torch.zeros((), device=device, dtype=torch.float32)
    for grads in _grad_groups(params).values():
        norm = torch.nn.utils.get_total_norm(grads, norm_type=2.0, foreach=True)
        if isinstance(norm, DTensor):
            norm = norm.full_tensor()  # sums the shards' partial norms
        squares = squares + norm.float().pow(2)
    if pp_group is not None and dist.get_world_size(pp_group) > 1:
        dist.all_reduce(squares, group=pp_group)  # each stage holds different parameters
    return squares.sqrt()


def clip_gradients(params: list[nn.Parameter], max_norm: float, total_norm: float) -> None:
    """Scale all gradients so their global norm is at most ``max_norm``.

    Works on the local shards: gradients may be DTensors on different meshes (an HF model
    under TP has tp-sharded projections and plain replicated norms), which a single
    foreach op over the DTensors cannot mix.
    """
    coefficient = max_norm / (total_norm + 1e-6)
    if coefficient < 1.0:
        multiply_gradients(params, coefficient)


def multiply_gradients(params: list[nn.Parameter], factor: float) -> None:
    local = [p.grad.to_local() if isinstance(p.grad, DTensor) else p.grad for p in params if p.grad is not None]
    if local:
        torch._foreach_mul_(local, factor)


@dataclass
class LossScaler:
    """Dynamic loss scaling for fp16 (scale 1 and never changing for other precisions).

    Implemented in the loop rather than with ``torch.amp.GradScaler`` because the overflow
    decision must be global: the gradient norm is already reduced over all shards and
    stages, so every rank skips or steps together.
    """

    enabled: bool
    scale: float = 2.0**16
    growth_interval: int = 1000
    min_scale: float = 1.0
    good_steps: int = 0

    @classmethod
    def for_precision(cls, fp16: bool) -> LossScaler:
        return cls(enabled=fp16, scale=2.0**16 if fp16 else 1.0)

    def update(self, found_non_finite: bool) -> None:
        if not self.enabled:
            return
        if found_non_finite:
            self.scale = max(self.min_scale, self.scale / 2)
            self.good_steps = 0
            return
        self.good_steps += 1
        if self.good_steps % self.growth_interval == 0:
            self.scale *= 2

    @property
    def at_minimum(self) -> bool:
        return self.enabled and self.scale <= self.min_scale

    def state_dict(self) -> dict:
        return {"scale": self.scale, "good_steps": self.good_steps}

    def load_state_dict(self, state: dict) -> None:
        self.scale, self.good_steps = float(state["scale"]), int(state["good_steps"])
