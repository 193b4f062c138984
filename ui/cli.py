"""``trainplan``: plan, estimate, explain here; catalog and models in ui/cli_listings.py; portfolio
and fleet in ui/cli_portfolio.py; calibrate, detect, emit, run and app in ui/cli_jobs.py; the shared
app and options in ui/cli_options.py.

Thin: each command parses its flags, calls the API and renders (``ui.render``). Every
user error becomes one line on stderr and exit code 2; an infeasible request is an answer
(exit 0, ``feasible: false`` with the reason and the fix).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from planner.accuracy import DEFAULT_RISK, Risk
from planner.layout import ActivationCheckpointing, Implementation, PipelineSchedule, Precision, Sharding
from planner.model.attention_kernels import AttentionKernel
from planner.model.stacks import Stack
from planner.search.ilp import Objective
from planner.search.space import DEFAULT_BATCH_TOLERANCE, DEFAULT_MAX_GPUS
from ui import cli_errors, cli_explain, cli_jobs, cli_listings, cli_portfolio
from ui.calibration import applied_calibration
from ui.cli_examples import epilog
from ui.cli_options import (
    AC_BLOCKS,
    AC_HELP,
    ATTENTION,
    CALIBRATION,
    GPUS,
    GRAD_REDUCE_BF16,
    IMPL,
    JSON,
    MODEL,
    MOE_A2A_OVERLAP,
    NETWORK,
    NO_CALIBRATION,
    PARAM_REMAINDERS,
    PARTITION_ACTIVATIONS,
    PRECISION,
    PRICE_KIND,
    PURE_BF16,
    SEQ_LEN,
    SHARDING,
    STACK,
    TERM_FILLED,
    TOP,
    TP_COMM_OVERLAP,
    app,
    plan_out,
)
from ui.cli_phases import (
    check_estimate_flags,
    check_plan_flags,
    estimate_ac_mode,
    estimate_training,
    optimizer_formats,
    plan_gpus,
    read_model,
    render_estimate,
    render_planned,
    solve_plan,
    stack_settings,
)
from ui.cli_run_losses import (
    CHECKPOINT_WRITE_GB_PER_S,
    DATA_STALL_PCT,
    EVAL_PCT,
    FAILURE_RATE_X,
    RESTART_MINUTES,
    STARTUP_MINUTES,
    run_loss_inputs,
)
from ui.inputs import ac_modes, given_layout, sized_number


@app.command(epilog=epilog("estimate"))
def estimate(
    model: str = MODEL,
    gpu: str = typer.Option(..., help="catalog GPU id (trainplan catalog)"),
    num_gpus: int = typer.Option(..., "--num-gpus", help="world size"),
    nodes: int | None = typer.Option(None, help="number of nodes (default: by the node template)"),
    tp: int = typer.Option(1, help="tensor-parallel degree"),
    pp: int = typer.Option(1, help="pipeline-parallel stages"),
    cp: int = typer.Option(1, help="context-parallel degree (splits the sequence)"),
    vpp: int = typer.Option(1, help="interleaved pipeline stages per rank (needs pp > 1 and 1f1b)"),
    ep: int = typer.Option(1, help="expert-parallel degree (MoE): experts split over ranks of dp_shard x cp"),
    expert_tp: bool = typer.Option(
        True,
        "--expert-tp/--no-expert-tp",
        help="MoE with tp > 1 (another --stack; trainplan's own trainer runs MoE at tp 1): experts split over"
        " tp; --no-expert-tp: whole experts, ep borrows tp (Megatron-Core's expert tp 1)",
    ),
    pp_schedule: PipelineSchedule = typer.Option(
        PipelineSchedule.ONE_F_ONE_B, "--pp-schedule", help="pipeline schedule (with pp > 1)"
    ),
    dp_replicate: int | None = typer.Option(
        None,
        "--dp-replicate",
        help="data-parallel replicas (HSDP when > 1 with fsdp; default 1); with --sharding none every data-parallel"
        " rank is a replica: default the rest of the GPUs, and a given count must fill them",
    ),
    dp_shard: int = typer.Option(-1, "--dp-shard", help="data-parallel shard group size; -1 = the rest of the world"),
    sharding: str | None = SHARDING,
    micro_batch: int = typer.Option(1, "--micro-batch", help="sequences per rank per micro-step"),
    seq_len: int | None = SEQ_LEN,
    batch_tokens: float | None = typer.Option(
        None,
        "--global-batch-tokens",
        parser=sized_number,
        help="tokens per optimizer step (4e6, 4194304 or 4M); sets the gradient accumulation (the nearest batch the"
        " layout makes)",
    ),
    grad_accum: int | None = typer.Option(
        None,
        "--grad-accum",
        help="micro-steps per optimizer step (default 1, with pp > 1 the model's default batch; or from --global-batch-tokens)",
    ),
    ac: ActivationCheckpointing | None = typer.Option(None, "--ac", help=AC_HELP + " (default none)"),
    ac_blocks: int | None = AC_BLOCKS,
    precision: Precision = PRECISION,
    impl: Implementation | None = IMPL,
    compile: bool = typer.Option(
        False, "--compile", help="per-block torch.compile (not under the Megatron stacks or deepseek-v3: refused)"
    ),
    offload: bool = typer.Option(
        False, "--offload", help="CPU offload: optimizer states and the AdamW step on the host"
    ),
    tokens: float | None = typer.Option(
        None, parser=sized_number, help="training tokens, for time-to-train and cost (2e11, or 200B)"
    ),
    price: float | None = typer.Option(None, help="USD per GPU-hour (overrides the catalog)"),
    price_kind: str | None = PRICE_KIND,
    term_filled: float = TERM_FILLED,
    network: str | None = NETWORK,
    out: Path | None = plan_out("write a runnable plan file"),
    stack: Stack = STACK,
    attention: AttentionKernel | None = ATTENTION,
    partition_activations: bool = PARTITION_ACTIVATIONS,
    moe_a2a_overlap: bool = MOE_A2A_OVERLAP,
    tp_comm_overlap: bool = TP_COMM_OVERLAP,
    grad_reduce_in_bf16: bool = GRAD_REDUCE_BF16,
    precision_aware_optimizer: bool = PARAM_REMAINDERS,
    pure_bf16: bool = PURE_BF16,
    calibration: Path | None = CALIBRATION,
    no_calibration: bool = NO_CALIBRATION,
    failure_rate_x: float | None = FAILURE_RATE_X,
    checkpoint_write_gb_per_s: float | None = CHECKPOINT_WRITE_GB_PER_S,
    restart_minutes: float | None = RESTART_MINUTES,
    data_stall_pct: float | None = DATA_STALL_PCT,
    eval_pct: float | None = EVAL_PCT,
    startup_minutes: float | None = STARTUP_MINUTES,
    as_json: bool = JSON,
) -> None:
    """Evaluate one given configuration: memory, step time, throughput, cost."""
    from planner.api import build_plan

    global_batch_tokens = check_estimate_flags(
        num_gpus=num_gpus,
        batch_tokens=batch_tokens,
        grad_accum=grad_accum,
        micro_batch=micro_batch,
        tokens=tokens,
        price=price,
        seq_len=seq_len,
        nodes=nodes,
    )
    read = read_model(model, stack, pp, calibration, no_calibration)
    mode = estimate_ac_mode(ac, ac_blocks, read.spec)
    layout = given_layout(
        read.stack,
        None if sharding is None else Sharding(sharding),
        num_gpus,
        dp_replicate=dp_replicate,
        dp_shard=dp_shard,
        tp=tp,
        pp=pp,
        cp=cp,
        vpp=vpp,
        ep=ep,
        expert_tp=expert_tp,
        pp_schedule=pp_schedule,
    )
    setup = estimate_training(
        read,
        layout,
        mode,
        num_gpus=num_gpus,
        seq_len=seq_len,
        micro_batch=micro_batch,
        grad_accum=grad_accum,
        global_batch_tokens=global_batch_tokens,
        ac_blocks=ac_blocks,
        precision=precision,
        impl=impl,
        compile=compile,
        offload=offload,
    )
    applied = applied_calibration(read.calibration)
    plan = build_plan(
        read.spec,
        gpu,
        layout,
        setup.training,
        num_gpus=num_gpus,
        num_nodes=nodes,
        training_tokens=tokens,
        price=price,
        requested_global_batch_tokens=global_batch_tokens,
        calibration=applied,
        **stack_settings(
            read,
            price_kind=price_kind,
            term_filled=term_filled,
            network=network,
            attention=attention,
            partition_activations=partition_activations,
            moe_a2a_overlap=moe_a2a_overlap,
            tp_comm_overlap=tp_comm_overlap,
            optimizer=optimizer_formats(grad_reduce_in_bf16, precision_aware_optimizer, pure_bf16),
            run_losses=run_loss_inputs(
                failure_rate_x=failure_rate_x,
                checkpoint_write_gb_per_s=checkpoint_write_gb_per_s,
                restart_minutes=restart_minutes,
                data_stall_pct=data_stall_pct,
                eval_pct=eval_pct,
                startup_minutes=startup_minutes,
            ),
        ),
    )
    render_estimate(plan, read, setup.defaulted_accum, price_kind=price_kind, price=price, out=out, as_json=as_json)


@app.command(epilog=epilog("plan"))
def plan(
    model: str = MODEL,
    tokens: float = typer.Option(..., parser=sized_number, help="training tokens, e.g. 2e11 or 15T"),
    deadline_days: float | None = typer.Option(None, "--deadline-days", help="finish training within this many days"),
    budget_usd: float | None = typer.Option(
        None, "--budget-usd", parser=sized_number, help="spend at most this many USD (5e6, or 5M)"
    ),
    objective: Objective = typer.Option(
        Objective.COST, help="minimise cost, time, or an even mix of the two (each against its best)"
    ),
    gpus: list[str] | None = GPUS,
    prices: list[str] | None = typer.Option(
        None, "--price", help="USD per GPU-hour overrides, GPU=USD: h100-sxm=2.5 (comma list or repeated)"
    ),
    price_kind: str | None = PRICE_KIND,
    term_filled: float = TERM_FILLED,
    network: str | None = NETWORK,
    seq_len: int | None = SEQ_LEN,
    batch_tokens: float | None = typer.Option(
        None,
        "--global-batch-tokens",
        parser=sized_number,
        help="tokens per optimizer step, 4e6, 4194304 or 4M (default: by model size, 1M to 4M)",
    ),
    batch_tolerance: float = typer.Option(
        DEFAULT_BATCH_TOLERANCE,
        "--batch-tolerance",
        help="largest relative distance of a batch the search scores from --global-batch-tokens; the plan"
        " itself uses the requested batch when a layout meets it, else one within 1 % of it, else the nearest"
        " achievable (--vary-batch: any within this tolerance)",
    ),
    vary_batch: bool = typer.Option(
        False, "--vary-batch", help="let the plan and its alternatives use any batch within the tolerance"
    ),
    precision: Precision = PRECISION,
    ac: list[ActivationCheckpointing] | None = typer.Option(
        None, "--ac", help=AC_HELP + "; repeat to allow several (default: all but attention)"
    ),
    ac_blocks: int | None = AC_BLOCKS,
    impl: Implementation | None = IMPL,
    allow_offload: bool = typer.Option(
        False, "--allow-offload", help="consider CPU offload (optimizer states and step on the host)"
    ),
    compile: bool = typer.Option(
        False,
        "--compile",
        help="plan for per-block torch.compile (not under the Megatron stacks or deepseek-v3: refused)",
    ),
    max_gpus: int | None = typer.Option(
        None,
        "--max-gpus",
        help=f"largest GPU count to consider per type (default: the type's inventory in --gpus; {DEFAULT_MAX_GPUS},"
        " or the largest inventory given, for a type without one)",
    ),
    top: int = TOP,
    per_gpu: bool = typer.Option(
        False, "--per-gpu", help="also show the best plan of each other GPU type searched (which GPU to rent)"
    ),
    risk: Risk = typer.Option(
        DEFAULT_RISK,
        help="judge time and cost at this quantile of the held-out error band: p50 the median, p80/p90"
        " the pessimistic end, so a layout wins on evidence rather than on the model's optimism (a deadline or"
        " budget never judges under the headline figure); at p80/p90 a plan must also fit at its reserved"
        " peak's band's high end where any plan does",
    ),
    out: Path | None = plan_out("write the chosen plan (input of trainplan emit)"),
    stack: Stack = STACK,
    attention: AttentionKernel | None = ATTENTION,
    partition_activations: bool = PARTITION_ACTIVATIONS,
    moe_a2a_overlap: bool = MOE_A2A_OVERLAP,
    tp_comm_overlap: bool = TP_COMM_OVERLAP,
    grad_reduce_in_bf16: bool = GRAD_REDUCE_BF16,
    precision_aware_optimizer: bool = PARAM_REMAINDERS,
    pure_bf16: bool = PURE_BF16,
    calibration: Path | None = CALIBRATION,
    no_calibration: bool = NO_CALIBRATION,
    failure_rate_x: float | None = FAILURE_RATE_X,
    checkpoint_write_gb_per_s: float | None = CHECKPOINT_WRITE_GB_PER_S,
    restart_minutes: float | None = RESTART_MINUTES,
    data_stall_pct: float | None = DATA_STALL_PCT,
    eval_pct: float | None = EVAL_PCT,
    startup_minutes: float | None = STARTUP_MINUTES,
    as_json: bool = JSON,
) -> None:
    """Choose GPU type, count and parallel layout for one training job (ILP)."""
    from planner.api import PlanRequest

    global_batch_tokens = check_plan_flags(
        tokens=tokens,
        batch_tokens=batch_tokens,
        max_gpus=max_gpus,
        seq_len=seq_len,
        deadline_days=deadline_days,
        budget_usd=budget_usd,
        batch_tolerance=batch_tolerance,
    )
    read = read_model(model, stack, 1, calibration, no_calibration)  # pp 1: a plan's layouts are the search's
    modes = ac_modes(ac, ac_blocks, read.spec.num_layers)
    allowed = plan_gpus(gpus, prices)
    request = PlanRequest(
        model=read.spec,
        training_tokens=tokens,
        deadline_days=deadline_days,
        budget_usd=budget_usd,
        objective=objective.value,
        gpus=allowed.inventory,
        price_overrides=allowed.prices,
        seq_len=seq_len,
        global_batch_tokens=global_batch_tokens,
        batch_tolerance=batch_tolerance,
        vary_batch=vary_batch,
        precision=precision,
        **({"activation_checkpointing": modes} if modes else {}),
        ac_blocks=ac_blocks,
        impl=impl,
        allow_offload=allow_offload,
        compile=compile,
        max_gpus=max_gpus,
        top_k=top,
        per_gpu=per_gpu,
        risk=risk,
        **stack_settings(
            read,
            price_kind=price_kind,
            term_filled=term_filled,
            network=network,
            attention=attention,
            partition_activations=partition_activations,
            moe_a2a_overlap=moe_a2a_overlap,
            tp_comm_overlap=tp_comm_overlap,
            optimizer=optimizer_formats(grad_reduce_in_bf16, precision_aware_optimizer, pure_bf16),
            run_losses=run_loss_inputs(
                failure_rate_x=failure_rate_x,
                checkpoint_write_gb_per_s=checkpoint_write_gb_per_s,
                restart_minutes=restart_minutes,
                data_stall_pct=data_stall_pct,
                eval_pct=eval_pct,
                startup_minutes=startup_minutes,
            ),
        ),
    )
    result = solve_plan(request, read, out, as_json)
    if result is not None:
        render_planned(result, request, read, out, as_json)


# explain (ui/cli_explain.py), after plan in --help.
app.command(epilog=epilog("explain"))(cli_explain.explain)


# The listing commands (ui/cli_listings.py), after explain in --help.
app.command(epilog=epilog("catalog"))(cli_listings.catalog)
app.command(epilog=epilog("models"))(cli_listings.models)


# The portfolio and fleet commands (ui/cli_portfolio.py), after catalog in --help.
app.command(epilog=epilog("portfolio"))(cli_portfolio.portfolio)
app.command(epilog=epilog("fleet"))(cli_portfolio.fleet)


# The job and machine commands (ui/cli_jobs.py), after the planning ones in --help.
for _command in (cli_jobs.calibrate, cli_jobs.detect, cli_jobs.emit, cli_jobs.run):
    app.command(epilog=epilog(_command.__name__))(_command)
app.command("app", epilog=epilog("app"))(cli_jobs.app_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point: map user errors to one line + exit 2; let real bugs raise (ui/cli_errors.py)."""
    return cli_errors.run(app, argv)


if __name__ == "__main__":
    sys.exit(main())
