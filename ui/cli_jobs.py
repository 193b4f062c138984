"""``trainplan`` commands about jobs and this machine: calibrate, detect, emit, run, app.

Registered on the shared Typer app by ui/cli.py (which keeps the planning commands and the error
mapping of ``main``); thin like them: parse, call, render.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from planner.limits import MAX_TOKENIZER_BYTES, check_input
from trainer.files import RESTART_FROM_SCRATCH_HELP
from ui import render, render_jobs
from ui.calibration import applied_calibration, plan_file_calibration
from ui.cli_options import (
    CALIBRATION_HELP,
    JOB_DIR,
    JSON,
    K8S_IMAGE,
    K8S_PVC,
    NO_CALIBRATION,
    DeviceChoice,
    k8s_names,
)
from ui.cluster_flags import with_cluster_flags
from ui.inputs import check_range

if TYPE_CHECKING:
    from planner.plan import Plan
    from trainer.job_spec import ClusterSettings, RunSettings


def calibrate(
    gpu: str | None = typer.Option(None, help="catalog id the measurements belong to (default: NVML's match)"),
    device: DeviceChoice = typer.Option(DeviceChoice.auto, help="auto: cuda when available, else cpu (format only)"),
    quick: bool = typer.Option(False, "--quick", help="smaller sizes, fewer repeats (about a minute on a GPU)"),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="calibration file to write or merge into (default: ~/.config/trainplan/calibration.toml,"
        " or under $XDG_CONFIG_HOME)",
    ),
    collectives: int | None = typer.Option(
        None,
        "--collectives",
        min=0,
        help="also time all-reduce/all-gather/reduce-scatter over N local devices (default: every local GPU"
        " when there are 2 or more; 0: none; on cpu, N gloo processes)",
    ),
    calibrate_from: Path | None = typer.Option(
        None,
        "--calibrate-from",
        help="a finished trainplan run job directory: write its measured step time and peak memory"
        " (instead of measuring kernels here)",
    ),
) -> None:
    """Measure rates into a calibration file that plan, estimate, explain, emit, portfolio and fleet apply.

    The rates are this machine's GEMM, attention, copy and collective rates, or a finished job's
    step time and memory (--calibrate-from)."""
    from ui.calibration import calibrate_from_job, run_calibration

    if calibrate_from is not None:
        if quick or device != DeviceChoice.auto or collectives is not None:
            raise ValueError(
                "--calibrate-from reads a job's measurements: --quick, --device and --collectives measure here"
            )
        calibrate_from_job(calibrate_from, gpu, out)
        return
    run_calibration(gpu, device.value, quick, out, collectives)


def detect(as_json: bool = JSON) -> None:
    """Read the local NVIDIA GPUs (NVML) and match them to catalog entries."""
    from planner.catalog.detect import NoGPUDriver, detect_gpus
    from planner.catalog.hardware import load_catalog

    try:
        found = detect_gpus(load_catalog())
    except NoGPUDriver as exc:  # calib50 L1: exit 0 with the reason, which a script had to parse out
        raise ValueError(str(exc)) from None
    render.detected(found, as_json=as_json)


# emit's run-setting options that take no logic, apart so that its signature stays readable (the
# house limit on a function's length: tests/planner/test_house_limits.py)
KEEP_CHECKPOINTS = typer.Option(None, "--keep-checkpoints", min=1, help="newest checkpoints kept on disk (default 2)")
EVAL_EVERY = typer.Option(
    None, "--eval-every", min=0, help="validation loss every N steps (default 0: only the test loss at the end)"
)
DATA = typer.Option(
    None, help="'synthetic' or a path to text/jsonl/parquet files (default: synthetic; over a job: its own)"
)
WARMUP_STEPS = typer.Option(
    None, "--warmup-steps", min=0, help="linear warmup steps (default: 1 % of the steps, 5 to 2,000)"
)
LOSS_CHUNK_TOKENS = typer.Option(
    None,
    "--loss-chunk-tokens",
    min=0,
    help="LM head + loss over this many tokens at a time; 0 = full logits (default: the planner's, 1024)",
)


@with_cluster_flags
def emit(
    plan_file: Path = typer.Argument(..., help="plan.json from trainplan plan/estimate --out"),
    out: Path = JOB_DIR,
    steps: int | None = typer.Option(
        None, help="optimizer steps to train (default: the plan's token budget at its batch, else 50)"
    ),
    checkpoint_every: int | None = typer.Option(
        None,
        "--checkpoint-every",
        help="save a checkpoint every N steps (default: the plan's goodput interval, else 20)",
    ),
    no_checkpoints: bool = typer.Option(False, "--no-checkpoints", help="never save (benchmarks)"),
    keep_checkpoints: int | None = KEEP_CHECKPOINTS,
    eval_every: int | None = EVAL_EVERY,
    data: str | None = DATA,
    tokenizer: str | None = typer.Option(None, help="local tokenizer.json (default: byte-level)"),
    seed: int | None = typer.Option(None, help="random seed (weights and data order; default 1234)"),
    lr: float | None = typer.Option(None, "--lr", help="peak learning rate (AdamW; default 3e-4)"),
    warmup_steps: int | None = WARMUP_STEPS,
    loss_chunk_tokens: int | None = LOSS_CHUNK_TOKENS,
    name: str | None = typer.Option(None, help="job name (default: the directory name)"),
    force: bool = typer.Option(
        False, "--force", help="write an infeasible plan, or into a directory that holds another job"
    ),
    calibration: Path | None = typer.Option(
        None,
        help=CALIBRATION_HELP + " (a file other than the plan's own, or run settings the plan did not model,"
        " make emit estimate the plan again)",
    ),
    no_calibration: bool = NO_CALIBRATION,
    k8s_image: str | None = K8S_IMAGE,
    k8s_pvc: str | None = K8S_PVC,
    as_json: bool = JSON,
    cluster: ClusterSettings | None = None,  # the cluster flags (with_cluster_flags)
) -> None:
    """Turn a plan into a job directory: job.json, launch.sh, slurm.sbatch, k8s.yaml.

    Over an existing job, the run settings not given here are that job's."""
    from planner.plan import Plan
    from trainer.job import emit_job, replaced_job
    from trainer.job_spec import recalibrates

    if tokenizer and Path(tokenizer).expanduser().exists():  # a missing one: emit_job names the flag
        check_input(Path(tokenizer).expanduser(), "tokenizer", MAX_TOKENIZER_BYTES)
    plan = Plan.load(plan_file)
    run = run_settings(
        plan,
        steps=steps,
        checkpoint_every=checkpoint_every,
        no_checkpoints=no_checkpoints,
        keep_checkpoints=keep_checkpoints,
        eval_every=eval_every,
        data=data,
        tokenizer=tokenizer,
        seed=seed,
        lr=lr,
        warmup_steps=warmup_steps,
        loss_chunk_tokens=loss_chunk_tokens,
    )
    # The plan's own calibration choice, or the flags': a re-estimate for changed run settings uses it.
    applied = applied_calibration(plan_file_calibration(calibration, no_calibration, plan.calibration))
    replaced = replaced_job(out)
    job_json = emit_job(
        plan,
        out,
        name=name,
        run=run,
        force=force,
        calibration=applied,
        cluster=cluster,
        given=frozenset(run.model_fields_set - ({"steps"} if steps is None else set())),
        **k8s_names(k8s_image, k8s_pvc),
    )
    plan_step_s = plan.estimate.time.step_s if recalibrates(plan, applied) else None
    render_jobs.emitted(job_json, as_json=as_json, plan_step_s=plan_step_s, replaced=replaced)


