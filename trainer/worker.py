"""The worker torchrun starts: ``python -m trainer.worker JOB_DIR [--device cpu|cuda] [--steps K]``,
trainer/train.py's arguments and exit codes.

It is light on purpose: it gives SIGINT and SIGTERM their default action (``stop_at_once``) before
``trainer.train`` imports torch (seconds; longer with CUDA), where Ctrl-C was a KeyboardInterrupt
traceback from every rank. ``python -m trainer.train`` still works, for jobs emitted before.
"""

from __future__ import annotations

import sys

from trainer.preemption import stop_at_once

WORKER_MODULE = "trainer.worker"  # what torchrun starts: `trainplan run` and the emitted scripts


def main(argv: list[str] | None = None) -> int:
    with stop_at_once():
        from trainer.train import main as train_main  # torch: seconds, so after the signals are set

        return train_main(argv)


if __name__ == "__main__":
    sys.exit(main())
