"""The job directory's ``README.md``: what the job is and how to run it (trainer/job_scripts.py
renders the scripts it names)."""

from __future__ import annotations

import shlex
from pathlib import Path

from planner.fmt import counted
from planner.plan import Plan
from trainer.job_disk import checkpoint_disk_words
from trainer.job_k8s import K8S_JOBS_MOUNT, image_note
from trainer.job_scripts import RDZV_PORT, one_line_comment, precision_words
from trainer.job_spec import JobSpec
from trainer.worker import WORKER_MODULE


def run_commands(plan: Plan, job_dir: Path | None) -> tuple[str, str]:
    """The shell commands that start the job by hand from ``job_dir`` (None: the job directory,
    ".") with ``trainplan run`` and with ``launch.sh``; on a multi-node plan each is run on every
    node, with its rank I and node 0's host NODE0 (``per_node``; trial s49: `trainplan run DIR` and
    `bash launch.sh` stop there, asking for them)."""
    where, launch = (
        (".", "launch.sh") if job_dir is None else (shlex.quote(str(job_dir)), shlex.quote(str(job_dir / "launch.sh")))
    )
    if plan.num_nodes == 1:
        return f"trainplan run {where}", f"bash {launch}"
    endpoint = f"NODE0:{RDZV_PORT}"
    return (
        f"trainplan run {where} --node-rank I --rdzv-endpoint {endpoint}",
        f"NODE_RANK=I RDZV_ENDPOINT={endpoint} bash {launch}",
    )


def per_node(plan: Plan) -> str:
    """Where a multi-node plan's commands run, and what I and NODE0 are."""
    return f"on each of the {plan.num_nodes} nodes (I = 0..{plan.num_nodes - 1}; NODE0: node 0's host)"


def _by_hand(plan: Plan) -> str:
    run, launch = run_commands(plan, None)
    if plan.num_nodes == 1:
        return f"- Here, with a lock, data preparation and resume: `{run}`\n- One node by hand: `{launch}`"
    return f"- By hand, {per_node(plan)}: `{run}` (with a lock, data preparation and resume), or `{launch}`"


def _image(spec: JobSpec) -> str:
    note = image_note(spec.k8s_image)
    return "" if note is None else f"; {one_line_comment(note)}"


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
        *([] if (precision := precision_words(plan)) is None else [("precision", precision)]),
        ("predicted step", f"{plan.estimate.time.step_s:.3g} s"),
        ("predicted memory", f"{memory.reserved_gib:.1f} of {memory.capacity_gib:.1f} GiB reserved"),
        ("run", f"{run.steps} steps, checkpoint every {run.checkpoint_every}, seed {run.seed}"),
        ("data", run.data),
        ("checkpoint disk", checkpoint_disk_words(spec) or "none: it saves no checkpoints"),
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

{_by_hand(plan)}
- Slurm ({counted(plan.num_nodes, "node")}, job directory on a shared file system): `sbatch slurm.sbatch`
- Kubernetes (Kubeflow training operator): copy this directory to `{K8S_JOBS_MOUNT}/{spec.name}` on the
  PVC `{one_line_comment(pvc)}` (emit `--k8s-pvc`), check the image in `k8s.yaml` (emit `--k8s-image`{_image(spec)}),
  `kubectl apply -f k8s.yaml`.

A stopped run resumes from its latest good checkpoint when started again. Exit code 3 means the
validation probe measured that the plan does not fit; `replan_needed.json` has the numbers and
`trainplan run --auto-replan` corrects the plan and continues. If `run.data` is not reachable
where the job runs, prepare the shards first (`python -m trainer.launch . --prepare-only`):
the trainer then uses `data/` as it is.
"""
