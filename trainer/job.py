"""``trainplan emit``: turn a plan into a self-contained job directory.

The directory holds ``job.json`` (what the trainer reads) and ready-to-run launchers for one
node (``launch.sh``), Slurm (``slurm.sbatch``) and Kubernetes (``k8s.yaml``, a Kubeflow
PyTorchJob), rendered by trainer/job_scripts.py and trainer/job_k8s.py. Here: the plan's run
settings and defaults, and the checks of the target directory.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from planner.catalog.calibration import AppliedCalibration
from planner.fmt import one_line
from planner.plan import Plan
from trainer.files import CHECKPOINT_DIR, list_checkpoints, model_identity, saved_identity, write_atomic
from trainer.job_k8s import check_k8s_names, render_k8s
from trainer.job_readme import render_readme
from trainer.job_scripts import check_cluster, one_line_comment, render_launch_sh, render_slurm
from trainer.job_spec import (
    DEFAULT_K8S_IMAGE,
    DEFAULT_K8S_PVC,
    ClusterSettings,
    JobSpec,
    RunSettings,
    apply_run_overrides,
    memory_headroom,
    modelled_overrides,
    recalibrates,
)
from trainer.locks import no_run_in

JOB_FILES = ("job.json", "launch.sh", "slurm.sbatch", "k8s.yaml", "README.md")


@dataclass(frozen=True)
class EmitFlags:
    """How the command that emits names its job directory and its override in a refusal: emit's
    --out and --force; portfolio --emit names its directory --emit and has no --force (fleet51 L2:
    its refusal offered both flags it lacks)."""

    out: str = "--out"
    force: bool = True

    def or_force(self, words: str = "") -> str:
        """', or --force' (and ``words``) where the command has it, else ''."""
        return f", or --force{words}" if self.force else ""


def emit_job(
    plan: Plan,
    out_dir: Path,
    *,
    name: str | None,
    run: RunSettings,
    k8s_image: str = DEFAULT_K8S_IMAGE,
    k8s_pvc: str = DEFAULT_K8S_PVC,
    cluster: ClusterSettings | None = None,
    force: bool = False,
    calibration: AppliedCalibration | None = None,
    name_folder: bool = True,
    launcher: bool = False,
    check_only: bool = False,
    flags: EmitFlags = EmitFlags(),
    given: frozenset[str] | None = None,
) -> Path:
    """Write the job directory ``out_dir`` and return the path of its ``job.json`` (``check_only``:
    every check, nothing written: a portfolio checks all its jobs before it writes one). ``calibration``:
    the one a re-estimate for changed run settings uses (``apply_run_overrides``). ``cluster``: what
    slurm.sbatch and k8s.yaml pin beyond the plan (None: ClusterSettings' defaults). ``name_folder``
    False: the README and slurm.sbatch do not name the folder it was written to (a temporary folder
    its reader never sees, as the app's zip: trial s33). ``launcher``: the caller is the launcher
    that holds the job's lock, re-emitting between its launches (trainer/replan.py). ``flags``: how
    refusals name the directory and the override (``EmitFlags``). ``given``: the run settings the
    command named (emit's flags); the others an existing job in ``out_dir`` keeps (``kept_run``;
    None: ``run`` is all given).

    Refused: another stack's plan (``Plan.emittable``); unless ``force``, an infeasible plan, and a
    directory that holds something else (another job's plan, or files that are not a job: emit
    would overwrite its README.md)."""
    if not plan.emittable:  # not even with --force: the trainer runs trainplan's stack only
        raise ValueError(
            f"the plan is an estimate for the {plan.stack.value} stack; trainplan emits only plans made with"
            " --stack trainplan"
            if plan.attention is None
            else f"the plan assumes --attention {plan.attention.value}, an estimate; trainplan emits plans with"
            " the kernel its trainer's SDPA picks (no --attention)"
        )
    out_dir = _resolved_out_dir(out_dir, flags)
    if given is not None:
        run = kept_run(out_dir, run, given)
    run = warmup_schedule(checkpoint_interval(plan, _absolute_paths(run)))
    applied = _applied_plan(plan, run, calibration, force)
    check_input_paths(run)
    check_inputs_read(run, plan.model.vocab_size)
    check_k8s_names(k8s_image, k8s_pvc)
    spec = _job_spec(applied, name if name is not None else default_job_name(out_dir), run, k8s_image, k8s_pvc)
    spec = spec.model_copy(update={"cluster": cluster or ClusterSettings()})
    check_cluster(spec)
    # not even with --force: a live run would go on under the old job (trial49 M2)
    with contextlib.nullcontext() if launcher else no_run_in(out_dir):
        if not force:
            check_emit_target(out_dir, spec, flags)
        check_checkpoints_model(out_dir, spec, flags)
        return out_dir / "job.json" if check_only else _write_job(out_dir, spec, name_folder, flags)


def _resolved_out_dir(out_dir: Path, flags: EmitFlags) -> Path:
    """The job directory as an absolute path; refused where it has no printable name or does not
    resolve."""
    if not str(out_dir).strip() or any(not ch.isprintable() for ch in str(out_dir)):
        raise ValueError(f"--out {str(out_dir)!r}: give a directory name of printable characters")
    try:
        return Path(out_dir).expanduser().resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11: RuntimeError for a symlink loop
        raise ValueError(f"{flags.out} {out_dir}: cannot resolve the path ({exc})") from None


def _applied_plan(plan: Plan, run: RunSettings, calibration: AppliedCalibration | None, force: bool) -> Plan:
    """The plan the trainer runs (``apply_run_overrides``); unless ``force``, refused where it does
    not fit, naming what changed it where the plan itself fitted."""
    applied = apply_run_overrides(plan, run, calibration)
    if not applied.estimate.feasible and not force:
        reason = one_line_comment(applied.estimate.reason or "it does not fit")
        changed = list(modelled_overrides(plan, run))
        if recalibrates(plan, calibration):  # review s38: "with  the plan is" where only the file changed
            assert calibration is not None
            changed.append(f"calibration {calibration.record.file}")
        what = "the plan is" if not plan.estimate.feasible else f"with {', '.join(changed)} the plan is"
        raise ValueError(f"{what} infeasible ({reason}); fix it, or emit --force to write the job anyway")
    return applied


def _write_job(out_dir: Path, spec: JobSpec, name_folder: bool, flags: EmitFlags) -> Path:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file of that name, a read-only parent, ...
        raise ValueError(f"{flags.out} {out_dir}: cannot create the job directory ({exc.strerror})") from None
    job_json = spec.save(out_dir)
    write_atomic(out_dir / "launch.sh", render_launch_sh(spec), executable=True)
    write_atomic(out_dir / "slurm.sbatch", render_slurm(spec, out_dir if name_folder else None), executable=True)
    write_atomic(out_dir / "k8s.yaml", render_k8s(spec))
    write_atomic(out_dir / "README.md", render_readme(spec, out_dir if name_folder else None))
    return job_json


def check_checkpoints_model(out_dir: Path, spec: JobSpec, flags: EmitFlags = EmitFlags()) -> None:
    """Refuse, even with --force (documented for new settings and layouts, which a resume takes),
    a directory whose checkpoints hold another model: its run would refuse them only after the
    queue (trial49 L6). The fingerprint is the one the workers compare, of job.json as they read it."""
    saved = [(path, identity) for _, path in list_checkpoints(out_dir / CHECKPOINT_DIR)
             if (identity := saved_identity(path)) is not None]  # fmt: skip
    if not saved:
        return
    mine = model_identity(JobSpec.model_validate_json(spec.model_dump_json()).plan)
    for path, identity in reversed(saved):
        if not mine.holds(identity):
            raise ValueError(
                f"{flags.out} {out_dir}: its checkpoint {path.name} holds {identity.description}, but this plan is"
                f" for {mine.description}; a job's checkpoints resume the same model only"
                + (" (--force rewrites settings and layouts)" if flags.force else "")
                + f": emit into a new directory, or move {out_dir / CHECKPOINT_DIR} aside"
            )


def check_input_paths(run: RunSettings) -> None:
    """The data, tokenizer and weights the job names exist now, not first at ``run`` (after queueing)."""
    for field in ("data", "tokenizer", "hf_weights"):
        value = getattr(run, field)
        if value and value != "synthetic" and not Path(value).expanduser().exists():
            raise ValueError(f"--{field.replace('_', '-')} {value}: no such file or directory")


def check_inputs_read(run: RunSettings, vocab_size: int) -> None:
    """The tokenizer loads and fits the model's vocabulary, and the data path holds files the
    trainer reads: the data preparation's first checks (trainer/data.py ``prepare_data``), here
    rather than after the job waited in a queue (trial s45: a text file as ``--tokenizer``, and a
    folder of .md files as ``--data``, were written and refused by ``run``)."""
    from trainer.corpus import Tokenizer, list_input_files

    try:
        Tokenizer(run.tokenizer).check_fits(vocab_size)
    except ValueError as exc:
        raise ValueError(f"--tokenizer {exc}") from None
    if run.data != "synthetic":
        try:
            list_input_files(Path(run.data))
        except ValueError as exc:
            raise ValueError(f"--data {exc}") from None


def check_emit_target(out_dir: Path, spec: JobSpec, flags: EmitFlags = EmitFlags()) -> None:
    """Refuse a directory that holds another plan's job, or files that are not a job."""
    if not out_dir.is_dir():
        return
    existing = out_dir / "job.json"
    if existing.exists():
        try:
            other = JobSpec.load(out_dir)
        except ValueError:
            raise ValueError(
                f"{flags.out} {out_dir}: holds a job.json that is not a valid job; emit into a new directory"
                + flags.or_force(" to replace it")
            ) from None
        saved = list_checkpoints(out_dir / CHECKPOINT_DIR)
        if other.plan.model != spec.plan.model or other.plan.layout != spec.plan.layout:
            ckpts = " and its checkpoints" if saved else ""  # fleet51 L2: said where there were none
            raise ValueError(
                f"{flags.out} {out_dir}: holds another job ({one_line_comment(other.name)}:"
                f" {one_line_comment(other.plan.model.name)}, {other.plan.layout.describe()}){ckpts}; emit into a new"
                " directory" + flags.or_force()
            )
        changes = training_changes(other.run, spec.run)
        # trial s33: a new --lr was written over a run that resumed with the old one
        if changes and saved:
            raise ValueError(
                f"{flags.out} {out_dir}: holds this job's checkpoints (up to step {saved[-1][0]}) under other"
                f" settings ({', '.join(changes)}); a resumed run would change course at that step: emit into a new"
                " directory" + flags.or_force(" to resume under the new settings")
            )
        return
    if any(out_dir.iterdir()):
        raise ValueError(
            f"{flags.out} {out_dir}: the directory is not empty and holds no job; use a new one" + flags.or_force()
        )


# The run settings that change what a resumed run trains (the others: when it checkpoints,
# evaluates or stops early).
TRAINING_SETTINGS = (
    "steps", "data", "tokenizer", "seed", "lr", "min_lr_ratio", "warmup_steps", "weight_decay", "grad_clip",
    "freeze_layers", "hf_weights", "loss_chunk_tokens",
)  # fmt: skip


# The run settings a re-emit does not keep from the job it replaces: the plan's own figures,
# which emit derives from the new plan (``memory_headroom``) or applies to it (``pipeline_schedule``).
NOT_KEPT = ("memory_headroom", "pipeline_schedule")


def training_changes(old: RunSettings, new: RunSettings, names: tuple[str, ...] = TRAINING_SETTINGS) -> list[str]:
    """'lr 0.0003 -> 0.01' for each of ``names`` (default: ``TRAINING_SETTINGS``) that differs."""
    return [
        f"{name} {getattr(old, name)} -> {getattr(new, name)}"
        for name in names
        if getattr(old, name) != getattr(new, name)
    ]


def job_changes(old: JobSpec, new: JobSpec) -> list[str]:
    """What a re-emit changed of the job it replaced: its layout, and every run setting
    (checkpoint and evaluation cadence included), as 'layout fsdp -> pp=2', 'data /c -> synthetic'
    (runner53 H2: a layout change reset them unsaid)."""
    layout = (
        []
        if old.plan.layout == new.plan.layout
        else [f"layout {old.plan.layout.describe()} -> {new.plan.layout.describe()}"]
    )
    listed = tuple(name for name in RunSettings.model_fields if name not in NOT_KEPT)
    return layout + training_changes(old.run, new.run, listed)


def replaced_job(out_dir: Path) -> JobSpec | None:
    """The job a new emit into ``out_dir`` replaces (None: none, or not a valid one)."""
    try:
        path = Path(out_dir).expanduser()
        return JobSpec.load(path) if (path / "job.json").is_file() else None
    except (ValueError, OSError):
        return None


def kept_run(out_dir: Path, run: RunSettings, given: frozenset[str]) -> RunSettings:
    """``run`` with the run settings of the job already in ``out_dir`` that ``given`` does not
    name (runner53 H2: a layout change with --force resumed a corpus run on synthetic data). A
    setting the old job took from its plan (steps, checkpoint interval, warmup) follows the new
    plan instead; one it was given is kept."""
    if (old := replaced_job(out_dir)) is None:
        return run  # none, or not a job: check_emit_target refuses it, or --force replaces it
    derived = plan_defaults(old.plan, old.run.steps)
    keep = {
        name: getattr(old.run, name)
        for name in RunSettings.model_fields
        if name not in given and name not in NOT_KEPT and derived.get(name) != getattr(old.run, name)
    }
    if keep.get("warmup_steps", 0) >= keep.get("steps", run.steps):  # the new steps are fewer: derive it again
        keep.pop("warmup_steps")
    return run.model_copy(update=keep)


def plan_defaults(plan: Plan, steps: int) -> dict[str, int]:
    """The run settings emit derives from ``plan`` where none are given (a job of ``steps``)."""
    run = RunSettings(steps=steps)
    return {
        "steps": default_steps(plan),
        "checkpoint_every": checkpoint_interval(plan, run).checkpoint_every,
        "warmup_steps": warmup_schedule(run).warmup_steps,
    }


def default_steps(plan: Plan) -> int:
    """A job's steps when none are given: the plan's token budget at its batch (the training the plan
    is for; ``trainplan run --steps K`` trains a trial of K on that schedule), else RunSettings' own
    default for a plan without one (an estimate)."""
    return plan.training_steps or RunSettings.model_fields["steps"].default


# The learning-rate warmup of a job whose warmup is not given: this share of its steps, between
# RunSettings' own 5 (a short trial) and the 2,000 steps Llama 2 warmed up over (Touvron et al.
# 2023, sec. 2.2: "a warmup of 2000 steps"; trial s25: 5 steps of warmup for a 143k-step job).
WARMUP_FRACTION = 0.01
MAX_DEFAULT_WARMUP_STEPS = 2_000


def warmup_schedule(run: RunSettings) -> RunSettings:
    """``run`` with ``warmup_steps`` scaled to its steps (WARMUP_FRACTION, at least RunSettings'
    default, at most MAX_DEFAULT_WARMUP_STEPS), unless the caller set it; fewer than the job's steps,
    so its last step trains at the peak rate as emit says (trial s45: a 3-step trial warmed up over
    5, its rate never past 3/5 of the peak, where --warmup-steps 5 is refused for it)."""
    if "warmup_steps" in run.model_fields_set:
        return run
    floor = RunSettings.model_fields["warmup_steps"].default
    warmup = min(max(floor, round(run.steps * WARMUP_FRACTION)), MAX_DEFAULT_WARMUP_STEPS, run.steps - 1)
    return run.model_copy(update={"warmup_steps": warmup})


def checkpoint_interval(plan: Plan, run: RunSettings) -> RunSettings:
    """``run`` with ``checkpoint_every`` set to the plan's Young/Daly interval (in steps), unless
    the caller set it or the plan has none (an older plan file, or a zero failure rate)."""
    goodput = plan.estimate.goodput
    if "checkpoint_every" in run.model_fields_set or goodput is None or goodput.checkpoint_interval_steps is None:
        return run
    return run.model_copy(update={"checkpoint_every": max(1, goodput.checkpoint_interval_steps)})


def default_job_name(out_dir: Path) -> str:
    """The directory name made into a valid job name (``trainplan-job`` if nothing is left)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", out_dir.name).lstrip("._-")[:64].rstrip("-")
    return cleaned or "trainplan-job"


def _job_spec(plan: Plan, name: str, run: RunSettings, k8s_image: str, k8s_pvc: str) -> JobSpec:
    # The job carries the headroom the planner fitted the plan with, so the trainer checks
    # memory with the same rule (planner.model.memory.fits) and the same headroom.
    run = run.model_copy(update={"memory_headroom": memory_headroom(plan, run)})
    try:
        return JobSpec(name=name, plan=plan, run=run, k8s_image=k8s_image, k8s_pvc=k8s_pvc)
    except ValidationError as exc:
        error = exc.errors()[0]
        if error["loc"] == ("name",):
            raise ValueError(
                f"job name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            ) from None
        raise ValueError(f"job {name!r}: {one_line(exc, keep_prefix=True)}") from None


def _absolute_paths(run: RunSettings) -> RunSettings:
    """Local paths in the run settings made absolute, so the job does not depend on the cwd."""
    update = {}
    for field in ("data", "tokenizer", "hf_weights"):
        value = getattr(run, field)
        if value and value != "synthetic" and Path(value).expanduser().exists():
            update[field] = str(Path(value).expanduser().resolve())
    return run.model_copy(update=update)
