"""The held-out validation rows the error bands are made of, as data.

``residuals.csv`` is written by ``bench/validate_bands.py --write`` from the validation harness
(validation/residuals.py, which says how each set is held out); the planner only reads it.
``tests/planner/test_accuracy.py`` checks that it matches the harness.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

RESIDUALS_CSV = Path(__file__).resolve().parent / "residuals.csv"


@dataclass(frozen=True)
class HeldOutRow:
    """One validation row: the facts that place it in a regime, its held-out tokens/s error
    ``(predicted - measured) / measured`` and its measured MFU (trainplan's convention: model
    FLOPs with causal attention over the dense bf16 peak)."""

    dataset: str
    source: str
    release: str  # the software release the source names per row ("" for one release per source)
    name: str
    stack: str
    gpu: str
    generation: str
    num_gpus: int
    tp: int
    pp: int
    cp: int
    ep: int
    seq_len: int
    precision: str
    moe: bool
    measured_mfu: float
    error: float
    fitted_error: float
    # Experts each as wide as a dense FFN (ceiling.coarse_experts): their ceiling is the dense one.
    coarse_experts: bool = False
    # The row trained Hugging Face's modules (``--impl hf``; ``Feature.HF_MODULES``), whatever its
    # stack: the H200 runs are stock transformers Llama under FSDP2 (trial s33: read by stack, they
    # validated trainplan's own native modules, which no GPU has run).
    hf_modules: bool = False
    # The attention kernel the row ran where its stack would not pick it (``profiles.kernel_choice``:
    # MPT's Triton flash under llm-foundry); "": the stack's own. Trial s44 H1: Triton rows at 65K
    # read as validating the FlashAttention-2 llm-foundry runs by default.
    kernel: str = ""
    # The row's held-out error once the model's figure is moved to its band's median, that band read
    # without the row's source (validation.bands.moved_log_error): what the headline's choice between
    # the two figures is scored on, per regime (trial s48 H2). None: a file written before it.
    median_error: float | None = None

    @property
    def predicted_mfu(self) -> float:
        """The held-out prediction's MFU (tokens/s scale with it)."""
        return self.measured_mfu * (1.0 + self.error)


# A source's name in words, where its ID is a code (trial s34: "validated ... (S2)" meant nothing to
# a user). IDs are the harness's: data/calibration/published_runs.csv ``source_id`` for S*, the
# validation/*.py modules for the rest; the JSON keeps the IDs.
SOURCE_NAMES = {
    "S2": "Narayanan et al. 2021",
    "S3": "Megatron-LM README",
    "S4": "Korthikanti et al. 2022",
    "S13": "NeMo performance summary",
    "S14": "Megatron-Bridge performance archive",
    "dgxc": "DGX Cloud benchmarking",
    "mlperf": "MLPerf Training",
    "moe-modelzoo": "Megatron MoE ModelZoo",
    "calibration": "trainplan's H200 runs",
    "ml-engineering": "Bekman's ml-engineering",
    "bigscience": "BigScience's BLOOM logs",
    "lucie-training": "Lucie-Training",
    "megatron-lm-ci": "Megatron-LM's CI reference values",
    "PRIMUS_AAC11": "Primus-Megatron logs on MI325X",
    "MLPERF_TRAINING_V5.1": "MLPerf Training v5.1",
}


def source_name(source: str) -> str:
    """``SOURCE_NAMES``' words for a source ID (its ID where it is already a name: torchtitan)."""
    return SOURCE_NAMES.get(source, source)


_INTS = ("num_gpus", "tp", "pp", "cp", "ep", "seq_len")
_FLOATS = ("measured_mfu", "error", "fitted_error")


def _row(record: dict[str, str]) -> HeldOutRow:
    values: dict[str, object] = dict(record)
    for key in _INTS:
        values[key] = int(record[key])
    for key in _FLOATS:
        values[key] = float(record[key])
    values["moe"] = record["moe"] == "1"
    values["coarse_experts"] = record.get("coarse_experts", "0") == "1"
    values["hf_modules"] = record.get("hf_modules", "0") == "1"
    values["median_error"] = float(moved) if (moved := record.get("median_error")) else None
    return HeldOutRow(**values)  # type: ignore[arg-type]


@functools.cache
def load_residuals(path: Path = RESIDUALS_CSV) -> tuple[HeldOutRow, ...]:
    """The stored rows (read once; the file ships with the package)."""
    with path.open(newline="", encoding="utf-8") as f:
        return tuple(_row(r) for r in csv.DictReader(f))
