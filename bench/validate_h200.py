"""Predicted vs measured on the real FSDP2 runs on one H200 (data/calibration): a markdown table.

.venv/bin/python bench/validate_h200.py
"""

from __future__ import annotations

from validation.calibration import DEFAULT_H200_RUNS, compare_h200, read_h200_runs


def main() -> None:
    result = compare_h200(read_h200_runs(DEFAULT_H200_RUNS))
    print("| run | peak alloc GiB meas / pred (err) | reserved GiB meas / pred (err) | step s meas / pred (err) |")
    print("|---|---|---|---|")
    for alloc, reserved, step in zip(result["peak_alloc"], result["reserved"], result["step"], strict=True):
        cells = [f"{c.measured:.2f} / {c.predicted:.2f} ({c.error:+.1%})" for c in (alloc, reserved)]
        cells.append(f"{step.measured:.3f} / {step.predicted:.3f} ({step.error:+.1%})")
        print(f"| {alloc.name} | " + " | ".join(cells) + " |")
    for key, label in (("peak_alloc", "peak allocated"), ("reserved", "reserved"), ("step", "step time")):
        errors = [abs(c.error) for c in result[key]]
        print(f"\n{label}: mean |error| {sum(errors) / len(errors):.1%}, max {max(errors):.1%}", end="")
    print()


if __name__ == "__main__":
    main()
