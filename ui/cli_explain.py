"""``trainplan explain``: a saved plan's every memory and time term, and what limits it; with
another stack, calibration or the user's own run-loss figures, the plan estimated again.

Registered on the shared Typer app by ui/cli.py, after plan (moved here as ui/cli.py neared 500
lines when the run-loss flags came).
"""

from __future__ import annotations

from pathlib import Path

import typer

from planner.errors import RuleViolation
from planner.model.stacks import Stack
from ui import render
from ui.calibration import applied_calibration, plan_file_calibration
from ui.cli_options import CALIBRATION_HELP, JSON, NO_CALIBRATION
from ui.cli_run_losses import (
    CHECKPOINT_WRITE_GB_PER_S,
    DATA_STALL_PCT,
    EVAL_PCT,
    FAILURE_RATE_X,
    RESTART_MINUTES,
    STARTUP_MINUTES,
    run_loss_inputs,
)


def explain(
    plan_file: Path = typer.Argument(..., help="a plan.json (or an emitted job.json: the plan it holds)"),
    stack: Stack | None = typer.Option(
        None, help="re-estimate the plan for this stack: " + ", ".join(Stack) + " (default: the plan's)"
    ),
    calibration: Path | None = typer.Option(None, help=CALIBRATION_HELP + " (re-estimates the plan)"),
    no_calibration: bool = NO_CALIBRATION,
    failure_rate_x: float | None = FAILURE_RATE_X,
    checkpoint_write_gb_per_s: float | None = CHECKPOINT_WRITE_GB_PER_S,
    restart_minutes: float | None = RESTART_MINUTES,
    data_stall_pct: float | None = DATA_STALL_PCT,
    eval_pct: float | None = EVAL_PCT,
    startup_minutes: float | None = STARTUP_MINUTES,
    as_json: bool = JSON,
) -> None:
    """Explain a plan: every memory and time term, and what limits it (a run-loss flag re-estimates it
    with that figure in place of the plan's)."""
    from planner.api import estimate_warnings, restack
    from planner.api.rebuild import dropped_choices
    from planner.plan import Plan
    from planner.stack_rules import stack_switch
    from trainer.job_spec import recalibrates

    losses = run_loss_inputs(
        failure_rate_x=failure_rate_x,
        checkpoint_write_gb_per_s=checkpoint_write_gb_per_s,
        restart_minutes=restart_minutes,
        data_stall_pct=data_stall_pct,
        eval_pct=eval_pct,
        startup_minutes=startup_minutes,
    )
    loaded = original = Plan.load(plan_file, of_job=True)
    if loaded.estimate.feasible and not loaded.estimate.time.step_s > 0:
        raise ValueError(f"{plan_file}: estimate.time.step_s must be > 0 in a feasible plan")
    chosen = plan_file_calibration(calibration, no_calibration, loaded.calibration)
    applied = applied_calibration(chosen)
    switch = None if stack is None else stack_switch(stack, loaded.model, loaded.layout.pp)
    stack = switch.runs if switch else stack
    if stack is not None or applied is not None or losses.given():
        try:
            loaded = restack(
                loaded,
                stack or loaded.stack,
                calibration=applied,
                run_losses=losses if losses.given() else None,
            )
        except RuleViolation as exc:  # trial s38: its fix named flags (--sharding) explain does not take
            raise ValueError(f"{exc} (explain keeps the plan's layout; trainplan estimate takes those flags)") from None
    # what estimate warns of the same plan (trial s28c: a plan saved from a multimodal config.json
    # lost its encoder warning here)
    switched = (switch.words(loaded.model.name),) if switch else ()
    warnings = (*switched, *dropped_choices(original, loaded), *estimate_warnings(loaded, None))
    plan_step_s = original.estimate.time.step_s if recalibrates(original, applied) else None
    render.explain(loaded, as_json=as_json, calibration=chosen, warnings=warnings, plan_step_s=plan_step_s)
