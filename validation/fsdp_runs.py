"""Published FSDP runs on PyTorch stacks against the model (held out: nothing is fitted on them).

The rows (data/validation/fsdp_runs.csv, read as data/validation/fsdp_runs_sources.md describes)
come from torchtitan's benchmark files, IBM's fms-fsdp README, MosaicML llm-foundry's benchmark
tables and one DeepSpeed ZeRO-2 recipe run on an H200 and a B200 with the same software
(ml-engineering); none is in data/calibration and no setting of the model was chosen by looking
at them.
``compare_fsdp_runs`` predicts each row with the planner's ``score`` under the settings profile of
its stack (``STACK_PROFILES``: each changes only what that stack does differently from trainplan's
trainer) on the row's GPU, layout, batch, precision, compile and network; ``bench/validate_fsdp.py``
prints the signed and absolute tokens/s errors per GPU generation and per source.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from planner.catalog.hardware import Catalog, GPUSpec, load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Implementation, Layout, Precision, Sharding, TrainingConfig
from planner.model.attention_choice import with_attention
from planner.model.attention_kernels import AttentionKernel
from planner.model.candidates import single
from planner.model.estimate import score
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.units import GIB

DEFAULT_FSDP_RUNS = Path(__file__).resolve().parent.parent / "data" / "validation" / "fsdp_runs.csv"

# llm-foundry (Composer FSDP1, MPT modules, no torch.compile): the loss is flash-attn's fused
# cross-entropy over the full logits (no chunking, loss_fn 'fused_crossentropy'); attention is
# the flash-attn package's FA2 ('flash') or the Triton kernel ('triton').
# Every row here ran before PyTorch's wheels put cuDNN attention first on Hopper (torch 2.11,
# settings.cudnn_attention): SDPA (and the flash-attn package) ran FlashAttention-2.
# llm-foundry's attn_impl='triton' runs MPT's Triton flash kernel (flash_attn_triton.py):
# AttentionKernel.TRITON; its profile is the planner's (--stack llm-foundry).
FA2_TORCHTITAN = with_attention(STACK_SETTINGS[Stack.TORCHTITAN], AttentionKernel.SDPA_FA2)
# torchtitan before bbb1b616 (2025-04-02), which compiles the loss with the model: the eager fp32
# loss over the full logits, compile or not. Its 2024 benchmark file ran 9dec370 (the line is
# commented out in its train.py); torchao's float8 README rows ran torchtitan 0.0.2 with a torchao
# built at 890e0ac8 (2025-02-28), and were committed to the README in 8c81863b on 2025-03-12, before
# it (review s41; its compiled reading: 38.3 GiB for 47.7 measured).
FA2_TORCHTITAN_EAGER_LOSS = FA2_TORCHTITAN.but(compile_fuses_loss=False)
TORCHTITAN_2024_FILE = "benchmarks/llama3_h100_202412_torchtitan.md"
# PyTorch FSDP on Llama modules outside torchtitan (IBM fms-fsdp; the whole runs' Meta in-house
# and nanotron readings): its kernels, but the loss outside the compiled model (not torch's
# loss_parallel), and selective checkpointing by whole blocks (fms-fsdp's
# ``selective_checkpointing``: one block in 1/p).
FA2_FSDP_BLOCKS = FA2_TORCHTITAN.but(
    compile_fuses_loss=False, selective_per_op=False, loss_parallel_bytes_per_logit=None
)
LLM_FOUNDRY_FLASH = STACK_SETTINGS[Stack.LLM_FOUNDRY]
LLM_FOUNDRY_TRITON = with_attention(LLM_FOUNDRY_FLASH, AttentionKernel.TRITON)

# Stas Bekman's ml-engineering H200-vs-B200 benchmark (insights/when-to-upgrade-gpus): DeepSpeed
# ZeRO-2 on Hugging Face's Llama modules, called with labels (transformers' full-logits loss), on
# the attention kernel transformers picks per GPU: FlashAttention-3 on Hopper, FlashAttention-4 on
# Blackwell. Both are their architecture's native flash kernels, the class of cuDNN's fused
# attention whose per-GPU rates the catalog holds: ESTIMATE, trainplan's profile (cuDNN rates)
# with the full logits.
ML_ENGINEERING_DEEPSPEED = STACK_SETTINGS[Stack.DEEPSPEED]
# The same recipe's sequence sweep (ZeRO-3, full AC, CPU AdamW offload) runs Liger-Kernel: its
# fused linear cross-entropy never holds the full logits, computing the loss over chunks of the
# tokens (ESTIMATE: trainplan's chunked loss, DEFAULT_SETTINGS.loss_chunk_tokens; Liger computes
# the head's gradient in the forward, the chunked model recomputes the chunk's logits). Liger's
# fused RMSNorm / RoPE / SwiGLU are not modelled (the source: step time "within noise" with and
# without Liger at 8K).
ML_ENGINEERING_DEEPSPEED_LIGER = ML_ENGINEERING_DEEPSPEED.but(loss_chunk_tokens=DEFAULT_SETTINGS.loss_chunk_tokens)

# Hugging Face accelerate's FSDP2 example (examples/fsdp2/fsdp2_fp8.py): HF Llama called with
# labels (full fp32 logits), regional torch.compile, transformers' default SDPA attention, which
# ran FlashAttention-2 on Hopper before torch 2.11 (settings.cudnn_attention): --stack hf-trainer
# on SDPA FA2.
ACCELERATE_FSDP2 = with_attention(STACK_SETTINGS[Stack.HF_TRAINER], AttentionKernel.SDPA_FA2)
# The same post's DeepSpeed ZeRO-3 row (huggingface/blog deepspeed-to-fsdp-and-back.md): --stack
# deepspeed on the same FlashAttention-2 reading.
ACCELERATE_DEEPSPEED = with_attention(STACK_SETTINGS[Stack.DEEPSPEED], AttentionKernel.SDPA_FA2)
# IBM fms-acceleration's full fine-tuning baseline (HF Trainer via fms-hf-tuning, accelerate FSDP1):
# HF modules with transformers' full-logits loss, attn_implementation flash_attention_2 (the
# flash-attn package, 2.7.3): --stack hf-trainer on FlashAttention-2.
FMS_ACCELERATION_HF = with_attention(STACK_SETTINGS[Stack.HF_TRAINER], AttentionKernel.FLASH2)

# (source, attention column) -> the profile a row is predicted with. fms-fsdp: PyTorch FSDP1 with
# SDPA's FA2 and torch.compile on its own Llama modules, full-logits F.cross_entropy: what the
# torchtitan profile describes.
STACK_PROFILES: dict[tuple[str, str], ModelingSettings] = {
    ("torchtitan", "sdpa-fa2"): FA2_TORCHTITAN,
    ("fms-fsdp", "sdpa-fa2"): FA2_FSDP_BLOCKS,
    ("torchao", "sdpa-fa2"): FA2_TORCHTITAN_EAGER_LOSS,
    ("llm-foundry", "flash"): LLM_FOUNDRY_FLASH,
    ("llm-foundry", "triton"): LLM_FOUNDRY_TRITON,
    ("ml-engineering", "fa3-fa4"): ML_ENGINEERING_DEEPSPEED,
    ("ml-engineering", "fa3-fa4+liger"): ML_ENGINEERING_DEEPSPEED_LIGER,
    ("accelerate", "sdpa-fa2"): ACCELERATE_FSDP2,
    ("accelerate-deepspeed", "sdpa-fa2"): ACCELERATE_DEEPSPEED,
    ("fms-acceleration", "flash"): FMS_ACCELERATION_HF,
}

# The stack (--stack) each row's profile stands for, by source: what validation/residuals.py
# files the row's error under.
SOURCE_STACKS: dict[str, Stack | str] = {
    "torchtitan": Stack.TORCHTITAN,
    "fms-fsdp": "fms-fsdp",
    "torchao": Stack.TORCHTITAN,
    "llm-foundry": Stack.LLM_FOUNDRY,
    "ml-engineering": Stack.DEEPSPEED,
    "accelerate": Stack.HF_TRAINER,
    "accelerate-deepspeed": Stack.DEEPSPEED,
    "fms-acceleration": Stack.HF_TRAINER,
}

# GPU generation of each GPU id the rows use.
GENERATIONS = {
    "a100-40gb-sxm": "A100",
    "a100-80gb-sxm": "A100",
    "h100-sxm": "H100",
    "h100-grand-teton": "H100",
    "h200-sxm": "H200",
    "b200": "B200",
}

# torchtitan's H100s (its benchmark files, "Hardware"): Grand Teton hosts, H100 with 96 GB HBM2e
# at 2.4 TB/s, run at the default 500 W power limit; "the actual peak TFLOPs number is between SXM
# and NVL" (footnote 2). ESTIMATE: the middle of the SXM (989.4) and NVL (835.5) dense bf16 peaks,
# applied to every compute rate of the H100 SXM entry (GEMM, FP8 GEMM, attention).
GRAND_TETON_HBM_BYTES_PER_S = 2.4e12
GRAND_TETON_MEMORY_BYTES = int(96 * 0.9915 * GIB)  # the catalog's HBM label rule (docs/hardware.md)
GRAND_TETON_TORCHTITAN = "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, 'Hardware' and footnote 2"


def grand_teton_h100(catalog: Catalog) -> GPUSpec:
    sxm, nvl = catalog.gpu("h100-sxm"), catalog.gpu("h100-nvl")
    clock = 0.5 * (1.0 + nvl.peak_flops_per_s["bf16"] / sxm.peak_flops_per_s["bf16"])
    rates = sxm.rates
    scaled_rates = rates.model_copy(
        update={
            "gemm_flops_per_s": {k: v * clock for k, v in rates.gemm_flops_per_s.items()},
            "attention_fwd_flops_per_s": (rates.attention_fwd_flops_per_s or 0.0) * clock or None,
            "attention_bwd_flops_per_s": (rates.attention_bwd_flops_per_s or 0.0) * clock or None,
            # the copy-to-datasheet share of the SXM part, on the 2.4 TB/s HBM2e
            "copy_bandwidth_bytes_per_s": None,
        }
    )
    sources = {**sxm.sources, "hbm_bandwidth_tbps": GRAND_TETON_TORCHTITAN, "memory_gib": GRAND_TETON_TORCHTITAN}
    return sxm.model_copy(
        update={
            "id": "h100-grand-teton",
            "memory_bytes": GRAND_TETON_MEMORY_BYTES,
            "hbm_bandwidth_bytes_per_s": GRAND_TETON_HBM_BYTES_PER_S,
            "peak_flops_per_s": {k: v * clock for k, v in sxm.peak_flops_per_s.items()},
            "rates": scaled_rates,
            "sources": sources,
        }
    )


def _mpt(size: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    """MPT (llm-foundry scripts/train/yamls/pretrain/mpt-*.yaml at 5e85bd62d): GeLU MLP of width
    4 x d_model, LayerNorm and projections without biases (MPT's no_bias), learned positions
    (learned_pos_emb default, no ALiBi), tied embeddings, vocabulary 50368."""
    return ModelSpec(
        name=f"mpt-{size}",
        family="mpt",
        num_layers=layers,
        hidden_size=hidden,
        ffn_hidden_size=4 * hidden,
        num_heads=heads,
        num_kv_heads=heads,
        vocab_size=50368,
        max_seq_len=512,  # the learned position table: stretched to each row's sequence (_model)
        tied_embeddings=True,
        mlp="gelu",
        norm="layernorm",
        position="learned",
    )


MODELS: dict[str, ModelSpec] = {
    **{
        f"mpt-{s}": _mpt(s, n, d, h)
        for s, n, d, h in (
            ("125m", 12, 768, 12),
            ("350m", 24, 1024, 16),
            ("760m", 24, 1536, 12),
            ("1b", 24, 2048, 16),
            ("3b", 32, 2560, 20),
            ("7b", 32, 4096, 32),
            ("13b", 40, 5120, 40),
            ("30b", 48, 7168, 56),
            ("70b", 80, 8192, 64),
        )
    },
    # fms-fsdp fms_fsdp/utils/config_utils.py 'llama2_34b': 48 layers, 8192 wide, 64 heads / 8 kv,
    # MLP 22016, fms' default vocabulary 32000 (CodeLlama-34B's shapes).
    "codellama-34b": ModelSpec(
        name="codellama-34b",
        num_layers=48,
        hidden_size=8192,
        ffn_hidden_size=22016,
        num_heads=64,
        num_kv_heads=8,
        vocab_size=32000,
        max_seq_len=16384,
    ),
}


@dataclass(frozen=True)
class FsdpRun:
    row_id: int
    source: str
    locator: str
    model: ModelSpec
    gpu: str
    num_gpus: int
    layout: Layout
    training: TrainingConfig
    attention: str
    network_bytes_per_s_per_gpu: float
    measured_tokens_per_s_per_gpu: float
    # The caching allocator's peak reserved memory, GiB, where the source prints it (torchtitan's
    # "Memory(GiB)": torchtitan/components/metrics.py logs reserved_bytes.all.peak); None: not stated.
    measured_reserved_gib: float | None = None

    @property
    def generation(self) -> str:
        return GENERATIONS[self.gpu]

    @property
    def settings(self) -> ModelingSettings:
        if self.locator.startswith(TORCHTITAN_2024_FILE):
            return FA2_TORCHTITAN_EAGER_LOSS
        return STACK_PROFILES[(self.source, self.attention)]


def _model(name: str, seq_len: int) -> ModelSpec:
    spec = MODELS.get(name) or get_preset(name)
    return spec.model_copy(update={"max_seq_len": max(spec.max_seq_len, seq_len)})


def _run(row: dict[str, str]) -> FsdpRun:
    n, rep, tp, pp, cp = (int(row[k]) for k in ("num_gpus", "dp_replicate", "tp", "pp", "cp"))
    layout = Layout(
        dp_replicate=rep,
        dp_shard=n // (rep * tp * pp * cp),
        tp=tp,
        pp=pp,
        cp=cp,
        sharding=Sharding(row["sharding"]),
    )
    seq = int(row["seq_len"])
    training = TrainingConfig(
        seq_len=seq,
        micro_batch=int(row["micro_batch"]),
        grad_accum=int(row["grad_accum"]),
        activation_checkpointing=ActivationCheckpointing(row["ac"]),
        precision=Precision(row["precision"]),
        compile=row["compile"] == "1",
        offload=row["offload"] == "1",
        impl=Implementation(row["impl"]),
    )
    return FsdpRun(
        row_id=int(row["row_id"]),
        source=row["source"],
        locator=row["locator"],
        model=_model(row["model"], seq),
        gpu=row["gpu"],
        num_gpus=n,
        layout=layout,
        training=training,
        attention=row["attention"],
        network_bytes_per_s_per_gpu=float(row["network_gbit_per_gpu"]) * 1e9 / 8.0,
        measured_tokens_per_s_per_gpu=float(row["tokens_per_s_per_gpu"]),
        measured_reserved_gib=float(row["reserved_gib"]) if row["reserved_gib"] else None,
    )


def read_fsdp_runs(path: Path = DEFAULT_FSDP_RUNS) -> list[FsdpRun]:
    with path.open(newline="", encoding="utf-8") as f:
        return [_run(row) for row in csv.DictReader(f)]


@dataclass(frozen=True)
class FsdpComparison:
    run: FsdpRun
    predicted_tokens_per_s_per_gpu: float
    fits: bool
    breakdown: dict[str, float]  # seconds per step by term
    predicted_reserved_gib: float = 0.0  # the memory model's reserved peak (MemoryBreakdown.reserved)
    memory_gib: dict[str, float] | None = None  # its allocated terms

    @property
    def error(self) -> float:
        measured = self.run.measured_tokens_per_s_per_gpu
        return (self.predicted_tokens_per_s_per_gpu - measured) / measured

    @property
    def memory_error(self) -> float | None:
        """Predicted / measured reserved peak - 1 (None: the source printed no memory)."""
        measured = self.run.measured_reserved_gib
        return None if measured is None else self.predicted_reserved_gib / measured - 1.0


def gpu_for(run: FsdpRun, catalog: Catalog) -> GPUSpec:
    return grand_teton_h100(catalog) if run.gpu == "h100-grand-teton" else catalog.gpu(run.gpu)


def predict_fsdp_run(run: FsdpRun, catalog: Catalog, settings: ModelingSettings | None = None) -> FsdpComparison:
    gpu = gpu_for(run, catalog)
    c = single(
        gpu,
        run.layout.resolve(run.num_gpus),
        run.training,
        gpus_per_node=catalog.node(gpu.default_node).gpus_per_node,
        network_bandwidth=run.network_bytes_per_s_per_gpu,
    )
    scores = score(run.model, c, settings or run.settings)
    return FsdpComparison(
        run=run,
        predicted_tokens_per_s_per_gpu=float(scores.tokens_per_s[0]) / run.num_gpus,
        fits=bool(scores.fits[0]),
        breakdown=scores.time.as_dict(),
        predicted_reserved_gib=float(scores.memory.reserved[0]) / GIB,
        memory_gib=scores.memory.as_gib(),
    )


def compare_fsdp_runs(runs: list[FsdpRun] | None = None, catalog: Catalog | None = None) -> list[FsdpComparison]:
    catalog = catalog or load_catalog()
    return [predict_fsdp_run(run, catalog) for run in runs or read_fsdp_runs()]
