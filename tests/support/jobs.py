"""Tiny models, plans and job directories, and torchrun launches on CPU (gloo), for the trainer tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.catalog.models import get_preset
from planner.errors import ExitCode
from planner.estimate_parts import MemoryEstimate, ThroughputEstimate, TimeEstimate
from planner.layout import Layout, TrainingConfig
from planner.model.optimizer_precision import DEFAULT_OPTIMIZER_PRECISION, OptimizerPrecision
from planner.model.spec import ModelSpec
from planner.plan import Estimate, Plan
from support import REPO
from trainer.job_spec import JobSpec, RunSettings

# Placeholder predictions: the CPU tests check the plumbing of validation.json, not the planner.
PREDICTED_PEAK_GIB = 1.5
PREDICTED_STEP_S = 0.05


def tiny_spec(**changes) -> ModelSpec:
    """The ``tiny`` preset (4 layers, hidden 256, 4 heads / 2 kv heads, vocab 512)."""
    return get_preset("tiny").model_copy(update=changes)


def tiny_gpt_spec(**changes):
    """GPT-2 architecture at test size, with an odd vocabulary (padded to 512 natively)."""
    base = get_preset("gpt3-125m").model_copy(
        update=dict(
            name="tiny-gpt",
            num_layers=2,
            hidden_size=64,
            ffn_hidden_size=256,
            num_heads=4,
            num_kv_heads=4,
            vocab_size=500,
            max_seq_len=64,
        )
    )
    return base.model_copy(update=changes)


def make_plan(
    layout: Layout,
    training: TrainingConfig,
    num_gpus: int,
    model: ModelSpec | None = None,
    hf_config_path: str | None = None,
    num_nodes: int = 1,
    gpu: str = "h100-sxm",
    optimizer_precision: OptimizerPrecision = DEFAULT_OPTIMIZER_PRECISION,
) -> Plan:
    memory = MemoryEstimate(
        peak_gib=PREDICTED_PEAK_GIB,
        reserved_gib=PREDICTED_PEAK_GIB * 1.2,
        capacity_gib=80.0,
        headroom_fraction=0.1,
        breakdown_gib={},
    )
    batch = training.tokens_per_step(layout.resolve(num_gpus))
    tokens_per_s = batch / PREDICTED_STEP_S  # the relation Plan.check holds (planner/plan_figures.py)
    estimate = Estimate(
        feasible=True,
        gpu=gpu,
        num_gpus=num_gpus,
        num_nodes=num_nodes,
        memory=memory,
        time=TimeEstimate(step_s=PREDICTED_STEP_S, breakdown_s={}),
        throughput=ThroughputEstimate(
            tokens_per_s=tokens_per_s,
            tokens_per_s_per_gpu=tokens_per_s / num_gpus,
            mfu=0.4,
            hfu=0.4,
            model_flops_per_token=0.0,
            hardware_flops_per_token=0.0,
        ),
        layout={},
        global_batch_tokens=batch,
    )
    return Plan(
        model=model or tiny_spec(),
        hf_config_path=hf_config_path,
        gpu=gpu,
        num_gpus=num_gpus,
        num_nodes=num_nodes,
        gpus_per_node=num_gpus // num_nodes,
        layout=layout,
        training=training,
        estimate=estimate,
        optimizer_precision=optimizer_precision,
    )


def write_job(
    job_dir: Path,
    layout: Layout,
    num_gpus: int,
    *,
    model: ModelSpec | None = None,
    hf_config_path: str | None = None,
    seq_len: int = 32,
    micro_batch: int = 2,
    grad_accum: int = 1,
    **run_settings,
) -> Path:
    """A job directory for the tiny model; ``run_settings`` override RunSettings and TrainingConfig fields
    (and ``optimizer_precision``, the plan's)."""
    formats = run_settings.pop("optimizer_precision", DEFAULT_OPTIMIZER_PRECISION)
    training_fields = {k: run_settings.pop(k) for k in list(run_settings) if k in TrainingConfig.model_fields}
    training = TrainingConfig(
        seq_len=seq_len, micro_batch=micro_batch, grad_accum=grad_accum, **{"precision": "fp32", **training_fields}
    )
    defaults = dict(steps=30, lr=3e-3, warmup_steps=3, checkpoint_every=1000, probe_steps=2, seed=1234)
    run = RunSettings(**{**defaults, **run_settings})
    job_dir.mkdir(parents=True, exist_ok=True)
    plan = make_plan(layout, training, num_gpus, model, hf_config_path, optimizer_precision=formats)
    JobSpec(name="tiny-test", plan=plan, run=run).save(job_dir)
    return job_dir


# A whole run_torchrun_batch launch may take this long (support/job_batch.py waits as long).
BATCH_TIMEOUT_S = 900.0


def torchrun_prefix(nproc: int) -> list[str]:
    """``python -m torch.distributed.run`` on this node with ``nproc`` workers."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]


def torchrun_command(job_dir: Path, nproc: int, *extra: str) -> list[str]:
    return [
        *torchrun_prefix(nproc),
        "-m",
        "trainer.worker",
        str(job_dir),
        "--device",
        "cpu",
        *extra,
    ]


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def run_torchrun(job_dir: Path, nproc: int, *extra: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        torchrun_command(job_dir, nproc, *extra),
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_torchrun_batch(
    job_dirs: list[Path], nproc: int, timeout: float = BATCH_TIMEOUT_S, worlds: list[int] | None = None
) -> subprocess.CompletedProcess:
    """All ``job_dirs`` one after another in each worker of one launch (``support/job_batch.py``:
    the torch start-up paid once); read each job's result with :func:`batch_result`. ``worlds``:
    each job's number of ranks, at most ``nproc`` (default: all ``nproc``)."""
    env = dict(subprocess_env(), PYTHONPATH=f"{REPO}{os.pathsep}{REPO / 'tests'}")
    worlds = worlds or [nproc] * len(job_dirs)
    assert len(worlds) == len(job_dirs) and all(1 <= w <= nproc for w in worlds), (worlds, nproc)
    return subprocess.run(
        [
            *torchrun_prefix(nproc),
            "-m",
            "support.job_batch",
            *(f"{w}:{job}" for w, job in zip(worlds, job_dirs, strict=True)),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def batch_result(job_dir: Path) -> tuple[int | None, str]:
    """Rank 0's exit code (None: the job never finished) and console output of a batched job."""
    from support.job_batch import LOG_NAME, RC_NAME

    rc, log = job_dir / RC_NAME.format(rank=0), job_dir / LOG_NAME.format(rank=0)
    return (int(rc.read_text()) if rc.exists() else None), (log.read_text() if log.exists() else "")


def start_torchrun(job_dir: Path, nproc: int, log: Path, *extra: str) -> subprocess.Popen:
    """torchrun in the background, its output in ``log``."""
    handle = log.open("w")
    return subprocess.Popen(
        torchrun_command(job_dir, nproc, *extra),
        cwd=REPO,
        env=subprocess_env(),
        stdout=handle,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def wait_for(predicate, timeout: float, what: str, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def descendants(pid: int) -> list[int]:
    """Child processes, recursively (torchrun starts each worker in a session of its own)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL torchrun and every worker at once, as a node failure would."""
    for pid in [proc.pid, *descendants(proc.pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def read_metrics(job_dir: Path) -> list[dict]:
    path = job_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def losses_by_step(job_dir: Path) -> dict[int, float]:
    return {record["step"]: record["loss"] for record in read_metrics(job_dir)}


def describe(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\n--- output ---\n{result.stdout[-4000:]}\n{result.stderr[-6000:]}"


@dataclass(frozen=True)
class Run:
    """One parallel run of a test: its layout on ``nproc`` ranks and the job's settings (``write_job``)."""

    layout: Layout
    nproc: int
    grad_accum: int
    settings: dict[str, Any] = field(default_factory=dict)
    # (run, checkpoint): start from that run's checkpoint, which launch_runs has the batch copy
    # in when it reaches this run (after that run: same world size, later in the dict).
    resumes: tuple[str, str] | None = None

    def write(self, job_dir: Path) -> Path:
        return write_job(job_dir, self.layout, self.nproc, grad_accum=self.grad_accum, **self.settings)

    def write_single(self, job_dir: Path) -> Path:
        """The same job (same global batch) on one process."""
        dp = self.layout.resolve(self.nproc).dp
        return write_job(job_dir, Layout(dp_shard=1), 1, grad_accum=self.grad_accum * dp, **self.settings)


def launch_runs(root: Path, runs: dict[str, Run]) -> dict[str, Path]:
    """Every run in one torchrun launch of the largest world (:func:`run_torchrun_batch`; a run
    of fewer processes uses the first ranks): each run's job directory under ``root``, to read
    with :func:`finished`. For a module-scoped fixture."""
    from support.job_batch import SEED_CHECKPOINT

    jobs = {name: run.write(root / name) for name, run in runs.items()}
    names = sorted(runs, key=lambda name: runs[name].nproc)  # stable: each world's runs in order
    for name, run in runs.items():
        if run.resumes is not None:
            source, checkpoint = run.resumes
            assert names.index(source) < names.index(name), f"{name} resumes {source}, which runs later"
            (jobs[name] / SEED_CHECKPOINT).write_text(str(jobs[source] / "ckpt" / checkpoint))
    nproc = max(run.nproc for run in runs.values())
    result = run_torchrun_batch([jobs[n] for n in names], nproc, worlds=[runs[n].nproc for n in names])
    (root / f"launch-{nproc}.log").write_text(describe(result))
    return jobs


def finished(jobs: dict[str, Path], name: str) -> Path:
    """The job directory of a launched run that exited 0 (else its output as the failure)."""
    code, output = batch_result(jobs[name])
    assert code == ExitCode.OK, f"{name}: exit {code}\n{output[-6000:]}"
    return jobs[name]
