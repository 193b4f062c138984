"""Fit a measured job's corrections (planner/catalog/measured_job.py) against the model.

``trainplan calibrate --calibrate-from JOB_DIR`` reads what a finished job measured on its GPU
(step time, peak allocated memory) and asks: by which factor must the model's GPU compute of
that very configuration grow (or shrink) for the predicted step time to equal the measured one,
and by which factor its peak memory? The prediction is made with the catalog the corrections
will be applied with (the calibration file's kernel rates, no earlier job correction), so a
later plan for that GPU reproduces the job exactly and scales other shapes by the same factors.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from planner.catalog.hardware import Catalog, GPUSpec
from planner.catalog.measured_job import FACTOR_RANGE, MeasuredJob
from planner.layout import TrainingConfig
from planner.model.candidates import Candidates
from planner.model.estimate import estimate_plan
from planner.model.settings import ModelingSettings
from planner.model.stacks import Stack
from planner.plan import Estimate, Plan
from planner.plan_accuracy import MeasuredJobUse

BISECTION_STEPS = 40  # the bracket [0.2, 5] shrinks 2**40-fold: far below any timer's resolution


def shape_words(model: str, num_gpus: int, gpu: str, layout_words: str, training: TrainingConfig, stack: Stack) -> str:
    """'llama3-8b, 8 x h200-sxm, fsdp dp_shard=8, mb 1 x accum 4 x seq 4096, ac none, bf16, native,
    trainplan': what a measured job ran, and what an estimate must match to be that job (the
    recomputation, precision, modules and stack were added in session 38: a job of another mode
    had counted as the same shape; an older file's shape matches no estimate)."""
    t = training
    return (
        f"{model}, {num_gpus} x {gpu}, {layout_words}, mb {t.micro_batch} x accum {t.grad_accum} x seq {t.seq_len},"
        f" ac {t.activation_checkpointing}{f' {t.ac_blocks} blocks' if t.ac_blocks else ''}, {t.precision}, {t.impl},"
        f" {stack}"  # StrEnums, or their values
        + (", compile" if t.compile else "")  # review s38: a job without offload was "exact" for one with it
        + (", offload" if t.offload else "")
    )


def job_shape(plan: Plan) -> str:
    """``shape_words`` of a plan."""
    return shape_words(plan.model.name, plan.num_gpus, plan.gpu, plan.layout_words, plan.training, plan.stack)


# ``shape_words``' count and batch, read back to narrow the rows a search compares whole shapes of
_SHAPE_PARTS = re.compile(r", (?P<n>\d+) x \S+, .*, mb (?P<mb>\d+) x accum (?P<accum>\d+) x seq (?P<seq>\d+),")


def measured_job_rows(c: Candidates, gpus: Sequence[GPUSpec], model: str, stack: Stack) -> np.ndarray:
    """Which rows of a candidate table are a measured job's very shape on its GPU (``shape_words``):
    the search lifts the efficiency ceiling for them as ``judged_estimate`` does (review s38: the
    plan listed the job's own layout, re-scored lifted, faster than its "fastest" choice, held)."""
    exact = np.zeros(len(c), dtype=bool)
    for g, gpu in enumerate(gpus):
        job = gpu.measured_job
        parts = None if job is None else _SHAPE_PARTS.search(job.shape)
        if job is None or parts is None:  # a file from before session 38: no estimate is its shape
            continue
        n, mb, accum, seq = (int(parts[k]) for k in ("n", "mb", "accum", "seq"))
        near = (c.gpu_index == g) & (c.num_gpus == n) & (c.micro_batch == mb) & (c.grad_accum == accum)
        for row in np.flatnonzero(near & (c.seq_len == seq)):
            layout = c.layout(int(row)).resolve(n)
            words = shape_words(model, n, gpu.id, layout.describe(stack.fsdp_word), c.training(int(row)), stack)
            exact[row] = words == job.shape
    return exact


def measured_job_use(gpu: GPUSpec, shape: str) -> MeasuredJobUse | None:
    """The job a calibration file measured on ``gpu`` and whether ``shape`` is that job's (None: no
    job corrects this GPU)."""
    job = gpu.measured_job
    if job is None:
        return None
    return MeasuredJobUse(
        name=job.name,
        shape=job.shape,
        date=job.date,
        exact=job.shape == shape,
        compute_time_factor=job.compute_time_factor,
        memory_factor=job.memory_factor,
    )


def fit_measured_job(
    plan: Plan, catalog: Catalog, settings: ModelingSettings, *, step_s: float, peak_gib: float, name: str, date: str
) -> MeasuredJob:
    """The job's corrections; ValueError (one line) when no factor in FACTOR_RANGE explains it."""
    gpu = catalog.gpu(plan.gpu).model_copy(update={"measured_job": None})

    def predict(job: MeasuredJob | None) -> Estimate:
        spec = gpu.model_copy(update={"measured_job": job})
        return estimate_plan(plan, catalog, settings, gpu=spec)

    base = predict(None)
    low, high = FACTOR_RANGE
    memory_factor = peak_gib / base.memory.peak_gib
    if not low <= memory_factor <= high:
        raise ValueError(
            f"measured peak {peak_gib:.3g} GiB is {memory_factor:.3g}x the predicted {base.memory.peak_gib:.3g} GiB,"
            f" outside [{low:g}, {high:g}]: not a calibration (another job's measurements?)"
        )
    job = MeasuredJob(
        compute_time_factor=1.0,
        memory_factor=memory_factor,
        name=name,
        date=date,
        shape=job_shape(plan),
        step_s=step_s,
        predicted_step_s=base.time.step_s,
        peak_gib=peak_gib,
        predicted_peak_gib=base.memory.peak_gib,
    )

    def step_at(factor: float) -> float:
        return predict(job.model_copy(update={"compute_time_factor": factor})).time.step_s

    fastest, slowest = step_at(low), step_at(high)
    if step_s < fastest:  # trial s38: "host dispatch or communication" said of a 1-GPU job with neither
        raise ValueError(
            f"measured step {step_s:.4g} s is faster than the model gives even at compute x {low:g} ({fastest:.4g} s;"
            f" predicted {base.time.step_s:.4g} s): the model's terms besides GPU compute (host dispatch,"
            " communication, optimizer, bubble) alone take longer than the measured step, or the measurement is off"
        )
    if step_s > slowest:
        raise ValueError(
            f"measured step {step_s:.4g} s is slower than the model gives even at compute x {high:g} ({slowest:.4g} s;"
            f" predicted {base.time.step_s:.4g} s): something outside GPU compute held the job back (input,"
            " host, network, another job on the GPU), or the measurement is off"
        )
    for _ in range(BISECTION_STEPS):  # the step time grows monotonically with the compute factor
        mid = 0.5 * (low + high)
        low, high = (mid, high) if step_at(mid) < step_s else (low, mid)
    return job.model_copy(update={"compute_time_factor": 0.5 * (low + high)})
