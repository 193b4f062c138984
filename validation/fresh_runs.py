"""A fresh held-out set: published training throughputs no other validation file holds.

data/validation/fresh_runs.csv (read as data/validation/fresh_runs_sources.md describes) holds four
sets of rows from sources no validation or calibration row came from. Set 1 (session 51, trial
heldout51, 14 rows): OLMo-core's README throughput table (H100, FSDP + compile), FlagPerf's
Megatron-Core / FlagScale LLM cases (A800, H100, H800) and the flash-attention repository's GPT-3
training-speed table (A100); its six FlagPerf rows later informed --no-tp-comm-overlap. Set 2
(session 52, trial heldout52, 14 rows): torchtitan's own published tables (A100 FSDP, H100 TP / PP /
CP, B200, GB200 MoE) and AWS's torchtitan test case (H100); scored held out; its F19-F23 later
informed torchtitan's DTensor TP overlap (session 52, trial titan52). Set 3 (session 53, trial
heldout53, 19 rows): the Ultra-Scale Playbook's nanotron grid (H100, DP / TP / PP / ZeRO up to 512
GPUs), the PyTorch float8 + FSDP2 blog (512 H100) and Hugging Face's Ulysses sequence-parallel
benchmark (HF Trainer + DeepSpeed ZeRO-3, 8K-64K); scored held out; its F44-F47 later pointed to
offload's per-micro-batch gradient traffic (session 53, trial offload53), so they are not held out
of that decision. Set 4 (session 54, trial heldout54, 16 rows): Crusoe's torchtitan table (Llama 3.1
8B on GB200, B200, H200, H100, 8 to 128 GPUs), torchtune's optimization-flags table (A100, one
GPU), VectorLM's reference throughput (HF modules under FSDP1 on 4 A100) and a torchtitan pull
request's default-EP MoE figure (Qwen3-30B-A3B on 8 B200); scored held out.

Each row stores the ``trainplan estimate`` flags that describe its job (``estimate_args``), so the
score is what a user typing that command reads: bench/validate_fresh.py runs each through the CLI
(``--json --no-calibration``) and turns the answer into a ``FreshScore`` here. This module only
reads rows and summarises scores; it never runs the CLI (validation/ does not import ui/).
"""

from __future__ import annotations

import csv
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.catalog.hardware import load_catalog

DEFAULT_FRESH_RUNS = Path(__file__).resolve().parent.parent / "data" / "validation" / "fresh_runs.csv"


@dataclass(frozen=True)
class FreshRow:
    """One published measurement and the estimate command that describes it."""

    row_id: str
    fresh_set: int  # which collection the row came in (1-4: sessions 51-54)
    source: str
    locator: str
    model: str
    gpu: str  # as the source names it
    num_gpus: int
    measured_tokens_per_s_per_gpu: float
    estimate_args: tuple[str, ...]  # the flags after ``trainplan estimate``

    @property
    def command(self) -> str:
        return "trainplan estimate " + shlex.join(self.estimate_args)


@dataclass(frozen=True)
class FreshScore:
    """A row against its estimate: the figure, the 80 % band and the envelope it was read from."""

    row: FreshRow
    gpu_id: str  # the catalog GPU the estimate ran on
    predicted_tokens_per_s_per_gpu: float
    band_tokens_per_s_per_gpu: tuple[float, float]  # the estimate's 80 % band (p10, p90 ends)
    validated: bool  # the estimate called its regime validated
    envelope: str  # the estimate's own words on the regime
    # Why the estimate judged the job not to fit, though it ran (None: it fits): the figures are
    # its "if it fit" ones, and the refusal is itself a miss the report names.
    refused: str | None = None

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        return self.predicted_tokens_per_s_per_gpu / self.row.measured_tokens_per_s_per_gpu - 1

    @property
    def in_band(self) -> bool:
        low, high = self.band_tokens_per_s_per_gpu
        return low <= self.row.measured_tokens_per_s_per_gpu <= high

    @property
    def generation(self) -> str:
        return load_catalog().gpus[self.gpu_id].generation


def read_fresh(path: Path = DEFAULT_FRESH_RUNS) -> list[FreshRow]:
    """Every row of the file, in file order."""
    with Path(path).open(newline="", encoding="utf-8") as handle:
        return [
            FreshRow(
                row_id=r["row_id"],
                fresh_set=int(r["set"]),
                source=r["source"],
                locator=r["locator"],
                model=r["model"],
                gpu=r["gpu"],
                num_gpus=int(r["num_gpus"]),
                measured_tokens_per_s_per_gpu=float(r["measured_tokens_per_s_per_gpu"]),
                estimate_args=tuple(shlex.split(r["estimate_args"])),
            )
            for r in csv.DictReader(handle)
        ]


def score_from_json(row: FreshRow, estimate: dict[str, Any]) -> FreshScore:
    """A row's score from ``trainplan estimate --json``'s answer (the band there is for the job:
    divided by the GPU count, as the figure is). A job the estimate refuses, though it ran, is
    scored on the figures it gives "if it fit" and flagged (``refused``); one without them is not
    scored (s54: hf-trainer's whole gradients under no_sync refused three VectorLM rows that ran)."""
    if not estimate["feasible"] and "throughput" not in estimate:
        raise ValueError(f"{row.row_id}: the estimate finds the job infeasible ({estimate['reason']})")
    gpus = estimate["num_gpus"]
    low, high = estimate["uncertainty"]["tokens_per_s"]
    return FreshScore(
        row=row,
        gpu_id=estimate["gpu"],
        predicted_tokens_per_s_per_gpu=estimate["throughput"]["tokens_per_s_per_gpu"],
        band_tokens_per_s_per_gpu=(low / gpus, high / gpus),
        validated=bool(estimate["uncertainty"]["validated"]),
        envelope=estimate["uncertainty"]["envelope"],
        refused=None if estimate["feasible"] else str(estimate["reason"]),
    )


@dataclass(frozen=True)
class Coverage:
    """A group's scores: how many, their mean signed / abs error and how many lie in their band."""

    group: str
    rows: int
    mean_signed: float
    mean_abs: float
    in_band: int
    # jobs that ran and the estimate refuses (``FreshScore.refused``), counted in the rest on the
    # figures it gives if they fit (review54 L4: a count read as "in band" hid the refusal)
    refused: int = 0


def coverage(scores: list[FreshScore], key: Callable[[FreshScore], str]) -> list[Coverage]:
    """Per group of ``key`` (e.g. the generation), in name order."""
    groups: dict[str, list[FreshScore]] = {}
    for s in scores:
        groups.setdefault(key(s), []).append(s)
    return [
        Coverage(
            group=g,
            rows=len(members),
            mean_signed=sum(m.error for m in members) / len(members),
            mean_abs=sum(abs(m.error) for m in members) / len(members),
            in_band=sum(m.in_band for m in members),
            refused=sum(m.refused is not None for m in members),
        )
        for g, members in sorted(groups.items())
    ]
