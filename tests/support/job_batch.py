"""Several trainer jobs one after another in each worker of one torchrun launch (tests only).

A CPU torchrun launch spends most of its time starting up: every rank imports torch (with
``torch._dynamo``, which the first optimizer step loads anyway) and warms DTensor's sharding
caches, about 8 s of CPU per rank on a 2-core CI machine, while a 12-step tiny job then takes
about 1 s. Tests that compare many layouts launch their jobs through this module
(``support.jobs.run_torchrun_batch``) so that start-up is paid once per launch, not per job.

Each job still runs ``trainer.train.main`` as it does under torchrun, with one difference: the
process group is made here, before ``main`` (whose ``init_distributed`` keeps a group it finds),
over a prefix of the agent's store of its own. Sequential groups on the bare store would reuse
its keys (the default group is always named "0"), and gloo could read a previous job's
addresses. ``main`` tears the group down as usual; DTensor's sharding caches are then cleared,
as they hold the previous job's meshes (equal by shape, but their groups are gone: "Could not
resolve the process group registered under the name 19"). A job's console output goes to
``<job>/worker-<rank>.log`` and its exit code to ``<job>/worker-<rank>.rc``; a job that raises
is recorded as exit 1 with its traceback in the log, and the next job still runs.

A job may name a world smaller than the launch's (``WORLD:JOB_DIR``): ranks ``0 .. WORLD-1``
run it, as a launch of that many processes would (on one node a rank's ``RANK`` and
``LOCAL_RANK`` are its index either way), and the other ranks go on to the next job. So one
launch of the largest world runs every job, and the start-up is paid once, not per world size.
A job dir holding ``seed-checkpoint`` (a checkpoint's path, from an earlier job of the batch)
starts from a copy of that checkpoint, made by rank 0 before it joins the job's process group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import traceback
from datetime import timedelta
from pathlib import Path

import torch.distributed as dist
from torch.distributed.tensor.debug import _clear_sharding_prop_cache

from support.jobs import BATCH_TIMEOUT_S
from trainer.train import main as train_main
from trainer.worker import freeze_imports

SEED_CHECKPOINT = "seed-checkpoint"
LOG_NAME = "worker-{rank}.log"
RC_NAME = "worker-{rank}.rc"
COLLECTIVE_TIMEOUT = timedelta(seconds=300)
JOB_TIMEOUT = timedelta(seconds=BATCH_TIMEOUT_S)  # run_torchrun_batch's limit for the whole launch


def _agent_store() -> dist.TCPStore:
    """A client of the store torchrun's agent hosts (``MASTER_ADDR:MASTER_PORT``)."""
    return dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        int(os.environ["WORLD_SIZE"]),
        is_master=False,
        timeout=timedelta(seconds=120),
    )


def run_job(job: Path, index: int, store: dist.TCPStore, rank: int, world_size: int) -> int:
    with (
        (job / LOG_NAME.format(rank=rank)).open("w") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        try:
            seed = job / SEED_CHECKPOINT
            if rank == 0 and seed.exists():  # the other ranks wait for rank 0 in init_process_group
                source = Path(seed.read_text())
                shutil.copytree(source, job / "ckpt" / source.name)
            prefix = dist.PrefixStore(f"job-{index}/", store)
            # A job that fails on some ranks must not hang the others for gloo's default 30 min.
            dist.init_process_group("gloo", store=prefix, rank=rank, world_size=world_size, timeout=COLLECTIVE_TIMEOUT)
            code = train_main([str(job), "--device", "cpu"])
        except Exception:  # a failed job is recorded and the batch goes on
            traceback.print_exc()
            code = 1
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
            _clear_sharding_prop_cache()
    (job / RC_NAME.format(rank=rank)).write_text(f"{int(code)}\n")
    return int(code)


def parse_job(arg: str, launch_world: int) -> tuple[Path, int]:
    """``JOB_DIR`` (the launch's world) or ``WORLD:JOB_DIR``."""
    world, sep, job = arg.partition(":")
    return (Path(job), int(world)) if sep else (Path(arg), launch_world)


def main(job_args: list[str]) -> int:
    # As in every worker (trainer/worker.py): trainer.train.main ends every job with a full
    # gc.collect(), which walked every object the imports made (torch, dynamo, the planner), 0.4-0.65 s
    # per job and rank on the 2-core machine, a fifth of a tiny job's CPU. Frozen, the import-time
    # heap is left out of every later collection; what the jobs make is still collected as before.
    freeze_imports()
    rank, launch_world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    store = _agent_store()
    jobs = [parse_job(arg, launch_world) for arg in job_args]
    codes = []
    for index, (job, world) in enumerate(jobs):
        if rank < world:
            codes.append(run_job(job, index, store, rank, world))
        if world < launch_world:  # the ranks left out wait for the job's end, not in the next job's set-up
            done = f"job-{index}/done"
            if rank == 0:
                store.set(done, "1")
            elif rank >= world:
                store.wait([done], JOB_TIMEOUT)
    return 0 if all(code == 0 for code in codes) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
