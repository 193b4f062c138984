"""The typed results that flow back: trainer -> job directory -> planner (and the user).

``ValidationReport`` is ``validation.json`` (the probe's measured vs predicted figures),
``RunReport`` is ``report.json`` (the whole run's), ``ReplanRequest`` is
``replan_needed.json`` (the probe found the plan does not fit; ``planner.api.replan`` reads
it). Frozen pydantic models: the trainer writes their ``model_dump(mode="json")``, readers validate.
Their JSON keys are the files' public contract. Measured figures are None where the device
cannot measure them (no CUDA); error percentages are None where they are not comparable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from pydantic import BaseModel

from planner.frozen import FROZEN
from planner.layout import TrainingConfig


class _Report(BaseModel):
    model_config = FROZEN

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Read and validate a report file (OSError, or ValueError when it is not this report)."""
        return cls.model_validate_json(Path(path).read_text())


def error_pct(measured: float | None, predicted: float | None) -> float | None:
    """(predicted - measured) / measured, in percent: the convention of docs/validation.md."""
    if measured is None or not measured > 0 or predicted is None:
        return None
    return 100.0 * (predicted - measured) / measured


class BandCheck(BaseModel):
    """A predicted figure's 80 % band (``Estimate.uncertainty``: low, high) and whether the measured
    figure lies within it (trial s49 M1: "+12 %" alone did not say whether the planner had promised
    better). ``inside`` is None where nothing comparable was measured (a CPU, another GPU, or no
    measurement): a band is the plan's GPU's, so only that GPU's figure is checked against it."""

    model_config = FROZEN
    low: float
    high: float
    inside: bool | None = None

    @classmethod
    def of(cls, band: tuple[float, float], measured: float | None) -> BandCheck:
        inside = None if measured is None else band[0] <= measured <= band[1]
        return cls(low=band[0], high=band[1], inside=inside)


class BandChecks(BaseModel):
    """The plan's bands of the figures a report measures, with their checks (None: the plan has no
    band for it, or the report does not measure it; plan files before the bands have none). The
    memory band is the reserved peak's (``MemoryBand``): the allocated peak has none."""

    model_config = FROZEN
    coverage: float | None = None  # the bands' coverage (0.8)
    step_s: BandCheck | None = None
    tokens_per_s: BandCheck | None = None
    mfu: BandCheck | None = None
    reserved_gib: BandCheck | None = None


# ----------------------------------------------------------------------------- validation.json


class ProbeFigures(BaseModel):
    """Peak allocated memory and typical step time (predicted, measured, or the error in %)."""

    model_config = FROZEN
    peak_gib: float | None = None
    step_s: float | None = None


class PredictedMeasured(BaseModel):
    model_config = FROZEN
    predicted: float | None = None
    measured: float | None = None


class ValidationReport(_Report):
    """``validation.json``: the plan's prediction against the probe's first steps."""

    predicted: ProbeFigures
    measured: ProbeFigures
    device: str  # "cuda", or "cpu" where nothing is comparable
    # The catalog id of the GPU measured on (None: a CPU, or one the catalog does not match, and
    # reports before it); figures are compared only on the plan's GPU.
    measured_gpu: str | None = None
    comparable: bool
    error_pct: ProbeFigures
    band: BandChecks = BandChecks()  # absent from reports written before it
    reserved_gib: PredictedMeasured
    capacity_gib: float | None = None
    probe_steps: int


# ----------------------------------------------------------------------------- report.json


class RunFigures(BaseModel):
    """Step time, throughput, peak allocated memory, MFU and peak reserved memory (predicted,
    measured, or error in %); ``reserved_gib`` is the figure the plan's memory band is of."""

    model_config = FROZEN
    step_s: float | None = None
    tokens_per_s: float | None = None
    peak_gib: float | None = None
    mfu: float | None = None
    reserved_gib: float | None = None  # None in reports written before it


class Losses(BaseModel):
    model_config = FROZEN
    final_train: float | None = None
    final_val: float | None = None
    final_val_step: int | None = None  # the step final_val was evaluated at (None: before it was recorded)
    test: float | None = None
    test_perplexity: float | None = None


class RunReport(_Report):
    """``report.json``: how the run ended and how it compared with the plan."""

    predicted: RunFigures
    measured: RunFigures
    error_pct: RunFigures
    band: BandChecks = BandChecks()  # as ValidationReport's
    device: str
    measured_gpu: str | None = None  # as ValidationReport's
    comparable: bool
    losses: Losses
    steps_done: int
    # completed, stopped (at run --steps), early_stopped, preempted, interrupted (Ctrl-C), diverged;
    # failed / peer_lost: written by `trainplan run` after a launch whose workers wrote none (a worker
    # killed or crashed, a lost peer), steps_done then the newest checkpoint's step, where a rerun resumes
    outcome: str
    bad_steps: int
    # The job's wall time over every launch, each counted up to its last checkpoint (a launch's time
    # after it is lost with its steps); in reports written before launch_wall_s, the last launch's;
    # None in a failed launch's report whose newest checkpoint could not be read (review50 L8: 0.0 read
    # as a figure)
    wall_s: float | None
    launch_wall_s: float | None = None  # the last launch's own; None in reports written before it
    # A failed launch's report: the earlier report with measured figures, kept beside under this name
    # (review49 L3: a failed relaunch replaced a completed run's report); None: none was kept.
    earlier_report: str | None = None
    # The steps the measured figures come from: the whole job's, every launch's first (warm-up) step
    # left out (trial s25: after a resume a report of one step's timing read as the whole run's);
    # 0 in reports written before it.
    measured_steps: int = 0
    # True where the job has run no step but a launch's first (warm-up): the timing includes it.
    measured_warmup_only: bool = False
    layout: str  # Layout.describe() of the run
    gpu: str


# ----------------------------------------------------------------------------- replan_needed.json


class MemoryFigures(BaseModel):
    model_config = FROZEN
    peak_gib: float | None = None
    reserved_gib: float | None = None


class ReplanRequest(_Report):
    """``replan_needed.json``: the probe's memory did not fit. ``memory_correction`` is measured
    / predicted reserved memory (None when the probe ran out of memory before measuring)."""

    reason: str
    predicted: MemoryFigures = MemoryFigures()
    measured: MemoryFigures = MemoryFigures()
    capacity_gib: float | None = None
    headroom_fraction: float | None = None
    memory_correction: float | None = None
    layout: str | None = None
    training: TrainingConfig | None = None
