"""``job.json``: a plan plus the training-run settings. The trainer reads only this.

Run settings that change the plan (``pipeline_schedule``) are applied to it once, when the job
is emitted (:func:`apply_run_overrides`): the trainer reads the layout only from ``job.plan``.
Where a run setting changes what the planner modelled (the schedule, ``loss_chunk_tokens``), emit
estimates the plan again, so ``job.plan.estimate`` predicts the run the trainer makes.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, model_validator

from planner.catalog.calibration import AppliedCalibration
from planner.fmt import one_line
from planner.frozen import FROZEN
from planner.layout import Implementation, Layout, PipelineSchedule
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stacks import STACK_SETTINGS
from planner.plan import Plan
from trainer.files import read_capped, write_atomic

JOB_SCHEMA_VERSION = 1
MAX_SEED = 2**32 - 1  # numpy's seed range; torch takes it too
MAX_JOB_BYTES = 16_000_000  # job.json is a few KB: refuse /dev/zero and the like before reading
# Global batches an evaluation may take (Session.evaluate): 100 of Llama 3.1 405B's 16M tokens are 1.6B
# tokens, far past any validation set (review s46 L5: the cap of 10,000 was set when it counted micro-batches).
MAX_EVAL_BATCHES = 100
EVAL_WORK_FACTOR = 10  # evaluation may cost at most this many times the training between evaluations


class RunSettings(BaseModel):
    """Settings of one training run that are not part of the plan."""

    model_config = FROZEN
    steps: int = Field(50, ge=1)
    checkpoint_every: int = Field(20, ge=1)
    keep_checkpoints: int = Field(2, ge=1)
    save_checkpoints: bool = True  # False: benchmarks that must not write model-sized files
    data: str = "synthetic"  # "synthetic" or a path to text/jsonl/parquet files
    tokenizer: str | None = None  # path to a local tokenizer.json; None = byte-level
    seed: int = Field(1234, ge=0, le=MAX_SEED)
    lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    min_lr_ratio: float = Field(0.1, ge=0, le=1)
    warmup_steps: int = Field(5, ge=0)
    weight_decay: float = Field(0.01, ge=0, allow_inf_nan=False)
    grad_clip: float = Field(1.0, gt=0, allow_inf_nan=False)
    eval_every: int = Field(0, ge=0)  # 0 = no validation during training
    # Global batches of the split each evaluation (and the final test) takes: the plan's batch of
    # sequences each, so the set is the same on every layout of that batch (Session.evaluate).
    eval_batches: int = Field(2, ge=1, le=MAX_EVAL_BATCHES)
    early_stop_patience: int = Field(0, ge=0)
    probe_steps: int = Field(3, ge=0)  # validation probe before the long run
    max_bad_steps: int = Field(5, ge=1)  # NaN/inf steps tolerated before stopping
    # Overrides the plan's schedule; applied to job.plan at emit (apply_run_overrides), kept as a record.
    pipeline_schedule: PipelineSchedule | None = None
    freeze_layers: int = Field(0, ge=0)  # fine-tuning: freeze the lowest N blocks
    hf_weights: str | None = None  # local directory with pretrained weights (--impl hf)
    # LM head + cross-entropy over this many tokens at a time, never the full fp32 logits
    # (trainer/loss.py); 0 = the full-logits loss. Only where the head is not tensor-parallel
    # (tp = 1). The planner models the default: ModelingSettings.loss_chunk_tokens.
    loss_chunk_tokens: int = Field(DEFAULT_SETTINGS.loss_chunk_tokens, ge=0)
    # Fit-rule headroom for the trainer's memory checks; None = the plan's own (the planner's,
    # plan.estimate.memory.headroom_fraction), which emit writes into job.json.
    memory_headroom: float | None = Field(None, ge=0, lt=1)


def memory_headroom(plan: Plan, run: RunSettings) -> float:
    """The headroom the trainer checks memory with: the run's, else the one the planner fitted the plan with."""
    return plan.estimate.memory.headroom_fraction if run.memory_headroom is None else run.memory_headroom


