"""Review49 M2: every rank makes the same choice at a stop signal (finish the step, or stop at once),
from the figures each step boundary's all-reduce agrees on; ranks that chose from their own clocks
and save times chose apart near the grace, and the finishing ones hung until the launcher's SIGKILL."""

from __future__ import annotations

import torch
import torch.distributed as dist
from support.worlds import gather_world

from trainer.preemption import choose_stop
from trainer.session_stop import RunStops
from trainer.step import Heartbeat

GRACE_S = 30.0  # 80 %: 24 s for a step and a save
# Rank 0's own figures fit in the grace (10 s + 1 s); rank 1's do not (12 s + 20 s).
OWN_STEP_S, OWN_SAVE_S, OWN_DONE = (10.0, 12.0), (1.0, 20.0), (7, 1)


def _stop_worker(rank: int, world: int, port: int, queue) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    stops = RunStops(True, OWN_SAVE_S[rank], torch.device("cpu"), Heartbeat(), last_words=lambda: None)
    try:
        stops.resumed(3, last_saved_step=3)
        stops.boundary(4, OWN_STEP_S[rank], failure=False, loop_ends=False)  # step 4 trained
        stops.step_begins()  # step 5 in flight, each rank at its own micro-batch
        stops.heartbeat.tick(OWN_DONE[rank], 8)
        choice = choose_stop("SIGTERM", stops.point(), GRACE_S)
        queue.put((rank, stops.agreed, choice.at_once))
    finally:
        stops.flag.close()
        dist.destroy_process_group()


def test_two_ranks_with_their_own_clocks_and_save_times_choose_alike():
    (_, agreed_0, at_once_0), (_, agreed_1, at_once_1) = gather_world(_stop_worker, 2)
    assert agreed_0 == agreed_1
    assert (agreed_0.step_s, agreed_0.save_s) == (12.0, 20.0)  # the slowest rank's
    assert at_once_0 and at_once_1


def test_a_step_begins_with_no_micro_batch_counted(in_process):
    """Review49 L1: at a step's first instant the last step's count stood ("8 of 8 done", 0 s left)."""
    dist.init_process_group("gloo", world_size=1, rank=0)
    heartbeat = Heartbeat()
    assert heartbeat.micro_batch is None
    stops = RunStops(True, 1.0, torch.device("cpu"), heartbeat, last_words=lambda: None)
    try:
        stops.step_begins()
        heartbeat.tick(1, 2)
        stops.step_ends()
        stops.boundary(1, 0.5, failure=False, loop_ends=False)
        stops.step_begins()
        assert stops.point().micro_batch is None and stops.point().in_step_s is not None
    finally:
        stops.flag.close()
        dist.destroy_process_group()
