"""Published LLM pre-training throughput on AMD Instinct GPUs, held out.

data/validation/amd_runs.csv (read as data/validation/amd_runs_sources.md describes) holds the AMD
rows found well specified enough to predict: Primus-Megatron runs on MI325X whose training logs
print every argument (model, layout, batch, precision, recompute) and the per-iteration step time.
No validation row had run on an AMD GPU before them; nothing in the model was fitted on them, and
no setting was changed after seeing them.

The rows share the NeMo Blackwell file's columns and reader (validation/nemo_blackwell.py) and are
predicted the same way: ``planner.model.estimate.score`` under the Megatron-Core profile as it is
(Primus-Megatron runs Megatron-LM's Megatron-Core with TransformerEngine), the Mixtral row under
the MoE benchmark profile. Only the GPU names differ: the MI300X and MI325X the catalog holds.
bench/validate_amd.py prints the tables.
"""

from __future__ import annotations

from pathlib import Path

from planner.catalog.hardware import Catalog
from validation.nemo_blackwell import BlackwellComparison, BlackwellRows, compare_nemo_blackwell, read_nemo_blackwell

DEFAULT_AMD_RUNS = Path(__file__).resolve().parent.parent / "data" / "validation" / "amd_runs.csv"
# The AMD parts the catalog holds (MI355X / MI350X rows would be skipped: no catalog entry).
AMD_GPU_IDS: tuple[tuple[str, str | None], ...] = (("MI325X", "mi325x"), ("MI300X", "mi300x"))


def read_amd(path: Path = DEFAULT_AMD_RUNS) -> BlackwellRows:
    """Every row: the runs to predict and the rows skipped with their reason."""
    return read_nemo_blackwell(path, gpu_ids=AMD_GPU_IDS)


def compare_amd(rows: BlackwellRows | None = None, catalog: Catalog | None = None) -> list[BlackwellComparison]:
    """Each readable row's prediction under the Megatron-Core profile (MoE: its benchmark profile)."""
    return compare_nemo_blackwell((rows or read_amd()).runs, catalog)
