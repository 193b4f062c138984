"""What torch's ``loss_parallel`` cross-entropy (trainplan's trainer and torchtitan at tp > 1)
allocates in its backward, counted with the autograd profiler on a one-rank CPU mesh, against the
planner's bytes per logit (``ModelingSettings.loss_parallel_bytes_per_logit`` and, for the
unsharded loss, ``loss_bytes_per_logit``)."""

from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.autograd.profiler import profile
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor
from torch.distributed.tensor.parallel import loss_parallel

from planner.model.settings import DEFAULT_SETTINGS

TOKENS, VOCAB = 512, 1024
FP32_LOGITS = TOKENS * VOCAB * 4


def backward_allocations(parallel: bool) -> list[str]:
    """The ops of the loss backward that allocate an fp32 tensor of the logits' shape, in order."""
    logits = torch.randn(TOKENS, VOCAB, dtype=torch.bfloat16)
    labels = torch.randint(0, VOCAB, (TOKENS,))
    if parallel:
        mesh = init_device_mesh("cpu", (1,))
        logits = distribute_tensor(logits, mesh, [Shard(1)])
    logits.requires_grad_()
    with loss_parallel() if parallel else contextlib.nullcontext():
        loss = F.cross_entropy(logits.float(), labels)
        with profile(profile_memory=True) as prof:
            loss.backward()
    events = sorted(prof.function_events, key=lambda e: e.time_range.start)
    return [e.name for e in events if e.self_cpu_memory_usage == FP32_LOGITS]


def test_the_unsharded_loss_backward_holds_twelve_bytes_a_logit():
    # beside the saved fp32 log-softmax: nll_loss's gradient, then log-softmax's (3 x 4 bytes)
    allocations = backward_allocations(parallel=False)
    assert len(allocations) == 2
    assert DEFAULT_SETTINGS.loss_bytes_per_logit == 4 * (1 + len(allocations))


def test_the_loss_parallel_backward_holds_sixteen_bytes_a_logit():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        allocations = backward_allocations(parallel=True)
    finally:
        dist.destroy_process_group()
    # (zeros_like(x) + exp(x)) * grad: zeros, exp, their sum, the product. When the add returns,
    # the saved log-softmax x, the zeros, exp(x) and the sum are alive at once: 4 x 4 bytes (exp's
    # temporary goes at CPython's decref after the add, before the product is allocated).
    assert [name.split("::")[-1] for name in allocations] == ["empty_strided", "exp", "add", "mul"]
    assert DEFAULT_SETTINGS.loss_parallel_bytes_per_logit == 4 * (1 + 3)
