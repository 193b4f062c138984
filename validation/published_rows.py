"""Published large-scale training runs (data/calibration/published_runs.csv), read.

Each CSV row becomes a :class:`PublishedRun` (ModelSpec, catalog GPU, Layout, TrainingConfig, the
software stack, the measured throughput and the FLOP convention of its source) or a
:class:`SkippedRow` naming why it cannot be predicted. validation/published.py scores the runs.

A readable run is *comparable* (in the headline error) unless :func:`comparability` names a
reason decided from the row alone: see docs/validation.md.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, cast

from planner.catalog.hardware import Catalog, load_catalog
from planner.catalog.hf_dense import GPT2_ARCHITECTURE
from planner.catalog.models import get_preset, list_presets
from planner.layout import ActivationCheckpointing, Implementation, Layout, Precision, Sharding, TrainingConfig
from planner.model.spec import ModelSpec
from validation.flop_conventions import (
    CONVENTIONS,
    FlopConvention,
    convention_for,
)

DEFAULT_PUBLISHED_RUNS = Path(__file__).resolve().parent.parent / "data" / "calibration" / "published_runs.csv"
# Published parameter counts are rounded labels ("1.7B"); a rebuilt model must land within this.
PARAM_COUNT_TOLERANCE = 0.06
# Megatron pads the GPT-2 BPE vocabulary (50257) to a multiple of 128 x tp: 51200 for tp <= 8.
# S4 and S5 leave it blank; S2 (same code base, same authors) states 51200.
MEGATRON_GPT_VOCAB = 51200


class Stack(StrEnum):
    """The software stack of a row; it picks the settings profile the row is predicted with."""

    MEGATRON_LM = "megatron-lm"  # Megatron-LM papers of 2021-22: no flash attention, no overlap
    MEGATRON_CORE = "megatron-core"  # Megatron-Core / NeMo / Megatron-Bridge on TransformerEngine
    DEEPSPEED = "deepspeed"  # DeepSpeed ZeRO-3, Megatron-DeepSpeed: no profile of its own
    PYTORCH = "pytorch"  # anything else: trainplan's default (PyTorch FSDP2) profile


class SkipReason(StrEnum):
    TPU = "TPU, not a GPU"
    GPU_NOT_IN_CATALOG = "GPU not in the catalog (or not stated)"
    NO_LAYOUT = "parallel layout missing"
    LAYOUT_INCONSISTENT = "layout degrees do not multiply to the GPU count"
    NO_MODEL_DIMS = "model dimensions missing"
    PARAMS_MISMATCH = "rebuilt model misses the published parameter count"
    NO_THROUGHPUT = "no tokens/s, TFLOP/s or MFU in a known convention"
    PRECISION_NOT_MODELLED = "precision not modelled (NVFP4 has no catalog peak)"
    NO_BATCH = "global batch missing"


# A NeMo / Megatron-Bridge container version, as the sources print it ("25.04", "26.04.01").
RELEASE = re.compile(r"\b(2\d\.\d\d(?:\.\d\d)?)\b")


def release_in(text: str) -> str:
    """The first container version in ``text`` ("" when none)."""
    match = RELEASE.search(text)
    return match.group(1) if match else ""


@dataclass(frozen=True)
class SkippedRow:
    row_id: int
    source_id: str
    model_name: str
    reason: SkipReason


@dataclass(frozen=True)
class PublishedRun:
    """One readable row: what ran, on what, with which stack, and what the source measured."""

    row_id: int
    source_id: str
    model_name: str
    model: ModelSpec
    published_params: float | None
    gpu_id: str
    num_gpus: int
    layout: Layout
    training: TrainingConfig
    stack: Stack
    micro_batch_published: bool
    measured_tokens_per_s_per_gpu: float
    measured_tflops_per_gpu: float | None
    convention: FlopConvention | None
    inferred: tuple[str, ...]  # what a documented rule filled in (shown in the table notes)
    release: str = ""  # the NeMo / Megatron-Bridge container the source names ("24.07"), if any

    @property
    def source(self) -> str:
        return self.source_id.split("_")[0]


# --------------------------------------------------------------------------- cells


def _number(text: str) -> float | None:
    """A plain number, or a rounded label such as '1.7B' / '16M'; None when blank or prose."""
    match = re.fullmatch(r"~?([0-9.]+(?:e[0-9]+)?)\s*([KMBT]?)", text.strip().replace(",", ""), re.IGNORECASE)
    if not match:
        return None
    return float(match.group(1)) * {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[match.group(2).upper()]


def _integer(text: str) -> int | None:
    value = _number(text)
    if value is not None and value != int(value):
        raise ValueError(f"published_runs.csv: expected a whole number, got {text!r}")
    return None if value is None else int(value)


# --------------------------------------------------------------------------- GPU, stack, model

GPU_IDS = (  # (pattern in gpu_type, catalog id); first match wins: GB300 before GB200 before B200
    ("TPU", None),
    ("GB300", None),
    ("GB200", "gb200"),
    ("B200", "b200"),
    ("H100", "h100-sxm"),
    ("A100-SXM4-80GB", "a100-80gb-sxm"),
    ("A100-SXM4-40GB", "a100-40gb-sxm"),
)


# Parts whose rows are read only as a held-out check (bench/validate_published.py --held-out-gpus),
# never in the fitted set: GB300 (S14's 13 rows) joined the catalog after the Megatron-Core fit,
# and fitted with the Blackwell fold it would move the H100 fold's fit (2026-12-05).
HELD_OUT_GPU_IDS = (("GB300", "gb300"),)


def gpu_id_for(gpu_type: str, gpu_ids: tuple[tuple[str, str | None], ...] = GPU_IDS) -> str | None:
    """Catalog id of a published GPU description, None for parts the catalog does not hold (or
    that ``gpu_ids`` leaves out)."""
    return next((gpu_id for pattern, gpu_id in gpu_ids if pattern.lower() in gpu_type.lower()), None)


def stack_for(row: dict[str, str]) -> Stack:
    """DeepSpeed when the sharding column or the source names it; Megatron-Core for its releases,
    the NeMo family and DGX Cloud benchmarks; Megatron-LM for other Megatron rows; else PyTorch."""
    if "deepspeed" in f"{row['zero_stage_or_fsdp']} {row['source']}".lower():
        return Stack.DEEPSPEED
    text = " ".join(row[k] for k in ("source", "source_locator", "model_name", "precision")).lower()
    if any(key in text for key in ("megatron-core", "nemo", "megatron-bridge", "transformerengine", "dgxc")):
        return Stack.MEGATRON_CORE
    return Stack.MEGATRON_LM if "megatron" in text else Stack.PYTORCH


def _spec(name: str, style: str, dims: dict[str, int], tied: bool) -> ModelSpec:
    """Llama: SwiGLU, RMSNorm, RoPE, no biases. Megatron GPT: GeLU, biased LayerNorm, learned
    positions, biased projections. Nemotron-4: squared-ReLU MLP (two matrices), LayerNorm, RoPE on
    half of each head (Nemotron-4 15B report: partial rotary 0.5, as its config.json), no biases."""
    common = dict(name=name, tied_embeddings=tied, **dims)
    if style == "llama":
        return ModelSpec(family="llama", **common)
    if style == "nemotron":
        return ModelSpec(
            family="nemotron", mlp="relu2", norm="layernorm", position="rope", partial_rotary_factor=0.5, **common
        )
    return ModelSpec(family="gpt2", **GPT2_ARCHITECTURE, **common)


def _preset_matching(spec: ModelSpec) -> ModelSpec | None:
    """The trainplan preset with the same shapes, context stretched to the row's sequence."""
    keys = (
        "num_layers",
        "hidden_size",
        "ffn_hidden_size",
        "num_heads",
        "num_kv_heads",
        "vocab_size",
        "mlp",
        "norm",
        "position",
        "tied_embeddings",
    )
    for preset in map(get_preset, list_presets()):
        if all(getattr(preset, k) == getattr(spec, k) for k in keys):
            return preset.model_copy(update={"max_seq_len": max(preset.max_seq_len, spec.max_seq_len)})
    return None