def apply_run_overrides(plan: Plan, run: RunSettings, calibration: AppliedCalibration | None = None) -> Plan:
    """The plan the trainer runs: ``plan`` with the run settings' overrides applied (a new frozen
    Plan; the layout is re-validated). Where a run setting changes what the planner modelled (the
    pipeline schedule, the loss chunk), the plan is estimated again with ``calibration`` (None: the
    built-in catalog; ``trainplan emit`` passes the calibration it applies, which the new plan
    records), so the job's prediction and feasibility describe what the trainer will do. A
    ``calibration`` other than the one the plan was made with is applied too (``recalibrates``;
    trial s38: emit wrote the plan's uncalibrated step while explain showed the calibrated one)."""
    if not modelled_overrides(plan, run) and not recalibrates(plan, calibration):
        return plan
    schedule = _schedule_override(plan, run)
    layout = plan.layout if schedule is None else _with_schedule(plan, schedule)
    modelled = STACK_SETTINGS[plan.stack]
    from planner.api import restack  # the search's solver stack: not imported where jobs are only read

    try:
        return restack(
            plan.model_copy(update={"layout": layout}),
            plan.stack,
            calibration=calibration,
            settings=modelled.but(loss_chunk_tokens=run.loss_chunk_tokens),
        )
    except ValueError as exc:  # a rule of the layout that needs the training settings too
        raise ValueError(f"job: the run settings cannot run the plan: {exc}") from None


def recalibrates(plan: Plan, calibration: AppliedCalibration | None) -> bool:
    """Whether ``calibration`` is another file than the one ``plan`` was made with (by content)."""
    if calibration is None:
        return False
    return plan.calibration is None or plan.calibration.sha256 != calibration.record.sha256


def modelled_overrides(plan: Plan, run: RunSettings) -> tuple[str, ...]:
    """The run settings that differ from what the plan's estimate modelled, as ``name value``."""
    changed = []
    if (schedule := _schedule_override(plan, run)) is not None:
        changed.append(f"pipeline_schedule {schedule.value}")
    if run.loss_chunk_tokens != STACK_SETTINGS[plan.stack].loss_chunk_tokens:
        changed.append(f"loss_chunk_tokens {run.loss_chunk_tokens}")
    return tuple(changed)


def _schedule_override(plan: Plan, run: RunSettings) -> PipelineSchedule | None:
    """The run's pipeline schedule where it differs from the plan's."""
    schedule = run.pipeline_schedule
    return schedule if schedule is not None and schedule != plan.layout.pp_schedule else None


def _with_schedule(plan: Plan, schedule: PipelineSchedule) -> Layout:
    try:
        return Layout.model_validate({**dict(plan.layout), "pp_schedule": schedule})
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise ValueError(
            f"job: pipeline_schedule {schedule.value} cannot run the plan's layout {plan.layout.describe()} ({reason})"
        ) from None


# A job's name: it names the job's directory, its scripts' job and, cleaned, its Kubernetes
# resources (trainer/job.py k8s_name); portfolio jobs files are checked against it too.
JOB_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
# k8s.yaml's container image and PersistentVolumeClaim (emit --k8s-image / --k8s-pvc): an image
# reference (registry/name:tag@digest) and a claim name (a DNS-1123 subdomain).
DEFAULT_K8S_IMAGE = "trainplan:latest"
DEFAULT_K8S_PVC = "trainplan-jobs"
K8S_IMAGE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$"
K8S_PVC_PATTERN = r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$"
# The cluster settings' values (ClusterSettings): a Slurm GRES type ("h100", "nvidia_h100_80gb_hbm3"),
# a Slurm feature expression (--constraint "h100&ib", "[rack1|rack2]"), Slurm partition names
# ("gpu", "h100,h100-low"), a Slurm time limit
# (minutes, [days-]hours:minutes[:seconds], days-hours, or UNLIMITED), a Kubernetes label value
# (DNS label characters, at most 63) and an extended resource with an optional count ("rdma/ib=1").
SLURM_GRES_TYPE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
SLURM_CONSTRAINT_PATTERN = r"^[A-Za-z0-9_.,&|()\[\]*:-]{1,256}$"
# sbatch --partition: one partition name, or a comma list of them (the first that can start it)
SLURM_PARTITION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(,[A-Za-z0-9][A-Za-z0-9._-]{0,63}){0,15}$"
SLURM_TIME_PATTERN = r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+(:\d{1,2}(:\d{1,2})?)?|UNLIMITED|INFINITE)$"
K8S_LABEL_VALUE_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$"
K8S_RESOURCE_PATTERN = (
    r"^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?(=[1-9]\d{0,3})?$"
)
# --k8s-gpu-product none: no GPU node selector (a cluster without its GPU vendor's node labeller)
K8S_NO_GPU_SELECTOR = "none"


