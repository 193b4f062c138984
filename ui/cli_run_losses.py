"""The run-loss flags of plan, estimate and explain: a user's own failure rate, checkpoint
bandwidth, restart, input stalls, evaluation and start-up for goodput (planner/model/
run_loss_inputs.py). Each help names the default it replaces and where that comes from; the
figures are read from the settings, so the words follow them."""

from __future__ import annotations

import typer

from planner.model.run_loss_inputs import RUN_LOSS_MAX, RunLossInputs
from planner.model.settings import DEFAULT_SETTINGS as S
from planner.units import SECONDS_PER_MINUTE
from ui.inputs import check_range

FAILURE_RATE_X = typer.Option(
    None,
    "--failure-rate-x",
    help="your cluster's failure rate as a multiple of the planner's (default 1: the catalog's, from Llama 3's 54-day"
    " log, 419 interruptions on 16,384 H100); 0: nothing fails (a spot price's preemptions still do)",
)
CHECKPOINT_WRITE_GB_PER_S = typer.Option(
    None,
    "--checkpoint-write-gb-per-s",
    help="your storage's aggregate checkpoint write bandwidth, GB/s, for the whole job (default:"
    f" {S.checkpoint_bandwidth_bytes_per_s_per_gpu / 1e6:.0f} MB/s per GPU, Llama 3's 2 TB/s store over 16,384"
    f" GPUs); a restore reads back {S.restore_over_save:g}x slower",
)
RESTART_MINUTES = typer.Option(
    None,
    "--restart-minutes",
    help="one restart's fixed cost beside reading the checkpoint back, minutes (default"
    f" {S.restart_overhead_s / SECONDS_PER_MINUTE:g}: an estimate; reported 5-20)",
)
DATA_STALL_PCT = typer.Option(
    None,
    "--data-stall-pct",
    help="time your input pipeline adds to each step, percent of the step (5: steps 5 percent longer; default"
    f" {S.data_stall_fraction * 100:g}: prefetching loader workers, per BLOOM's logs)",
)
EVAL_PCT = typer.Option(
    None,
    "--eval-pct",
    help=f"in-loop evaluation, percent of the step time (default {S.eval_time_fraction * 100:g}: BLOOM 0.7,"
    " Pythia 0.33, NeMo's defaults 0.53)",
)
STARTUP_MINUTES = typer.Option(
    None,
    "--startup-minutes",
    help=f"the job's start-up, once per run, minutes (default {S.job_startup_s / SECONDS_PER_MINUTE:g}: an"
    " estimate; MegaScale 17 by default at 10K GPUs)",
)


def run_loss_inputs(**given: float | None) -> RunLossInputs:
    """The run-loss flags (by their field names, which the flags spell with dashes) as the typed
    record, each within its bound (``check_range``: one line naming the flag)."""
    for name, value in given.items():
        flag = "--" + name.replace("_", "-")
        check_range(flag, value, 0, RUN_LOSS_MAX[name], low_open=name == "checkpoint_write_gb_per_s")
    return RunLossInputs(**given)