def model_for(row: dict[str, str], inferred: list[str]) -> ModelSpec | SkipReason:
    """The row's architecture. Blank FFN width = 4h and blank vocabulary = 51200 for Megatron GPT
    rows; tied or untied embeddings = whichever lands nearer the published parameter count."""
    layers, hidden, heads, seq_len = (_integer(row[k]) for k in ("n_layers", "hidden", "n_heads", "seq_len"))
    name = row["model_name"].lower()
    style = "llama" if "llama" in name else "nemotron" if "nemotron" in name else "gpt"
    ffn, vocab = _integer(row["ffn_hidden"]), _integer(row["vocab"])
    if (
        layers is None
        or hidden is None
        or heads is None
        or seq_len is None
        or (style != "gpt" and (ffn is None or vocab is None))
    ):
        return SkipReason.NO_MODEL_DIMS
    if ffn is None:
        ffn = 4 * hidden
        inferred.append("ffn=4h")
    if vocab is None:
        vocab = MEGATRON_GPT_VOCAB
        inferred.append(f"vocab={vocab}")
    dims = dict(
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=ffn,
        num_heads=heads,
        num_kv_heads=_integer(row["n_kv_heads"]) or heads,
        vocab_size=vocab,
        max_seq_len=max(seq_len, 2048),
    )
    options = [_spec(row["model_name"], style, dims, tied) for tied in (style == "gpt", style != "gpt")]
    published = _number(row["n_params"])
    if published is not None:
        options.sort(key=lambda m: abs(m.num_params() - published))
        if abs(options[0].num_params() / published - 1) > PARAM_COUNT_TOLERANCE:
            return SkipReason.PARAMS_MISMATCH
    return _preset_matching(options[0]) or options[0]