class ClusterSettings(BaseModel):
    """What slurm.sbatch and k8s.yaml ask the cluster for beyond the plan's own figures (emit's
    --slurm-* and --k8s-* flags; None each: derived from the plan, trainer/job_scripts.py). Kept in
    the job so that a re-emit (run --auto-replan) writes the same scripts."""

    model_config = FROZEN
    # Slurm names GPU types per site (gres.conf): pinned only when given, as --gpus-per-node=TYPE:G
    slurm_gpu_type: str | None = Field(None, pattern=SLURM_GRES_TYPE_PATTERN)
    slurm_constraint: str | None = Field(None, pattern=SLURM_CONSTRAINT_PATTERN)  # node features
    slurm_partition: str | None = Field(None, pattern=SLURM_PARTITION_PATTERN)  # None: the cluster's default
    slurm_time: str | None = Field(None, pattern=SLURM_TIME_PATTERN)  # None: the plan's p80 allocation
    # The GPU vendor's product label (nvidia.com/gpu.product, amd.com/gpu.product-name: trainer/cluster.py
    # K8S_VENDORS); None: the catalog GPU's; K8S_NO_GPU_SELECTOR: none
    k8s_gpu_product: str | None = Field(None, pattern=K8S_LABEL_VALUE_PATTERN)
    # The RDMA device plugin's resource NCCL reaches InfiniBand/RoCE through ("rdma/ib", "=N" a count
    # other than 1); None: none requested, so a multi-node job's NCCL falls back to TCP sockets.
    k8s_rdma_resource: str | None = Field(None, pattern=K8S_RESOURCE_PATTERN)


class JobSpec(BaseModel):
    model_config = FROZEN
    schema_version: int = JOB_SCHEMA_VERSION
    name: str = Field(pattern=JOB_NAME_PATTERN)
    plan: Plan
    run: RunSettings = RunSettings()
    # Kept in the job so that a re-emit (run --auto-replan) writes the same k8s.yaml (review s27).
    k8s_image: str = Field(DEFAULT_K8S_IMAGE, pattern=K8S_IMAGE_PATTERN)
    k8s_pvc: str = Field(DEFAULT_K8S_PVC, pattern=K8S_PVC_PATTERN)
    cluster: ClusterSettings = ClusterSettings()

    @model_validator(mode="after")
    def _known_schema(self) -> JobSpec:
        # trial s27: schema_version 99 ran with no word (Plan.check refuses an unknown plan version)
        if self.schema_version != JOB_SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {self.schema_version}: this trainplan runs job files of version"
                f" {JOB_SCHEMA_VERSION}; emit the job again with it"
            )
        return self

    @model_validator(mode="after")
    def _overrides_applied(self) -> JobSpec:
        schedule = self.run.pipeline_schedule
        if schedule is not None and schedule != self.plan.layout.pp_schedule:
            raise ValueError(
                f"run.pipeline_schedule {schedule.value} is not applied to the plan (its pp_schedule is "
                f"{self.plan.layout.pp_schedule.value}): emit the job again, which applies run overrides"
            )
        return self

    @model_validator(mode="after")
    def _evaluation_bounded(self) -> JobSpec:
        run = self.run  # an evaluation's global batch costs a step's forward pass
        if run.eval_every and run.eval_batches > EVAL_WORK_FACTOR * run.eval_every:
            raise ValueError(
                f"run.eval_batches {run.eval_batches} every {run.eval_every} steps would evaluate over"
                f" {EVAL_WORK_FACTOR}x the {run.eval_every} global batches trained in between;"
                " evaluate less often or on fewer batches"
            )
        return self

    def save(self, job_dir: str | Path) -> Path:
        return write_atomic(Path(job_dir) / "job.json", self.model_dump_json(indent=2) + "\n")

    @classmethod
    def load(cls, job_dir: str | Path) -> JobSpec:
        path = Path(job_dir) / "job.json"
        try:
            return cls.model_validate_json(read_capped(path, MAX_JOB_BYTES))
        except OSError as exc:
            # calib50 L5: an empty directory read as "job.json: cannot read job file"
            if isinstance(exc, FileNotFoundError) and Path(job_dir).is_dir():
                raise ValueError(
                    f"{job_dir}: not a job directory (no job.json): trainplan emit PLAN --out {job_dir} writes one"
                ) from None
            raise ValueError(f"{path}: cannot read job file ({exc.strerror})") from None
        except ValidationError as exc:  # name the field (or the JSON error), not only the class
            raise ValueError(f"{path}: not a valid trainplan job ({one_line(exc, keep_prefix=True)})") from None
        except Exception as exc:
            raise ValueError(f"{path}: not a valid trainplan job ({one_line(exc)})") from None


