"""The native MoE block (trainer/moe.py) on one process: routing, experts, load-balancing loss."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from planner.catalog.models import get_preset
from trainer.model import build_native_model
from trainer.moe import AUX_LOSS_COEF, MoE, set_aux_loss_scale


def tiny_moe_spec(**changes):
    base = get_preset("mixtral-8x7b").model_copy(
        update=dict(
            name="tiny-moe",
            num_layers=2,
            hidden_size=32,
            ffn_hidden_size=48,
            num_heads=4,
            num_kv_heads=2,
            vocab_size=256,
            num_experts=4,
            experts_per_token=2,
            max_seq_len=64,
        )
    )
    return base.model_copy(update=changes)


def filled_moe(seed: int = 0) -> MoE:
    torch.manual_seed(seed)
    moe = MoE(hidden_size=16, ffn_hidden_size=24, num_experts=4, top_k=2)
    for p in moe.parameters():
        torch.nn.init.normal_(p, std=0.3)
    return moe


def test_moe_matches_a_token_by_token_mixtral_reference():
    """Each token: softmax over experts, the top 2 renormalised, the weighted sum of their SwiGLU."""
    moe = filled_moe().eval()
    x = torch.randn(2, 5, 16)
    out = moe(x)
    w1, w3, w2 = moe.experts.w1, moe.experts.w3, moe.experts.w2
    for b in range(2):
        for t in range(5):
            token = x[b, t]
            probs = F.softmax(moe.router(token), dim=-1)
            top, ids = probs.topk(2)
            top = top / top.sum()
            expected = sum(
                w * ((F.silu(token @ w1[e]) * (token @ w3[e])) @ w2[e]) for w, e in zip(top, ids.tolist(), strict=True)
            )
            torch.testing.assert_close(out[b, t], expected, rtol=1e-5, atol=1e-6)


def test_load_balancing_loss_reaches_the_router_only_in_training():
    """The aux loss E * sum f_i P_i enters backward with its weight, not the output."""
    x = torch.randn(1, 8, 16)
    trained, evaluated = filled_moe(), filled_moe()
    set_aux_loss_scale(trained, micro_batches=1, loss_scale=1.0)
    torch.testing.assert_close(trained(x), evaluated.eval()(x))
    trained(x).sum().backward()
    without = filled_moe()
    set_aux_loss_scale(without, micro_batches=1, loss_scale=0.0)
    without(x).sum().backward()
    # The difference of the router gradients is the gradient of AUX_LOSS_COEF * aux.
    router = filled_moe().router.weight.detach().clone().requires_grad_(True)
    logits = x.reshape(-1, 16) @ router.T
    p = F.softmax(logits, dim=-1)
    ids = p.topk(2, dim=-1).indices
    f = F.one_hot(ids, 4).float().sum(dim=(0, 1)) / 8
    (AUX_LOSS_COEF * 4 * (f * p.mean(dim=0)).sum()).backward()
    torch.testing.assert_close(trained.router.weight.grad - without.router.weight.grad, router.grad)
    # Experts see no aux gradient.
    torch.testing.assert_close(trained.experts.w1.grad, without.experts.w1.grad)


def test_native_moe_model_has_the_spec_parameter_count():
    spec = tiny_moe_spec()
    model = build_native_model(spec, seq_len=32)
    padded_extra = (model.args.vocab_size - spec.vocab_size) * spec.hidden_size * 2  # embedding + head
    assert sum(p.numel() for p in model.parameters()) == spec.num_params() + padded_extra
