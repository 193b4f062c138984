"""The disk a job's checkpoints take, from the planner's own figure of one checkpoint
(planner/model/goodput.py ``checkpoint_bytes``): said by emit and in the job's README,
slurm.sbatch and k8s.yaml (runner53 M2: a 70B job kept two 0.85 TB checkpoints plus one being
written, on a shared file system, and nothing said how much room that takes)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.fmt import file_size
from planner.model.goodput import checkpoint_bytes
from planner.model.stacks import STACK_SETTINGS
from trainer.job_spec import JobSpec


@dataclass(frozen=True)
class CheckpointDisk:
    per_checkpoint_bytes: float  # one checkpoint, all ranks' shards
    kept: int  # run.keep_checkpoints
    weights: str = "fp32"  # the weights' format in it: bf16 in pure bf16 (the plan's optimizer_precision)

    @property
    def needed_bytes(self) -> float:
        """The kept checkpoints and the one being written, before the oldest is deleted
        (trainer/checkpoint.py prunes after a save completes)."""
        return self.per_checkpoint_bytes * (self.kept + 1)

    def words(self) -> str:
        return (
            f"checkpoints: {self.kept} kept x {file_size(self.per_checkpoint_bytes)} ({self.weights} weights and AdamW"
            f" state) + 1 being written: {file_size(self.needed_bytes)} free needed on the job directory's"
            " file system"
        )


def checkpoint_disk(spec: JobSpec) -> CheckpointDisk | None:
    """The job's checkpoint disk need; None where it saves none (--no-checkpoints)."""
    if not spec.run.save_checkpoints:
        return None
    formats = spec.plan.optimizer_precision  # pure bf16 saves bf16 weights and moments (bf16pure55: said fp32)
    per = checkpoint_bytes(spec.plan.model, formats.applied(STACK_SETTINGS[spec.plan.stack]))
    weights = "bf16" if formats.pure_bf16 else "fp32"
    return CheckpointDisk(per_checkpoint_bytes=per, kept=spec.run.keep_checkpoints, weights=weights)


def checkpoint_disk_words(spec: JobSpec) -> str | None:
    """``CheckpointDisk.words`` of the job (None: it saves no checkpoints)."""
    disk = checkpoint_disk(spec)
    return None if disk is None else disk.words()
