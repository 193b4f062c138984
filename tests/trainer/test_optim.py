"""Learning-rate schedule, gradient norm/clipping, fp16 loss scaling, optimizer groups."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn

from trainer.job_spec import RunSettings
from trainer.optim import LossScaler, build_optimizer, clip_gradients, global_grad_norm, lr_factor


def test_schedule_warms_up_linearly_then_decays_to_the_floor():
    run = RunSettings(steps=100, warmup_steps=10, min_lr_ratio=0.1)
    factors = [lr_factor(step, run) for step in range(run.steps)]
    assert factors[:10] == pytest.approx([(i + 1) / 10 for i in range(10)])
    assert factors[10] == pytest.approx(1.0)
    decay = factors[10:]
    assert all(a >= b for a, b in itertools.pairwise(decay))
    assert factors[-1] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 89 / 90)))
    assert lr_factor(run.steps, run) == pytest.approx(0.1)  # the floor is reached at the end
    assert lr_factor(55, run) == pytest.approx(0.55)  # half way: midpoint of 1 and 0.1


def test_constant_schedule_when_floor_is_one():
    run = RunSettings(steps=50, warmup_steps=0, min_lr_ratio=1.0)
    assert {lr_factor(step, run) for step in range(60)} == {1.0}


def _params_with_grads(*grads: list[float]) -> list[nn.Parameter]:
    params = []
    for values in grads:
        p = nn.Parameter(torch.zeros(len(values)))
        p.grad = torch.tensor(values)
        params.append(p)
    return params


def test_global_norm_and_clipping():
    params = _params_with_grads([3.0, 0.0], [0.0, 4.0])
    norm = global_grad_norm(params, pp_group=None, device=torch.device("cpu"))
    assert norm.item() == pytest.approx(5.0)
    clip_gradients(params, max_norm=1.0, total_norm=norm.item())
    assert global_grad_norm(params, None, torch.device("cpu")).item() == pytest.approx(1.0, rel=1e-5)
    assert params[0].grad.tolist() == pytest.approx([0.6, 0.0], rel=1e-5)
    # Below the threshold nothing changes.
    small = _params_with_grads([0.3, 0.4])
    clip_gradients(small, max_norm=1.0, total_norm=0.5)
    assert small[0].grad.tolist() == pytest.approx([0.3, 0.4])


def test_non_finite_gradients_give_a_non_finite_norm():
    params = _params_with_grads([1.0, float("nan")])
    assert not math.isfinite(global_grad_norm(params, None, torch.device("cpu")).item())


def test_loss_scaler_halves_on_overflow_and_grows_after_good_steps():
    scaler = LossScaler(enabled=True, scale=8.0, growth_interval=3, min_scale=1.0)
    scaler.update(found_non_finite=True)
    assert scaler.scale == 4.0
    for _ in range(3):
        scaler.update(found_non_finite=False)
    assert scaler.scale == 8.0
    for _ in range(5):
        scaler.update(found_non_finite=True)
    assert scaler.scale == 1.0 and scaler.at_minimum
    restored = LossScaler(enabled=True)
    restored.load_state_dict(scaler.state_dict())
    assert restored.scale == 1.0 and restored.good_steps == 0


def test_loss_scaler_is_inert_without_fp16():
    scaler = LossScaler.for_precision(fp16=False)
    scaler.update(found_non_finite=True)
    assert scaler.scale == 1.0 and not scaler.at_minimum


def test_optimizer_decays_matrices_only_and_needs_trainable_params():
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))
    optimizer = build_optimizer(model, RunSettings(weight_decay=0.1), fused=False)
    decayed, plain = optimizer.param_groups
    assert decayed["weight_decay"] == 0.1 and all(p.ndim == 2 for p in decayed["params"])
    assert plain["weight_decay"] == 0.0 and all(p.ndim == 1 for p in plain["params"])
    model.requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        build_optimizer(model, RunSettings(), fused=False)


def test_a_resumed_run_takes_the_jobs_peak_rate_and_decay_not_the_checkpoints():
    """Trial s33: the scheduler's saved base rate overrode job.json's --lr after a resume."""
    from trainer.optim import adopt_run, apply_schedule, build_scheduler

    model = nn.Linear(4, 4)
    old = RunSettings(steps=100, warmup_steps=0, lr=3e-4, weight_decay=0.01)
    optimizer = build_optimizer(model, old, fused=False)
    scheduler = build_scheduler(optimizer, old)
    for _ in range(10):
        optimizer.step()
        scheduler.step()
    saved = (optimizer.state_dict(), scheduler.state_dict())
    new = old.model_copy(update={"lr": 1e-2, "weight_decay": 0.1})
    optimizer, scheduler = build_optimizer(model, new, fused=False), None
    scheduler = build_scheduler(optimizer, new)
    optimizer.load_state_dict(saved[0])
    scheduler.load_state_dict(saved[1])
    assert adopt_run(optimizer, scheduler, new) == ["peak learning rate 0.0003 -> 0.01", "weight decay 0.01 -> 0.1"]
    apply_schedule(scheduler)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-2 * lr_factor(10, new))
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]  # vectors keep none
    assert adopt_run(optimizer, scheduler, new) == []