def run_problem(plan: Plan, run: RunSettings) -> str | None:
    """What in the run settings the plan cannot take (None: nothing): checked by the launcher
    before torchrun starts (trainer/launch.py ``run_job``) and by every worker (trainer/probe.py
    ``check_plan``; trial s37: freeze_layers past the model's layers was found by the workers only,
    ~10 s in, after a cluster's queue)."""
    if run.freeze_layers > plan.model.num_layers:
        return f"job: freeze_layers={run.freeze_layers} exceeds the model's {plan.model.num_layers} layers"
    if run.hf_weights is not None and plan.training.impl != Implementation.HF:
        return "job: hf_weights (pretrained weights) needs impl 'hf'"
    if run.hf_weights is not None and not Path(run.hf_weights).is_dir():
        return f"job: hf_weights {run.hf_weights} is not a directory"
    return None


def checked_job(job_dir: str | Path) -> JobSpec:
    """``JobSpec.load`` with its plan's rules checked again (``Plan.check``), as explain and emit
    check a plan file: job.json may be edited after emit, and its recorded estimate would then be
    of another configuration (trial s37: a hand-edited dp_shard trained 4 ranks and reported
    against the 2-rank prediction, 2x off, where explain refused the same file)."""
    spec = JobSpec.load(job_dir)
    try:
        spec.plan.check()
    except (ValueError, RecursionError) as exc:
        raise ValueError(
            f"{Path(job_dir) / 'job.json'}: its plan does not pass this trainplan's checks ({one_line(exc)}):"
            " job.json was edited after emit, or emitted by another version; emit the job again"
        ) from None
    return spec


def check_estimate_current(plan: Plan, run: RunSettings, local_procs: int, device_type: str) -> float:
    """The plan's memory estimated again from its model, layout and batch, before anything is
    allocated: job.json may have been edited after emit (a larger micro-batch or vocabulary), and
    its recorded estimate would then let it through. Refused when the recorded estimate says the
    plan fits its GPU and the fresh one does not, or (on CPU) when this node's processes would need
    more than the machine's memory. Returns the fresh reserved GiB per process."""
    from planner.catalog.hardware import load_catalog  # the planner's model, without its search
    from planner.model.attention_choice import with_attention
    from planner.model.estimate import estimate_plan
    from planner.model.memory import fits

    settings = with_attention(STACK_SETTINGS[plan.stack].but(loss_chunk_tokens=run.loss_chunk_tokens), plan.attention)
    try:
        catalog = load_catalog()
        # trainer_rules off: the trainer's own checks (trainer/probe.py) say which rule, in its words
        fresh = estimate_plan(plan, catalog, settings, trainer_rules=False).memory
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"job: the plan cannot be estimated again ({one_line(exc)}): emit it again") from None
    needed = fresh.reserved_gib + DEFAULT_SETTINGS.cuda_context_bytes / 2**30
    if plan.estimate.feasible and not fits(needed, fresh.capacity_gib, fresh.headroom_fraction):
        raise ValueError(
            f"job: a fresh estimate of the plan needs {needed:.1f} GiB per GPU, more than {plan.gpu}'s"
            f" {fresh.capacity_gib:.1f} GiB allows, though job.json's estimate says"
            f" {plan.estimate.memory.reserved_gib:.1f} GiB: job.json was edited after emit; emit the job again"
        )
    if device_type == "cpu" and fresh.reserved_gib * local_procs > _host_memory_gib():
        raise ValueError(
            f"job: {local_procs} processes x {fresh.reserved_gib:.1f} GiB (a fresh estimate of the plan) exceed"
            f" this machine's {_host_memory_gib():.1f} GiB of memory"
        )
    return fresh.reserved_gib


def _host_memory_gib() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
