"""The native mixture-of-experts MLP: a top-k router, SwiGLU experts, token dispatch by
all-to-all over the expert-parallel group, and the load-balancing loss.

One code path for every layout: with ``ep = 1`` the all-to-alls are skipped and the block is
the one-process reference; with ``ep > 1`` each rank holds ``E / ep`` experts (a ``Shard(0)``
DTensor over the ep mesh, FSDP-sharded over the rest of ``dp_shard x cp``, as in torchtitan;
trainer/parallel.py) and exchanges routed token copies with its ep peers. The planner models
the same block (planner/model/moe.py, docs/model.md "Mixture of experts").

Routing as in Mixtral (Jiang et al. 2024, sec. 2.1; HF ``MixtralSparseMoeBlock``) and Qwen3-MoE
(HF ``Qwen3MoeSparseMoeBlock``): fp32 softmax over the experts, the top k, renormalised to sum to
one (Qwen3-MoE: when ``norm_topk_prob``, as its releases set). Or as in DeepSeek-V3 (DeepSeek-AI 2024,
sec. 2.1.2; transformers' ``DeepseekV3TopkRouter``): fp32 sigmoid affinities, experts chosen by
affinity + ``e_score_correction_bias`` within the ``topk_groups`` best of ``groups`` expert
groups (a group scores its two best experts), weighted by their bare affinities renormalised
(``norm_topk_prob``) and times ``routed_scale`` (``ModelSpec.group_routing``: the config's
values, else DeepSeek-V3's 8, 4 and 2.5); plus ``shared_experts`` always-on
experts (one SwiGLU MLP ``shared_experts x ffn`` wide). The correction bias is DeepSeek's
auxiliary-loss-free balancing (sec. 2.1.2): after each optimizer step every expert's bias moves
by ``DEEPSEEK_BIAS_UPDATE_SPEED`` towards balance, down if the expert took more than the mean of
the step's routed copies over all data- and context-parallel ranks, up if fewer
(``update_router_bias``); it is a checkpointed buffer. Load balancing as in Switch (Fedus et al.
2021, eq. 4) and Mixtral's ``load_balancing_loss_func``: ``E * sum_i f_i P_i`` over the rank's
micro-batch (``f_i`` tokens routed to expert i per token, ``P_i`` its mean router probability),
weighted by ``AUX_LOSS_COEF``; DeepSeek-V3's complementary balance loss (sec. 2.1.2, eq. 17-20:
``alpha sum_i f'_i P_i`` with ``f'_i = E / k`` times the share, the affinities normalised) at its
``DEEPSEEK_BALANCE_COEF``, over the rank's micro-batch where the report takes each sequence. The
loss's gradient is injected in backward (Megatron-Core's ``MoEAuxLossAutoScaler``), so it shapes
training without entering the reported loss, and works unchanged under pipelining and
activation checkpointing; the step's routed copies are counted in that backward, once per
micro-batch however often a checkpointed block recomputes its forward.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Shard, distribute_tensor

from planner.model.shape import GroupRouting, group_routing

# Switch Transformer's alpha (Fedus et al. 2021, sec. 2.2: 1e-2 "large enough to ensure load
# balancing while small enough to not overwhelm the primary cross-entropy objective").
AUX_LOSS_COEF = 1e-2
# DeepSeek-V3 report sec. 4.2: "the bias update speed gamma to 0.001" (for the first 14.3T
# tokens, 0 after) and "the balance factor alpha to 0.0001".
DEEPSEEK_BIAS_UPDATE_SPEED = 1e-3
DEEPSEEK_BALANCE_COEF = 1e-4


class _AllToAll(torch.autograd.Function):
    """``all_to_all_single`` of rows; its backward is the reverse exchange."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, out_splits: list[int], in_splits: list[int], group) -> torch.Tensor:
        ctx.group, ctx.out_splits, ctx.in_splits = group, out_splits, in_splits
        out = x.new_empty((sum(out_splits), *x.shape[1:]))
        dist.all_to_all_single(out, x.contiguous(), out_splits, in_splits, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (grad,) = grads
        back = grad.new_empty((sum(ctx.in_splits), *grad.shape[1:]))
        dist.all_to_all_single(back, grad.contiguous(), ctx.in_splits, ctx.out_splits, group=ctx.group)
        return back, None, None, None


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; multiplies the gradient by ``scale``."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        return grads[0] * ctx.scale, None


class _AuxLossGrad(torch.autograd.Function):
    """Passes ``output`` through and gives ``aux`` the gradient ``scale`` (d loss / d aux); adds
    the micro-batch's routed copies per expert to ``tally`` (backward runs once per micro-batch,
    where a checkpointed block's forward runs twice)."""

    @staticmethod
    def forward(
        ctx: Any, output: torch.Tensor, aux: torch.Tensor, scale: float, counts: torch.Tensor, tally: torch.Tensor
    ) -> torch.Tensor:
        ctx.scale, ctx.tally = scale, tally
        ctx.save_for_backward(aux, counts)
        return output.view_as(output)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        aux, counts = ctx.saved_tensors
        ctx.tally.add_(counts.to(ctx.tally.dtype))
        return grads[0], torch.full_like(aux, ctx.scale), None, None, None


class GroupedExperts(nn.Module):
    """``E`` SwiGLU experts stored as ``[E, in, out]`` tensors (w1 gate, w3 up, w2 down), run as
    a loop over the experts' contiguous token groups."""

    def __init__(self, num_experts: int, hidden_size: int, ffn_hidden_size: int):
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(num_experts, hidden_size, ffn_hidden_size))
        self.w3 = nn.Parameter(torch.empty(num_experts, hidden_size, ffn_hidden_size))
        self.w2 = nn.Parameter(torch.empty(num_experts, ffn_hidden_size, hidden_size))
        self.ep_size = 1  # set by apply_expert_parallel

    def _local(self, weight: torch.Tensor) -> torch.Tensor:
        """This rank's experts. Their gradient sums the contributions of every ep rank's tokens,
        and FSDP then averages over only dp_shard*cp/ep ranks: 1/ep makes it the data-parallel
        mean (torchtitan's fsdp_gradient_divide_factor; gloo has no pre-multiplied reduction)."""
        if isinstance(weight, DTensor):
            weight = weight.to_local()
        return _ScaleGrad.apply(weight, 1.0 / self.ep_size) if self.ep_size > 1 else weight

    def forward(self, tokens: torch.Tensor, counts: list[int]) -> torch.Tensor:
        w1, w3, w2 = self._local(self.w1), self._local(self.w3), self._local(self.w2)
        outputs = [(F.silu(chunk @ w1[e]) * (chunk @ w3[e])) @ w2[e] for e, chunk in enumerate(tokens.split(counts))]
        return torch.cat(outputs) if outputs else tokens.new_empty((0, w2.shape[-1]))