# --------------------------------------------------------------------------- layout and training


def sharding_for(text: str, inferred: list[str]) -> Sharding:
    """Megatron "distributed optimizer" and ZeRO-1 shard the optimizer states (zero1); ZeRO-3,
    FSDP and Megatron-FSDP shard everything (fsdp); Llama 3's "FSDP-style sharding of
    optimizer/grads" keeps parameters whole (zero2); plain Megatron DP and DDP replicate (none).
    Unstated = distributed optimizer: the NeMo recipes use it, and S3's --overlap-param-gather
    exists only with it."""
    rules = (
        ("megatron-fsdp", Sharding.FSDP),
        ("zero-3", Sharding.FSDP),
        ("fsdp (fully", Sharding.FSDP),
        ("optimizer/grads", Sharding.ZERO2),
        ("zero-2", Sharding.ZERO2),
        ("distributed optimizer", Sharding.ZERO1),
        ("zero-1", Sharding.ZERO1),
        ("none", Sharding.NONE),
        ("megatron dp", Sharding.NONE),
        ("ddp", Sharding.NONE),
    )
    found = next((sharding for pattern, sharding in rules if pattern in text.lower()), None)
    if found is None:
        inferred.append("sharding=zero1")
    return found or Sharding.ZERO1


def layout_for(row: dict[str, str], num_gpus: int, inferred: list[str]) -> Layout | SkipReason:
    """The row's Layout. Blank cp = 1 (sources that predate context parallelism); blank vpp = 1."""
    tp, pp, dp = (_integer(row[k]) for k in ("tp", "pp", "dp"))
    if tp is None or pp is None or dp is None:
        return SkipReason.NO_LAYOUT
    cp = _integer(row["cp"]) or 1
    if tp * pp * dp * cp != num_gpus:
        return SkipReason.LAYOUT_INCONSISTENT
    sharding = sharding_for(row["zero_stage_or_fsdp"], inferred)
    replicas, shards = (dp, 1) if sharding == Sharding.NONE else (1, dp)
    return Layout(
        dp_replicate=replicas, dp_shard=shards, tp=tp, pp=pp, cp=cp, sharding=sharding, vpp=_integer(row["vpp"]) or 1
    )


def recompute_for(text: str, inferred: list[str]) -> ActivationCheckpointing:
    """Korthikanti et al.'s selective recompute re-runs only the attention core (QK^T, softmax,
    AV): ~2 % of the FLOPs, and what flash attention's backward does anyway, so it maps to none
    (trainplan's SELECTIVE, every other block, is a different and costlier scheme). Blank = none."""
    t = text.strip().lower()
    if t.startswith("full"):
        return ActivationCheckpointing.FULL
    if not t.startswith("none"):
        inferred.append("selective=attention core" if t.startswith("selective") else "recompute=none")
    return ActivationCheckpointing.NONE


