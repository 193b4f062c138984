"""Megatron-DeepSpeed throughput rows on Jean Zay's A100 against ``--stack megatron-deepspeed``:
BigScience's BLOOM-family runs (S1, S2) and OpenLLM-France's Lucie-7B parallelism sweep (S3), each
row's published layout estimated on its own network, its step compared with the one the team logged.

Rows and sources: data/validation/megatron_deepspeed_runs.csv, lucie_parallelism_runs.csv and
megatron_deepspeed_runs_sources.md. Read after the stack's first terms were set (planner/model/
stack_profiles.py ``MEGATRON_DEEPSPEED_SETTINGS``); nothing is fitted on S1 / S2, but two terms
(``sequence_parallel`` off, ``lp_grad_bytes``) were read in the code after their errors were seen, so
only the figure before those is blind (docs/validation.md). The host time per block under
CUDA_LAUNCH_BLOCKING=1 is fitted on S3's four single-node rows (``Use.FITTED``). Their limits,
stated where they are reported: one cluster and one code lineage, two teams (held out by layout,
model shape and team, not by site or software), and snapshots of a few iterations.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path

from planner.api import build_plan
from planner.catalog.hardware import Catalog, load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Implementation, Layout, Precision, Sharding, TrainingConfig
from planner.model.attention_choice import with_attention
from planner.model.attention_kernels import AttentionKernel
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stack_profiles import MEGATRON_DEEPSPEED_SETTINGS
from planner.model.stacks import Stack
from planner.plan import Plan
from validation.whole_run_recipes import JEAN_ZAY_OPA
from validation.whole_runs import read_whole_runs

DATA = Path(__file__).resolve().parent.parent / "data" / "validation"
DEFAULT_ROWS = DATA / "megatron_deepspeed_runs.csv"
LUCIE_ROWS = DATA / "lucie_parallelism_runs.csv"
GPU = "a100-80gb-sxm"
NETWORK = JEAN_ZAY_OPA  # 4 x 100 Gb/s Omni-Path per 8 A100 (tr11 README "Hardware")
SEQ_LEN = 2048
LUCIE_SEQ_LEN = 4096
# Lucie's sweep ran --use-flash-attn-v2 (its slurm scripts); BigScience's Megatron had no flash kernel.
LUCIE_SETTINGS = with_attention(MEGATRON_DEEPSPEED_SETTINGS, AttentionKernel.FLASH2)
BLOOM_RUN = "bloom-176b"  # the whole-run row whose architecture every row shares


@cache
def bloom() -> ModelSpec:
    """BLOOM-176B as the whole-run harness builds it (data/validation/whole_runs.csv and its recipe):
    ALiBi, an embedding layernorm, a 4h GeLU MLP with biases, tied embeddings, 250,880 tokens."""
    runs, _ = read_whole_runs()
    return next(r.model for r in runs if r.run_id == BLOOM_RUN)


class Use(StrEnum):
    HELD_OUT = "held_out"  # in the headline error
    NOT_HELD_OUT = "not_held_out"  # BLOOM's production configuration: the terms were looked for on it
    WEAK = "weak"  # a first iteration after a restart only
    FITTED = "fitted"  # a setting was fitted on it (MEGATRON_DEEPSPEED_HOST_S_PER_BLOCK)


@dataclass(frozen=True)
class MegatronDeepSpeedRow:
    row_id: str
    source: str
    locator: str
    model: ModelSpec
    num_gpus: int
    layout: Layout
    training: TrainingConfig
    measured_step_s: float  # the mean of the iterations the source logs for the layout
    use: Use
    notes: str
    settings: ModelingSettings | None = None  # None: the stack's own (STACK_SETTINGS)

    @property
    def team(self) -> str:
        """Who measured it, what leave-one-source-out leaves out together: BigScience's two tables
        come from one team, cluster and code base."""
        return "lucie-training" if self.source == "S3" else "bigscience"


@dataclass(frozen=True)
class MegatronDeepSpeedComparison:
    row: MegatronDeepSpeedRow
    plan: Plan

    @property
    def error(self) -> float:
        """Predicted / measured tokens per second - 1 (the measured over the predicted step)."""
        return self.row.measured_step_s / self.plan.estimate.time.step_s - 1


def _zero1_row(
    raw: dict[str, str],
    model: ModelSpec,
    *,
    seq_len: int,
    recompute: ActivationCheckpointing,
    measured_step_s: float,
    settings: ModelingSettings | None = None,
) -> MegatronDeepSpeedRow:
    """A published layout (pp 0, no pipeline engine, timed as pp 1) at the team's global batch,
    bf16, its optimizer states sharded over data parallelism: BigScience's BF16_Optimizer at ZeRO
    stage 0 "implements its own zero stage 1 equivalent" (tr11-176B-ml.slurm), and stage 1 is ZeRO-1."""
    gpus, tp, micro = int(raw["num_gpus"]), int(raw["tp"]), int(raw["micro_batch"])
    pp = max(int(raw["pp"]), 1)
    dp = gpus // (tp * pp)
    training = TrainingConfig(
        seq_len=seq_len,
        micro_batch=micro,
        grad_accum=int(raw["global_batch"]) // (dp * micro),
        activation_checkpointing=recompute,
        precision=Precision.BF16,
        impl=Implementation.NATIVE,
    )
    return MegatronDeepSpeedRow(
        row_id=raw["row_id"],
        source=raw["source"],
        locator=raw["locator"],
        model=model,
        num_gpus=gpus,
        layout=Layout(dp_shard=dp, tp=tp, pp=pp, sharding=Sharding.ZERO1),
        training=training,
        measured_step_s=measured_step_s,
        use=Use(raw["use"]),
        notes=raw["notes"],
        settings=settings,
    )


def _row(raw: dict[str, str]) -> MegatronDeepSpeedRow:
    """One of BigScience's layouts: a BLOOM-family shape, full recomputation, the mean logged step."""
    layers, hidden, heads = int(raw["layers"]), int(raw["hidden"]), int(raw["heads"])
    name = f"bloom-family {layers}x{hidden} ({heads} heads)"
    shape = dict(num_layers=layers, hidden_size=hidden, ffn_hidden_size=4 * hidden, num_heads=heads, num_kv_heads=heads)
    model = ModelSpec.model_validate({**bloom().model_dump(), "name": name, **shape})
    steps = [float(s) for s in raw["seconds_per_iteration"].split(";")]
    full = ActivationCheckpointing.FULL
    return _zero1_row(raw, model, seq_len=SEQ_LEN, recompute=full, measured_step_s=statistics.fmean(steps))


