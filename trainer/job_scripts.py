"""The job directory's launchers, rendered from a ``JobSpec``: ``launch.sh`` (one node),
``slurm.sbatch`` (Slurm, with the predicted wall time of one allocation), ``k8s.yaml`` (a Kubeflow
PyTorchJob) and its ``README.md``. Nothing user-supplied reaches a script unquoted: the job name
matches the JobSpec pattern, paths go through ``shlex.quote``, plan strings in comments are
flattened to one printable line, and the Kubernetes manifest is JSON (a subset of YAML)."""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path

from planner.fmt import counted, duration_words
from planner.plan import Plan
from trainer.job_spec import (
    K8S_IMAGE_PATTERN,
    K8S_PVC_PATTERN,
    JobSpec,
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


def one_line_comment(text: object) -> str:
    """Any value made safe for a shell or YAML comment: printable characters on one line."""
    return "".join(ch if ch.isprintable() else " " for ch in str(text))


def procs_per_node(plan: Plan) -> int:
    if plan.num_gpus % plan.num_nodes:
        raise ValueError(f"plan: {plan.num_gpus} GPUs do not split evenly over {plan.num_nodes} nodes")
    return plan.num_gpus // plan.num_nodes


def _summary(spec: JobSpec) -> str:
    plan = spec.plan
    return one_line_comment(
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


# The seconds a worker may take from SIGTERM to its exit: it finishes the step in flight, then
# saves. Slurm sends SIGTERM that long before the --time limit (``--signal``; trial s27: the script
# set none), trainer/torchrun.py waits that long before its SIGKILL (torchrun's own wait is 30 s),
# and a pod has that long, plus its agent's exit, before Kubernetes' (its default is 30 s too).
# At least two minutes, or three of the plan's checkpoint writes and two of its steps at p80 (trial
# s45: a 4-minute step stopped by a signal was killed at torchrun's 30 s, nothing saved).
SLURM_SIGNAL_LEAD_MIN_S = 120
SLURM_SIGNAL_LEAD_WRITES = 3
STOP_GRACE_STEPS = 2
K8S_AGENT_EXIT_S = 30  # the torchrun agent's own exit, after its workers', within the pod's grace


def stop_grace_s(plan: Plan) -> int:
    write_s = plan.estimate.goodput.checkpoint_write_s if plan.estimate.goodput is not None else 0.0
    step_s = plan.estimate.time.step_s * p80_factor(plan)
    need = SLURM_SIGNAL_LEAD_WRITES * write_s + STOP_GRACE_STEPS * step_s
    return max(SLURM_SIGNAL_LEAD_MIN_S, math.ceil(need))


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


def render_slurm(spec: JobSpec, job_dir: Path | None) -> str:
    plan = spec.plan
    procs = procs_per_node(plan)
    wall_s, at_p80_s, fixed_s = allocation_s(spec)
    # ``job_dir`` None: a folder its reader never sees (the app's zip), so the submit directory.
    written_to = "${SLURM_SUBMIT_DIR:-.}" if job_dir is None else shlex.quote(str(job_dir))
    # The name is pattern-checked, so it is safe inside an #SBATCH directive (which no shell parses).
    return f"""#!/bin/bash
#SBATCH --job-name={spec.name}
#SBATCH --nodes={plan.num_nodes}
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node={procs}
#SBATCH --exclusive
#SBATCH --signal=TERM@{stop_grace_s(plan)}
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
JOB_DIR=${{TRAINPLAN_JOB_DIR:-{written_to}}}
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
            "template": {
                "spec": {
                    # SIGTERM (eviction, preemption) to SIGKILL: the workers' save, not Kubernetes' 30 s
                    "terminationGracePeriodSeconds": stop_grace_s(plan) + K8S_AGENT_EXIT_S,
                    "containers": [container],
                    "volumes": volumes,
                }
            },
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
        f"# Copy this job directory to {K8S_JOBS_MOUNT}/{spec.name} on the PVC {one_line_comment(pvc)} "
        f"(ReadWriteMany); the image is {one_line_comment(image)} (emit --k8s-image); then: kubectl apply -f k8s.yaml\n"
        "# Below these comments the manifest is plain JSON, which every YAML parser reads.\n"
    )
    return header + json.dumps(k8s_manifest(spec, image, pvc), indent=2) + "\n"


# --------------------------------------------------------------------------- README.md


def render_readme(spec: JobSpec, job_dir: Path | None) -> str:
    """The job's README; ``job_dir``: the folder it was written to, said beside "Run" (None: unsaid)."""
    pvc = spec.k8s_pvc
    plan, run = spec.plan, spec.run
    written = "" if job_dir is None else f"; it was written to {shlex.quote(str(job_dir))}"
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
    table = "\n".join(f"| {key} | {one_line_comment(value).replace('|', '/')} |" for key, value in rows)
    return f"""# trainplan job `{spec.name}`

| | |
|---|---|
{table}

`job.json` is the whole job (plan + run settings); the scripts only start `python -m {WORKER_MODULE}`
with `$TRAINPLAN_PYTHON` (default: `python` on the PATH): activate the environment trainplan is
installed in, or set `TRAINPLAN_PYTHON=/path/to/venv/bin/python`.

## Run

From this directory (it may be moved or unzipped anywhere{written}):

- Here, with a lock, data preparation and resume: `trainplan run .`
- One node by hand: `bash launch.sh`
- Slurm ({counted(plan.num_nodes, "node")}, job directory on a shared file system): `sbatch slurm.sbatch`
- Kubernetes (Kubeflow training operator): copy this directory to `{K8S_JOBS_MOUNT}/{spec.name}` on the
  PVC `{one_line_comment(pvc)}` (emit `--k8s-pvc`), check the image in `k8s.yaml` (emit `--k8s-image`),
  `kubectl apply -f k8s.yaml`.

A stopped run resumes from its latest good checkpoint when started again. Exit code 3 means the
validation probe measured that the plan does not fit; `replan_needed.json` has the numbers and
`trainplan run --auto-replan` corrects the plan and continues. If `run.data` is not reachable
where the job runs, prepare the shards first (`python -m trainer.launch . --prepare-only`):
the trainer then uses `data/` as it is.
"""
