"""A gloo world of a few processes inside one test (torch.multiprocessing), for the trainer tests
that check a collective rule on more ranks than a torchrun launch of the suite would hold."""

from __future__ import annotations

import socket
from collections.abc import Callable

import torch.multiprocessing as mp

# What every rank imports: a forkserver imports it once and forks each rank from there. Spawned
# ranks each imported torch and the trainer themselves, ~3 s of CPU a rank (8 ranks: ~25 s of a
# 2-core CI machine). The server only imports (it runs no torch op), so a rank forked from it
# starts as a DataLoader worker forked after ``import torch`` does.
PRELOAD = ["torch", "torch.distributed", "trainer.train"]


def gather_world(worker: Callable, world: int) -> list:
    """``worker(rank, world, port, queue)`` on ranks ``0 .. world-1`` (``port``: a free one on
    127.0.0.1 for ``init_method``); each rank puts one result on ``queue``: the results, sorted."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    context = mp.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # no effect where this process's server already runs
    queue = context.SimpleQueue()
    mp.start_processes(worker, args=(world, port, queue), nprocs=world, start_method="forkserver")
    return sorted(queue.get() for _ in range(world))
