"""``trainplan emit``: turn a plan into a self-contained job directory.

The directory holds ``job.json`` (what the trainer reads) and ready-to-run launchers for one
node (``launch.sh``), Slurm (``slurm.sbatch``) and Kubernetes (``k8s.yaml``, a Kubeflow
PyTorchJob). Nothing user-supplied reaches a script unquoted: the job name must match the
JobSpec pattern, paths go through ``shlex.quote``, plan strings in comments are flattened to
one printable line, and the Kubernetes manifest is JSON (a subset of YAML) written by ``json``.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path

from pydantic import ValidationError

from planner.catalog.calibration import AppliedCalibration
from planner.fmt import counted, duration_words, one_line
from planner.plan import Plan
from trainer.files import CHECKPOINT_DIR, list_checkpoints, write_atomic
from trainer.job_spec import (
    DEFAULT_K8S_IMAGE,
    DEFAULT_K8S_PVC,
    K8S_IMAGE_PATTERN,
    K8S_PVC_PATTERN,
    JobSpec,
    RunSettings,
    apply_run_overrides,
    memory_headroom,
    modelled_overrides,
)
from trainer.worker import WORKER_MODULE

K8S_JOBS_MOUNT = "/jobs"  # where the PVC is mounted in the pods
# What each pod requests besides its GPUs, per worker process (trial s27a: it requested none, so
# its pods were BestEffort, the first Kubernetes evicts under memory pressure, and /dev/shm had no
# bound). Choices, not measured: a CUDA PyTorch worker holds a few GiB resident (context, libraries,
# the pinned staging of its shards); the loader reads a memmap in the same process, so one core for
# it and the rank's Python and three for NCCL's proxy and the checkpoint writer. /dev/shm: NCCL's
# intra-node buffers (PyTorch's tutorials CI gives 2 GB to two GPUs; NGC's docs, --shm-size=1g).
K8S_CPUS_PER_PROCESS = 4
K8S_HOST_GIB_PER_PROCESS = 8
K8S_SHM_GIB_PER_PROCESS = 1
RDZV_PORT = 29500  # c10d rendezvous port on the first node (Slurm)
JOB_FILES = ("job.json", "launch.sh", "slurm.sbatch", "k8s.yaml", "README.md")


def emit_job(
    plan: Plan,
    out_dir: Path,
    *,
    name: str | None,
    run: RunSettings,
    k8s_image: str = DEFAULT_K8S_IMAGE,
    k8s_pvc: str = DEFAULT_K8S_PVC,
    force: bool = False,
    calibration: AppliedCalibration | None = None,
) -> Path:
    """Write the job directory ``out_dir`` and return the path of its ``job.json``. ``calibration``:
    the one a re-estimate for changed run settings uses (``apply_run_overrides``).

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
    if not str(out_dir).strip() or any(not ch.isprintable() for ch in str(out_dir)):
        raise ValueError(f"--out {str(out_dir)!r}: give a directory name of printable characters")
    try:
        out_dir = Path(out_dir).expanduser().resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11: RuntimeError for a symlink loop
        raise ValueError(f"--out {out_dir}: cannot resolve the path ({exc})") from None
    run = warmup_schedule(checkpoint_interval(plan, _absolute_paths(run)))
    applied = apply_run_overrides(plan, run, calibration)
    if not applied.estimate.feasible and not force:
        reason = _one_line(applied.estimate.reason or "it does not fit")
        changed = ", ".join(modelled_overrides(plan, run))
        what = "the plan is" if not plan.estimate.feasible else f"with {changed} the plan is"
        raise ValueError(f"{what} infeasible ({reason}); fix it, or emit --force to write the job anyway")
    check_input_paths(run)
    check_k8s_names(k8s_image, k8s_pvc)
    spec = _job_spec(applied, name if name is not None else default_job_name(out_dir), run, k8s_image, k8s_pvc)
    if not force:
        check_emit_target(out_dir, spec)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file of that name, a read-only parent, ...
        raise ValueError(f"--out {out_dir}: cannot create the job directory ({exc.strerror})") from None
    job_json = spec.save(out_dir)
    write_atomic(out_dir / "launch.sh", render_launch_sh(spec), executable=True)
    write_atomic(out_dir / "slurm.sbatch", render_slurm(spec, out_dir), executable=True)
    write_atomic(out_dir / "k8s.yaml", render_k8s(spec))
    write_atomic(out_dir / "README.md", render_readme(spec, out_dir))
    return job_json


