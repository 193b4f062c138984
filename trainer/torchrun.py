"""torchrun for ``trainplan run``: the same launcher, one summary line instead of a traceback.

``python -m trainer.torchrun ARGS`` takes torchrun's own arguments. When a worker fails,
torchrun's entry point lets ``ChildFailedError`` escape as a Python traceback with a boxed
failure table, after the trainer has already printed its one-line reason. Here that error
becomes one line naming the failed ranks and exit codes, and the launcher exits 1 as torchrun
does (``trainer.launch`` then returns the trainer's own code from ``exit_status.json``). The
emitted ``launch.sh`` / ``slurm.sbatch`` / ``k8s.yaml`` keep calling plain torchrun.
"""

from __future__ import annotations

import os
import sys

from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.run import determine_local_world_size, parse_args, run

from planner.errors import ExitCode


def failure_line(error: ChildFailedError) -> str:
    """``training failed: rank 0 exited with code 2, rank 1 with code 2``."""
    parts = [
        f"rank {rank} {'exited with code' if i == 0 else 'with code'} {failure.exitcode}"
        for i, (rank, failure) in enumerate(sorted(error.failures.items()))
    ]
    return "training failed: " + ", ".join(parts) + " (the workers' own messages are above)"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if "OMP_NUM_THREADS" not in os.environ and determine_local_world_size(args.nproc_per_node) > 1:
        # torchrun's own default (one OpenMP thread per worker), without its warning banner
        os.environ["OMP_NUM_THREADS"] = "1"
    try:
        run(args)
    except ChildFailedError as error:
        print(failure_line(error), file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
