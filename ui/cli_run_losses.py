"""The run-loss flags of plan, estimate and explain: a user's own failure rate, checkpoint
bandwidth, restart, input stalls, evaluation and start-up for goodput (planner/model/
run_loss_inputs.py). Each help names the default it replaces and where that comes from; the
words are the app's help of the same figure (ui/i18n_run_losses.py, its English), whose figures
are read from the settings, so the flag, the box and the defaults say one thing."""

from __future__ import annotations

from typing import Any

import typer

from planner.model.run_loss_inputs import RUN_LOSS_MAX, RunLossInputs, refuses_zero
from ui.i18n_run_losses import RUN_LOSS_LABELS
from ui.inputs import check_range


def run_loss_option(name: str) -> Any:  # Any: typer.Option is, so it can be a float parameter's default
    """The flag of one ``RunLossInputs`` field (its name with dashes), None: the default."""
    return typer.Option(None, "--" + name.replace("_", "-"), help=RUN_LOSS_LABELS[f"loss_help_{name}"][0])


FAILURE_RATE_X = run_loss_option("failure_rate_x")
CHECKPOINT_WRITE_GB_PER_S = run_loss_option("checkpoint_write_gb_per_s")
RESTART_MINUTES = run_loss_option("restart_minutes")
DATA_STALL_PCT = run_loss_option("data_stall_pct")
EVAL_PCT = run_loss_option("eval_pct")
STARTUP_MINUTES = run_loss_option("startup_minutes")


def run_loss_inputs(**given: float | None) -> RunLossInputs:
    """The run-loss flags (by their field names, which the flags spell with dashes) as the typed
    record, each within its bound (``check_range``: one line naming the flag)."""
    for name, value in given.items():
        flag = "--" + name.replace("_", "-")
        check_range(flag, value, 0, RUN_LOSS_MAX[name], low_open=refuses_zero(name))
    return RunLossInputs(**given)