def check_input_paths(run: RunSettings) -> None:
    """The data, tokenizer and weights the job names exist now, not first at ``run`` (after queueing)."""
    for field in ("data", "tokenizer", "hf_weights"):
        value = getattr(run, field)
        if value and value != "synthetic" and not Path(value).expanduser().exists():
            raise ValueError(f"--{field.replace('_', '-')} {value}: no such file or directory")


def check_emit_target(out_dir: Path, spec: JobSpec) -> None:
    """Refuse a directory that holds another plan's job, or files that are not a job."""
    if not out_dir.is_dir():
        return
    existing = out_dir / "job.json"
    if existing.exists():
        try:
            other = JobSpec.load(out_dir)
        except ValueError:
            raise ValueError(
                f"--out {out_dir}: holds a job.json that is not a valid job; use --force to replace it"
            ) from None
        if other.plan.model != spec.plan.model or other.plan.layout != spec.plan.layout:
            raise ValueError(
                f"--out {out_dir}: holds another job ({_one_line(other.name)}: {_one_line(other.plan.model.name)}, "
                f"{other.plan.layout.describe()}) and its checkpoints; emit into a new directory, or --force"
            )
        changes = training_changes(other.run, spec.run)
        saved = list_checkpoints(out_dir / CHECKPOINT_DIR)
        if changes and saved:  # trial s33: a new --lr was written over a run that resumed with the old one
            raise ValueError(
                f"--out {out_dir}: holds this job's checkpoints (up to step {saved[-1][0]}) under other settings"
                f" ({', '.join(changes)}); a resumed run would change course at that step: emit into a new"
                " directory, or --force to resume under the new settings"
            )
        return
    if any(out_dir.iterdir()):
        raise ValueError(f"--out {out_dir}: the directory is not empty and holds no job; use a new one, or --force")


# The run settings that change what a resumed run trains (the others: when it checkpoints,
# evaluates or stops early).
TRAINING_SETTINGS = (
    "steps", "data", "tokenizer", "seed", "lr", "min_lr_ratio", "warmup_steps", "weight_decay", "grad_clip",
    "freeze_layers", "hf_weights", "loss_chunk_tokens",
)  # fmt: skip


def training_changes(old: RunSettings, new: RunSettings) -> list[str]:
    """'lr 0.0003 -> 0.01' for each of ``TRAINING_SETTINGS`` that differs."""
    return [
        f"{name} {getattr(old, name)} -> {getattr(new, name)}"
        for name in TRAINING_SETTINGS
        if getattr(old, name) != getattr(new, name)
    ]


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
    default, at most MAX_DEFAULT_WARMUP_STEPS), unless the caller set it."""
    if "warmup_steps" in run.model_fields_set:
        return run
    floor = RunSettings.model_fields["warmup_steps"].default
    warmup = min(max(floor, round(run.steps * WARMUP_FRACTION)), MAX_DEFAULT_WARMUP_STEPS)
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


def _one_line(text: object) -> str:
    """Any value made safe for a shell or YAML comment: printable characters on one line."""
    return "".join(ch if ch.isprintable() else " " for ch in str(text))


def procs_per_node(plan: Plan) -> int:
    if plan.num_gpus % plan.num_nodes:
        raise ValueError(f"plan: {plan.num_gpus} GPUs do not split evenly over {plan.num_nodes} nodes")
    return plan.num_gpus // plan.num_nodes


def _summary(spec: JobSpec) -> str:
    plan = spec.plan
    return _one_line(
        f"{plan.model.name} on {plan.num_gpus} x {plan.gpu} ({counted(plan.num_nodes, 'node')}), "
        f"layout {plan.layout.describe()}, predicted step {plan.estimate.time.step_s:.3g} s"
    )


# --------------------------------------------------------------------------- launch.sh


# The interpreter the scripts start: one with trainplan installed (trial s25: a bare `python`
# outside the venv failed with "No module named 'trainer'").
# (Namespaced: sbatch exports the submitting shell's environment, where a PYTHON or JOB_DIR of
# another tool's would otherwise take over; review s25.)
PYTHON_LINE = (
    'PYTHON="${TRAINPLAN_PYTHON:-python}"  # TRAINPLAN_PYTHON=/path/to/venv/bin/python unless that env is active'
)


def render_launch_sh(spec: JobSpec) -> str:
    nodes, procs = spec.plan.num_nodes, procs_per_node(spec.plan)
    several = (  # trial s33: "NODE_RANK=<0..0>" in a one-node job's script
        ""
        if nodes == 1
        else f"# Several nodes: on each node run  NODE_RANK=<0..{nodes - 1}> RDZV_ENDPOINT=<node-0 host>:{RDZV_PORT}"
        " bash launch.sh\n"
    )
    return f"""#!/usr/bin/env bash
