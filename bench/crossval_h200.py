"""Leave-one-out check of the H200-fitted step-time settings (validation/heldout.py H200_GRID)
on the H200 runs.

For each run, the settings are re-fitted (grid search, mean |error|) on the other eight and the
left-out run is predicted: an estimate of the error on runs the model has not seen.
"""

from __future__ import annotations

import numpy as np

from validation.heldout import h200_folds


def main() -> None:
    folds = h200_folds()
    for fold in folds:
        print(
            f"{fold.row.name:28s} held-out step error {fold.step_error:+.1%} (fit on others: {fold.others_error:.1%})"
        )
    held_out = [fold.step_error for fold in folds]
    print(f"leave-one-out mean |error| {np.mean(np.abs(held_out)):.1%}, max {np.max(np.abs(held_out)):.1%}")


if __name__ == "__main__":
    main()
