"""MLPerf Training LLM pre-training step times (v3.0-v5.1), held out.

data/validation/mlperf_runs.csv (read as data/validation/mlperf_runs_sources.md describes) holds
the closed-division GPT-3 175B, Llama 3.1 405B and Llama 3.1 8B submissions that run NVIDIA's
NeMo / Megatron-Core implementation: the published parallel layout of each (its config script),
and the step time its result logs record (the median of ``tracked_stats``' step timings, the
median over the runs). They span H100, H200, B200, GB200 and GB300, 8 to 11,616 GPUs. Nothing in
the model was fitted on them.

The rows share the NeMo Blackwell file's columns and reader (validation/nemo_blackwell.py), and
are predicted the same way: ``planner.model.estimate.score`` under the Megatron-Core profile, as
it is. Only the GPU names differ: the calibration reader (validation/published_rows.py) still
skips GB300 and H200, which these rows name and the catalog now holds.
bench/validate_mlperf.py prints the tables.
"""

from __future__ import annotations

from pathlib import Path

from planner.catalog.hardware import Catalog
from validation.nemo_blackwell import BlackwellComparison, BlackwellRows, compare_nemo_blackwell, read_nemo_blackwell
from validation.published_rows import GPU_IDS, HELD_OUT_GPU_IDS

DEFAULT_MLPERF_RUNS = Path(__file__).resolve().parent.parent / "data" / "validation" / "mlperf_runs.csv"
# The calibration reader's names, with the two newer catalog parts these rows ran on read too.
MLPERF_GPU_IDS = (*HELD_OUT_GPU_IDS, ("H200", "h200-sxm"), *((p, g) for p, g in GPU_IDS if p != "GB300"))


def read_mlperf(path: Path = DEFAULT_MLPERF_RUNS) -> BlackwellRows:
    """Every row: the runs to predict and the rows skipped with their reason (NVFP4: no catalog peak)."""
    return read_nemo_blackwell(path, gpu_ids=MLPERF_GPU_IDS)


def compare_mlperf(rows: BlackwellRows | None = None, catalog: Catalog | None = None) -> list[BlackwellComparison]:
    """Each readable row's prediction under the Megatron-Core profile."""
    return compare_nemo_blackwell((rows or read_mlperf()).runs, catalog)