# trainplan job {spec.name}: {_summary(spec)}
# One node:      bash launch.sh [trainer options, e.g. --steps 100]
{several}# `trainplan run` does the same with a lock, data preparation and automatic replanning.
# trainer.torchrun is torchrun that exits 143 on SIGTERM (preemption) and 130 on Ctrl-C, one line each.
set -euo pipefail
# A fresh rendezvous store per restart round: torchrun's shared store hands restarted workers the
# dead ones' addresses (pytorch/pytorch#135712); every node must agree on this setting.
export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1
JOB_DIR="$(cd -- "$(dirname -- "${{BASH_SOURCE[0]}}")" && pwd -P)"
{PYTHON_LINE}
NUM_NODES={nodes}
NPROC_PER_NODE={procs}
if [ "$NUM_NODES" -eq 1 ]; then
  exec "$PYTHON" -m trainer.torchrun --standalone --nnodes 1 --nproc-per-node "$NPROC_PER_NODE" \\
    -m {WORKER_MODULE} "$JOB_DIR" "$@"
fi
: "${{RDZV_ENDPOINT:?set RDZV_ENDPOINT=host:port of node 0 and NODE_RANK on each of the $NUM_NODES nodes}}"
exec "$PYTHON" -m trainer.torchrun --nnodes "$NUM_NODES" --nproc-per-node "$NPROC_PER_NODE" --node-rank "${{NODE_RANK:-0}}" \\
  --rdzv-backend c10d --rdzv-endpoint "$RDZV_ENDPOINT" --rdzv-id {shlex.quote(spec.name)} \\
  --max-restarts "${{MAX_RESTARTS:-0}}" \\
  -m {WORKER_MODULE} "$JOB_DIR" "$@"