class SharedExperts(nn.Module):
    """DeepSeek's always-on experts: one SwiGLU MLP (w1 gate, w3 up, w2 down) every token takes."""

    def __init__(self, hidden_size: int, ffn_hidden_size: int):
        super().__init__()
        self.w1 = nn.Linear(hidden_size, ffn_hidden_size, bias=False)
        self.w3 = nn.Linear(hidden_size, ffn_hidden_size, bias=False)
        self.w2 = nn.Linear(ffn_hidden_size, hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    """Router + experts (+ shared experts); ``forward`` maps ``[batch, seq, h]`` to the same shape.
    ``router``: "softmax" (Mixtral, Qwen3-MoE; its top k renormalised unless not ``renormalize``,
    Qwen3-MoE's ``norm_topk_prob`` false) or "sigmoid" (DeepSeek-V3, group-limited)."""

    e_score_correction_bias: torch.Tensor  # a buffer, sigmoid router only
    routed_tally: torch.Tensor  # a buffer: this step's routed copies per expert on this rank

    def __init__(
        self,
        hidden_size: int,
        ffn_hidden_size: int,
        num_experts: int,
        top_k: int,
        shared_experts: int = 0,
        router: str = "softmax",
        renormalize: bool = True,
        routing: GroupRouting | None = None,
    ):
        super().__init__()
        self.num_experts, self.top_k, self.sigmoid = num_experts, top_k, router == "sigmoid"
        self.renormalize = renormalize
        self.router = nn.Linear(hidden_size, num_experts, bias=False)
        if self.sigmoid:
            self.routing = routing or group_routing(num_experts, top_k)
            # Checkpointed: it moves every step (update_router_bias); zeroed by reset_router_bias.
            self.register_buffer("e_score_correction_bias", torch.zeros(num_experts))
        # The step's routed copies per expert on this rank (counted in backward, _AuxLossGrad).
        self.register_buffer("routed_tally", torch.zeros(num_experts), persistent=False)
        self.aux_coef = DEEPSEEK_BALANCE_COEF if self.sigmoid else AUX_LOSS_COEF
        self.experts = GroupedExperts(num_experts, hidden_size, ffn_hidden_size)
        self.shared = SharedExperts(hidden_size, ffn_hidden_size * shared_experts) if shared_experts else None
        self.ep_group: dist.ProcessGroup | None = None  # set by apply_expert_parallel
        # d(total loss)/d(aux loss) for this micro-batch: set each step (set_aux_loss_scale).
        self.aux_loss_scale = self.aux_coef

    def _sigmoid_top_k(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """DeepSeek-V3: (weights, expert ids, normalised affinities for the balancing loss)."""
        scores = F.linear(x.float(), self.router.weight.float()).sigmoid()
        choice = scores.detach() + self.e_score_correction_bias
        groups, topk_groups = self.routing.groups, self.routing.topk_groups
        grouped = choice.view(-1, groups, self.num_experts // groups)
        best_groups = grouped.topk(min(2, grouped.shape[-1]), dim=-1).values.sum(dim=-1)
        keep = torch.zeros_like(best_groups).scatter_(1, best_groups.topk(topk_groups, dim=-1).indices, 1.0)
        eligible = keep.bool().unsqueeze(-1).expand_as(grouped).reshape_as(choice)
        experts = choice.masked_fill(~eligible, float("-inf")).topk(self.top_k, dim=-1).indices
        weights = scores.gather(1, experts)
        if self.renormalize:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        weights = weights * self.routing.routed_scale
        return weights, experts, scores / scores.sum(dim=-1, keepdim=True)

    def _route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(top-k weights, top-k expert ids, load-balancing loss) of ``x`` [tokens, h]."""
        if self.sigmoid:
            weights, experts, probs = self._sigmoid_top_k(x)
        else:
            probs = F.softmax(self.router(x).float(), dim=-1)
            weights, experts = probs.topk(self.top_k, dim=-1)
            if self.renormalize:
                weights = weights / weights.sum(dim=-1, keepdim=True)
        routed_fraction = F.one_hot(experts, self.num_experts).float().sum(dim=(0, 1)) / x.shape[0]
        aux = self.num_experts * (routed_fraction.detach() * probs.mean(dim=0)).sum()
        # DeepSeek's f'_i = E / k times the share of copies: Switch's over k (eq. 18).
        return weights.to(x.dtype), experts, aux / self.top_k if self.sigmoid else aux

    def _dispatch_and_run(self, routed: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """Expert outputs of ``routed`` (token copies in expert order, ``counts`` per expert)."""
        if self.ep_group is None:
            return self.experts(routed, counts.tolist())
        ep = dist.get_world_size(self.ep_group)
        local = self.num_experts // ep
        received_counts = torch.empty_like(counts)
        dist.all_to_all_single(received_counts, counts, group=self.ep_group)  # [source, local expert]
        send = counts.view(ep, local).sum(dim=1).tolist()
        by_source = received_counts.view(ep, local)
        receive = by_source.sum(dim=1).tolist()
        received = _AllToAll.apply(routed, receive, send, self.ep_group)
        # Arrived source-major (each source's copies in expert order): regroup by expert.
        chunks = received.split(by_source.flatten().tolist())
        expert_major = [chunks[s * local + j] for j in range(local) for s in range(ep)]
        out = self.experts(torch.cat(expert_major), by_source.sum(dim=0).tolist())
        out_chunks = out.split([c.shape[0] for c in expert_major])
        source_major = torch.cat([out_chunks[j * ep + s] for s in range(ep) for j in range(local)])
        return _AllToAll.apply(source_major, send, receive, self.ep_group)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        weights, experts, aux = self._route(x)
        flat = experts.flatten()
        order = torch.argsort(flat, stable=True)  # token copies grouped by expert
        counts = torch.bincount(flat, minlength=self.num_experts)
        out = self._dispatch_and_run(x[order // self.top_k], counts)
        combined = torch.zeros_like(out).index_copy(0, order, out).view(-1, self.top_k, shape[-1])
        y = (combined * weights.unsqueeze(-1)).sum(dim=1).view(shape)
        if self.shared is not None:
            y = y + self.shared(x.view(shape))
        if not self.training:
            return y
        return _AuxLossGrad.apply(y, aux, self.aux_loss_scale, counts, self.routed_tally)


def moe_modules(model: nn.Module) -> list[MoE]:
    return [m for m in model.modules() if isinstance(m, MoE)]


def reset_router_bias(model: nn.Module) -> None:
    """Zero DeepSeek routers' correction biases and every block's tally (after ``to_empty``:
    buffers, not parameters; a checkpoint restores the biases after this)."""
    for moe in moe_modules(model):
        moe.routed_tally.zero_()
        if moe.sigmoid:
            moe.e_score_correction_bias.zero_()


def set_aux_loss_scale(model: nn.Module, micro_batches: int, loss_scale: float) -> None:
    """Weight each micro-batch's load-balancing loss like its LM loss: 1/micro_batches of the
    step (the pipeline schedule divides the gradients itself: pass 1), times the fp16 scale."""
    for moe in moe_modules(model):
        moe.aux_loss_scale = moe.aux_coef * loss_scale / micro_batches


def update_router_bias(model: nn.Module, groups: list[dist.ProcessGroup], update: bool = True) -> None:
    """End of a step: sum the DeepSeek blocks' routed copies over ``groups`` (the ranks that route
    other tokens through the same blocks; one all-reduce per group for all blocks) and, where
    ``update``, move each correction bias by ``DEEPSEEK_BIAS_UPDATE_SPEED`` against each expert's
    excess over its block's mean; then clear every tally (a skipped step moves nothing)."""
    blocks = moe_modules(model)
    routers = [moe for moe in blocks if moe.sigmoid]
    if update and routers:
        load = torch.stack([moe.routed_tally for moe in routers])  # [blocks, experts]
        for group in groups:
            dist.all_reduce(load, group=group)
        steps = torch.sign(load.mean(dim=1, keepdim=True) - load)
        for moe, step in zip(routers, steps, strict=True):
            moe.e_score_correction_bias.add_(step, alpha=DEEPSEEK_BIAS_UPDATE_SPEED)
    for moe in blocks:
        moe.routed_tally.zero_()


def apply_expert_parallel(model: nn.Module, ep_mesh: DeviceMesh) -> None:
    """Split every MoE block's experts over ``ep_mesh`` (whole experts, ``Shard(0)``), on meta."""
    group = ep_mesh.get_group()
    for moe in moe_modules(model):
        moe.ep_group = group
        moe.experts.ep_size = ep_mesh.size()
        for name, param in list(moe.experts.named_parameters(recurse=False)):
            moe.experts.register_parameter(name, nn.Parameter(distribute_tensor(param, ep_mesh, [Shard(0)])))
