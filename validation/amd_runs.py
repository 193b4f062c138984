"""Published LLM pre-training throughput on AMD Instinct GPUs, held out.

data/validation/amd_runs.csv (read as data/validation/amd_runs_sources.md describes) holds the AMD
rows found well specified enough to predict, from two independent sources: Primus-Megatron runs on
MI325X whose training logs print every argument (model, layout, batch, precision, recompute) and
the per-iteration step time (``PRIMUS_AAC11``), and the MLPerf Training v5.1 Llama 3.1 8B
submissions on MI355X and MI350X (AMD's NeMo / Megatron-Core implementation; AMD, Dell,
Supermicro, Cisco). No validation row had run on an AMD GPU before them; nothing in the model was
fitted on them, and no setting was changed after seeing them. The CDNA 4 parts (MI355X, MI350X)
joined the catalog after the rows did (hw_catalog/gpus/mi355x.toml, mi350x.toml: datasheet
figures, a MAMF-based GEMM rate, an ESTIMATE price), with nothing in them read from these rows.

The rows share the NeMo Blackwell file's columns and reader (validation/nemo_blackwell.py) and are
predicted the same way: ``planner.model.estimate.score`` under the Megatron-Core profile as it is
(Primus-Megatron runs Megatron-LM's Megatron-Core with TransformerEngine), the Mixtral row under
the MoE benchmark profile, the MLPerf rows under the MLPerf recipe (bf16 gradient buffers: AMD's
``train.py`` passes ``grad_reduce_in_fp32=False``, as NVIDIA's does). Only the GPU names differ:
the MI300X, MI325X, MI350X and MI355X the catalog holds. bench/validate_amd.py prints the tables, per source and
per generation.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from planner.accuracy.unbanded import UNBANDED_COLUMNS, UNBANDED_CSV
from planner.catalog.hardware import Catalog, load_catalog
from validation.nemo_blackwell import BlackwellComparison, BlackwellRows, compare_nemo_blackwell, read_nemo_blackwell

DEFAULT_AMD_RUNS = Path(__file__).resolve().parent.parent / "data" / "validation" / "amd_runs.csv"
# The AMD parts the rows name, and their catalog entries.
AMD_GPU_IDS: tuple[tuple[str, str | None], ...] = (
    ("MI325X", "mi325x"),
    ("MI300X", "mi300x"),
    ("MI355X", "mi355x"),
    ("MI350X", "mi350x"),
)


def generation_for(gpu: str) -> str:
    """The Instinct architecture of a GPU name or catalog id ('mi325x' -> 'CDNA3'): the catalog
    part's own (``GPUSpec.generation``, by its LLVM target), else the name."""
    gpus = load_catalog().gpus
    part = next((gpus[i] for name, i in AMD_GPU_IDS if i in gpus and name.lower() in gpu.lower()), None)
    return gpu if part is None else part.generation


def row_gpus(path: Path = DEFAULT_AMD_RUNS) -> dict[str, str]:
    """Each row's GPU as the file names it (skipped rows carry no GPU of their own)."""
    with Path(path).open(newline="", encoding="utf-8") as handle:
        return {row["row_id"]: row["gpu"] for row in csv.DictReader(handle)}


@dataclass(frozen=True)
class SourceGeneration:
    """One source's rows on one generation: how many, how many scored, and their held-out error."""

    source: str
    generation: str
    rows: int
    skipped: int
    errors: tuple[float, ...]  # (predicted - measured) / measured of the scored rows

    @property
    def mean_signed(self) -> float | None:
        return sum(self.errors) / len(self.errors) if self.errors else None

    @property
    def mean_abs(self) -> float | None:
        return sum(abs(e) for e in self.errors) / len(self.errors) if self.errors else None


def by_source_generation(
    rows: BlackwellRows, comparisons: list[BlackwellComparison], path: Path = DEFAULT_AMD_RUNS
) -> list[SourceGeneration]:
    """Every (source, generation) of the file, skipped rows counted, sorted by source."""
    gpus = row_gpus(path)
    keys: dict[tuple[str, str], tuple[list[str], list[str], list[float]]] = {}
    for run in rows.runs:
        keys.setdefault((run.source, generation_for(run.gpu_id)), ([], [], []))[0].append(run.row_id)
    for skip in rows.skipped:
        keys.setdefault((skip.source, generation_for(gpus[skip.row_id])), ([], [], []))[1].append(skip.row_id)
    for c in comparisons:
        keys[(c.run.source, generation_for(c.run.gpu_id))][2].append(c.error)
    return [
        SourceGeneration(source, gen, len(run_ids) + len(skip_ids), len(skip_ids), tuple(errors))
        for (source, gen), (run_ids, skip_ids, errors) in sorted(keys.items())
    ]


def read_amd(path: Path = DEFAULT_AMD_RUNS) -> BlackwellRows:
    """Every row: the runs to predict and the rows skipped with their reason."""
    return read_nemo_blackwell(path, gpu_ids=AMD_GPU_IDS)


def compare_amd(rows: BlackwellRows | None = None, catalog: Catalog | None = None) -> list[BlackwellComparison]:
    """Each readable row's prediction under the Megatron-Core profile (MoE: its benchmark profile;
    MLPerf rows: the MLPerf recipe)."""
    return compare_nemo_blackwell((rows or read_amd()).runs, catalog)


def write_unbanded(comparisons: list[BlackwellComparison] | None = None, path: Path = UNBANDED_CSV) -> Path:
    """The scored rows as planner/accuracy/unbanded_rows.csv: each architecture's own rows, which an
    estimate on it cites beside its band (planner/accuracy/unbanded.py)."""
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(UNBANDED_COLUMNS)
        for c in compare_amd() if comparisons is None else comparisons:
            run = c.run
            writer.writerow(
                [run.source, generation_for(run.gpu_id), f"{run.row_id} {run.model_name}", run.gpu_id, f"{c.error:.6f}"]
            )
    return path
