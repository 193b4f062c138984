"""What ``trainplan emit`` prints of the job it wrote (ui/cli_jobs.py): the job's steps,
checkpoints and optimizer, the notes of trainer/job_notes.py, and how to run it."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from planner.fmt import counted
from planner.plan import Plan
from ui.render import emit_json
from ui.render_calibration import recalibrated_words
from ui.terminal import out

if TYPE_CHECKING:
    from trainer.job_spec import JobSpec


def emitted(
    job_json: Path, *, as_json: bool, plan_step_s: float | None = None, replaced: JobSpec | None = None
) -> None:
    """``plan_step_s``: the plan's own step, where a calibration file other than its own estimated
    it again; ``replaced``: the JobSpec this emit wrote over (trainer/job_notes.py lists the changes)."""
    from trainer.job_notes import emit_notes
    from trainer.job_spec import JobSpec

    job_dir, spec = job_json.parent, JobSpec.load(job_json.parent)
    run, budget = spec.run, spec.plan.training_tokens
    if as_json:
        files = sorted(p.name for p in job_dir.iterdir() if p.is_file())
        emit_json(
            {
                "job_dir": str(job_dir),
                "files": files,
                "steps": run.steps,
                "checkpoint_every": run.checkpoint_every,
                "lr": run.lr,
                "warmup_steps": run.warmup_steps,
                "recalibrated_from_step_s": plan_step_s,
                "notes": emit_notes(spec, job_dir, replaced),
            }
        )
        return
    whose = f" (the plan's {budget:,.0f} tokens)" if budget and run.steps == spec.plan.training_steps else ""
    saves = f"a checkpoint every {counted(run.checkpoint_every, 'step')}"
    if not run.save_checkpoints:
        saves = "no checkpoints"
    elif run.checkpoint_every >= run.steps:  # the goodput interval of a long training, on a short job
        saves += ", so one at the end (or when stopped)"
    out.print(escape(f"job written to {job_dir}: {counted(run.steps, 'step')}{whose}, {saves}"))
    if plan_step_s is not None and (record := spec.plan.calibration) is not None:
        out.print(recalibrated_words(record.file, plan_step_s, spec.plan.estimate.time.step_s), markup=False)
    out.print(
        escape(
            f"optimizer: AdamW, peak lr {run.lr:g} after {counted(run.warmup_steps, 'warmup step')}, cosine to"
            f" {run.min_lr_ratio:g} x, weight decay {run.weight_decay:g} (--lr, --warmup-steps)"
        )
    )
    for note in emit_notes(spec, job_dir, replaced):
        out.print(note, markup=False)
    out.print(escape(run_it(spec.plan, job_dir, run.steps)))


def run_it(plan: Plan, job_dir: Path, steps: int) -> str:
    """emit's "run it:" line: shell words (trial s49: a path with spaces was printed unquoted), and
    on a multi-node plan the command of each node, or the cluster scripts."""
    from trainer.job_readme import per_node, run_commands

    command, _launch = run_commands(plan, job_dir)
    if plan.num_nodes > 1:
        sbatch = shlex.quote(str(job_dir / "slurm.sbatch"))
        return f"run it: sbatch {sbatch}; Kubernetes: k8s.yaml (README.md); by hand {per_node(plan)}: {command}"
    trial = f"; a trial of its first steps: {command} --steps 20" if steps > 20 else ""
    return f"run it: {command}{trial}"