def run_settings(
    plan: Plan,
    *,
    steps: int | None,
    checkpoint_every: int | None,
    no_checkpoints: bool,
    keep_checkpoints: int | None,
    eval_every: int | None,
    data: str | None,
    tokenizer: str | None,
    seed: int | None,
    lr: float | None,
    warmup_steps: int | None,
    loss_chunk_tokens: int | None,
) -> RunSettings:
    """The job's run settings of emit's flags: the plan's steps where none are given, and
    RunSettings' own default for each other flag not given (left out of ``model_fields_set``, so
    that a job emitted over keeps its own: trainer/job.py ``kept_run``)."""
    from trainer.job import default_steps
    from trainer.job_spec import RunSettings

    steps = default_steps(plan) if steps is None else steps
    if warmup_steps is not None and warmup_steps >= steps:  # the peak learning rate never reached
        raise ValueError(f"--warmup-steps {warmup_steps}: at least the job's {steps} steps; give fewer")
    # trial s49 L3: `--no-checkpoints --checkpoint-every 5` was accepted without a word
    for flag, value in (("--checkpoint-every", checkpoint_every), ("--keep-checkpoints", keep_checkpoints)):
        if no_checkpoints and value is not None:
            raise ValueError(f"{flag} {value} with --no-checkpoints: this job saves no checkpoints; give one of them")
    named = dict(
        data=data,
        tokenizer=tokenizer,
        seed=seed,
        # --no-checkpoints, or a checkpoint flag (which turns saving back on over a --no-checkpoints job)
        save_checkpoints=False
        if no_checkpoints
        else (True if checkpoint_every is not None or keep_checkpoints is not None else None),
        checkpoint_every=checkpoint_every,
        keep_checkpoints=keep_checkpoints,
        eval_every=eval_every,
        loss_chunk_tokens=loss_chunk_tokens,
        lr=lr,
        warmup_steps=warmup_steps,
    )
    given = {name: value for name, value in named.items() if value is not None}  # unset: RunSettings' default
    return RunSettings(steps=steps, **given)


