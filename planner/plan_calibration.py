"""The calibration file a plan was estimated with, as the plan records it (``Plan.calibration``).

planner/catalog/calibration.py reads the file and makes the record; the plan carries it to the
app, the CLI and the trainer unchanged.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from planner.frozen import FROZEN


class CalibrationMachine(BaseModel):
    """The ``[machine]`` table of a calibration file: who measured its kernel rates, and when."""

    model_config = FROZEN
    host: str
    device: str
    driver: str
    date: str
    software: str


class RateChange(BaseModel):
    """One rate a calibration file replaced: the catalog's figure and the file's, in the file
    field's units (calib50 H3: nothing said what a file changed)."""

    model_config = FROZEN
    field: str  # the file field, e.g. gemm_bf16_tflops_achieved
    catalog: float | None  # None: the catalog had no such rate
    measured: float

    @property
    def words(self) -> str:
        """'gemm_bf16_tflops 742.8 -> 600 (-19%)'."""
        name = self.field.removesuffix("_achieved")
        if self.catalog is None or self.catalog <= 0:
            return f"{name} {self.measured:,.4g} (the catalog lists no such figure)"
        return f"{name} {self.catalog:,.4g} -> {self.measured:,.4g} ({self.measured / self.catalog - 1:+.0%})"


class CollectiveFit(BaseModel):
    """How well the ring model fitted the collectives behind a file's ``scaleup_*`` rates
    (``trainplan calibrate --collectives``; file fields ``scaleup_fit_rms``, ``scaleup_fit_ranks``):
    the rms relative error of the fitted times against the timed samples, and the ranks timed
    (calib50 M5: a 58 % fit over 2 ranks was kept unsaid and applied to 8-GPU nodes)."""

    model_config = FROZEN
    rms: float = Field(ge=0, allow_inf_nan=False)
    ranks: int = Field(ge=2)

    @property
    def words(self) -> str:
        """'collectives fitted over 2 ranks, rms error 58%'."""
        return f"collectives fitted over {self.ranks} ranks, rms error {self.rms:.0%}"


class CalibratedGpu(BaseModel):
    """One catalog entry a calibration file overrode: its rate fields (file names, e.g.
    ``gemm_bf16_tflops_achieved``), each with the catalog's figure and the file's (``changes``; none
    in plan files before session 50), and whether it carries a measured job's correction."""

    model_config = FROZEN
    gpu: str  # catalog id
    rates: tuple[str, ...] = ()
    measured_job: bool = False
    changes: tuple[RateChange, ...] = ()
    collective_fit: CollectiveFit | None = None  # None: no collectives fitted (or a file before session 51)


class PlanCalibration(BaseModel):
    """The calibration file a plan was estimated with (planner/catalog/calibration.py makes it):
    where it was read from, the SHA-256 of its bytes (the same file, not merely the same name),
    the machine it states and the entries it overrode. A plan without one used the built-in
    catalog."""

    model_config = FROZEN
    file: str  # absolute path; an upload's name in the app
    sha256: str
    machine: CalibrationMachine | None = None  # None: a file of measured jobs only
    gpus: tuple[CalibratedGpu, ...]

    @property
    def rate_gpus(self) -> tuple[str, ...]:
        """The catalog ids whose kernel rates the file measured, in file order (an entry of a
        measured job only is not one: it lifts the ceiling for its own shape alone)."""
        return tuple(g.gpu for g in self.gpus if g.rates)

    def entry(self, gpu: str) -> CalibratedGpu | None:
        """What the file overrode for ``gpu`` (a catalog id); None when it left it alone."""
        return next((g for g in self.gpus if g.gpu == gpu), None)


def rate_gpus(record: PlanCalibration | None) -> frozenset[str]:
    """The GPUs whose kernel rates a calibration file measured: their ceiling is lifted (a file of
    a measured job only lifts it for that job's own shape: planner/api/ceiling_estimate.py
    ``judged_estimate``)."""
    return frozenset(() if record is None else record.rate_gpus)


def rates_measured(record: PlanCalibration | None, gpu: str) -> bool:
    """Whether a calibration file measured ``gpu``'s kernel rates (``rate_gpus``)."""
    return gpu in rate_gpus(record)
