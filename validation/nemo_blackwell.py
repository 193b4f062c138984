"""Published NeMo, Megatron-Bridge and DGX Cloud throughput rows on Blackwell (and H100), held out.

data/validation/nemo_blackwell_runs.csv (79 rows, read as data/validation/nemo_blackwell_runs_sources.md
describes) holds NVIDIA's own benchmark tables for GB200, B200 and some H100: the NeMo 25.02 / 25.04 /
25.07 performance summaries, Megatron-Bridge archive rows that data/calibration/published_runs.csv
does not hold, and the DGX Cloud benchmarking recipes. Nothing in the model was fitted on them: they
test the Blackwell step times the calibration rows (mostly H100) set.

Each row becomes a :class:`BlackwellRun` (ModelSpec, catalog GPU, Layout, TrainingConfig, measured
tokens/s per GPU) or a :class:`BlackwellSkip` naming why it cannot be predicted: never dropped
silently. Models are built by the calibration reader's own rules (validation/published_rows.py
``model_for``), so the 8B here is the 8B there. A row that repeats a calibration row (same
container, model, GPU, GPU count, quantisation recipe and throughput) is flagged ``duplicate_of``
and not scored: it would count a fitted row as held out.

``compare_nemo_blackwell`` predicts each row with ``planner.model.estimate.score`` under the
Megatron-Core profile (``STACK_SETTINGS[Stack.MEGATRON_CORE]``), plus Megatron-Bridge's recipe
facts on the Megatron-Bridge archive rows, and the MoE benchmark profile of
validation/moe_recipes.py on the Mixtral rows. ``flop_check`` compares each row's published
model TFLOP/s / tokens/s with the non-causal and causal FLOP counts, so a mis-read model shows up
as a ratio far from both. bench/validate_blackwell.py prints the tables.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from planner.catalog.hardware import Catalog, load_catalog
from planner.layout import (
    ActivationCheckpointing,
    Implementation,
    Layout,
    Precision,
    Sharding,
    TrainingConfig,
    ep_fits,
)
from planner.model.candidates import Candidates, on_default_node
from planner.model.estimate import score
from planner.model.optimizer_precision import OptimizerPrecision
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import STACK_SETTINGS, Stack
from validation.moe_recipes import BRIDGE_MOE_BENCHMARK
from validation.nemo_models import architecture_for, model_for_row
from validation.published import MEGATRON_FSDP_OFFLOADED_BLOCKS, megatron_bridge_settings
from validation.published_rows import (
    DEFAULT_PUBLISHED_RUNS,
    GPU_IDS,
    SkipReason,
    gpu_id_for,
    precision_for,
)

GpuIds = tuple[tuple[str, str | None], ...]  # published_rows.GPU_IDS' shape
DEFAULT_BLACKWELL_RUNS = Path(__file__).resolve().parent.parent / "data" / "validation" / "nemo_blackwell_runs.csv"
MEGATRON_BRIDGE_ARCHIVE = "MBRIDGE_ARCHIVE"  # the source column of the Megatron-Bridge archive rows
# Two readings of one measurement: the same table cell copied twice lands within rounding of itself.
DUPLICATE_THROUGHPUT_TOLERANCE = 0.005


class Quantisation(StrEnum):
    """The GEMM recipe a row names (the model runs every FP8 recipe at the FP8 tensor-core rate)."""

    BF16 = "bf16"
    FP8_CS = "fp8-cs"  # per-tensor current scaling
    FP8_DS = "fp8-ds"  # per-tensor delayed scaling (an amax history; MLPerf's GPT-3 rows)
    MXFP8 = "mxfp8"  # 32-element block scaling
    FP8 = "fp8 (recipe not stated)"
    NVFP4 = "nvfp4"


def quantisation_for(text: str, bridge_archive: bool) -> Quantisation:
    """The recipe a precision cell names. The Megatron-Bridge archive's later tables write
    current scaling as plain 'FP8' (FP8-CS in 25.09 / 25.11), so there 'FP8' is FP8-CS."""
    t = text.lower()
    if "nvfp4" in t:
        return Quantisation.NVFP4
    if "mxfp8" in t or "fp8-mx" in t:
        return Quantisation.MXFP8
    # "tensorwise" is NeMo's name for per-tensor current scaling (MLPerf v5.1 configs' FP8_RECIPE).
    if "fp8-cs" in t or "current" in t or "tensorwise" in t or ("fp8" in t and bridge_archive):
        return Quantisation.FP8_CS
    if "delayed" in t:
        return Quantisation.FP8_DS
    return Quantisation.FP8 if "fp8" in t else Quantisation.BF16


def parse_container_version(text: str) -> str | None:
    """'NeMo 25.11 (first version)' -> '25.11'; "section '26.02.01 NeMo Container'" -> '26.02.01'."""
    match = re.search(r"\b(\d{2}\.\d{2}(?:\.\d{2})?)\b", text)
    return match.group(1) if match else None


# --------------------------------------------------------------------------- rows


class BlackwellSkipReason(StrEnum):
    """Why a row is not predicted (published_rows.SkipReason's wording where it has the case)."""

    GPU_NOT_IN_CATALOG = SkipReason.GPU_NOT_IN_CATALOG.value
    NO_MODEL_DIMS = SkipReason.NO_MODEL_DIMS.value
    PARAMS_MISMATCH = SkipReason.PARAMS_MISMATCH.value
    PRECISION_NOT_MODELLED = SkipReason.PRECISION_NOT_MODELLED.value
    LAYOUT_INCONSISTENT = SkipReason.LAYOUT_INCONSISTENT.value
    BATCH_INCONSISTENT = "global batch is not micro-batch x dp x the grad accumulation the notes state"


@dataclass(frozen=True)
class BlackwellSkip:
    row_id: str
    source: str
    model_name: str
    reason: BlackwellSkipReason


@dataclass(frozen=True)
class BlackwellRun:
    """One readable row: what ran, on what, and what the source measured."""

    row_id: str
    source: str
    container: str
    model_name: str  # as the source prints it
    model: ModelSpec
    published_params: float
    gpu_id: str  # catalog id: 'b200', 'gb200', 'h100-sxm'
    num_gpus: int
    layout: Layout
    training: TrainingConfig
    quantisation: Quantisation
    measured_tokens_per_s_per_gpu: float
    measured_tflops_per_gpu: float | None
    duplicate_of: int | None  # row_id in data/calibration/published_runs.csv; not scored when set
    inferred: tuple[str, ...]  # what a rule filled in

    @property
    def container_version(self) -> str:
        return parse_container_version(self.container) or self.container

    @property
    def gpu_label(self) -> str:
        labels = {"b200": "B200", "gb200": "GB200", "gb300": "GB300", "h100-sxm": "H100", "h200-sxm": "H200"}
        return labels.get(self.gpu_id, self.gpu_id)


@dataclass(frozen=True)
class BlackwellRows:
    """Every row of the file: the runs (duplicates flagged) and the rows skipped with a reason."""

    runs: list[BlackwellRun]
    skipped: list[BlackwellSkip]


def _int(text: str, default: int) -> int:
    return int(text) if text.strip() else default


def layout_for(row: dict[str, str], num_gpus: int, inferred: list[str]) -> Layout | BlackwellSkipReason:
    """TP x PP x CP must divide the GPUs (dp = the rest). FSDP column > 0 = Megatron-FSDP (NeMo
    25.04 / 25.07 write 1, Megatron-Bridge the sharding group, which must be dp x cp); 0 = DDP with
    the distributed optimizer (zero1). Blank VP / EP = 1. Experts whole on each tp rank (expert tp
    1, the Megatron-Bridge MoE recipes) where the layout admits it, else split over tp (expert tp =
    tp, Megatron-Core's default when expert_tensor_parallel_size is unset)."""
    tp, pp, cp = _int(row["tp"], 1), _int(row["pp"], 1), _int(row["cp"], 1)
    vpp, ep, fsdp = _int(row["vp"], 1), _int(row["ep"], 1), _int(row["fsdp"], 0)
    if num_gpus % (tp * pp * cp):
        return BlackwellSkipReason.LAYOUT_INCONSISTENT
    dp = num_gpus // (tp * pp * cp)
    if fsdp > 1 and fsdp != dp * cp:
        return BlackwellSkipReason.LAYOUT_INCONSISTENT
    expert_tp = ep == 1 or not bool(ep_fits(ep, cp, dp, token_split=tp))
    if ep > 1 and tp > 1 and expert_tp:
        inferred.append("expert tp = tp (expert tp 1 does not tile this layout)")
    sharding = Sharding.FSDP if fsdp > 0 else Sharding.ZERO1
    try:
        return Layout(dp_shard=dp, tp=tp, pp=pp, cp=cp, vpp=vpp, ep=ep, expert_tp=expert_tp, sharding=sharding)
    except ValueError:
        return BlackwellSkipReason.LAYOUT_INCONSISTENT


def recompute_for_notes(notes: str) -> ActivationCheckpointing:
    """None unless the notes name full recompute (selective recompute of the attention core maps
    to none, as published_rows.recompute_for explains)."""
    full = re.search(r"\bfull\b[^.;]*\b(recompute|checkpointing)\b", notes, re.IGNORECASE)
    return ActivationCheckpointing.FULL if full else ActivationCheckpointing.NONE


def training_for(row: dict[str, str], layout: Layout, precision: Precision) -> TrainingConfig | BlackwellSkipReason:
    """grad_accum = GBS / (MBS x dp); it must divide, and agree with the first 'GA n' of the notes."""
    seq_len, micro_batch, global_batch = int(row["seq_len"]), int(row["mbs"]), int(row["gbs"])
    grad_accum, rest = divmod(global_batch, micro_batch * layout.dp)
    stated = re.search(r"\bGA (\d+)\b", row["notes"])
    if rest or grad_accum < 1 or (stated is not None and int(stated.group(1)) != grad_accum):
        return BlackwellSkipReason.BATCH_INCONSISTENT
    return TrainingConfig(
        seq_len=seq_len,
        micro_batch=micro_batch,
        grad_accum=grad_accum,
        activation_checkpointing=recompute_for_notes(row["notes"]),
        precision=precision,
        impl=Implementation.NATIVE,
    )


# --------------------------------------------------------------------------- duplicates


@dataclass(frozen=True)
class MeasurementKey:
    """What names one published measurement in either file."""

    container: str | None
    model: str | None  # Architecture.name
    gpu_id: str | None
    num_gpus: int
    quantisation: Quantisation


@dataclass(frozen=True)
class CalibrationRow:
    """A row of data/calibration/published_runs.csv, reduced to what a duplicate would repeat."""

    row_id: int
    key: MeasurementKey
    tokens_per_s_per_gpu: float


def read_calibration_rows(path: Path = DEFAULT_PUBLISHED_RUNS) -> list[CalibrationRow]:
    """The calibration rows that publish tokens/s per GPU (the container read from the locator's
    section, else the source's title)."""
    rows: list[CalibrationRow] = []
    with Path(path).open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            tokens = row["measured_tokens_per_s_per_gpu"].strip()
            if not tokens:
                continue
            arch = architecture_for(row["model_name"])
            key = MeasurementKey(
                container=parse_container_version(row["source_locator"]) or parse_container_version(row["source"]),
                model=None if arch is None else arch.name,
                gpu_id=gpu_id_for(row["gpu_type"]),
                num_gpus=int(float(row["n_gpus"])),
                quantisation=quantisation_for(row["precision"], row["source_id"].startswith("S14")),
            )
            rows.append(CalibrationRow(int(row["row_id"]), key, float(tokens)))
    return rows


def duplicate_of(key: MeasurementKey, tokens_per_s_per_gpu: float, calibration: list[CalibrationRow]) -> int | None:
    """The calibration row with the same container, model, GPU, GPU count and recipe whose
    throughput is the same within rounding (None when there is none)."""
    if key.container is None or key.model is None:
        return None
    for row in calibration:
        close = abs(tokens_per_s_per_gpu / row.tokens_per_s_per_gpu - 1) <= DUPLICATE_THROUGHPUT_TOLERANCE
        if row.key == key and close:
            return row.row_id
    return None


# --------------------------------------------------------------------------- reading


def read_row(
    row: dict[str, str], calibration: list[CalibrationRow], gpu_ids: GpuIds = GPU_IDS
) -> BlackwellRun | BlackwellSkip:
    """One CSV row -> a run to predict, or the reason it cannot be predicted."""

    def skip(reason: BlackwellSkipReason) -> BlackwellSkip:
        return BlackwellSkip(row["row_id"], row["source"], row["model"], reason)

    gpu_id, precision = gpu_id_for(row["gpu"], gpu_ids), precision_for(row["precision"])
    num_gpus, seq_len = int(row["num_gpus"]), int(row["seq_len"])
    if gpu_id is None:
        return skip(BlackwellSkipReason.GPU_NOT_IN_CATALOG)
    if precision is None:
        return skip(BlackwellSkipReason.PRECISION_NOT_MODELLED)
    model = model_for_row(row["model"], seq_len)
    if isinstance(model, SkipReason):
        return skip(BlackwellSkipReason(model.value))
    inferred: list[str] = []
    layout = layout_for(row, num_gpus, inferred)
    if isinstance(layout, BlackwellSkipReason):
        return skip(layout)
    training = training_for(row, layout, precision)
    if isinstance(training, BlackwellSkipReason):
        return skip(training)
    arch = architecture_for(row["model"])
    assert arch is not None  # model_for_row skipped the row otherwise
    quantisation = quantisation_for(row["precision"], row["source"] == MEGATRON_BRIDGE_ARCHIVE)
    tokens, tflops = float(row["tokens_per_s_per_gpu"]), row["model_tflops_per_gpu"].strip()
    key = MeasurementKey(parse_container_version(row["container"]), arch.name, gpu_id, num_gpus, quantisation)
    return BlackwellRun(
        row_id=row["row_id"],
        source=row["source"],
        container=row["container"],
        model_name=row["model"],
        model=model,
        published_params=arch.published_params,
        gpu_id=gpu_id,
        num_gpus=num_gpus,
        layout=layout,
        training=training,
        quantisation=quantisation,
        measured_tokens_per_s_per_gpu=tokens,
        measured_tflops_per_gpu=float(tflops) if tflops else None,
        duplicate_of=duplicate_of(key, tokens, calibration),
        inferred=tuple(inferred),
    )


def read_nemo_blackwell(
    path: Path = DEFAULT_BLACKWELL_RUNS, published: Path = DEFAULT_PUBLISHED_RUNS, gpu_ids: GpuIds = GPU_IDS
) -> BlackwellRows:
    """Every row of the file, split into runs (duplicates of ``published`` flagged) and skips;
    ``gpu_ids``: the GPU names read (validation/mlperf.py reads the newer parts too)."""
    calibration = read_calibration_rows(published)
    runs: list[BlackwellRun] = []
    skipped: list[BlackwellSkip] = []
    with Path(path).open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            read = read_row(row, calibration, gpu_ids)
            if isinstance(read, BlackwellRun):
                runs.append(read)
            else:
                skipped.append(read)
    return BlackwellRows(runs, skipped)


def read_nemo_blackwell_runs(path: Path = DEFAULT_BLACKWELL_RUNS) -> list[BlackwellRun]:
    """The readable rows (``read_nemo_blackwell(path).skipped`` holds the others, with reasons)."""
    return read_nemo_blackwell(path).runs


# --------------------------------------------------------------------------- comparison


class Profile(StrEnum):
    """The settings a row is predicted with."""

    MEGATRON_CORE = "megatron-core"
    MEGATRON_BRIDGE = "megatron-core + megatron-bridge recipe"
    BRIDGE_MOE = "megatron-bridge moe benchmark"
    MLPERF = "megatron-core + mlperf recipe"


# The MLPerf Training submissions' source ids (data/validation/mlperf_runs.csv, "MLPERF_TRAINING_V5.1").
MLPERF_SOURCE = "MLPERF_TRAINING"
# What every MLPerf row's code states on top of Megatron-Core (read in the mirrors of
# mlcommons/training_results_v3.0-v5.1): bf16 gradient buffers. GPT-3 runs apex's
# DistributedFusedAdam (``USE_DIST_OPTIMIZER=True``) with ``grad_sync_dtype: bf16``; the Llama 3.1
# ``pretrain.py`` of NVIDIA and the other submitters pass ``grad_reduce_in_fp32=False``.
MLPERF_RECIPE = OptimizerPrecision(grad_reduce_bf16=True)


def profile_for(run: BlackwellRun) -> tuple[Profile, ModelingSettings]:
    """Mixtral: the MoE harness's Megatron-Core MoE profile (routing force-balanced, bf16 gradient
    buffers, TE's fused cross-entropy). Megatron-Bridge archive rows: Megatron-Core plus the
    recipe facts validation/published.py applies to the calibration archive rows (bf16 gradient
    buffers, TE's fused cross-entropy, the Megatron-FSDP recipes' offloaded activation blocks,
    which only the memory model reads). Every other row: the Megatron-Core profile as it is."""
    if run.model.num_experts > 1:
        return Profile.BRIDGE_MOE, BRIDGE_MOE_BENCHMARK
    core = STACK_SETTINGS[Stack.MEGATRON_CORE]
    if run.source.startswith(MLPERF_SOURCE):
        return Profile.MLPERF, MLPERF_RECIPE.applied(core)
    if run.source != MEGATRON_BRIDGE_ARCHIVE:
        return Profile.MEGATRON_CORE, core
    megatron_fsdp = run.layout.sharding == Sharding.FSDP
    offloaded = MEGATRON_FSDP_OFFLOADED_BLOCKS.get((run.model_name, run.gpu_id), 0) if megatron_fsdp else 0
    return Profile.MEGATRON_BRIDGE, megatron_bridge_settings(core, offloaded)


@dataclass(frozen=True)
class BlackwellComparison:
    run: BlackwellRun
    profile: Profile
    predicted_tokens_per_s_per_gpu: float
    fits: bool  # the memory model's verdict on the published layout

    @property
    def error(self) -> float:
        """(predicted - measured) / measured tokens/s per GPU."""
        measured = self.run.measured_tokens_per_s_per_gpu
        return (self.predicted_tokens_per_s_per_gpu - measured) / measured


def candidates_for(run: BlackwellRun, catalog: Catalog) -> Candidates:
    """The one-row candidate table of the published configuration on its catalog GPU and node."""
    return on_default_node(
        catalog.gpu(run.gpu_id), catalog, run.layout.resolve(run.num_gpus), run.training, run.num_gpus
    )


def predict(run: BlackwellRun, catalog: Catalog) -> BlackwellComparison:
    profile, settings = profile_for(run)
    scores = score(run.model, candidates_for(run, catalog), settings)
    return BlackwellComparison(
        run=run,
        profile=profile,
        predicted_tokens_per_s_per_gpu=float(scores.tokens_per_s[0]) / run.num_gpus,
        fits=bool(scores.fits[0]),
    )


def compare_nemo_blackwell(runs: list[BlackwellRun], catalog: Catalog | None = None) -> list[BlackwellComparison]:
    """Predict every run that does not repeat a calibration row (those are not scored)."""
    catalog = catalog or load_catalog()
    return [predict(run, catalog) for run in runs if run.duplicate_of is None]
