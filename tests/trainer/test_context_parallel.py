"""Context parallelism (trainer/context_parallel.py) against the same model on one process.

Gloo processes each hold a share of every sequence (load-balanced chunks); their logits
must equal the full model's at the same positions, and their summed parameter gradients the
full model's gradients.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from support.worlds import gather_world

from planner.catalog.models import get_preset
from trainer.context_parallel import ContextParallel, apply_context_parallel, gather_sequence
from trainer.model import build_native_model, native_init_rule
from trainer.parallel import init_parameters

SEQ_LEN = 32
BATCH = 2


def test_positions_pair_early_and_late_chunks():
    group = None  # positions need no group
    assert ContextParallel(group, 2, 0).positions(8).tolist() == [0, 1, 6, 7]
    assert ContextParallel(group, 2, 1).positions(8).tolist() == [2, 3, 4, 5]
    every = torch.cat([ContextParallel(group, 4, r).positions(32) for r in range(4)])
    assert sorted(every.tolist()) == list(range(32))
    with pytest.raises(ValueError, match="not divisible by 2\\*cp=4"):
        ContextParallel(group, 2, 0).positions(10)


def _model(seed: int) -> torch.nn.Module:
    model = build_native_model(get_preset("tiny"), SEQ_LEN)  # GQA: 4 heads, 2 kv heads
    model.to_empty(device="cpu")
    init_parameters(model, seed, native_init_rule(model.args))
    model.init_buffers(torch.device("cpu"))
    return model


def _loss_sum(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(0, 1), reduction="sum")


def _worker(rank: int, world: int, port: int, queue) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)
    tokens = torch.randint(0, 512, (BATCH, SEQ_LEN))
    labels = torch.randint(0, 512, (BATCH, SEQ_LEN))

    full = _model(seed=7)
    full_logits = full(tokens)
    (_loss_sum(full_logits, labels) / labels.numel()).backward()

    model = _model(seed=7)
    mesh = torch.distributed.device_mesh.init_device_mesh("cpu", (world,), mesh_dim_names=("cp",))
    cp = apply_context_parallel(model, mesh["cp"])
    local_logits = model(cp.shard(tokens))
    (_loss_sum(local_logits, cp.shard(labels)) / labels.numel()).backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    for grad in grads.values():
        dist.all_reduce(grad)

    logits_error = (local_logits - cp.shard(full_logits)).abs().max().item()
    gathered_error = (gather_sequence(local_logits, cp) - full_logits).abs().max().item()
    grad_error = max((grads[name] - p.grad).abs().max().item() for name, p in full.named_parameters())
    queue.put((rank, logits_error, gathered_error, grad_error))
    dist.destroy_process_group()


@pytest.mark.parametrize("world", [4])  # 8 chunks; 2 ranks run in the layout tests
def test_context_parallel_matches_the_full_sequence(world):
    results = gather_world(_worker, world)
    for rank, logits_error, gathered_error, grad_error in results:
        assert logits_error < 1e-4, f"rank {rank}: logits differ by {logits_error:.2e}"
        assert gathered_error < 1e-4, f"rank {rank}: gathered logits differ by {gathered_error:.2e}"
        assert grad_error < 1e-5, f"rank {rank}: gradients differ by {grad_error:.2e}"
