"""The native MoE block (trainer/moe.py) on one process: routing, experts, load-balancing loss."""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from support.worlds import gather_world
from torch.utils.checkpoint import checkpoint

from planner.catalog.models import get_preset
from planner.layout import Layout
from trainer.model import build_native_model
from trainer.moe import AUX_LOSS_COEF, DEEPSEEK_BIAS_UPDATE_SPEED, MoE, set_aux_loss_scale, update_router_bias
from trainer.parallel import build_meshes
from trainer.step import balance_groups


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


def filled_deepseek_moe(seed: int = 0) -> MoE:
    torch.manual_seed(seed)
    moe = MoE(hidden_size=16, ffn_hidden_size=24, num_experts=8, top_k=2, router="sigmoid")
    for p in moe.parameters():
        torch.nn.init.normal_(p, std=0.3)
    return moe


def test_a_step_tallies_each_micro_batchs_routed_copies_once_even_when_recomputed():
    """The tally counts in backward: a checkpointed block's second forward adds nothing."""
    moe, x = filled_deepseek_moe(), torch.randn(2, 6, 16)
    with torch.no_grad():
        chosen = moe._route(x.reshape(-1, 16))[1]
    expected = torch.bincount(chosen.flatten(), minlength=8).float()
    moe(x).sum().backward()
    torch.testing.assert_close(moe.routed_tally, expected)
    checkpoint(moe, x, use_reentrant=False).sum().backward()
    torch.testing.assert_close(moe.routed_tally, 2 * expected)
    with torch.no_grad():
        moe.eval()(x)  # evaluation counts nothing
    torch.testing.assert_close(moe.routed_tally, 2 * expected)


def test_router_bias_steps_against_each_experts_excess_and_only_after_a_real_step():
    """DeepSeek-V3 sec. 2.1.2: down by gamma where an expert took more than the mean, up where
    fewer; a skipped step clears the tally and moves nothing. The bias is checkpointed."""
    moe = filled_deepseek_moe()
    moe.routed_tally.copy_(torch.tensor([9.0, 1.0, 4.0, 2.0, 0.0, 8.0, 6.0, 2.0]))  # mean 4
    update_router_bias(moe, groups=[])
    step = DEEPSEEK_BIAS_UPDATE_SPEED
    torch.testing.assert_close(moe.e_score_correction_bias, torch.tensor([-1.0, 1, 0, 1, 1, -1, -1, 1]) * step)
    assert not moe.routed_tally.any()
    moe.routed_tally.fill_(3.0)
    moe.routed_tally[0] = 30.0
    update_router_bias(moe, groups=[], update=False)
    torch.testing.assert_close(moe.e_score_correction_bias, torch.tensor([-1.0, 1, 0, 1, 1, -1, -1, 1]) * step)
    assert not moe.routed_tally.any()
    assert "e_score_correction_bias" in moe.state_dict() and "routed_tally" not in moe.state_dict()


def test_the_bias_balances_a_skewed_router_over_steps():
    """Repeated updates on the same tokens pull the most loaded expert's share down."""
    moe, x = filled_deepseek_moe(seed=1), torch.randn(4, 16, 16)
    with torch.no_grad():
        moe.router.weight[0] = 3.0 * x.mean(dim=(0, 1)) / x.mean(dim=(0, 1)).norm()  # expert 0 wins
    shares = []
    for _ in range(300):
        moe(x).sum().backward()
        shares.append(moe.routed_tally.max().item() / moe.routed_tally.sum().item())
        update_router_bias(moe, groups=[])
    assert shares[0] > 0.25 and shares[-1] < 0.15  # balanced: 1/8 = 0.125


def _bias_worker(rank: int, world: int, port: int, queue) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    meshes = build_meshes(Layout(pp=2, dp_shard=2, cp=2).resolve(world), "cpu")
    moe = filled_deepseek_moe()
    moe.routed_tally.copy_(torch.arange(8.0) * (rank + 1))  # each rank routed other tokens
    update_router_bias(moe, balance_groups(meshes))
    queue.put((rank, meshes.pp.get_local_rank(), moe.e_score_correction_bias.tolist()))
    dist.destroy_process_group()


def test_router_bias_sums_the_load_over_data_and_context_parallel_ranks_of_its_stage():
    """8 ranks, pp 2 x dp_shard 2 x cp 2: each stage's 4 ranks sum their tallies (rank r routed
    ``(r + 1) x [0..7]``) and move their biases alike; the other stage's ranks are not summed in."""
    world = 8
    results = gather_world(_bias_worker, world)
    for rank, stage, bias in results:
        # pp is the outermost axis: stage 0 holds ranks 0-3, stage 1 ranks 4-7.
        load = torch.arange(8.0) * sum(r + 1 for r in range(4 * stage, 4 * stage + 4))
        expected = torch.sign(load.mean() - load) * DEEPSEEK_BIAS_UPDATE_SPEED
        torch.testing.assert_close(torch.tensor(bias), expected, msg=f"rank {rank}")


def test_each_block_steps_against_its_own_mean_and_a_softmax_block_only_clears():
    """One all-reduce carries every block's tally; each bias moves by its own block's load."""
    first, second, softmax = filled_deepseek_moe(), filled_deepseek_moe(seed=1), filled_moe()
    first.routed_tally.copy_(torch.arange(8.0))  # mean 3.5
    second.routed_tally.copy_(torch.tensor([0.0, 0, 0, 0, 0, 0, 0, 80]))  # mean 10
    softmax.routed_tally.fill_(5.0)
    update_router_bias(torch.nn.ModuleList([first, second, softmax]), groups=[])
    step = DEEPSEEK_BIAS_UPDATE_SPEED
    torch.testing.assert_close(first.e_score_correction_bias, torch.tensor([1.0, 1, 1, 1, -1, -1, -1, -1]) * step)
    torch.testing.assert_close(second.e_score_correction_bias, torch.tensor([1.0, 1, 1, 1, 1, 1, 1, -1]) * step)
    assert not any(m.routed_tally.any() for m in (first, second, softmax))