def _lucie_row(raw: dict[str, str]) -> MegatronDeepSpeedRow:
    """One layout of the Lucie-7B sweep: Llama-2-7B's shape (MHA, ffn 11,008, untied) at the row's
    vocabulary, FlashAttention-2, the team's samples per second."""
    vocab = int(raw["vocab"])
    update = {"name": f"lucie-sweep-7b (vocab {vocab:,})", "vocab_size": vocab}
    model = get_preset("llama2-7b").model_copy(update=update)
    step = int(raw["global_batch"]) / float(raw["samples_per_s"])
    recompute = ActivationCheckpointing(raw["recompute"])
    return _zero1_row(
        raw, model, seq_len=LUCIE_SEQ_LEN, recompute=recompute, measured_step_s=step, settings=LUCIE_SETTINGS
    )


def read_megatron_deepspeed_rows(
    path: Path = DEFAULT_ROWS, lucie: Path | None = LUCIE_ROWS
) -> list[MegatronDeepSpeedRow]:
    """BigScience's rows, then (``lucie`` not None) the Lucie-7B sweep's."""
    with Path(path).open(newline="", encoding="utf-8") as handle:
        rows = [_row(raw) for raw in csv.DictReader(handle)]
    if lucie is None:
        return rows
    with Path(lucie).open(newline="", encoding="utf-8") as handle:
        return rows + [_lucie_row(raw) for raw in csv.DictReader(handle)]


def predict(row: MegatronDeepSpeedRow, catalog: Catalog) -> MegatronDeepSpeedComparison:
    """The row's layout through ``build_plan`` under --stack megatron-deepspeed on Jean Zay's network."""
    plan = build_plan(
        row.model,
        GPU,
        row.layout,
        row.training,
        num_gpus=row.num_gpus,
        catalog=catalog,
        stack=Stack.MEGATRON_DEEPSPEED,  # and its settings (STACK_SETTINGS) unless the row names its own
        network=NETWORK,
        settings=row.settings,
    )
    return MegatronDeepSpeedComparison(row, plan)


def compare_megatron_deepspeed(
    rows: list[MegatronDeepSpeedRow] | None = None, catalog: Catalog | None = None
) -> list[MegatronDeepSpeedComparison]:
    catalog = catalog or load_catalog()
    return [predict(row, catalog) for row in rows or read_megatron_deepspeed_rows()]