def precision_for(text: str) -> Precision | None:
    """FP8 (delayed or current scaling) and MXFP8 run their GEMMs at the FP8 tensor-core rate;
    NVFP4 is not modelled; anything else is 16-bit."""
    t = text.lower()
    if "nvfp4" in t:
        return None
    if "fp8" in t:
        return Precision.FP8
    return Precision.FP16 if t.startswith("fp16") else Precision.BF16


def training_for(
    row: dict[str, str], layout: Layout, precision: Precision, inferred: list[str]
) -> TrainingConfig | SkipReason:
    """Blank grad_accum = global batch / (micro_batch x dp); blank micro-batch = 1 (Megatron's
    default, and what every large-model row that states it uses)."""
    seq_len = _integer(row["seq_len"])
    assert seq_len is not None  # model_for, which read_row runs first, skips a row without seq_len
    micro_batch = _integer(row["micro_batch"]) or 1
    grad_accum = _integer(row["grad_accum"])
    if grad_accum is None:
        sequences = _number(row["global_batch_sequences"])
        tokens = _number(row["global_batch_tokens"])
        sequences = sequences if sequences is not None else None if tokens is None else tokens / seq_len
        if sequences is None:
            return SkipReason.NO_BATCH
        grad_accum = max(1, round(sequences / (micro_batch * layout.dp)))
    return TrainingConfig(
        seq_len=seq_len,
        micro_batch=micro_batch,
        grad_accum=grad_accum,
        activation_checkpointing=recompute_for(row["activation_recompute"], inferred),
        precision=precision,
        impl=Implementation.NATIVE,
    )


def flops_per_token(run: PublishedRun) -> float | None:
    """FLOPs per token in the run's source convention (None when the source states none)."""
    return None if run.convention is None else CONVENTIONS[run.convention](run.model, run.training.seq_len)


# --------------------------------------------------------------------------- reading


def _mfu_peak_flops(row: dict[str, str], catalog: Catalog, gpu_id: str, precision: Precision) -> float:
    """The peak an MFU was divided by: the one its basis names ('312 TF', '2.45 PF'), else the
    catalog's FP8 peak for FP8 rows whose basis says so, else the catalog's bf16 peak."""
    basis = row["utilization_basis"]
    stated = re.search(r"([0-9.]+)\s*(TF|PF)", basis)
    if stated:
        return float(stated.group(1)) * (1e12 if stated.group(2) == "TF" else 1e15)
    fp8 = precision == Precision.FP8 and "fp8 peak" in basis.lower()
    return catalog.gpu(gpu_id).peak_flops("fp8" if fp8 else "bf16")


def measured_tokens_per_s_per_gpu(
    row: dict[str, str],
    model: ModelSpec,
    training: TrainingConfig,
    gpu_id: str,
    convention: FlopConvention | None,
    catalog: Catalog,
    inferred: list[str],
) -> float | None:
    """Published tokens/s per GPU; else the job total / GPUs; else TFLOP/s (or MFU x peak)
    divided by the FLOPs per token of the source's own convention, which is exact."""
    per_gpu, total = _number(row["measured_tokens_per_s_per_gpu"]), _number(row["measured_tokens_per_s_total"])
    if per_gpu is not None or total is not None:
        if per_gpu is not None:
            return per_gpu
        num_gpus = _integer(row["n_gpus"])
        # read_row asks for tokens only after layout_for matched tp x pp x dp x cp to n_gpus
        assert total is not None and num_gpus is not None
        return total / num_gpus
    tflops, mfu = _number(row["measured_tflops_per_gpu"]), _number(row["measured_mfu_pct"])
    if convention is None or (tflops is None and mfu is None):
        return None
    if tflops is not None:
        flops = tflops * 1e12
    else:
        assert mfu is not None  # tflops is None here, and a row with neither returned above
        flops = mfu / 100 * _mfu_peak_flops(row, catalog, gpu_id, training.precision)
    inferred.append("tokens/s from TFLOP/s" if tflops is not None else "tokens/s from MFU")
    return flops / CONVENTIONS[convention](model, training.seq_len)


