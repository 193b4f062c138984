"""``trainplan``: plan, estimate, explain, emit, run, detect, catalog, portfolio, fleet, app.

Thin: each command parses its flags, calls the API and renders (``ui.render``). Every
user error becomes one line on stderr and exit code 2; an infeasible request is an answer
(exit 0, ``feasible: false`` with the reason and the fix).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from enum import StrEnum
from pathlib import Path

import typer
from rich.markup import escape

try:  # typer >= 0.20 vendors click as typer._click
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer uses click itself
    import click  # type: ignore[no-redef]

from planner.errors import ExitCode, InfeasiblePlan
from planner.fmt import one_line
from planner.layout import (
    ActivationCheckpointing,
    Implementation,
    Layout,
    PipelineSchedule,
    Precision,
    Sharding,
    TrainingConfig,
)
from planner.model.settings import Stack
from ui import render
from ui.calibration import calibrated_catalog, choose_calibration
from ui.inputs import (
    MAX_BATCH_TOKENS,
    MAX_GPUS,
    MAX_PRICE_USD,
    check_input_file,
    check_range,
    load_model_arg,
    parse_pairs,
)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Size, plan and run LLM training: GPUs, layout, memory, time and cost.",
)

JSON = typer.Option(False, "--json", help="machine-readable output")
CALIBRATION_HELP = (
    "a calibration file from trainplan calibrate: measured rates that replace the catalog's"
    " (default: ~/.config/trainplan/calibration.toml, or under $XDG_CONFIG_HOME, where it exists)"
)
NO_CALIBRATION = typer.Option(False, "--no-calibration", help="ignore the default calibration file")
STACK_HELP = (
    "software to predict for: trainplan (runnable), or torchtitan / megatron-lm / megatron-core"
    " (estimate only; docs/model.md 4b)"
)


def _hide_flag_type(display_type_rich):
    """Typer's rich help prints ``<bool>`` beside flags, which take no value (its plain help does not)."""

    def display(self, ctx):
        return None if self.is_flag or self.count else display_type_rich(self, ctx)

    return display


if hasattr(typer.core, "TyperOption") and hasattr(typer.core.TyperOption, "display_type_rich"):
    typer.core.TyperOption.display_type_rich = _hide_flag_type(  # type: ignore[method-assign]
        typer.core.TyperOption.display_type_rich
    )


class ObjectiveChoice(StrEnum):
    cost = "cost"
    time = "time"
    mix = "mix"


