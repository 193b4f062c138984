"""Leave-one-out check of the five calibrated step-time settings on the H200 runs.

For each run, the settings are re-fitted (grid search, mean |error|) on the other eight and the
left-out run is predicted: an estimate of the error on runs the model has not seen.
"""

from __future__ import annotations

import itertools

import numpy as np

from planner.model.settings import DEFAULT_SETTINGS
from validation.calibration import DEFAULT_H200_RUNS, compare_h200, read_h200_runs
from validation.heldout import H200_GRID

GRID = H200_GRID  # one grid for this and bench/validate_heldout.py


def main() -> None:
    rows = read_h200_runs(DEFAULT_H200_RUNS)
    candidates = [
        DEFAULT_SETTINGS.but(**dict(zip(GRID, values, strict=True))) for values in itertools.product(*GRID.values())
    ]
    errors = np.array([[c.error for c in compare_h200(rows, s)["step"]] for s in candidates])  # [setting, row]
    held_out = []
    for i, row in enumerate(rows):
        others = np.delete(np.abs(errors), i, axis=1).mean(axis=1)
        best = int(np.argmin(others))
        held_out.append(errors[best, i])
        print(f"{row.name:28s} held-out step error {errors[best, i]:+.1%} (fit on others: {others[best]:.1%})")
    print(f"leave-one-out mean |error| {np.mean(np.abs(held_out)):.1%}, max {np.max(np.abs(held_out)):.1%}")


if __name__ == "__main__":
    main()
