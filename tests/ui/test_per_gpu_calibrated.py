"""calib50 M8: with a calibration file of one GPU type, a --per-gpu table mixed rows timed at the
file's rates with rows at the catalog's, and only the chosen type's line said which; the JSON's
per_gpu[] and alternatives[] had no flag."""

from __future__ import annotations

import json

from planner.catalog.calibration import CalibrationFile, write_calibration
from ui.cli import main

MACHINE = dict(host="node-17", device="NVIDIA H100 80GB HBM3", driver="550.54", date="2026-12-01", software="torch 2.5")
PLAN = ["plan", "--model", "llama3-8b", "--tokens", "1e11", "--gpus", "h100-sxm=64,h200-sxm=64,a100-80gb-sxm=64"]
PLAN += ["--per-gpu", "--top", "2"]


def test_each_listed_plan_says_whether_the_calibration_file_timed_it(tmp_path, capsys):
    rates = {"gemm_bf16_tflops_achieved": 600.0, "hbm_copy_tbps_achieved": 2.8}
    path = write_calibration(tmp_path / "h100.toml", CalibrationFile(MACHINE, {"h100-sxm": rates}))
    assert main([*PLAN, "--calibration", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = [data["plan"], *data["per_gpu"], *data["alternatives"]]
    assert {p["gpu"] for p in rows} == {"h100-sxm", "h200-sxm", "a100-80gb-sxm"}
    assert all(p["calibrated"] is (p["gpu"] == "h100-sxm") for p in rows)
    assert main([*PLAN, "--calibration", str(path)]) == 0
    text = capsys.readouterr().out
    per_gpu = text[text.index("(--per-gpu)") :]
    assert gpu_cells(per_gpu) == ["h200-sxm", "h100-sxm (cal)", "a100-80gb-sxm"]
    assert "(cal): timed with the calibration file's entry for that GPU" in per_gpu
    assert main([*PLAN, "--json"]) == 0  # no file: every row false, the tables unmarked
    data = json.loads(capsys.readouterr().out)
    assert not any(p["calibrated"] for p in [data["plan"], *data["per_gpu"], *data["alternatives"]])
    assert main(PLAN) == 0 and "(cal)" not in capsys.readouterr().out


def gpu_cells(table: str) -> list[str]:
    """The GPU column's cells of a plans table, each row's lines joined (a cell may wrap)."""
    cells: list[str] = []
    for line in table.split("┩", 1)[1].splitlines()[1:]:  # the rows, under the header
        parts = [part.strip() for part in line.split("│")]
        if len(parts) < 3:
            break
        if parts[1]:  # a row's first line names its rank
            cells.append(parts[2])
        elif parts[2]:
            cells[-1] += " " + parts[2]
    return cells
