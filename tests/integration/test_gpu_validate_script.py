"""bench/gpu_validate.sh must work when a GPU session finally runs it: a CPU dry run of the
whole path (plan for one GPU -> emit -> run -> summary) on the tiny preset."""

import json
import os
import subprocess
import sys

import pytest
from support import REPO


@pytest.mark.slow
def test_gpu_validate_dry_run_on_cpu(tmp_path):
    env = {
        **os.environ,
        "DEVICE": "cpu",
        "GPU_ID": "h100-sxm",
        "MODELS": "tiny",
        "STEPS": "3",
        "SEQ": "128",
        "PRECISION": "fp32",  # bf16 matmuls on CPU are ~15x slower; the path is the same
        "OUT": str(tmp_path),
        "OMP_NUM_THREADS": "1",
        "PYTHON": sys.executable,
    }
    proc = subprocess.run(
        ["bash", str(REPO / "bench" / "gpu_validate.sh")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads((tmp_path / "summary.json").read_text())
    assert [r["model"] for r in rows] == ["tiny"]
    row = rows[0]
    assert row["outcome"] == "completed" and row["gpu"] == "h100-sxm"
    assert row["pred_step_s"] > 0 and row["meas_step_s"] > 0
    assert row["step_err_pct"] is None  # CPU timings are not compared with an H100 prediction
    assert "| tiny | h100-sxm |" in (tmp_path / "summary.md").read_text()