STEPS_HELP = (
    "stop at this step of the job's planned learning-rate schedule (run again without it to go on); "
    "past the job's steps: extend it, the schedule stretched"
)


def run(
    job_dir: Path = typer.Argument(..., help="a job directory from trainplan emit"),
    device: DeviceChoice = typer.Option(DeviceChoice.auto, help="auto: cuda when available, else cpu"),
    nproc: int | None = typer.Option(None, help="processes on this node (default: the plan's)"),
    steps: int | None = typer.Option(None, help=STEPS_HELP),
    auto_replan: bool = typer.Option(False, "--auto-replan", help="re-solve and continue if the probe does not fit"),
    max_restarts: int = typer.Option(0, "--max-restarts", help="torchrun elastic restarts"),
    nnodes: int | None = typer.Option(None, help="nodes in the run (default: the plan's)"),
    node_rank: int = typer.Option(0, "--node-rank", help="this node's rank"),
    rdzv_endpoint: str | None = typer.Option(None, "--rdzv-endpoint", help="HOST:PORT of node 0 (multi-node)"),
    rdzv_id: str | None = typer.Option(None, "--rdzv-id", help="rendezvous id shared by all nodes"),
    restart_from_scratch: bool = typer.Option(False, "--restart-from-scratch", help=RESTART_FROM_SCRATCH_HELP),
) -> None:
    """Run (or resume) a job with torchrun on this machine."""
    from trainer.launch import NodeLaunch, run_job

    launch = NodeLaunch(
        device=device.value,
        nproc=nproc,
        steps=steps,
        max_restarts=max_restarts,
        nnodes=nnodes,
        node_rank=node_rank,
        rdzv_endpoint=rdzv_endpoint,
        rdzv_id=rdzv_id,
        restart_from_scratch=restart_from_scratch,
    )
    code = run_job(job_dir, launch, auto_replan=auto_replan)
    raise typer.Exit(code)


def app_command(
    port: int = typer.Option(8501, help="port to serve on"),
    address: str = typer.Option("localhost", help="address to bind (0.0.0.0 to serve other machines)"),
) -> None:
    """Start the Streamlit sizing app (bound to localhost by default)."""
    from ui.app_server import check_installed

    check_range("--port", port, 1, 65535)
    check_address(address, port)
    check_installed()
    from ui.app_core import UPLOAD_LIMIT_MB  # the app's own size check, in the MB the browser counts

    app_path = Path(__file__).resolve().parent.parent / "app.py"
    raise typer.Exit(
        run_forwarding_signals(
            [
                sys.executable,
                "-m",
                "ui.app_server",  # streamlit run, with the Host header checked (DNS rebinding)
                "run",
                str(app_path),
                "--server.address",
                address,
                "--server.port",
                str(port),
                "--server.headless",
                "true",
                "--browser.gatherUsageStats",
                "false",
                "--server.maxUploadSize",
                str(UPLOAD_LIMIT_MB),
                "--server.fileWatcherType",
                "none",
            ]
        )
    )


def check_address(address: str, port: int) -> None:
    """``--address`` is a name or address this machine resolves (ValueError naming it otherwise)."""
    if not address.strip() or not address.isprintable():
        raise ValueError(f"--address {address!r}: give a host name or an IP address")
    try:
        socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise ValueError(f"--address {address}: cannot resolve it ({getattr(exc, 'strerror', None) or exc})") from None


def run_forwarding_signals(argv: list[str]) -> int:
    """Run ``argv``; SIGTERM/SIGINT to us reach it too (``subprocess.call`` would leave it running)."""
    child = subprocess.Popen(argv)
    forwarded = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, lambda signum, _frame: child.send_signal(signum)) for sig in forwarded}
    try:
        return child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if child.poll() is None:
            child.terminate()
            child.wait()