"""


# --------------------------------------------------------------------------- slurm.sbatch


# Seconds before the --time limit at which Slurm sends SIGTERM (``--signal``), so the workers save
# and exit 143 instead of being killed with up to a checkpoint interval unsaved (trial s27: the
# script set none): at least two minutes, or three of the plan's checkpoint writes.
SLURM_SIGNAL_LEAD_MIN_S = 120
SLURM_SIGNAL_LEAD_WRITES = 3


def slurm_signal_lead_s(plan: Plan) -> int:
    write_s = plan.estimate.goodput.checkpoint_write_s if plan.estimate.goodput is not None else 0.0
    return max(SLURM_SIGNAL_LEAD_MIN_S, math.ceil(SLURM_SIGNAL_LEAD_WRITES * write_s))


def p80_factor(plan: Plan) -> float:
    """The plan's time at p80 over its model time (1 without a band): trial s28c, the script
    advised --time from the point estimate, 78 h, where the portfolio had scheduled 115 h."""
    e = plan.estimate
    p80 = e.time_h_at("p80")
    if p80 is None or not e.time_to_train_h:
        return 1.0
    # never below 1: a band below the model's figure is no reason to ask for less time
    return max(1.0, p80 / e.time_to_train_h)


def allocation_s(spec: JobSpec) -> tuple[float, float, float]:
    """One allocation's predicted wall time, at the model's figure and at p80, and its part that
    is not steps (start-up and checkpoint writes): the steps carry the slowest rank's, evaluation's
    and input stalls' shares the goodput model adds, and only they take the band's p80 factor
    (trial s33: "200 steps = 0.00 h" advised a --time limit below the ten-minute start-up).
    Failures end an allocation; they are not in it."""
    e, run, g = spec.plan.estimate, spec.run, spec.plan.estimate.goodput
    steps_s = run.steps * e.time.step_s
    if g is None:  # an older plan file: the steps alone
        return steps_s, steps_s * p80_factor(spec.plan), 0.0
    steps_s *= g.step_factor
    # every checkpoint_every steps, and at the end (Session.save_and_report saves the last step)
    writes = math.ceil(run.steps / run.checkpoint_every) if run.save_checkpoints else 0
    fixed = g.startup_s + writes * g.checkpoint_write_s
    return fixed + steps_s, fixed + steps_s * p80_factor(spec.plan), fixed


def _fixed_words(fixed_s: float) -> str:
    """What the sbatch figure holds beside the steps (nothing for an older plan without goodput)."""
    return f", start-up and checkpoint writes ({duration_words(fixed_s)}) included" if fixed_s > 0 else ""


def render_slurm(spec: JobSpec, job_dir: Path) -> str:
    plan = spec.plan
    procs = procs_per_node(plan)
    wall_s, at_p80_s, fixed_s = allocation_s(spec)
    # The name is pattern-checked, so it is safe inside an #SBATCH directive (which no shell parses).
    return f"""#!/bin/bash
#SBATCH --job-name={spec.name}
#SBATCH --nodes={plan.num_nodes}
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node={procs}
#SBATCH --exclusive
#SBATCH --signal=TERM@{slurm_signal_lead_s(plan)}
#SBATCH --requeue
#SBATCH --open-mode=append
# trainplan job {spec.name}: {_summary(spec)}
# predicted: {spec.run.steps:,} steps in {duration_words(wall_s)}, {duration_words(at_p80_s)} at p80 (the band's
# pessimistic end){_fixed_words(fixed_s)}: add a --time limit above that. Before
# it ends, --signal sends SIGTERM: the workers save a checkpoint and exit 143; sbatch again resumes.
# --requeue: a node failure or a preemption puts the job back in the queue, and it resumes from its
# last checkpoint; --open-mode=append keeps the earlier attempts' output in the log.
# Submit from the job directory: sbatch slurm.sbatch [trainer options]. It must be on a shared file
# system. Slurm runs a copy of this script, so the directory is $TRAINPLAN_JOB_DIR if set, else the
# one it was written to, else the one it was submitted from (a moved or unzipped job).
# Exit code 3 means the validation probe found the plan does not fit: see replan_needed.json.
set -euo pipefail
# (unquoted: an assignment does not split, and the path's own quotes are then removed)
JOB_DIR=${{TRAINPLAN_JOB_DIR:-{shlex.quote(str(job_dir))}}}
if [ -z "${{TRAINPLAN_JOB_DIR:-}}" ] && [ ! -f "$JOB_DIR/job.json" ] && [ -f "${{SLURM_SUBMIT_DIR:-.}}/job.json" ]; then
  JOB_DIR="$SLURM_SUBMIT_DIR"
fi
[ -f "$JOB_DIR/job.json" ] || {{ echo "slurm.sbatch: no job.json in $JOB_DIR: submit from the job directory or set TRAINPLAN_JOB_DIR" >&2; exit 2; }}
{PYTHON_LINE}
# sed reads all of its input: `head -n 1` would make scontrol die of SIGPIPE, failing under pipefail.
head_node="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)"
: "${{head_node:?no node names in SLURM_JOB_NODELIST}}"
# One torchrun agent per node (ntasks-per-node=1); c10d rendezvous on the first node.
srun --kill-on-bad-exit=1 "$PYTHON" -m trainer.torchrun \\
  --nnodes "$SLURM_NNODES" --nproc-per-node {procs} \\
  --rdzv-backend c10d --rdzv-endpoint "$head_node:{RDZV_PORT}" --rdzv-id "$SLURM_JOB_ID" \\
  -m {WORKER_MODULE} "$JOB_DIR" "$@"
