"""Held-out accuracy per GPU generation: every setting fitted on published rows is re-fitted
without the generation being scored (leave-one-generation-out), then that generation is predicted.

What is fitted where (docs/validation.md):

- on the published Megatron-Core-family rows of S3, S13 and S14 (``MC_FIT_SOURCES``; a later
  Megatron-Core source such as S15 is scored, never fitted on): the Megatron-Core profile's
  ``attention_kernel_factor`` (relative to the catalog's per-GPU cuDNN rates) and
  ``tp_comm_overlap`` (``MC_GRID``); re-fitted here on the other generations' rows for each
  generation scored;
- on the H200 runs (trainplan's own stack): host dispatch and a recomputed block's share of it,
  GEMM shape, attention shape fraction and eager bandwidth fraction; no published row runs that
  stack, so the H200 figure is the leave-one-run-out error (``h200_folds``, printed by
  ``bench/crossval_h200.py``; ``h200_leave_one_out``), and for the
  published generations these settings were fitted on another generation;
- everything else is a measurement, a published figure or a derivation (hw_catalog, settings).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS
from validation.calibration import DEFAULT_H200_RUNS, H200Row, compare_h200, read_h200_runs
from validation.published import compare_published
from validation.published_rows import PublishedRun, Stack

# GPU generation of each catalog id the published rows use.
GENERATIONS = {
    "a100-80gb-sxm": "A100",
    "a100-40gb-sxm": "A100",
    "h100-sxm": "H100",
    "h200-sxm": "H200",
    "b200": "B200/GB200",
    "gb200": "B200/GB200",
}
GENERATION_ORDER = ("A100", "H100", "B200/GB200", "H200")

# The sources the Megatron-Core settings are fitted on (their shipped values and every re-fit
# here). A Megatron-Core row of any other source (S15, the Nemotron-4 340B report) is scored only:
# nothing is fitted on it, in no fold.
MC_FIT_SOURCES = frozenset({"S3", "S13", "S14"})

# The Megatron-Core settings fitted on published rows, and the grid they are re-fitted over.
MC_GRID: dict[str, list[float]] = {
    "attention_kernel_factor": [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9, 1.0],
    "tp_comm_overlap": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
}

# The H200-fitted settings and their grid (bench/crossval_h200.py).
H200_GRID: dict[str, list[float]] = {
    "host_overhead_per_block_s": [3e-3, 4e-3, 5.5e-3, 7e-3],
    "matmul_half_dim": [64, 96, 192, 384],
    # the residual share of the kernel tables' rates (planner/model/attention_kernels.py)
    "attention_shape_fraction": [0.8, 1.0, 1.2],
    "hbm_bandwidth_fraction": [0.5, 0.6, 0.75, 0.9],
    # the recomputed block's share of host dispatch, within its measured bounds (settings.py)
    "recompute_host_share": [0.47, 0.7, 1.0, 1.3],
}


def generation(run: PublishedRun) -> str:
    return GENERATIONS.get(run.gpu_id, run.gpu_id)


def _grid(grid: dict[str, list[float]]) -> list[dict[str, float]]:
    return [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]


@dataclass(frozen=True)
class HeldOut:
    """One scored row predicted with settings fitted without its generation."""

    generation: str
    source: str
    name: str
    model: str  # the model's name (rows of one model compare across generations)
    error: float  # (predicted - measured) / measured tokens/s (H200: step-time based, same sign)
    fitted_error: float  # with the shipped settings (fitted on everything)
    fit: dict[str, float]  # the settings re-fitted without this generation


def _errors(runs: list[PublishedRun], choice: dict[str, float]) -> np.ndarray:
    profile = MEGATRON_CORE_SETTINGS.but(**choice)
    return np.array([c.error for c in compare_published(runs, {Stack.MEGATRON_CORE: profile})])


def published_leave_one_generation_out(runs: list[PublishedRun]) -> list[HeldOut]:
    """Every comparable published row, its Megatron-Core settings re-fitted (grid, mean |error|)
    on the comparable Megatron-Core rows of the other generations (of ``MC_FIT_SOURCES`` only)."""
    shipped = compare_published(runs)
    scored = [(r, c) for r, c in zip(runs, shipped, strict=True) if c.excluded is None]
    runs = [r for r, _ in scored]
    choices = _grid(MC_GRID)
    errors = np.stack([_errors(runs, choice) for choice in choices])  # [choice, row]
    uses_mc = np.array([r.stack == Stack.MEGATRON_CORE for r in runs])
    fitted_on = uses_mc & np.array([r.source in MC_FIT_SOURCES for r in runs])
    gens = np.array([generation(r) for r in runs])
    out = []
    for gen in dict.fromkeys(gens):
        train = fitted_on & (gens != gen)
        best = int(np.argmin(np.abs(errors[:, train]).mean(axis=1))) if train.any() else None
        for i in np.flatnonzero(gens == gen):
            run, fitted = scored[i]
            uses = best is not None and uses_mc[i]
            out.append(
                HeldOut(
                    generation=gen,
                    source=run.source,
                    name=f"{run.row_id} {run.model_name}",
                    model=run.model_name,
                    error=float(errors[best, i]) if uses and best is not None else fitted.error,
                    fitted_error=fitted.error,
                    fit=choices[best] if uses and best is not None else {},
                )
            )
    return out


@dataclass(frozen=True)
class H200Fold:
    """One H200 run predicted with the H200-fitted settings re-fitted (``H200_GRID``, mean
    |step error|) on the other runs."""

    row: H200Row
    step_error: float  # the left-out run's (predicted - measured) / measured step time
    others_error: float  # mean |step error| of the chosen settings on the other runs
    fit: dict[str, float]


def h200_folds(settings: ModelingSettings = DEFAULT_SETTINGS) -> list[H200Fold]:
    """Leave-one-run-out over the H200 runs: one fold per run."""
    rows = read_h200_runs(DEFAULT_H200_RUNS)
    choices = _grid(H200_GRID)
    step = np.array([[c.error for c in compare_h200(rows, settings.but(**ch))["step"]] for ch in choices])
    folds = []
    for i, row in enumerate(rows):
        others = np.delete(np.abs(step), i, axis=1).mean(axis=1)
        best = int(np.argmin(others))
        folds.append(H200Fold(row, float(step[best, i]), float(others[best]), choices[best]))
    return folds


def h200_leave_one_out(settings: ModelingSettings = DEFAULT_SETTINGS) -> list[HeldOut]:
    """The H200 folds as held-out rows. Tokens/s error = measured / predicted step - 1 (tokens
    per step are fixed)."""
    folds = h200_folds(settings)
    shipped = compare_h200([fold.row for fold in folds], settings)["step"]
    return [
        HeldOut(
            generation="H200",
            source="calibration",
            name=fold.row.name,
            model=fold.row.model.name,
            error=_tokens_error(fold.step_error),
            fitted_error=_tokens_error(fitted.error),
            fit=fold.fit,
        )
        for fold, fitted in zip(folds, shipped, strict=True)
    ]


def _tokens_error(step_error: float) -> float:
    """A step-time error as a tokens/s error: tokens/s = tokens / step."""
    return 1.0 / (1.0 + step_error) - 1.0


@dataclass(frozen=True)
class Summary:
    group: str
    rows: int
    mean_signed: float
    mean_abs: float
    worst: float


def summarise(items: Iterable[HeldOut], key, fitted: bool = False) -> list[Summary]:
    """Mean signed and mean absolute error per group (``key`` maps a row to its group)."""
    groups: dict[str, list[float]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item.fitted_error if fitted else item.error)
    return [
        Summary(
            group=g,
            rows=len(e),
            mean_signed=float(np.mean(e)),
            mean_abs=float(np.mean(np.abs(e))),
            worst=float(max(e, key=abs)) if e else math.nan,
        )
        for g, e in groups.items()
    ]
