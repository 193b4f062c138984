"""A real job's measurements on one GPU type (``trainplan calibrate --calibrate-from JOB_DIR``):
the two correction factors the model applies to every plan on that GPU, with the job they came
from. One rule (docs/hardware.md "Measured job corrections"):

- ``compute_time_factor``: the factor on the GPU compute of a step (matmul + attention +
  memory-bound kernels) that makes the model's step time equal the job's measured step time;
  step_time.py adds ``(factor - 1) x compute`` as the ``measured_correction`` term.
- ``memory_factor``: measured / predicted peak allocated memory of the job; memory.py adds
  ``(factor - 1) x peak`` as the ``measured_correction`` term (the reserved peak follows).

Both are fitted against the model the file is applied with (the catalog plus the file's kernel
rates), so they do not compound with the rates. They are exact for the measured shape and an
extrapolation for others (same GPU, other layouts): ``shape`` records what was measured.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from planner.frozen import FROZEN

# A correction outside this range is not a calibration but a broken model or measurement.
FACTOR_RANGE = (0.2, 5.0)


class MeasuredJob(BaseModel):
    """File fields ``job_<name>`` of a ``[gpus.<id>]`` table (docs/hardware.md)."""

    model_config = FROZEN
    compute_time_factor: float = Field(ge=FACTOR_RANGE[0], le=FACTOR_RANGE[1])
    memory_factor: float = Field(ge=FACTOR_RANGE[0], le=FACTOR_RANGE[1])
    name: str = Field(min_length=1)  # the job's name (job.json)
    date: str = Field(min_length=1)  # when the measurement was read, YYYY-MM-DD
    shape: str = Field(min_length=1)  # model, GPU count, layout and batch of the job
    step_s: float = Field(gt=0)  # measured typical step time
    predicted_step_s: float = Field(gt=0)  # the model's, before the correction
    peak_gib: float = Field(gt=0)  # measured peak allocated memory per GPU (max over ranks)
    predicted_peak_gib: float = Field(gt=0)  # the model's, before the correction

    @property
    def source(self) -> str:
        return (
            f"MEASURED: job {self.name} ({self.shape}), {self.date}: step {self.step_s:.4g} s vs predicted"
            f" {self.predicted_step_s:.4g} s, peak {self.peak_gib:.4g} GiB vs predicted {self.predicted_peak_gib:.4g} GiB"
        )
