"""What ``emit`` says of a job beside its summary, before anyone pays for its GPUs (runner53):
what it replaced of the job in its directory, its data against its tokens, its checkpoints' disk
and, on several nodes, the Kubernetes image it names. One rule each, in trainer/job.py,
trainer/data_budget.py, trainer/job_disk.py and trainer/job_k8s.py; the UIs print these lines."""

from __future__ import annotations

from pathlib import Path

from trainer.data_budget import data_budget, prepared_train_tokens
from trainer.job import job_changes
from trainer.job_disk import checkpoint_disk_words
from trainer.job_k8s import image_note
from trainer.job_spec import JobSpec


def emit_notes(spec: JobSpec, job_dir: Path, replaced: JobSpec | None = None) -> list[str]:
    """The lines, in the order emit prints them (``replaced``: the job the emit wrote over)."""
    notes = []
    if replaced is not None and (changes := job_changes(replaced, spec)):
        notes.append(f"changed from the job it replaces: {', '.join(changes)}")
    budget = data_budget(spec, prepared_train_tokens(job_dir, spec))
    if (data := budget.words(spec.run.data)) is not None:
        notes.append(data)
    if (disk := checkpoint_disk_words(spec)) is not None:
        notes.append(disk)
    if spec.plan.num_nodes > 1 and (image := image_note(spec.k8s_image)) is not None:
        notes.append(f"k8s.yaml: {image}")
    return notes
