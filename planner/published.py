"""Published large-scale training runs (data/calibration/published_runs.csv) against the model.

Each CSV row is read into a :class:`PublishedRun` (ModelSpec, catalog GPU, Layout, TrainingConfig,
the measured throughput and the FLOP convention its source used) or into a :class:`SkippedRow`
with the reason it cannot be predicted at all. ``compare_published`` predicts every readable row
with :func:`planner.estimate.estimate` and reports tokens/s per GPU and TFLOP/s per GPU, the
latter counted in the *source's* FLOP convention so that the two columns carry the same error.

A readable row is *comparable* (enters the headline error) only when nothing that sets its step
time had to be guessed; the rules are in :func:`comparability` and docs/validation.md.
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from planner.candidates import single
from planner.estimate import score
from planner.flops import forward_flops_per_token
from planner.hardware import Catalog, load_catalog
from planner.layout import ActivationCheckpointing, Implementation, Layout, Precision, Sharding, TrainingConfig
from planner.model_spec import ModelSpec
from planner.models import get_preset, list_presets
from planner.settings import (DEFAULT_SETTINGS, MEGATRON_CORE_SETTINGS, MEGATRON_LM_SETTINGS,
                               ModelingSettings)

DEFAULT_PUBLISHED_RUNS = Path(__file__).resolve().parent.parent / "data" / "calibration" / "published_runs.csv"

# Published parameter counts are rounded labels ("1.7B"); a rebuilt model must land within this.
PARAM_COUNT_TOLERANCE = 0.06
# Megatron pads the GPT-2 BPE vocabulary (50257) to a multiple of 128 x tp: 51200 at tp <= 8.
# Sources S4/S5 leave the vocabulary blank; S2 (same code base and authors) states 51200.
MEGATRON_GPT_VOCAB = 51200


class FlopConvention(str, Enum):
    """How a source turned a step into TFLOP/s (published_runs_sources.md)."""

    # Narayanan et al. 2021 eq. 3 (S2, S5): 96 B s l h^2 (1 + s/6h + V/16lh): block forward
    # counted four times (forward, 2x backward, full recompute), attention non-causal.
    MEGATRON_HARDWARE = "megatron_eq3_with_recompute"
    # Megatron-Core num_floating_point_operations / NeMo / Megatron-Bridge "model TFLOP/s"
    # (S3, S4, S13, S14) and PaLM-style MFU (S10): 3x forward, no recompute, non-causal.
    MODEL_NONCAUSAL = "model_noncausal"
    # Megatron-Bridge "Model TFLOP/s/GPU" (S14): 3x forward, no recompute, causal attention
    # (its TFLOP/s divided by its tokens/s matches this count, not the non-causal one).
    MODEL_CAUSAL = "model_causal"


class Stack(str, Enum):
    """The software stack behind a row, which picks the settings profile it is predicted with."""

    MEGATRON_LM = "megatron-lm"       # Megatron-LM papers of 2021-22: no flash attention, no overlap
    MEGATRON_CORE = "megatron-core"   # Megatron-Core / NeMo / Megatron-Bridge on TransformerEngine
    DEEPSPEED = "deepspeed"           # DeepSpeed ZeRO-3, Megatron-DeepSpeed: no profile of its own
    PYTORCH = "pytorch"               # anything else: trainplan's default (PyTorch FSDP2) profile


STACK_SETTINGS = {
    Stack.MEGATRON_LM: MEGATRON_LM_SETTINGS,
    Stack.MEGATRON_CORE: MEGATRON_CORE_SETTINGS,
    Stack.DEEPSPEED: MEGATRON_LM_SETTINGS,   # shown for reference: the nearest kernels
    Stack.PYTORCH: DEFAULT_SETTINGS,
}


def stack_for(row: dict[str, str]) -> Stack:
    """DeepSpeed when the sharding or the source names it; Megatron-Core for its releases and the
    NeMo family; Megatron-LM for the other Megatron rows; PyTorch otherwise."""
    named = f"{row['zero_stage_or_fsdp']} {row['source']}".lower()
    if "deepspeed" in named:
        return Stack.DEEPSPEED
    text = " ".join(row[k] for k in ("source", "source_locator", "model_name", "precision")).lower()
    if any(key in text for key in ("megatron-core", "nemo", "megatron-bridge", "transformerengine")):
        return Stack.MEGATRON_CORE
    return Stack.MEGATRON_LM if "megatron" in text else Stack.PYTORCH


class SkipReason(str, Enum):
    TPU = "TPU, not a GPU"
    GPU_NOT_IN_CATALOG = "GPU not in the catalog"
    NO_LAYOUT = "parallel layout missing"
    LAYOUT_INCONSISTENT = "layout degrees do not multiply to the GPU count"
    NO_MODEL_DIMS = "model dimensions missing"
    NO_THROUGHPUT = "no tokens/s and no TFLOP/s in a known convention"
    PRECISION_NOT_MODELLED = "precision not modelled (NVFP4 has no catalog peak)"
    NO_BATCH = "global batch missing"


@dataclass(frozen=True)
class SkippedRow:
    row_id: int
    source_id: str
    model_name: str
    reason: SkipReason


@dataclass(frozen=True)
class PublishedRun:
    """One readable row: what ran, on what, and what the source measured."""

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
    measured_tokens_per_s_per_gpu: float
    measured_tflops_per_gpu: float | None
    convention: FlopConvention | None
    inferred: tuple[str, ...]     # fields filled in by a documented rule, not read from the row

    @property
    def label(self) -> str:
        return f"{self.row_id} {self.source_id.split('_')[0]}"


# --------------------------------------------------------------------------- cell parsing


def _number(text: str) -> float | None:
    """A plain number, or a rounded label such as '1.7B' / '16M'; None when blank or prose."""
    text = text.strip().replace(",", "")
    if not text:
        return None
    match = re.fullmatch(r"~?([0-9.]+(?:e[0-9]+)?)\s*([KMBT]?)", text, flags=re.IGNORECASE)
    if not match:
        return None
    scale = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[match.group(2).upper()]
    return float(match.group(1)) * scale


def _integer(text: str) -> int | None:
    value = _number(text)
    if value is None:
        return None
    if value != int(value):
        raise ValueError(f"expected a whole number, got {text!r}")
    return int(value)


# --------------------------------------------------------------------------- GPU and model

GPU_IDS = (  # (pattern in gpu_type, catalog id); first match wins, so GB300 before GB200/B200
    ("TPU", None), ("GB300", None), ("GB200", "gb200"), ("B200", "b200"),
    ("H100", "h100-sxm"), ("A100-SXM4-80GB", "a100-80gb-sxm"), ("A100-SXM4-40GB", "a100-40gb-sxm"),
)


def gpu_id_for(gpu_type: str) -> str | None:
    """Catalog id of a published GPU description, None for parts the catalog does not hold."""
    for pattern, gpu_id in GPU_IDS:
        if pattern.lower() in gpu_type.lower():
            return gpu_id
    return None


def _style(model_name: str) -> str:
    name = model_name.lower()
    return "llama" if "llama" in name else "nemotron" if "nemotron" in name else "gpt"


def _spec(name: str, style: str, dims: dict, tied: bool) -> ModelSpec:
    """Llama: SwiGLU, RMSNorm, RoPE, no biases. Megatron GPT: GeLU, biased LayerNorm, learned
    positions, biased projections. Nemotron-4: squared-ReLU MLP (two matrices, like GeLU),
    LayerNorm, RoPE, no biases."""
    common = dict(name=name, tied_embeddings=tied, max_seq_len=max(dims["seq_len"], 2048), **{
        k: v for k, v in dims.items() if k != "seq_len"})
    if style == "llama":
        return ModelSpec(family="llama", **common)
    if style == "nemotron":
        return ModelSpec(family="nemotron", mlp="gelu", norm="layernorm", position="rope", **common)
    return ModelSpec(family="gpt2", mlp="gelu", norm="layernorm", position="learned", qkv_bias=True,
                     out_bias=True, mlp_bias=True, norm_bias=True, **common)


def _preset_matching(spec: ModelSpec) -> ModelSpec | None:
    """A trainplan preset with the same shapes (the row's sequence length kept)."""
    keys = ("num_layers", "hidden_size", "ffn_hidden_size", "num_heads", "num_kv_heads", "vocab_size",
            "mlp", "norm", "position", "tied_embeddings")
    for name in list_presets():
        preset = get_preset(name)
        if all(getattr(preset, k) == getattr(spec, k) for k in keys):
            return preset.model_copy(update={"max_seq_len": max(preset.max_seq_len, spec.max_seq_len)})
    return None


def model_for(row: dict[str, str], inferred: list[str]) -> ModelSpec | None:
    """The row's architecture, or None when its dimensions are missing.

    Blank FFN width = 4h (GPT), blank vocabulary = Megatron's padded GPT-2 BPE (51200); tied
    or untied embeddings = whichever lands nearer the published parameter count.
    """
    layers, hidden, heads = (_integer(row[k]) for k in ("n_layers", "hidden", "n_heads"))
    seq_len = _integer(row["seq_len"])
    if None in (layers, hidden, heads, seq_len):
        return None
    style = _style(row["model_name"])
    ffn, vocab = _integer(row["ffn_hidden"]), _integer(row["vocab"])
    if ffn is None:
        if style != "gpt":
            return None
        ffn = 4 * hidden
        inferred.append("ffn_hidden=4h")
    if vocab is None:
        if style != "gpt":
            return None
        vocab = MEGATRON_GPT_VOCAB
        inferred.append(f"vocab={MEGATRON_GPT_VOCAB}")
    dims = dict(num_layers=layers, hidden_size=hidden, ffn_hidden_size=ffn, num_heads=heads,
                num_kv_heads=_integer(row["n_kv_heads"]) or heads, vocab_size=vocab, seq_len=seq_len)
    published = _number(row["n_params"])
    candidates = [_spec(row["model_name"], style, dims, tied) for tied in (style == "gpt", style != "gpt")]
    if published is not None:
        candidates.sort(key=lambda m: abs(m.num_params() - published))
    return _preset_matching(candidates[0]) or candidates[0]


# --------------------------------------------------------------------------- layout and training


def sharding_for(text: str, inferred: list[str]) -> Sharding:
    """Megatron "distributed optimizer" and DeepSpeed ZeRO-1 shard the optimizer states (zero1);
    ZeRO-3, FSDP and Megatron-FSDP shard everything (fsdp); Llama 3's "FSDP-style sharding of
    optimizer/grads" keeps parameters whole (zero2); plain Megatron DP / DDP replicate (none).
    Unstated (Megatron-Core and NeMo recipes) = distributed optimizer: the S3 runs use
    --overlap-param-gather, which exists only with it."""
    t = text.lower()
    rules = (("megatron-fsdp", Sharding.FSDP), ("zero-3", Sharding.FSDP), ("fsdp (fully", Sharding.FSDP),
             ("optimizer/grads", Sharding.ZERO2), ("zero-2", Sharding.ZERO2),
             ("distributed optimizer", Sharding.ZERO1), ("zero-1", Sharding.ZERO1),
             ("none", Sharding.NONE), ("megatron dp", Sharding.NONE), ("ddp", Sharding.NONE))
    for pattern, sharding in rules:
        if pattern in t:
            return sharding
    inferred.append("sharding=zero1")
    return Sharding.ZERO1


def layout_for(row: dict[str, str], num_gpus: int, inferred: list[str]) -> Layout | SkipReason:
    """The row's Layout or why it has none. cp blank = 1 (the pre-context-parallel sources);
    vpp blank = 1 (plain 1F1B)."""
    tp, pp, dp = (_integer(row[k]) for k in ("tp", "pp", "dp"))
    if None in (tp, pp, dp):
        return SkipReason.NO_LAYOUT
    cp = _integer(row["cp"]) or 1
    if tp * pp * dp * cp != num_gpus:
        return SkipReason.LAYOUT_INCONSISTENT
    sharding = sharding_for(row["zero_stage_or_fsdp"], inferred)
    replicas, shards = (dp, 1) if sharding == Sharding.NONE else (1, dp)
    return Layout(dp_replicate=replicas, dp_shard=shards, tp=tp, pp=pp, cp=cp, sharding=sharding,
                  vpp=_integer(row["vpp"]) or 1)


def recompute_for(text: str, inferred: list[str]) -> ActivationCheckpointing:
    """Korthikanti et al.'s selective recompute re-runs only the attention core (QK^T, softmax,
    AV): ~2 % of a step and what flash attention's backward does anyway, so it maps to none.
    trainplan's SELECTIVE (every other block) is a different, much costlier scheme."""
    t = text.strip().lower()
    if t.startswith("full"):
        return ActivationCheckpointing.FULL
    if t.startswith("selective"):
        inferred.append("selective=attention-core (none)")
    elif not t.startswith("none"):
        inferred.append("recompute=none")
    return ActivationCheckpointing.NONE


def precision_for(text: str) -> Precision | None:
    """FP8 delayed/current scaling (TransformerEngine) and MXFP8 run their GEMMs at the fp8 rate;
    NVFP4 is not modelled."""
    t = text.lower()
    if "nvfp4" in t:
        return None
    if "fp8" in t:
        return Precision.FP8
    return Precision.FP16 if t.startswith("fp16") else Precision.BF16


def global_batch_sequences(row: dict[str, str], seq_len: int) -> int | None:
    sequences = _integer(row["global_batch_sequences"]) if _number(row["global_batch_sequences"]) else None
    if sequences is None:
        tokens = _number(row["global_batch_tokens"])
        sequences = None if tokens is None else round(tokens / seq_len)
    return sequences


def training_for(row: dict[str, str], layout: Layout, precision: Precision,
                 inferred: list[str]) -> TrainingConfig | SkipReason:
    """grad_accum = global batch / (micro_batch x dp) when the row leaves it blank; a missing
    micro-batch is taken as 1 (Megatron's default for models that need pipeline parallelism)."""
    seq_len = _integer(row["seq_len"])
    micro_batch = _integer(row["micro_batch"])
    if micro_batch is None:
        micro_batch = 1
        inferred.append("micro_batch=1")
    grad_accum = _integer(row["grad_accum"])
    if grad_accum is None:
        sequences = global_batch_sequences(row, seq_len)
        if sequences is None:
            return SkipReason.NO_BATCH
        grad_accum = max(1, round(sequences / (micro_batch * layout.dp)))
    ac = recompute_for(row["activation_recompute"], inferred)
    return TrainingConfig(seq_len=seq_len, micro_batch=micro_batch, grad_accum=grad_accum,
                          activation_checkpointing=ac, precision=precision, impl=Implementation.NATIVE)


# --------------------------------------------------------------------------- FLOP conventions


def megatron_eq3_flops_per_token(model: ModelSpec, seq_len: int) -> float:
    """Narayanan et al. 2021 eq. 3 per token: every block forward counted four times (forward,
    backward = 2x, full recompute), attention non-causal, LM head three times. For a GPT block
    (ffn 4h, multi-head) this is exactly 96 l h^2 (1 + s/6h + V/16lh)."""
    f = forward_flops_per_token(model, seq_len, DEFAULT_SETTINGS.but(causal_attention_flops=False))
    return float(4.0 * (f.block_matmul + f.attention) + 3.0 * f.lm_head)


def model_flops_noncausal_per_token(model: ModelSpec, seq_len: int) -> float:
    """Megatron-Core ``num_floating_point_operations`` (r0.8) / NeMo "model TFLOP/s" / PaLM App. B:
    3x the forward, no recompute, the full s x s attention score matrix."""
    f = forward_flops_per_token(model, seq_len, DEFAULT_SETTINGS.but(causal_attention_flops=False))
    return float(3.0 * f.forward)


def model_flops_causal_per_token(model: ModelSpec, seq_len: int) -> float:
    """As above with causal attention (half the score matrix): what Megatron-Bridge's published
    TFLOP/s/GPU divided by its tokens/s/GPU gives (S14, to 0.1 %)."""
    f = forward_flops_per_token(model, seq_len, DEFAULT_SETTINGS.but(causal_attention_flops=True))
    return float(3.0 * f.forward)


CONVENTIONS = {
    FlopConvention.MEGATRON_HARDWARE: megatron_eq3_flops_per_token,
    FlopConvention.MODEL_NONCAUSAL: model_flops_noncausal_per_token,
    FlopConvention.MODEL_CAUSAL: model_flops_causal_per_token,
}


def convention_for(row: dict[str, str]) -> FlopConvention | None:
    """The FLOP count behind a row's TFLOP/s (published_runs_sources.md), None if unstated."""
    if row["source_id"].startswith("S14"):
        return FlopConvention.MODEL_CAUSAL
    basis = f"{row['tflops_basis']} {row['utilization_basis']}".lower()
    if "recompute forward" in basis or "incl. recompute" in basis:
        return FlopConvention.MEGATRON_HARDWARE
    if "model" in basis or "mfu" in basis:
        return FlopConvention.MODEL_NONCAUSAL
    return None


def flops_per_token(run: PublishedRun) -> float | None:
    """FLOPs per token in the run's source convention."""
    if run.convention is None:
        return None
    return CONVENTIONS[run.convention](run.model, run.training.seq_len)


# --------------------------------------------------------------------------- reading


def measured_tokens_per_s_per_gpu(row: dict[str, str], model: ModelSpec, num_gpus: int,
                                  convention: FlopConvention | None, inferred: list[str]) -> float | None:
    """Published tokens/s per GPU; else the job total / GPUs; else TFLOP/s per GPU divided by
    the FLOPs per token of the source's own convention (exact, not an approximation)."""
    per_gpu = _number(row["measured_tokens_per_s_per_gpu"])
    if per_gpu is not None:
        return per_gpu
    total = _number(row["measured_tokens_per_s_total"])
    if total is not None:
        return total / num_gpus
    tflops = _number(row["measured_tflops_per_gpu"])
    if tflops is None or convention is None:
        return None
    inferred.append("tokens/s from TFLOP/s")
    return tflops * 1e12 / CONVENTIONS[convention](model, _integer(row["seq_len"]))


def read_row(row: dict[str, str], catalog: Catalog) -> PublishedRun | SkippedRow:
    """One CSV row -> a run to predict, or the reason it cannot be predicted."""
    def skip(reason: SkipReason) -> SkippedRow:
        return SkippedRow(int(row["row_id"]), row["source_id"], row["model_name"], reason)

    gpu_id = gpu_id_for(row["gpu_type"])
    if gpu_id is None:
        return skip(SkipReason.TPU if "tpu" in row["gpu_type"].lower() else SkipReason.GPU_NOT_IN_CATALOG)
    catalog.gpu(gpu_id)  # a mapping to an id the catalog lacks is a bug here, not a data problem
    inferred: list[str] = []
    model = model_for(row, inferred)
    if model is None:
        return skip(SkipReason.NO_MODEL_DIMS)
    num_gpus = _integer(row["n_gpus"])
    layout = layout_for(row, num_gpus, inferred)
    if isinstance(layout, SkipReason):
        return skip(layout)
    precision = precision_for(row["precision"])
    if precision is None:
        return skip(SkipReason.PRECISION_NOT_MODELLED)
    training = training_for(row, layout, precision, inferred)
    if isinstance(training, SkipReason):
        return skip(training)
    convention = convention_for(row)
    tokens = measured_tokens_per_s_per_gpu(row, model, num_gpus, convention, inferred)
    if tokens is None:
        return skip(SkipReason.NO_THROUGHPUT)
    return PublishedRun(row_id=int(row["row_id"]), source_id=row["source_id"], model_name=row["model_name"],
                        model=model, published_params=_number(row["n_params"]), gpu_id=gpu_id,
                        num_gpus=num_gpus, layout=layout, training=training, stack=stack_for(row),
                        measured_tokens_per_s_per_gpu=tokens,
                        measured_tflops_per_gpu=_number(row["measured_tflops_per_gpu"]),
                        convention=convention, inferred=tuple(inferred))


def read_published_runs(path: Path = DEFAULT_PUBLISHED_RUNS,
                        catalog: Catalog | None = None) -> tuple[list[PublishedRun], list[SkippedRow]]:
    catalog = catalog or load_catalog()
    runs, skipped = [], []
    with Path(path).open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            read = read_row(row, catalog)
            (runs if isinstance(read, PublishedRun) else skipped).append(read)
    return runs, skipped


def comparability(run: PublishedRun) -> str | None:
    """Why a readable run stays out of the headline error (None = comparable).

    Decided from what the source publishes, before looking at any prediction: a guessed
    micro-batch under pipeline parallelism sets the bubble (up to (pp-1)/m of the step), so
    such rows are shown but not scored. Everything else inferred (recompute, sharding, vocab)
    moves a prediction by a few percent at most and is listed in the row's ``inferred``.
    """
    if run.stack == Stack.DEEPSPEED:
        return "DeepSpeed stack: no implementation profile"
    if "micro_batch=1" in run.inferred and run.layout.pp > 1:
        return "micro-batch not published, pp > 1"
    return None


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class PublishedComparison:
    run: PublishedRun
    predicted_tokens_per_s_per_gpu: float
    predicted_tflops_per_gpu: float | None   # in the source's convention
    fits: bool                                # the memory model's verdict on the published layout
    excluded: str | None                      # why not in the headline error

    @property
    def error(self) -> float:
        """Relative tokens/s error; identical to the TFLOP/s error in the source's convention."""
        measured = self.run.measured_tokens_per_s_per_gpu
        return (self.predicted_tokens_per_s_per_gpu - measured) / measured


def predict(run: PublishedRun, catalog: Catalog, settings: ModelingSettings) -> PublishedComparison:
    """Score the published configuration with the planner's own model (``estimate.score``).

    ``estimate()`` itself refuses a pipeline whose stages hold unequal layer counts; Megatron
    and Llama 3 run exactly that (126 layers over pp=8 or 16, the embedding and loss counted as
    a layer each), and the model already sizes the busiest stage as ceil(layers / pp).
    """
    gpu = catalog.gpu(run.gpu_id)
    node = catalog.node(gpu.default_node)
    network = catalog.network(gpu.default_network).bandwidth_bytes_per_s_per_gpu
    layout = run.layout.resolve(run.num_gpus)
    c = single(gpu, layout, run.training, gpus_per_node=node.gpus_per_node, network_bandwidth=network,
               num_gpus=run.num_gpus)
    scores = score(run.model, c, settings)
    tokens = float(scores.tokens_per_s[0]) / run.num_gpus
    per_token = flops_per_token(run)
    tflops = None if per_token is None else tokens * per_token / 1e12
    return PublishedComparison(run=run, predicted_tokens_per_s_per_gpu=tokens, predicted_tflops_per_gpu=tflops,
                               fits=bool(scores.fits[0]), excluded=comparability(run))


def compare_published(runs: list[PublishedRun], profiles: dict[Stack, ModelingSettings] | None = None,
                      catalog: Catalog | None = None) -> list[PublishedComparison]:
    """Predict every run with the settings profile of its stack (``STACK_SETTINGS`` by default)."""
    catalog = catalog or load_catalog()
    profiles = {**STACK_SETTINGS, **(profiles or {})}
    return [predict(run, catalog, profiles[run.stack]) for run in runs]


def mean_abs_error(comparisons: list[PublishedComparison]) -> float:
    if not comparisons:
        return math.nan
    return sum(abs(c.error) for c in comparisons) / len(comparisons)
