"""Megatron-LM's own measured memory peaks (its CI reference values), held out for the memory band.

data/validation/megatron_memory_runs.csv holds the two 7B-class cases of NVIDIA/Megatron-LM's
functional tests whose names say what they measure (``gpt3_7b_tp1_pp4_memory_speed``,
``gpt3_7b_tp4_pp1_memory_speed``), each on H100, A100 and GB200: the peak allocated bytes
(``torch.cuda.memory_stats()["allocated_bytes.all.peak"]``, ``mem-max-allocated-bytes``) that
Megatron writes for rank ``world_size - 1`` only, from step 2 on (the optimizer's states exist from
the first step). How they were read: data/validation/megatron_memory_runs_sources.md.

Each is predicted with the Megatron-Core profile as it stands, nothing fitted on them: the
model of the case's ``model_config.yaml`` (Megatron's GPT block: GeLU MLP of 4h, LayerNorm, learned
positions and biased projections, the defaults it does not override; 8 query groups; untied
embeddings; the vocabulary padded to a multiple of 128 x tp), on one node of 8 GPUs (the CI
recipe's ``nodes: 1, gpus: 8``), Megatron's distributed optimizer (ZeRO-1), bf16 gradients off
(fp32 ``main_grad``), no recomputation, and the allocated peak of the last pipeline rank. The
one recipe fact on top of the profile: neither case passes ``--sequence-parallel``, so the tp 4
case keeps its norms' and residuals' activations whole on every tp rank (``sequence_parallel``
off; the profile assumes it on, as NeMo's and Megatron-Bridge's recipes set it).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from planner.catalog.hardware import Catalog, load_catalog
from planner.catalog.hf_dense import GPT2_ARCHITECTURE
from planner.layout import ActivationCheckpointing, Layout, Precision, Sharding, TrainingConfig
from planner.model.candidates import on_default_node
from planner.model.memory import last_rank_memory
from planner.model.spec import ModelSpec
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.units import GIB

DEFAULT_MEGATRON_MEMORY_RUNS = (
    Path(__file__).resolve().parent.parent / "data" / "validation" / "megatron_memory_runs.csv"
)
SOURCE = "megatron-lm-ci"
# The cases' model_config.yaml: --num-layers 32, --hidden-size 4096, --num-attention-heads 32,
# --num-query-groups 8, --untie-embeddings-and-output-weights, --vocab-size 131073 (NullTokenizer).
LAYERS, HIDDEN, HEADS, QUERY_GROUPS, VOCAB = 32, 4096, 32, 8, 131073
# The Megatron-Core profile with what the cases' configs state (module docstring).
CI_SETTINGS = STACK_SETTINGS[Stack.MEGATRON_CORE].but(sequence_parallel=False)
# Megatron pads the vocabulary to a multiple of make-vocab-size-divisible-by (128) x tp.
VOCAB_MULTIPLE = 128


@dataclass(frozen=True)
class MegatronMemoryRun:
    row_id: str
    case: str
    gpu: str
    num_gpus: int
    layout: Layout
    training: TrainingConfig
    model: ModelSpec
    measured_gib: float


def padded_vocab(tp: int) -> int:
    step = VOCAB_MULTIPLE * tp
    return -(-VOCAB // step) * step


def case_model(tp: int, seq_len: int) -> ModelSpec:
    return ModelSpec(
        name="megatron-gpt-7b",
        family="gpt2",
        **GPT2_ARCHITECTURE,
        num_layers=LAYERS,
        hidden_size=HIDDEN,
        ffn_hidden_size=4 * HIDDEN,
        num_heads=HEADS,
        num_kv_heads=QUERY_GROUPS,
        vocab_size=padded_vocab(tp),
        max_seq_len=seq_len,
        tied_embeddings=False,
    )


def _run(row: dict[str, str]) -> MegatronMemoryRun:
    tp, pp, num_gpus = int(row["tp"]), int(row["pp"]), int(row["num_gpus"])
    micro, seq_len = int(row["micro_batch"]), int(row["seq_len"])
    per_stage = int(row["layers_per_virtual_stage"] or 0)
    vpp = LAYERS // (pp * per_stage) if per_stage else 1
    dp = num_gpus // (tp * pp)
    layout = Layout(tp=tp, pp=pp, vpp=vpp, dp_shard=dp, sharding=Sharding.ZERO1)
    training = TrainingConfig(
        seq_len=seq_len,
        micro_batch=micro,
        grad_accum=int(row["global_batch"]) // (dp * micro),
        activation_checkpointing=ActivationCheckpointing.NONE,
        precision=Precision.BF16,
    )
    return MegatronMemoryRun(
        row["row_id"], row["case"], row["gpu"], num_gpus, layout, training, case_model(tp, seq_len),
        float(row["max_allocated_gib"]),
    )  # fmt: skip


def read_megatron_memory_runs(path: Path = DEFAULT_MEGATRON_MEMORY_RUNS) -> list[MegatronMemoryRun]:
    with path.open(newline="", encoding="utf-8") as f:
        return [_run(r) for r in csv.DictReader(f)]


def predicted_last_rank_gib(run: MegatronMemoryRun, catalog: Catalog | None = None) -> float:
    """The last pipeline rank's allocated peak under the Megatron-Core profile (GiB)."""
    catalog = catalog or load_catalog()
    c = on_default_node(catalog.gpu(run.gpu), catalog, run.layout.resolve(run.num_gpus), run.training, run.num_gpus)
    return float(last_rank_memory(run.model, c, CI_SETTINGS).peak_allocated[0]) / GIB