"""


# --------------------------------------------------------------------------- k8s.yaml


def check_k8s_names(image: str, pvc: str) -> None:
    """``--k8s-image`` and ``--k8s-pvc`` as Kubernetes takes them (JobSpec's patterns): ValueError
    naming the flag in one line otherwise."""
    if not re.match(K8S_IMAGE_PATTERN, image):
        raise ValueError(f"--k8s-image {image!r}: give an image reference such as registry.example/trainplan:1.0")
    if not re.match(K8S_PVC_PATTERN, pvc):
        raise ValueError(f"--k8s-pvc {pvc!r}: a claim name is lower-case letters, digits, '-' and '.'")


def k8s_name(name: str) -> str:
    """A DNS-1035 label from the job name (lower case, '-' for '.' and '_', at most 50 characters
    so the operator's pod suffixes such as ``-worker-12`` still fit in 63), starting with a letter:
    the training operator's webhook checks ``NameIsDNS1035Label`` (trial s27: "70b-run" was refused
    at ``kubectl apply``; it is now "j-70b-run")."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:50].rstrip("-")
    if label and not label[0].isalpha():
        label = f"j-{label}"[:50].rstrip("-")
    return label or "trainplan-job"


def host_requests(plan: Plan) -> dict[str, str]:
    """A pod's CPU and memory requests (``K8S_*_PER_PROCESS``; its /dev/shm and, with optimizer
    states offloaded, the host memory the plan puts them in count as memory too). Requests, not
    limits: no CPU throttling, no OOM kill at a guessed bound."""
    procs = procs_per_node(plan)
    offloaded = plan.estimate.memory.host_gib_per_node or 0.0
    memory_gib = procs * (K8S_HOST_GIB_PER_PROCESS + K8S_SHM_GIB_PER_PROCESS) + math.ceil(offloaded)
    return {"cpu": str(procs * K8S_CPUS_PER_PROCESS), "memory": f"{memory_gib}Gi"}


def k8s_manifest(spec: JobSpec, image: str, pvc: str) -> dict:
    """The PyTorchJob (kubeflow.org/v1) as plain data."""
    plan = spec.plan
    procs = procs_per_node(plan)
    job_path = f"{K8S_JOBS_MOUNT}/{spec.name}"
    # The operator sets RANK (the pod's node rank), MASTER_ADDR and MASTER_PORT in each pod;
    # Kubernetes expands $(VAR) in the command from the container's environment.
    # trainer.torchrun: torchrun that exits 143 on SIGTERM (retryable under restartPolicy ExitCode),
    # where plain torchrun raises SignalException and exits 1 (permanent).
    command = [
        "python",
        "-m",
        "trainer.torchrun",
        "--nnodes",
        str(plan.num_nodes),
        "--nproc-per-node",
        str(procs),
        "--node-rank",
        "$(RANK)",
        "--master-addr",
        "$(MASTER_ADDR)",
        "--master-port",
        "$(MASTER_PORT)",
        "-m",
        WORKER_MODULE,
        job_path,
    ]
    container = {
        "name": "pytorch",  # the operator looks for a container of this name
        "image": image,
        "command": command,
        "resources": {
            "limits": {"nvidia.com/gpu": procs},
            "requests": {"nvidia.com/gpu": procs, **host_requests(plan)},
        },
        "volumeMounts": [{"name": "jobs", "mountPath": K8S_JOBS_MOUNT}, {"name": "dshm", "mountPath": "/dev/shm"}],
    }
    volumes = [
        {"name": "jobs", "persistentVolumeClaim": {"claimName": pvc}},
        # NCCL needs more than the default 64 MiB; bounded, since it counts against the node's memory
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{procs * K8S_SHM_GIB_PER_PROCESS}Gi"}},
    ]

    def replica(count: int) -> dict:
        # ExitCode: restart pods that exit 128+ (preemption: 143), not on errors such as 2, 3 (replan), 4.
        return {
            "replicas": count,
            "restartPolicy": "ExitCode",
            "template": {"spec": {"containers": [container], "volumes": volumes}},
        }

    replicas = {"Master": replica(1)}
    if plan.num_nodes > 1:
        replicas["Worker"] = replica(plan.num_nodes - 1)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": k8s_name(spec.name), "labels": {"app.kubernetes.io/managed-by": "trainplan"}},
        "spec": {
            "nprocPerNode": str(procs),
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3},
            "pytorchReplicaSpecs": replicas,
        },
    }


