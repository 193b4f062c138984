"""The plans table breaks a cell between words, never inside a GPU id (s47: `plan --per-gpu`, piped
at 150 columns, printed "a100-80gb-pc" over "ie", an id that `--gpus` then does not take)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

from ui.cli import main


def test_per_gpu_table_keeps_each_gpu_id_whole():
    stdout = io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(io.StringIO()):
        code = main(
            ["plan", "--model", "llama3-8b", "--tokens", "1e11", "--gpus", "a100-80gb-pcie,h100-sxm", "--per-gpu"]
        )
    assert code == 0
    gpu_cells = [line.split("│")[2].strip() for line in stdout.getvalue().splitlines() if line.count("│") > 10]
    assert "a100-80gb-pcie" in gpu_cells, gpu_cells
    assert all(cell in {"", "a100-80gb-pcie", "h100-sxm"} for cell in gpu_cells), gpu_cells