class DeviceChoice(StrEnum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


@app.command()
def estimate(
    model: str = typer.Option(..., help="preset name or path to a Hugging Face config.json"),
    gpu: str = typer.Option(..., help="catalog GPU id (trainplan catalog)"),
    num_gpus: int = typer.Option(..., "--num-gpus", help="world size"),
    nodes: int | None = typer.Option(None, help="number of nodes (default: by the node template)"),
    tp: int = typer.Option(1, help="tensor-parallel degree"),
    pp: int = typer.Option(1, help="pipeline-parallel stages"),
    cp: int = typer.Option(1, help="context-parallel degree (splits the sequence)"),
    vpp: int = typer.Option(1, help="interleaved pipeline stages per rank (needs pp > 1 and 1f1b)"),
    ep: int = typer.Option(1, help="expert-parallel degree (MoE): experts split over ranks of dp_shard x cp"),
    pp_schedule: PipelineSchedule = typer.Option(
        PipelineSchedule.ONE_F_ONE_B, "--pp-schedule", help="pipeline schedule (with pp > 1)"
    ),
    dp_replicate: int = typer.Option(1, "--dp-replicate", help="data-parallel replicas (HSDP when > 1 with fsdp)"),
    dp_shard: int = typer.Option(-1, "--dp-shard", help="data-parallel shard group size; -1 = the rest of the world"),
    sharding: Sharding = typer.Option(
        Sharding.FSDP, help="none = DDP; zero1: optimizer states; zero2: + gradients; fsdp: + parameters"
    ),
    micro_batch: int = typer.Option(..., "--micro-batch", help="sequences per rank per micro-step"),
    seq_len: int = typer.Option(..., "--seq-len", help="tokens per sequence"),
    global_batch_tokens: int | None = typer.Option(
        None,
        "--global-batch-tokens",
        help="tokens per optimizer step; sets the gradient accumulation (the nearest batch the layout makes)",
    ),
    grad_accum: int | None = typer.Option(
        None, "--grad-accum", help="micro-steps per optimizer step (default 1; or from --global-batch-tokens)"
    ),
    ac: ActivationCheckpointing = typer.Option(
        ActivationCheckpointing.NONE, "--ac", help="activation checkpointing: selective = every other block"
    ),
    precision: Precision = typer.Option(Precision.BF16, help="training precision"),
    impl: Implementation | None = typer.Option(None, help="default: native for Llama and GPT-2/3 families, else hf"),
    compile: bool = typer.Option(False, "--compile", help="per-block torch.compile"),
    offload: bool = typer.Option(
        False, "--offload", help="CPU offload: optimizer states and the AdamW step on the host"
    ),
    tokens: float | None = typer.Option(None, help="training tokens, for time-to-train and cost"),
    price: float | None = typer.Option(None, help="USD per GPU-hour (overrides the catalog)"),
    out: Path | None = typer.Option(None, help="write a runnable plan file"),
    stack: Stack = typer.Option(Stack.TRAINPLAN, help=STACK_HELP),
    calibration: Path | None = typer.Option(None, help=CALIBRATION_HELP),
    no_calibration: bool = NO_CALIBRATION,
    as_json: bool = JSON,
) -> None:
    """Evaluate one given configuration: memory, step time, throughput, cost."""
    from planner.api import build_plan
    from planner.model.structure import context_extension_warning, default_implementation

    if global_batch_tokens is not None and grad_accum is not None:
        raise ValueError("give --global-batch-tokens or --grad-accum, not both")
    check_range("--num-gpus", num_gpus, 1, MAX_GPUS)
    check_range("--global-batch-tokens", global_batch_tokens, 1, MAX_BATCH_TOKENS)
    check_range("--grad-accum", grad_accum, 1, MAX_BATCH_TOKENS)
    check_range("--tokens", tokens, 0, 1e18, low_open=True)
    check_range("--price", price, 0, MAX_PRICE_USD)
    chosen = choose_calibration(calibration, no_calibration)
    spec, hf_path = load_model_arg(model)
    layout = Layout(
        dp_replicate=dp_replicate,
        dp_shard=dp_shard,
        tp=tp,
        pp=pp,
        cp=cp,
        vpp=vpp,
        ep=ep,
        pp_schedule=pp_schedule,
        sharding=sharding,
    )
    dp = layout.resolve(num_gpus).dp
    accum = grad_accum or (
        TrainingConfig.grad_accum_for(global_batch_tokens, micro_batch, seq_len, dp) if global_batch_tokens else 1
    )
    training = TrainingConfig(
        seq_len=seq_len,
        micro_batch=micro_batch,
        grad_accum=accum,
        activation_checkpointing=ac,
        precision=precision,
        impl=impl or default_implementation(spec),
        compile=compile,
        offload=offload,
    )
    plan = build_plan(
        spec,
        gpu,
        layout,
        training,
        num_gpus=num_gpus,
        num_nodes=nodes,
        training_tokens=tokens,
        price=price,
        hf_config_path=hf_path,
        requested_global_batch_tokens=global_batch_tokens,
        stack=stack,
        catalog=calibrated_catalog(chosen),
    )
    if warning := context_extension_warning(spec, seq_len):
        render.warn(warning)
    if out:
        plan.save(out)
    render.estimate(plan, as_json=as_json, saved_to=out, calibration=chosen)


@app.command()
def plan(
    model: str = typer.Option(..., help="preset name or path to a Hugging Face config.json"),
    tokens: float = typer.Option(..., help="training tokens, e.g. 2e11"),
    deadline_days: float | None = typer.Option(None, "--deadline-days", help="finish training within this many days"),
    budget_usd: float | None = typer.Option(None, "--budget-usd", help="spend at most this many USD"),
    objective: ObjectiveChoice = typer.Option(
        ObjectiveChoice.cost, help="minimise cost, time, or an even mix of the two (each against its best)"
    ),
    gpus: str | None = typer.Option(None, help="allowed GPUs with inventory: h100-sxm=64,a100-80gb-sxm"),
    prices: str | None = typer.Option(None, "--price", help="USD per GPU-hour overrides: h100-sxm=2.5"),
    seq_len: int | None = typer.Option(None, "--seq-len", help="default 4096, or the model's context if shorter"),
    global_batch_tokens: int | None = typer.Option(
        None, "--global-batch-tokens", help="tokens per optimizer step (default: by model size, 1M to 4M)"
    ),
    batch_tolerance: float = typer.Option(
        0.05,
        "--batch-tolerance",
        help="largest relative distance of the batch from --global-batch-tokens; the plan uses the"
        " requested batch when a layout divides it, else the nearest achievable one",
    ),
    vary_batch: bool = typer.Option(
        False, "--vary-batch", help="let the plan and its alternatives use any batch within the tolerance"
    ),
    precision: Precision = typer.Option(Precision.BF16, help="training precision"),
    impl: Implementation | None = typer.Option(None, help="default: native for Llama and GPT-2/3 families, else hf"),
    allow_offload: bool = typer.Option(
        False, "--allow-offload", help="consider CPU offload (optimizer states and step on the host)"
    ),
    compile: bool = typer.Option(False, "--compile", help="plan for per-block torch.compile"),
    max_gpus: int | None = typer.Option(
        None,
        "--max-gpus",
        help="largest GPU count to consider per type (default: the type's inventory in --gpus; 4096,"
        " or the largest inventory given, for a type without one)",
    ),
    top: int = typer.Option(5, "--top", help="alternatives to list"),
    out: Path | None = typer.Option(None, help="write the chosen plan (input of trainplan emit)"),
    stack: Stack = typer.Option(Stack.TRAINPLAN, help=STACK_HELP),
    calibration: Path | None = typer.Option(None, help=CALIBRATION_HELP),
    no_calibration: bool = NO_CALIBRATION,
    as_json: bool = JSON,
) -> None:
    """Choose GPU type, count and parallel layout for one training job (ILP)."""
    from planner.api import PlanRequest
    from planner.api import plan as solve

    check_range("--tokens", tokens, 0, 1e18, low_open=True)
    check_range("--global-batch-tokens", global_batch_tokens, 1, MAX_BATCH_TOKENS)
    check_range("--max-gpus", max_gpus, 1, MAX_GPUS)
    chosen = choose_calibration(calibration, no_calibration)
    spec, hf_path = load_model_arg(model)
    request = PlanRequest(
        model=spec,
        hf_config_path=hf_path,
        training_tokens=tokens,
        deadline_days=deadline_days,
        budget_usd=budget_usd,
        objective=objective.value,
        gpus=parse_pairs(gpus, "--gpus", int) or None,
        price_overrides=parse_pairs(prices, "--price"),
        seq_len=seq_len,
        global_batch_tokens=global_batch_tokens,
        batch_tolerance=batch_tolerance,
        vary_batch=vary_batch,
        precision=precision,
        impl=impl,
        allow_offload=allow_offload,
        compile=compile,
        max_gpus=max_gpus,
        top_k=top,
        stack=stack,
    )
    try:
        with render.working("searching layouts and solving the ILP", quiet=as_json):
            result = solve(request, catalog=calibrated_catalog(chosen))
    except InfeasiblePlan as exc:
        render.infeasible(exc, as_json=as_json, calibration=chosen)
        return
    if out:
        result.plan.save(out)
    render.plan_result(result, as_json=as_json, saved_to=out, calibration=chosen)


@app.command()
def explain(
    plan_file: Path = typer.Argument(..., help="a plan.json"),
    stack: Stack | None = typer.Option(None, help="re-estimate the plan for this stack (default: the plan's)"),
    calibration: Path | None = typer.Option(None, help=CALIBRATION_HELP + " (re-estimates the plan)"),
    no_calibration: bool = NO_CALIBRATION,
    as_json: bool = JSON,
) -> None:
    """Explain a plan: every memory and time term, and what limits it."""
    from planner.api import restack
    from planner.plan import Plan

    chosen = choose_calibration(calibration, no_calibration)
    loaded = Plan.load(check_input_file(plan_file))
    if loaded.estimate.feasible and not loaded.estimate.time.step_s > 0:
        raise ValueError(f"{plan_file}: estimate.time.step_s must be > 0 in a feasible plan")
    if stack is not None or chosen is not None:
        loaded = restack(loaded, stack or loaded.stack, catalog=calibrated_catalog(chosen))
    render.explain(loaded, as_json=as_json, calibration=chosen)


@app.command()
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
    """Measure this machine's GEMM, attention, copy and collective rates, or read a finished job's
    step time and memory (--calibrate-from), into a calibration file that plan, estimate and explain use."""
    from ui.calibration import calibrate_from_job, run_calibration

    if calibrate_from is not None:
        if quick or device != DeviceChoice.auto or collectives is not None:
            raise ValueError(
                "--calibrate-from reads a job's measurements: --quick, --device and --collectives measure here"
            )
        calibrate_from_job(calibrate_from, gpu, out)
        return
    run_calibration(gpu, device.value, quick, out, collectives)


@app.command()
def catalog(as_json: bool = JSON) -> None:
    """List the GPUs in the hardware catalog with their key numbers and sources."""
    from planner.catalog.hardware import load_catalog

    render.catalog(load_catalog(), as_json=as_json)


@app.command()
def detect(as_json: bool = JSON) -> None:
    """Read the local NVIDIA GPUs (NVML) and match them to catalog entries."""
    from planner.catalog.detect import NoGPUDriver, detect_gpus
    from planner.catalog.hardware import load_catalog

    try:
        found = detect_gpus(load_catalog())
    except NoGPUDriver as exc:
        render.no_driver(str(exc), as_json=as_json)
        return
    render.detected(found, as_json=as_json)


@app.command()
def emit(
    plan_file: Path = typer.Argument(..., help="plan.json from trainplan plan/estimate --out"),
    out: Path = typer.Option(..., "--out", help="job directory to write"),
    steps: int = typer.Option(50, help="optimizer steps to train"),
    checkpoint_every: int | None = typer.Option(
        None,
        "--checkpoint-every",
        help="save a checkpoint every N steps (default: the plan's goodput interval, else 20)",
    ),
    no_checkpoints: bool = typer.Option(False, "--no-checkpoints", help="never save (benchmarks)"),
    data: str = typer.Option("synthetic", help="'synthetic' or a path to text/jsonl/parquet files"),
    tokenizer: str | None = typer.Option(None, help="local tokenizer.json (default: byte-level)"),
    seed: int = typer.Option(1234, help="random seed (weights and data order)"),
    loss_chunk_tokens: int | None = typer.Option(
        None,
        "--loss-chunk-tokens",
        min=0,
        help="LM head + loss over this many tokens at a time; 0 = full logits (default: the planner's, 1024)",
    ),
    name: str | None = typer.Option(None, help="job name (default: the directory name)"),
    force: bool = typer.Option(
        False, "--force", help="write an infeasible plan, or into a directory that holds another job"
    ),
    as_json: bool = JSON,
) -> None:
    """Turn a plan into a job directory: job.json, launch.sh, slurm.sbatch, k8s.yaml."""
    from planner.plan import Plan
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings

    given = {
        name: value
        for name, value in (("checkpoint_every", checkpoint_every), ("loss_chunk_tokens", loss_chunk_tokens))
        if value is not None  # unset: RunSettings' default
    }
    if not str(out).strip():  # Path("") is ".": the current directory
        raise ValueError("--out: give a directory name")
    run = RunSettings(
        steps=steps,
        data=data,
        tokenizer=tokenizer,
        seed=seed,
        save_checkpoints=not no_checkpoints,
        **given,
    )
    job_json = emit_job(Plan.load(check_input_file(plan_file)), out, name=name, run=run, force=force)
    render.emitted(job_json, as_json=as_json)


@app.command()
def run(
    job_dir: Path = typer.Argument(..., help="a job directory from trainplan emit"),
    device: DeviceChoice = typer.Option(DeviceChoice.auto, help="auto: cuda when available, else cpu"),
    nproc: int | None = typer.Option(None, help="processes on this node (default: the plan's)"),
    steps: int | None = typer.Option(None, help="override the number of steps"),
    auto_replan: bool = typer.Option(False, "--auto-replan", help="re-solve and continue if the probe does not fit"),
    max_restarts: int = typer.Option(0, "--max-restarts", help="torchrun elastic restarts"),
    nnodes: int | None = typer.Option(None, help="nodes in the run (default: the plan's)"),
    node_rank: int = typer.Option(0, "--node-rank", help="this node's rank"),
    rdzv_endpoint: str | None = typer.Option(None, "--rdzv-endpoint", help="HOST:PORT of node 0 (multi-node)"),
    rdzv_id: str | None = typer.Option(None, "--rdzv-id", help="rendezvous id shared by all nodes"),
) -> None:
    """Run (or resume) a job with torchrun on this machine."""
    from trainer.launch import run_job

    code = run_job(
        job_dir,
        device=device.value,
        nproc=nproc,
        steps=steps,
        auto_replan=auto_replan,
        max_restarts=max_restarts,
        nnodes=nnodes,
        node_rank=node_rank,
        rdzv_endpoint=rdzv_endpoint,
        rdzv_id=rdzv_id,
    )
    raise typer.Exit(code)


@app.command()
def portfolio(
    jobs_file: Path = typer.Argument(..., help=escape("jobs file (TOML/JSON) with [inventory] and [[jobs]]")),
    emit_dir: Path | None = typer.Option(
        None, "--emit", help="also write each job's directory, DIR/<job name>/, as trainplan emit does"
    ),
    as_json: bool = JSON,
) -> None:
    """Size several jobs at once on one shared GPU inventory."""
    from planner.search.explore import plan_portfolio
    from ui.portfolio_file import read_jobs_file

    spec = read_jobs_file(check_input_file(jobs_file))
    if not spec.inventory:
        raise ValueError(f"{jobs_file}: portfolio needs an [inventory] table")
    requests = spec.requests({g: n for g, n in spec.inventory.items()})
    try:
        with render.working(f"planning {len(requests)} jobs", quiet=as_json):
            solution = plan_portfolio(
                requests,
                spec.inventory,
                objective=spec.objective,
                horizon_days=spec.horizon_days,
                num_slots=spec.num_slots,
            )
    except InfeasiblePlan as exc:
        render.infeasible(exc, as_json=as_json)
        return
    emitted = None
    if emit_dir is not None:
        from trainer.job import emit_job
        from trainer.job_spec import RunSettings

        emitted = {
            a.job: emit_job(a.plan, emit_dir / a.job, name=a.job, run=RunSettings()) for a in solution.assignments
        }
    render.portfolio(solution, as_json=as_json, emitted=emitted)


@app.command()
def fleet(
    jobs_file: Path = typer.Argument(
        ...,
        help=escape(
            "jobs file (TOML/JSON) with horizon_days, the GPU types to buy"
            " (buy = [...] at catalog prices, or [purchase_usd] with prices) and [[jobs]]"
        ),
    ),
    as_json: bool = JSON,
) -> None:
    """Rent vs buy: how many GPUs of each type to own for a set of jobs over a horizon."""
    from planner.catalog.hardware import load_catalog
    from planner.search.explore import plan_fleet
    from ui.portfolio_file import purchase_prices, read_jobs_file

    spec = read_jobs_file(check_input_file(jobs_file))
    prices = purchase_prices(spec, load_catalog())
    for gpu_id, usd in prices.items():
        check_range(f"{jobs_file}: purchase_usd.{gpu_id}", usd, 0, 1e9, low_open=True)
    if not prices or spec.horizon_days is None:
        raise ValueError(f"{jobs_file}: fleet needs horizon_days and GPU types to buy ([purchase_usd] or buy = [...])")
    requests = spec.requests({g: None for g in prices})
    try:
        with render.working(f"sizing the fleet for {len(requests)} jobs", quiet=as_json):
            solution = plan_fleet(requests, prices, spec.horizon_days, num_slots=max(spec.num_slots, 2))
    except InfeasiblePlan as exc:
        render.infeasible(exc, as_json=as_json)
        return
    render.fleet(solution, as_json=as_json)


@app.command("app")
def app_command(
    port: int = typer.Option(8501, help="port to serve on"),
    address: str = typer.Option("localhost", help="address to bind (0.0.0.0 to serve other machines)"),
) -> None:
    """Start the Streamlit sizing app (bound to localhost by default)."""
    from ui.charts import UPLOAD_LIMIT_MB  # the app's own size check, in the MB the browser counts

    app_path = Path(__file__).resolve().parent.parent / "app.py"
    raise typer.Exit(
        run_forwarding_signals(
            [
                sys.executable,
                "-m",
                "streamlit",
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


def _flush_stdout() -> bool:
    """Flush stdout now (e.g. to /dev/full) so a failure is one line, not an error at exit."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit
        print(f"trainplan: error: cannot write the output ({exc.strerror})", file=sys.stderr)
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Entry point: map user errors to one line + exit 2; let real bugs raise."""
    code = _main(argv)
    return code if _flush_stdout() else ExitCode.INVALID


def _main(argv: list[str] | None) -> int:
    from pydantic import ValidationError

    try:
        code = app(args=argv, standalone_mode=False, prog_name="trainplan")
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        print("trainplan: aborted", file=sys.stderr)
        return ExitCode.ABORTED
    except BrokenPipeError:
        return ExitCode.OK
    except click.exceptions.NoArgsIsHelpError:
        return ExitCode.OK
    except click.ClickException as exc:
        print(f"trainplan: error: {exc.format_message()}", file=sys.stderr)
        return ExitCode.INVALID
    except (ValueError, ValidationError, FileNotFoundError, json.JSONDecodeError) as exc:
        print(f"trainplan: error: {one_line(exc)}", file=sys.stderr)
        return ExitCode.INVALID
    except OSError as exc:  # --out on a read-only or full disk, a directory, a name too long
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"trainplan: error: {where}{exc.strerror or one_line(exc)}"[:500], file=sys.stderr)
        return ExitCode.INVALID
    except OverflowError:
        print("trainplan: error: a number is too large", file=sys.stderr)
        return ExitCode.INVALID
    except RecursionError:
        print("trainplan: error: an input file is nested too deeply", file=sys.stderr)
        return ExitCode.INVALID
    return code if isinstance(code, int) else ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