def render_k8s(spec: JobSpec) -> str:
    image, pvc = spec.k8s_image, spec.k8s_pvc
    header = (
        f"# trainplan job {spec.name}: {_summary(spec)}\n"
        f"# Copy this job directory to {K8S_JOBS_MOUNT}/{spec.name} on the PVC {_one_line(pvc)} "
        f"(ReadWriteMany); the image is {_one_line(image)} (emit --k8s-image); then: kubectl apply -f k8s.yaml\n"
        "# Below these comments the manifest is plain JSON, which every YAML parser reads.\n"
    )
    return header + json.dumps(k8s_manifest(spec, image, pvc), indent=2) + "\n"


# --------------------------------------------------------------------------- README.md


def render_readme(spec: JobSpec, job_dir: Path) -> str:
    pvc = spec.k8s_pvc
    plan, run = spec.plan, spec.run
    quoted_dir = shlex.quote(str(job_dir))
    memory = plan.estimate.memory
    rows = [
        ("model", plan.model.name),
        ("hardware", f"{plan.num_gpus} x {plan.gpu} on {counted(plan.num_nodes, 'node')}"),
        ("layout", plan.layout.describe()),
        (
            "batch",
            f"micro-batch {plan.training.micro_batch} x seq {plan.training.seq_len} x accumulation "
            f"{plan.training.grad_accum}",
        ),
        ("predicted step", f"{plan.estimate.time.step_s:.3g} s"),
        ("predicted memory", f"{memory.reserved_gib:.1f} of {memory.capacity_gib:.1f} GiB reserved"),
        ("run", f"{run.steps} steps, checkpoint every {run.checkpoint_every}, seed {run.seed}"),
        ("data", run.data),
    ]
    table = "\n".join(f"| {key} | {_one_line(value).replace('|', '/')} |" for key, value in rows)
    return f"""# trainplan job `{spec.name}`

| | |
|---|---|
{table}

`job.json` is the whole job (plan + run settings); the scripts only start `python -m {WORKER_MODULE}`
with `$TRAINPLAN_PYTHON` (default: `python` on the PATH): activate the environment trainplan is
installed in, or set `TRAINPLAN_PYTHON=/path/to/venv/bin/python`.

## Run

From this directory (it may be moved or unzipped anywhere; it was written to {quoted_dir}):

- Here, with a lock, data preparation and resume: `trainplan run .`
- One node by hand: `bash launch.sh`
- Slurm ({counted(plan.num_nodes, "node")}, job directory on a shared file system): `sbatch slurm.sbatch`
- Kubernetes (Kubeflow training operator): copy this directory to `{K8S_JOBS_MOUNT}/{spec.name}` on the
  PVC `{_one_line(pvc)}` (emit `--k8s-pvc`), check the image in `k8s.yaml` (emit `--k8s-image`),
  `kubectl apply -f k8s.yaml`.

A stopped run resumes from its latest good checkpoint when started again. Exit code 3 means the
validation probe measured that the plan does not fit; `replan_needed.json` has the numbers and
`trainplan run --auto-replan` corrects the plan and continues. If `run.data` is not reachable
where the job runs, prepare the shards first (`python -m trainer.launch . --prepare-only`):
the trainer then uses `data/` as it is.
"""