def read_row(
    row: dict[str, str], catalog: Catalog, gpu_ids: tuple[tuple[str, str | None], ...] = GPU_IDS
) -> PublishedRun | SkippedRow:
    """One CSV row -> a run to predict, or the reason it cannot be predicted."""
    gpu_id = gpu_id_for(row["gpu_type"], gpu_ids)
    inferred: list[str] = []
    fields: dict[str, Any] = dict(gpu_id=gpu_id, num_gpus=_integer(row["n_gpus"]) or 0, convention=convention_for(row))
    steps = (
        ("model", lambda: model_for(row, inferred)),
        ("layout", lambda: layout_for(row, fields["num_gpus"], inferred)),
        ("precision", lambda: precision_for(row["precision"]) or SkipReason.PRECISION_NOT_MODELLED),
        ("training", lambda: training_for(row, fields["layout"], fields["precision"], inferred)),
        (
            "tokens",
            lambda: (
                measured_tokens_per_s_per_gpu(
                    row,
                    fields["model"],
                    fields["training"],
                    cast(str, gpu_id),  # the steps run only for a catalog GPU (else problem is set first)
                    fields["convention"],
                    catalog,
                    inferred,
                )
                or SkipReason.NO_THROUGHPUT
            ),
        ),
    )
    problem = None
    if gpu_id is None:
        problem = SkipReason.TPU if "tpu" in row["gpu_type"].lower() else SkipReason.GPU_NOT_IN_CATALOG
    for name, step in steps:
        if problem is not None:
            return SkippedRow(int(row["row_id"]), row["source_id"], row["model_name"], problem)
        value = step()
        problem = value if isinstance(value, SkipReason) else None
        fields[name] = value
    if problem is not None:
        return SkippedRow(int(row["row_id"]), row["source_id"], row["model_name"], problem)
    assert gpu_id is not None  # else problem was set before the first step
    return PublishedRun(
        row_id=int(row["row_id"]),
        source_id=row["source_id"],
        model_name=row["model_name"],
        model=fields["model"],
        published_params=_number(row["n_params"]),
        gpu_id=gpu_id,
        num_gpus=fields["num_gpus"],
        layout=fields["layout"],
        training=fields["training"],
        stack=stack_for(row),
        micro_batch_published=_integer(row["micro_batch"]) is not None,
        measured_tokens_per_s_per_gpu=fields["tokens"],
        measured_tflops_per_gpu=_number(row["measured_tflops_per_gpu"]),
        convention=fields["convention"],
        inferred=tuple(inferred),
        release=release_in(" ".join((row["source"], row["source_locator"], row["notes"]))),
    )


def read_published_runs(
    path: Path = DEFAULT_PUBLISHED_RUNS,
    catalog: Catalog | None = None,
    gpu_ids: tuple[tuple[str, str | None], ...] = GPU_IDS,
) -> tuple[list[PublishedRun], list[SkippedRow]]:
    """Every row of the file, split into runs to predict and rows skipped with a reason;
    ``gpu_ids``: the GPU names read (``HELD_OUT_GPU_IDS`` alone: the held-out parts' rows)."""
    catalog = catalog or load_catalog()
    runs: list[PublishedRun] = []
    skipped: list[SkippedRow] = []
    with Path(path).open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            read = read_row(row, catalog, gpu_ids)
            if isinstance(read, PublishedRun):
                runs.append(read)
            else:
                skipped.append(read)
    return runs, skipped


def comparability(run: PublishedRun) -> str | None:
    """Why a readable run stays out of the headline error (None = comparable).

    Decided from the row, not from its prediction: DeepSpeed has no implementation profile
    here (per-parameter ZeRO-3 collectives, its own pipeline engine), and a guessed micro-batch
    under pipeline parallelism sets the bubble, up to (pp-1)/m of the step.
    """
    if run.stack == Stack.DEEPSPEED:
        return "DeepSpeed stack: no profile"
    if not run.micro_batch_published and run.layout.pp > 1:
        return "micro-batch not published, pp > 1"
    return None
