"""The job directory's launchers, rendered from a ``JobSpec``: ``launch.sh`` (one node) and
``slurm.sbatch`` (Slurm, with the predicted wall time of one allocation); ``k8s.yaml`` (a Kubeflow
PyTorchJob) is trainer/job_k8s.py's, and its ``README.md`` trainer/job_readme.py's. Nothing
user-supplied reaches a script unquoted: the job name matches the JobSpec pattern, paths go through
``shlex.quote``, and plan strings in comments are flattened to one printable line."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

from planner.fmt import counted, duration_words
from planner.plan import Plan
from trainer.cluster import fills_nodes, format_slurm_time, network_id, slurm_time_s
from trainer.job_disk import checkpoint_disk_words
from trainer.job_spec import JobSpec
from trainer.worker import WORKER_MODULE

# What each pod requests besides its GPUs, per worker process (trial s27a: it requested none, so
# its pods were BestEffort, the first Kubernetes evicts under memory pressure, and /dev/shm had no
# bound). Choices, not measured: a CUDA PyTorch worker holds a few GiB resident (context, libraries,
# the pinned staging of its shards); the loader reads a memmap in the same process, so one core for
# it and the rank's Python and three for NCCL's proxy and the checkpoint writer. /dev/shm: NCCL's
# intra-node buffers (PyTorch's tutorials CI gives 2 GB to two GPUs; NGC's docs, --shm-size=1g).
# Slurm's --cpus-per-task and --mem (a job that does not fill its nodes) follow the same rule.
CPUS_PER_PROCESS = 4
HOST_GIB_PER_PROCESS = 8
SHM_GIB_PER_PROCESS = 1
RDZV_PORT = 29500  # c10d rendezvous port on the first node (Slurm)


def one_line_comment(text: object) -> str:
    """Any value made safe for a shell or YAML comment: printable characters on one line."""
    return "".join(ch if ch.isprintable() else " " for ch in str(text))


def procs_per_node(plan: Plan) -> int:
    if plan.num_gpus % plan.num_nodes:
        raise ValueError(f"plan: {plan.num_gpus} GPUs do not split evenly over {plan.num_nodes} nodes")
    return plan.num_gpus // plan.num_nodes


# What a pure-bf16 job's files say of its numerics (the plan's ``optimizer_precision.pure_bf16``;
# review55 L4: README.md, launch.sh, slurm.sbatch and k8s.yaml named no precision). bf16 keeps 8
# significant bits, so an update under about 2^-8 (0.4 %) of a weight rounds to the same bf16 value
# (review55 L2): AdamW's decoupled weight decay (lr x weight_decay of it, 3e-4 x 0.01 = 3e-6) always,
# and late cosine steps at small learning rates for most weights. Mixed precision's files say nothing.
PURE_BF16_JOB_WORDS = (
    "pure bf16: weights, gradients and AdamW moments bf16, no fp32 master; an update under about 0.4 % of a"
    " weight (weight decay, small late learning rates) rounds away"
)


def precision_words(plan: Plan) -> str | None:
    """``PURE_BF16_JOB_WORDS`` for a pure-bf16 plan; None for mixed precision."""
    return PURE_BF16_JOB_WORDS if plan.optimizer_precision.pure_bf16 else None


def job_summary(spec: JobSpec) -> str:
    """The scripts' header line: model, hardware, layout, step and, for pure bf16, ``precision_words``."""
    plan = spec.plan
    precision = "" if (words := precision_words(plan)) is None else f"; {words}"
    return one_line_comment(
        f"{plan.model.name} on {plan.num_gpus} x {plan.gpu} ({counted(plan.num_nodes, 'node')}), "
        f"layout {plan.layout.describe()}, predicted step {plan.estimate.time.step_s:.3g} s{precision}"
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
# trainplan job {spec.name}: {job_summary(spec)}
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
AGENT_EXIT_S = 30  # the torchrun agent's own exit, after its workers', within the pod's (or allocation's) grace
SLURM_MAX_SIGNAL_LEAD_S = 65_535  # sbatch --signal's largest sig_time


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


def slurm_signal_lead_s(plan: Plan) -> int:
    """Seconds before the --time limit Slurm signals the batch script (``--signal=B:USR1``): the
    workers' stop grace and their agent's exit, within sbatch's bound."""
    return min(SLURM_MAX_SIGNAL_LEAD_S, stop_grace_s(plan) + AGENT_EXIT_S)


def time_limit_factor(plan: Plan) -> float | None:
    """The steps' share of --time over their model figure: the time band's p80 (``p80_factor``),
    else, for a plan without a token budget, its step band's upper end (p90, the nearest figure it
    states); None for a plan without a band."""
    if plan.estimate.time_h_at("p80") is not None:
        return p80_factor(plan)
    band = plan.estimate.uncertainty.step_s if plan.estimate.uncertainty is not None else None
    return None if band is None else max(1.0, band[1] / plan.estimate.time.step_s)


def slurm_time_limit(spec: JobSpec) -> str | None:
    """``--time``: emit --slurm-time's, else one allocation at the band's pessimistic end plus the
    signal lead (trial s49: none was written, so the partition's default limit applied); None for a
    plan without a band (its comment asks for a limit)."""
    if spec.cluster.slurm_time is not None:
        return spec.cluster.slurm_time
    if (whole_s := whole_run_limit_s(spec)) is None:
        return None
    return format_slurm_time(min(whole_s, SLURM_ALLOCATION_CAP_S) if spec.run.save_checkpoints else whole_s)


def whole_run_limit_s(spec: JobSpec) -> float | None:
    """One allocation for the whole run: at the band's pessimistic end, plus the signal lead."""
    if (factor := time_limit_factor(spec.plan)) is None:
        return None
    wall_s, _, fixed_s = allocation_s(spec)
    return fixed_s + (wall_s - fixed_s) * factor + slurm_signal_lead_s(spec.plan)


# The longest --time written for a job that saves checkpoints: a day, within the GPU partitions'
# limits of most shared clusters (a --time above a partition's MaxTime is refused at submit or
# pends forever: review49 M1, "--time=213-01:22:00" for an 8B run on 1T tokens); a longer run goes
# on as a chain of allocations (the USR1 trap's requeue), each resuming from its last checkpoint.
# emit --slurm-time sets another (Slurm's own default MaxTime is UNLIMITED).
SLURM_ALLOCATION_CAP_S = 24 * 3600.0


def check_cluster(spec: JobSpec) -> None:
    """Settings the scripts cannot run with (ValueError naming the flag): a time limit that ends
    before the workers' stop grace has begun."""
    limit = spec.cluster.slurm_time
    lead = slurm_signal_lead_s(spec.plan)
    if limit is not None and (seconds := slurm_time_s(limit)) is not None and seconds <= lead:
        raise ValueError(
            f"--slurm-time {limit}: {seconds} s, not more than the {lead} s before the limit at which the"
            " workers start saving; give a longer limit"
        )


def _slurm_directives(spec: JobSpec) -> str:
    """The #SBATCH lines of the resources (trial s49: any GPU type, a whole node for one GPU, one CPU)."""
    plan, cluster = spec.plan, spec.cluster
    procs = procs_per_node(plan)
    gpus = f"{cluster.slurm_gpu_type}:{procs}" if cluster.slurm_gpu_type else str(procs)
    lines = [f"--gpus-per-node={gpus}", f"--cpus-per-task={procs * CPUS_PER_PROCESS}"]
    # A plan that fills its nodes takes them whole (no neighbour's traffic on their NVLink and NICs);
    # a smaller one asks for its share of memory, as a pod does (host_memory_gib).
    lines.append("--exclusive" if fills_nodes(plan) else f"--mem={host_memory_gib(plan)}G")
    if cluster.slurm_partition:
        lines.append(f"--partition={cluster.slurm_partition}")
    if cluster.slurm_constraint:
        lines.append(f"--constraint={cluster.slurm_constraint}")
    if (limit := slurm_time_limit(spec)) is not None:
        lines.append(f"--time={limit}")
    lines += [f"--signal=B:USR1@{slurm_signal_lead_s(plan)}", "--requeue", "--open-mode=append"]
    return "\n".join(f"#SBATCH {line}" for line in lines)


def _slurm_pinning(spec: JobSpec) -> str:
    """Comment lines on what the scripts do not pin: the GPU type (site-specific names) and the network."""
    plan, cluster = spec.plan, spec.cluster
    notes = []
    if not cluster.slurm_gpu_type and not cluster.slurm_constraint:
        notes.append(
            f"# GPU type: any, though the plan is for {one_line_comment(plan.gpu)}. GRES types and features are each"
            " site's own\n# (sinfo -o '%N %G %f'): pin them with emit --slurm-gpu-type TYPE or --slurm-constraint"
            f" FEATURE,\n# or sbatch --gpus-per-node=TYPE:{procs_per_node(plan)} slurm.sbatch."
        )
    if plan.num_nodes > 1:
        choose = (
            f" (partition {cluster.slurm_partition})"
            if cluster.slurm_partition
            else ": choose its partition (emit --slurm-partition, sbatch -p) or feature"
        )
        notes.append(
            f"# Network: the predicted step assumes {one_line_comment(network_id(plan) or 'the GPU default')}"
            f" between nodes{choose}."
        )
    return "".join(f"{note}\n" for note in notes)


def _time_words(spec: JobSpec) -> str:
    """The comment on --time: where its figure comes from, and the self-requeue at it."""
    limit = slurm_time_limit(spec)
    if limit is None:
        where = "add a --time limit above that"
    elif spec.cluster.slurm_time is not None:
        where = "--time is emit --slurm-time's"
    elif spec.run.save_checkpoints and (whole_s := whole_run_limit_s(spec) or 0.0) > SLURM_ALLOCATION_CAP_S:
        where = (
            f"--time is a day per allocation (most GPU partitions' limit; the whole run,"
            f" {format_slurm_time(whole_s)} at the band's upper end, would pend or be refused)"
        )
    else:
        where = f"--time is that at the band's upper end plus the {slurm_signal_lead_s(spec.plan)} s stop lead"
    if not spec.run.save_checkpoints:
        return f"""# {where}
# (sbatch --time overrides it). This job saves no checkpoints (--no-checkpoints), so it must end
# within one allocation: --signal sends this script USR1 before the limit, which stops the workers
# and requeues nothing (a rerun would start from step 0)."""
    return f"""# {where}
# (sbatch --time overrides it). A job longer than the partition allows runs in allocations:
# --signal sends this script USR1 before the limit; it has the workers save a checkpoint (they
# exit 143), then requeues the job, which resumes from it."""


def _disk_comment(spec: JobSpec) -> str:
    """The checkpoints' disk need (trainer/job_disk.py), as a comment line ('' without checkpoints)."""
    words = checkpoint_disk_words(spec)
    return "" if words is None else f"# {words}.\n"


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
{_slurm_directives(spec)}
# trainplan job {spec.name}: {job_summary(spec)}
{_slurm_pinning(spec)}# predicted: {spec.run.steps:,} steps in {duration_words(wall_s)}, {duration_words(at_p80_s)} at p80 (the band's
# pessimistic end){_fixed_words(fixed_s)}.
{_disk_comment(spec)}{_time_words(spec)}
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
saves_checkpoints={int(spec.run.save_checkpoints)}  # 0: --no-checkpoints, the time limit requeues nothing
{SLURM_REQUEUE_TRAP}
# One torchrun agent per node (ntasks-per-node=1); c10d rendezvous on the first node. In the
# background, so that the time-limit signal reaches the trap while it runs.
srun --kill-on-bad-exit=1 "$PYTHON" -m trainer.torchrun \\
  --nnodes "$SLURM_NNODES" --nproc-per-node {procs} \\
  --rdzv-backend c10d --rdzv-endpoint "$head_node:{RDZV_PORT}" --rdzv-id "$SLURM_JOB_ID" \\
  -m {WORKER_MODULE} "$JOB_DIR" "$@" &
srun_pid=$!
wait "$srun_pid"
"""


# The time-limit trap: scancel --signal sends SIGTERM to the job's steps and not to this script
# (signalling srun itself would make it SIGKILL its tasks); the workers save and exit 143, and only
# then is the job requeued, so that it resumes from that checkpoint. Any other exit (an error, or
# the training finished in the lead) is kept and nothing is requeued. A scancel of the job sends no
# USR1, so a cancelled job stays cancelled. Under --no-checkpoints ($saves_checkpoints 0) nothing is
# requeued: the rerun would start from step 0 and meet the same limit, allocation after allocation
# (review49).
SLURM_REQUEUE_TRAP = """requeue_at_time_limit() {
  if [ "$saves_checkpoints" != 1 ]; then
    echo "slurm.sbatch: the time limit is near: this job saves no checkpoints (--no-checkpoints), so job $SLURM_JOB_ID is stopped, not requeued (a rerun would start from step 0)" >&2
  else
    echo "slurm.sbatch: the time limit is near: the workers save a checkpoint, then job $SLURM_JOB_ID is requeued" >&2
  fi
  scancel --signal=TERM "$SLURM_JOB_ID" || echo "slurm.sbatch: scancel could not signal the workers" >&2
  status=0
  wait "$srun_pid" || status=$?
  if [ "$status" -eq 143 ] && [ "$saves_checkpoints" = 1 ]; then
    scontrol requeue "$SLURM_JOB_ID"
  elif [ "$saves_checkpoints" = 1 ]; then
    echo "slurm.sbatch: the workers exited $status, not 143 (saved and stopped): job $SLURM_JOB_ID is not requeued" >&2
  fi
  exit "$status"
}
trap requeue_at_time_limit USR1"""


def host_memory_gib(plan: Plan) -> int:
    """Host memory one node's processes ask for (``*_PER_PROCESS``; /dev/shm and, with optimizer
    states offloaded, the host memory the plan puts them in count too)."""
    offloaded = plan.estimate.memory.host_gib_per_node or 0.0
    return procs_per_node(plan) * (HOST_GIB_PER_PROCESS + SHM_GIB_PER_PROCESS) + math.ceil(offloaded)
