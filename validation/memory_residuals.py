"""The measured memory peaks the memory band is read from (planner/accuracy/memory_band.py), as
the harness predicts them: torchtitan's (and torchao's) reserved peaks (validation/fsdp_runs.py, held out: nothing
was fitted on them), trainplan's H200 runs' allocated peaks (validation/calibration.py; the
allocated model has no fitted term but a 96 MiB constant, while two fractions of the reserved one
were fitted on these runs, so their reserved figures are not rows) and Megatron-LM's CI reference
values (validation/megatron_memory.py, held out). ``bench/validate_bands.py
--write`` writes them to planner/accuracy/memory_residuals.csv; the planner only reads that file.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from planner.accuracy.memory_band import MEMORY_COLUMNS, MEMORY_RESIDUALS_CSV, MemoryRow
from planner.catalog.hardware import Catalog, load_catalog
from planner.model.stacks import Stack
from validation.calibration import DEFAULT_H200_RUNS, compare_h200, read_h200_runs
from validation.fsdp_runs import SOURCE_STACKS, compare_fsdp_runs, read_fsdp_runs
from validation.megatron_memory import SOURCE as MEGATRON_SOURCE
from validation.megatron_memory import MegatronMemoryRun, predicted_last_rank_gib, read_megatron_memory_runs

H200_SOURCE = "calibration"  # planner/accuracy/residuals.py SOURCE_NAMES: "trainplan's H200 runs"
# Rows whose software is another source's: left out with it (review s41: torchao's float8 README
# rows ran torchtitan, and counted apart they read 77 % held out where 54 % is the honest figure).
SAME_SOFTWARE = {"torchao": "torchtitan"}


def fsdp_memory_rows(catalog: Catalog) -> list[MemoryRow]:
    """The FSDP rows whose source printed a reserved peak."""
    runs = [r for r in read_fsdp_runs() if r.measured_reserved_gib is not None]
    out = []
    for c in compare_fsdp_runs(runs, catalog=catalog):
        run = c.run
        assert run.measured_reserved_gib is not None
        out.append(
            MemoryRow(
                source=SAME_SOFTWARE.get(run.source, run.source),
                name=f"{run.row_id} {run.model.name}" + (f" ({run.source})" if run.source in SAME_SOFTWARE else ""),
                stack=str(SOURCE_STACKS[run.source]),
                hf_modules=run.training.impl == "hf",
                gpu=run.gpu,
                num_gpus=run.num_gpus,
                figure="reserved",
                measured_gib=run.measured_reserved_gib,
                predicted_gib=c.predicted_reserved_gib,
            )
        )
    return out


def h200_memory_rows() -> list[MemoryRow]:
    """trainplan's own H200 runs (stock transformers Llama under FSDP2 on one GPU): allocated peaks."""
    return [
        MemoryRow(
            source=H200_SOURCE,
            name=c.name,
            stack=Stack.TRAINPLAN.value,
            hf_modules=True,
            gpu="h200-sxm",
            num_gpus=1,
            figure="allocated",
            measured_gib=c.measured,
            predicted_gib=c.predicted,
        )
        for c in compare_h200(read_h200_runs(DEFAULT_H200_RUNS))["peak_alloc"]
    ]


def megatron_memory_rows(catalog: Catalog) -> list[MemoryRow]:
    """Megatron-LM's CI reference values: the last rank's allocated peak (validation/megatron_memory.py),
    one row per case, its first GPU's (H100): the same case on A100 and GB200 measured within 2 % of it
    and is predicted alike, so more rows of it would weigh one configuration three times in the band,
    its new-source offset and its coverage (review s40)."""
    first: dict[str, MegatronMemoryRun] = {}
    for run in read_megatron_memory_runs():
        first.setdefault(run.case, run)
    return [
        MemoryRow(
            source=MEGATRON_SOURCE,
            name=run.case,
            stack=Stack.MEGATRON_CORE.value,
            hf_modules=False,
            gpu=run.gpu,
            num_gpus=run.num_gpus,
            figure="allocated",
            measured_gib=run.measured_gib,
            predicted_gib=predicted_last_rank_gib(run, catalog),
        )
        for run in first.values()
    ]


def memory_rows(catalog: Catalog | None = None) -> list[MemoryRow]:
    catalog = catalog or load_catalog()
    return fsdp_memory_rows(catalog) + h200_memory_rows() + megatron_memory_rows(catalog)


def write_memory_rows(rows: Iterable[MemoryRow], path: Path = MEMORY_RESIDUALS_CSV) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=MEMORY_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            record = asdict(row)
            record["hf_modules"] = int(record["hf_modules"])
            for key in ("measured_gib", "predicted_gib"):
                record[key] = f"{record[key]:.4f}"
            writer.writerow(record)
    return path
