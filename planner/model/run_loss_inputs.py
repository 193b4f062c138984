"""A user's own figures for the whole-run losses goodput models (planner/model/goodput.py): how
often their cluster fails, how fast their storage writes a checkpoint, how long a restart, an
input stall, evaluation and the start-up take. Each None keeps the named default of
``JobSettings`` (planner/model/settings_job.py: Llama 3's failure log and store, the ESTIMATEs),
so a plan says which of its figures rest on the user's word (``given``).

Carried by ``PlanRequest`` and ``build_plan``, recorded in the ``Plan`` (explain, emit, restack and
replan keep them), applied to the settings in one place (planner/model/run_choices.py ``run_settings``).
"""

from __future__ import annotations

from collections.abc import Mapping

import annotated_types
from pydantic import BaseModel, Field

from planner.fmt import percent
from planner.frozen import FROZEN
from planner.model.settings import ModelingSettings
from planner.units import SECONDS_PER_MINUTE

# Past these a figure is a typo. A hundred times Llama 3's failure rate fails a 16K-GPU job every
# two minutes; 10 TB/s is beyond the 7 TB/s peak of Llama 3's Tectonic store; a restart or a
# start-up of a day; input stalls or evaluation ten times the step itself.
MAX_FAILURE_RATE_X = 100.0
MAX_CHECKPOINT_WRITE_GB_PER_S = 10_000.0
MAX_RUN_LOSS_MINUTES = 1_440.0
MAX_STEP_LOSS_PCT = 1_000.0
# The largest value of each field (the CLI's bounds; all but the bandwidth may be 0).
RUN_LOSS_MAX = {
    "failure_rate_x": MAX_FAILURE_RATE_X,
    "checkpoint_write_gb_per_s": MAX_CHECKPOINT_WRITE_GB_PER_S,
    "restart_minutes": MAX_RUN_LOSS_MINUTES,
    "data_stall_pct": MAX_STEP_LOSS_PCT,
    "eval_pct": MAX_STEP_LOSS_PCT,
    "startup_minutes": MAX_RUN_LOSS_MINUTES,
}
BYTES_PER_GB = 1e9  # storage vendors' decimal gigabytes


class RunLossInputs(BaseModel):
    """The run-loss figures a user gave (None: the default). Named apart from goodput's
    ``RunLosses``, the per-row losses these settings produce."""

    model_config = FROZEN
    # A multiplier on the GPU and node failure rates (the catalog's, else Llama 3's); 0: none fail.
    failure_rate_x: float | None = Field(None, ge=0, le=MAX_FAILURE_RATE_X, allow_inf_nan=False)
    # The job's aggregate checkpoint write bandwidth, replacing GPUs x Llama 3's 122 MB/s per GPU;
    # a restore reads back ``restore_over_save`` times slower, as with the default.
    checkpoint_write_gb_per_s: float | None = Field(None, gt=0, le=MAX_CHECKPOINT_WRITE_GB_PER_S, allow_inf_nan=False)
    # One restart's fixed cost besides reading the checkpoint back.
    restart_minutes: float | None = Field(None, ge=0, le=MAX_RUN_LOSS_MINUTES, allow_inf_nan=False)
    # Time the input pipeline adds to each step, in percent of the modelled step (5: 5 % longer).
    data_stall_pct: float | None = Field(None, ge=0, le=MAX_STEP_LOSS_PCT, allow_inf_nan=False)
    # In-loop evaluation, in percent of the step time.
    eval_pct: float | None = Field(None, ge=0, le=MAX_STEP_LOSS_PCT, allow_inf_nan=False)
    # The job's start-up, once per run.
    startup_minutes: float | None = Field(None, ge=0, le=MAX_RUN_LOSS_MINUTES, allow_inf_nan=False)

    def given(self) -> dict[str, float]:
        """The fields the user set, by name (empty: every default)."""
        return {name: value for name, value in self if value is not None}

    def but(self, other: RunLossInputs | None) -> RunLossInputs:
        """These figures with those ``other`` gives in their place (None: these)."""
        return self if other is None else self.model_copy(update=other.given())

    def applied(self, s: ModelingSettings) -> ModelingSettings:
        """``s`` with the figures given; the defaults stay where none is."""
        changes: dict[str, float] = {}
        if self.failure_rate_x is not None:
            changes["failure_rate_scale"] = self.failure_rate_x
        if self.checkpoint_write_gb_per_s is not None:
            changes["checkpoint_bandwidth_bytes_per_s"] = self.checkpoint_write_gb_per_s * BYTES_PER_GB
        if self.restart_minutes is not None:
            changes["restart_overhead_s"] = self.restart_minutes * SECONDS_PER_MINUTE
        if self.data_stall_pct is not None:
            changes["data_stall_fraction"] = self.data_stall_pct / 100
        if self.eval_pct is not None:
            changes["eval_time_fraction"] = self.eval_pct / 100
        if self.startup_minutes is not None:
            changes["job_startup_s"] = self.startup_minutes * SECONDS_PER_MINUTE
        return s.but(**changes) if changes else s

    def said(self) -> list[tuple[str, str]]:
        """The figures given as (word key, figure as shown): a field's name, or ``NO_FAILURES`` for a
        failure rate of 0; a percentage by ``planner.fmt.percent`` (the CLI's ``words`` and the app
        card's words read this one rule)."""
        return [
            (NO_FAILURES if name == "failure_rate_x" and value == 0 else name, shown_figure(name, value))
            for name, value in self.given().items()
        ]

    def words(self) -> str:
        """'failure rate 2x, checkpoint write 20 GB/s' for the goodput line ('' when none given; 'no
        failures' for a rate of 0)."""
        return ", ".join(_WORDS[key].format(value=value) for key, value in self.said())


def shown_figure(name: str, value: float) -> str:
    """A run-loss figure as its words show it: the fields in percent ('_pct') as ``percent``, the
    others as given ('2', '20'), their unit in the words."""
    return percent(value) if name.endswith("_pct") else f"{value:g}"


# The CLI's words of each figure (the app's, in both languages: ui/i18n_run_losses.py "loss_words_*").
NO_FAILURES = "no_failures"
_WORDS = {
    "failure_rate_x": "failure rate {value}x",
    NO_FAILURES: "no failures",
    "checkpoint_write_gb_per_s": "checkpoint write {value} GB/s",
    "restart_minutes": "restart {value} min",
    "data_stall_pct": "input stalls {value}",
    "eval_pct": "evaluation {value}",
    "startup_minutes": "start-up {value} min",
}


DEFAULT_RUN_LOSSES = RunLossInputs()


def by_job(losses: Mapping[str, RunLossInputs]) -> tuple[tuple[str | None, RunLossInputs], ...]:
    """Which jobs' days rest on the user's run-loss figures: ``(None, theirs)`` once where every job
    of several gives the same, else ``(job, its)`` for each job that gives any; ``()`` where none
    does (the lines under portfolio's and fleet's answers, and the app's portfolio view)."""
    given = {job: figures for job, figures in losses.items() if figures.said()}
    if not given:
        return ()
    shared = {tuple(figures.said()) for figures in losses.values()}
    if len(losses) > 1 and len(shared) == 1:
        return ((None, next(iter(given.values()))),)
    return tuple(given.items())


def refuses_zero(name: str) -> bool:
    """Whether a field refuses 0 itself (``gt=0``: the checkpoint bandwidth, as a write takes time):
    the CLI's and the app's ranges read it here."""
    return any(isinstance(rule, annotated_types.Gt) for rule in RunLossInputs.model_fields[name].metadata)
