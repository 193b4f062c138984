"""The regime of a prediction: what decides which measured rows it is judged against.

A regime is the software stack, the GPU's architecture and the features of the layout that the
validation shows move the error: tensor and pipeline parallelism, long sequences (32K tokens
and more), context parallelism, mixture-of-experts, FP8, more than one GPU, more than one
node and more than 1,000 GPUs; and those that no or few rows measured, so that a plan using them
is judged outside the envelope: Hugging Face's modules, optimizer states offloaded to the host,
a named attention kernel, DeepSpeed's ZeRO-3 across nodes, Megatron-Core's TP overlap turned off
and pure bf16. The same rule places a validation row (planner/accuracy/residuals.csv) and a
candidate of the search, from the same facts.

How far apart two regimes are (``distance``) is a sum of named weights (``STACK_WEIGHTS``,
``GENERATION_WEIGHT``, ``FEATURE_WEIGHTS``): choices, not fitted; docs/validation.md "Error
bands" states them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntFlag

import numpy as np

from planner.catalog.specs import vendor_of
from planner.limits import MAX_SEQ_LEN
from planner.model.stacks import Stack

# The software stacks of one family run the same kind of kernels and collectives: PyTorch eager
# modules with SDPA flash attention under FSDP / ZeRO (trainplan, torchtitan, IBM fms-fsdp,
# MosaicML llm-foundry, DeepSpeed on Hugging Face modules), or Megatron's fused kernels with
# its tensor, pipeline and expert parallelism (Megatron-LM, Megatron-DeepSpeed, Megatron-Core,
# DeepSeek's HAI-LLM).
STACK_FAMILIES: dict[str, str] = {
    "trainplan": "pytorch",
    "torchtitan": "pytorch",
    "hf-trainer": "pytorch",
    "fms-fsdp": "pytorch",
    "llm-foundry": "pytorch",
    "deepspeed": "pytorch",
    "pytorch": "pytorch",
    "megatron-lm": "megatron",
    "megatron-deepspeed": "megatron",
    "megatron-core": "megatron",
    "deepseek-v3": "megatron",
}

# Distance between two regimes: another stack of the same family 1, of another family 2; another
# GPU architecture 2; each differing layout feature 1 (crossing a node 0.5, FEATURE_WEIGHTS).
STACK_WEIGHTS = (0.0, 1.0, 2.0)  # same stack, same family, other family
GENERATION_WEIGHT = 2.0
# Another vendor's GPU is another architecture and more: its own GEMM and attention libraries
# (ROCm's hipBLASLt and CK flash attention on AMD) and collectives (RCCL), which no validation row
# ran, so it counts as another architecture again (buyer trial s45: with AMD priced at its listed
# offers, AMD plans won on bands read from Hopper rows at another architecture's distance only).
# A choice, like the others; no row is of another vendor, so no held-out figure moves.
VENDOR_WEIGHT = 2.0
# A part judged apart from its architecture for its scale-up link only (planner/accuracy/links.py:
# the H800's cut NVLink) differs from that architecture's parts as one layout feature does: the
# same chip and kernels, another link under the same collectives. A choice, like the others.
LINK_WEIGHT = 1.0
# The label of such a part: "Hopper (h800's link)".
LINK_APART = "{generation} ({gpu}'s link)"

# Sequences this long count as long context (with or without context parallelism, its own feature:
# the ring's rounds err apart from one long sequence's kernels, +10 % to +57 % on torchtitan's CP
# rows against about -3 % on llm-foundry's 32K-65K rows without it; trial s24).
LONG_SEQUENCE_TOKENS = 32_768
# The GPUs of one HGX / DGX node: a job over more crosses the network, whose collectives (ring
# latency, inter-node bandwidth, NCCL's algorithm choice) no one-node row measured.
NODE_GPUS = 8
# More GPUs than this count as large scale (failures, stragglers, network contention).
LARGE_SCALE_GPUS = 1_000


class Feature(IntFlag):
    """The layout features of a regime, as bits."""

    TP = 1
    PP = 2
    LONG = 4
    MOE = 8
    FP8 = 16
    MULTI_GPU = 32
    MULTI_NODE = 64
    LARGE = 128
    HF_MODULES = 256
    OFFLOAD = 512
    CP = 1024
    # an attention kernel its stack would not pick (a user's --attention, a row's recipe): which one
    # is ``Regime.kernel`` (trial s44 H1: rows that ran Triton validated FlashAttention-2 at 65K)
    KERNEL = 2048
    # DeepSpeed's ZeRO-3 with its shards over more than one node (``zero3_shards_across_nodes``): no row
    # of today's DeepSpeed measured it, and the 2021 code's did not fit the model (audit s44 M3)
    ZERO3_NODES = 4096
    # Megatron-Core with tp > 1 and its recipes' --tp-comm-overlap turned off (--no-tp-comm-overlap): every
    # megatron-core row is a tuned NeMo / Megatron-Bridge / MLPerf recipe that ran it (heldout51 H1:
    # FlagPerf's plain Megatron-Core jobs did not, and erred past the band); no row is marked with it
    TP_OVERLAP_OFF = 8192
    # Pure bf16 (--pure-bf16: bf16 weights and AdamW states, no fp32 master): no band row ran it (its
    # optimizer step and memory are widths the rows never measured); the fresh rows that did (set 4:
    # torchtune, VectorLM) are held out, not band rows
    PURE_BF16 = 16384


# Feature bits take values below this (a regime key per GPU: planner/accuracy/__init__.py).
FEATURE_SPAN = 1 << len(Feature)

# A long query's sequence is kept in whole doublings of LONG_SEQUENCE_TOKENS, up to the longest
# sequence a request may name (planner/limits.py): how far past the longest measured row it lies
# widens its band (bands.py).
LONGEST_SEQUENCE_DOUBLINGS = int(np.log2(MAX_SEQ_LEN // LONG_SEQUENCE_TOKENS))


def long_sequence(seq_len) -> np.ndarray:
    """A long-context query's sequence, rounded up to a whole doubling of ``LONG_SEQUENCE_TOKENS``
    (review s37: rounded down, 200K read as 128K and widened by a doubling less); 0 below it."""
    seq = np.maximum(np.asarray(seq_len, dtype=float), 1.0)
    doublings = np.clip(np.ceil(np.log2(seq / LONG_SEQUENCE_TOKENS) - 1e-9), 0, LONGEST_SEQUENCE_DOUBLINGS)
    return np.where(seq >= LONG_SEQUENCE_TOKENS, LONG_SEQUENCE_TOKENS * 2.0**doublings, 0.0).astype(np.int64)


# Crossing a node is a refinement of "more than one GPU" (the network under the same sharded
# collectives), so it counts half a feature: a multi-node query takes one-node rows of its own
# stack before rows that differ in anything else. Chosen after seeing the coverage at 1 (89.1 %,
# Ampere 91.8 %, above COVERAGE_MAX: one-source regimes' bands widened); flat from 0.25 to 0.5
# (docs/validation.md "Error bands").
# Offload counts two: no validation row measured it, and part of the step then runs on another
# machine part (host DRAM, PCIe, the CPU's AdamW), as it does on another GPU architecture
# (GENERATION_WEIGHT). A choice, like the others (docs/validation.md "Error bands"). DeepSpeed's
# ZeRO-3 across nodes counts two as well: no row of today's DeepSpeed measured it, and each weight's
# gather then crosses the network, a mechanism the one-node rows do not exercise (audit s44 M3: its
# band read -16 % to +22 % beside a warning that the 2021 code's runs were 22-114 % slower).
FEATURE_WEIGHTS: dict[Feature, float] = {
    f: {Feature.MULTI_NODE: 0.5, Feature.OFFLOAD: 2.0, Feature.ZERO3_NODES: 2.0}.get(f, 1.0) for f in Feature
}

FEATURE_WORDS: dict[Feature, str] = {
    Feature.TP: "tp > 1",
    Feature.PP: "pp > 1",
    Feature.LONG: "sequence >= 32K",
    Feature.MOE: "MoE",
    Feature.FP8: "fp8",
    Feature.MULTI_GPU: "more than one GPU",
    Feature.MULTI_NODE: "more than one node",
    Feature.LARGE: "> 1,000 GPUs",
    Feature.HF_MODULES: "Hugging Face modules",
    Feature.OFFLOAD: "CPU offload",
    Feature.CP: "cp > 1",
    Feature.KERNEL: "an attention kernel its stack would not pick",
    Feature.ZERO3_NODES: "DeepSpeed ZeRO-3 across nodes",
    Feature.TP_OVERLAP_OFF: "TP comm overlap off (--no-tp-comm-overlap)",
    Feature.PURE_BF16: "pure bf16 (--pure-bf16)",
}


def run_feature_bits(stack: Stack, tp_comm_overlap: bool, pure_bf16: bool) -> int:
    """The features a run's own choices set, whatever its layout: its stack's TP overlap turned off
    (``Stack.tp_overlap_off``; ``feature_bits`` keeps it only where tp > 1, where there is TP traffic
    to hide) and pure bf16 (``OptimizerPrecision.pure_bf16``)."""
    off = Feature.TP_OVERLAP_OFF if stack.tp_overlap_off(tp_comm_overlap) else 0
    return int(off | (Feature.PURE_BF16 if pure_bf16 else 0))


def zero3_shards_across_nodes(stack: str, fsdp, dp_shard, tp, cp, gpus_per_node) -> np.ndarray:
    """Whether DeepSpeed's ZeRO-3 (``fsdp``: the layout's full sharding) gathers its shards over
    more than one node: its shard group (dp_shard x tp x cp; HSDP inside a node gathers over the
    scale-up link, review s44) spans more GPUs than a node holds. Arrays or scalars."""
    group = np.asarray(dp_shard) * np.asarray(tp) * np.asarray(cp)
    if stack != Stack.DEEPSPEED.value:
        return np.zeros(np.shape(group), dtype=bool)
    return np.asarray(fsdp, dtype=bool) & (group > np.asarray(gpus_per_node))


def crosses_nodes(num_gpus, gpus_per_node, scaleup_domain_size) -> np.ndarray:
    """Whether a job's collectives leave the scale-up domain as the rows' "more than one node" does:
    over NODE_GPUS GPUs (every row's rule), or over the GPUs it holds on each node where its node's
    domain ends at the node (trial s47 M3: 8 GPUs on 8 nodes, one each, read single-node rows). A
    rack-scale domain (NVL72's 72 over trays of 4) is judged as a node of NODE_GPUS, as its rows are.
    Arrays or scalars."""
    node_domain = np.asarray(scaleup_domain_size) <= NODE_GPUS
    reach = np.where(node_domain, np.minimum(np.asarray(gpus_per_node), NODE_GPUS), NODE_GPUS)
    return np.asarray(num_gpus) > reach


# The stacks whose band rows are all tuned vendor recipes, so that "validated" means validated on
# those (heldout51 H1: FlagPerf's plain Megatron-Core 0.6 jobs, no --tp-comm-overlap, FlashAttention,
# ran 21-31 % slower on H100 than estimates called "validated"). The envelope says so beside it.
TUNED_RECIPE_STACKS = frozenset({Stack.MEGATRON_CORE.value})
TUNED_RECIPE_WORDS = "tuned NeMo / Megatron-Bridge / MLPerf recipes (TP comm overlap, cuDNN attention)"


def tuned_recipes(stack: str) -> bool:
    """Whether ``stack``'s validated regimes are tuned recipes' (``TUNED_RECIPE_STACKS``)."""
    return stack in TUNED_RECIPE_STACKS


# A feature another implies, left unsaid beside it (trial s33 app: "more than one GPU, more than
# one node"); the bits and the JSON's feature names keep both.
IMPLIED_BY = {Feature.MULTI_GPU: Feature.MULTI_NODE, Feature.MULTI_NODE: Feature.LARGE}


def said_features(bits: int) -> list[Feature]:
    """The features of ``bits`` worth saying: those no other one of them implies."""
    return [f for f in Feature if bits & f and not bits & IMPLIED_BY.get(f, 0)]


def judged_kernel(kernel: str, seq_len) -> str:
    """The attention kernel a validation row's own regime is placed by: the one it ran where its stack
    would not pick it (``kernel``), from LONG_SEQUENCE_TOKENS on, where attention is most of the step
    (trial s44 H1: MPT's Triton rows at 65K read as validating llm-foundry's FlashAttention-2, 53 %
    too fast against the row of that very job); below, where it is a small share, "": a short row
    speaks for its stack whatever kernel it ran (``judged_kernels``)."""
    return kernel if int(seq_len) >= LONG_SEQUENCE_TOKENS else ""


def judged_kernels(kernels: np.ndarray, placed: np.ndarray, query_kernel: str) -> np.ndarray:
    """The rows' kernels as a query reads them (``kernels``: those they ran; ``placed``: their
    regimes', ``judged_kernel``): a query on its stack's own kernel ("") reads a short row as its
    stack's whatever kernel it ran; one that names a kernel, timed from
    another kernel's table or by a factor, is checked only by rows that ran it, at any length (review
    s44: Triton at 2K read "outside" beside 76 rows that ran it; trial s24: flash3 read FA2's band).
    Counted at every length for every query, 209 llm-foundry rows left the evidence of each short
    PyTorch-family query on its own kernel, widening trainplan's bands (the H200 runs' 35.5 -> 41.2 %)
    at the same coverage (docs/validation.md "Error bands")."""
    return kernels if query_kernel else placed


def feature_bits(
    tp,
    pp,
    cp,
    seq_len,
    moe,
    fp8,
    num_gpus,
    hf=False,
    offload=False,
    kernel=False,
    zero3_nodes=False,
    multi_node=None,
    run_features=0,
) -> np.ndarray:
    """The ``Feature`` bits of each row (arrays or scalars of the layout's facts; ``hf``: Hugging
    Face's modules, ``offload``: optimizer states on the host, ``kernel``: a named attention kernel,
    timed from another kernel's rates by a factor or by its own tables, never measured in a stack's
    run as the user's choice: trial s24, flash3 / triton / eager bands were as narrow as FA2's;
    ``multi_node``: a query's ``crosses_nodes``, None: a row's, over NODE_GPUS; ``run_features``: a run's
    ``run_feature_bits``, its TP overlap turned off a feature only where tp > 1, where there is TP
    traffic to hide)."""
    multi_node = np.asarray(num_gpus) > NODE_GPUS if multi_node is None else np.asarray(multi_node, dtype=bool)
    tp_off, pure_bf16 = (bool(int(run_features) & f) for f in (Feature.TP_OVERLAP_OFF, Feature.PURE_BF16))
    bits = (
        (np.asarray(tp) > 1) * Feature.TP
        + (np.asarray(pp) > 1) * Feature.PP
        + (np.asarray(seq_len) >= LONG_SEQUENCE_TOKENS) * Feature.LONG
        + (np.asarray(cp) > 1) * Feature.CP
        + np.asarray(moe, dtype=bool) * Feature.MOE
        + np.asarray(fp8, dtype=bool) * Feature.FP8
        + (np.asarray(num_gpus) > 1) * Feature.MULTI_GPU
        + multi_node * Feature.MULTI_NODE
        + (np.asarray(num_gpus) > LARGE_SCALE_GPUS) * Feature.LARGE
        + np.asarray(hf, dtype=bool) * Feature.HF_MODULES
        + np.asarray(offload, dtype=bool) * Feature.OFFLOAD
        + np.asarray(kernel, dtype=bool) * Feature.KERNEL
        + np.asarray(zero3_nodes, dtype=bool) * Feature.ZERO3_NODES
        + (tp_off & (np.asarray(tp) > 1)) * Feature.TP_OVERLAP_OFF
        + pure_bf16 * Feature.PURE_BF16
    )
    return np.asarray(bits, dtype=np.int64)


@dataclass(frozen=True)
class Regime:
    """A stack, a GPU architecture and the layout features (``Feature`` bits)."""

    stack: str
    generation: str
    features: int
    # A long query's sequence (``long_sequence``), whose distance past the longest measured row
    # widens its band; 0 for a short one, and for a validation row's place among the regimes.
    seq_len: int = 0
    # The attention kernel where its stack would not pick it (``Feature.KERNEL``; "": the stack's own).
    kernel: str = ""

    def __post_init__(self) -> None:
        # the bit says a kernel is named, the field which (review s44: a bit without its name read
        # "its stack's own attention kernel"); a pooled regime's bits are a feature, not a query's
        if self.kernel and not self.features & Feature.KERNEL:
            raise ValueError(f"Regime: kernel {self.kernel!r} without Feature.KERNEL")

    @property
    def family(self) -> str:
        return STACK_FAMILIES.get(self.stack, self.stack)

    def describe(self) -> str:
        """'megatron-core on Hopper, tp > 1, pp > 1, fp8, more than one GPU'."""
        words = [
            kernel_words(self.kernel) if f is Feature.KERNEL and self.kernel else FEATURE_WORDS[f]
            for f in said_features(self.features)
        ]
        return ", ".join([f"{self.stack} on {self.generation}", *words])

    def differences(self, other: Regime) -> list[str]:
        """What ``other`` lacks or has beyond this regime, in words."""
        out = []
        if other.stack != self.stack:
            out.append(f"stack {other.stack}")
        if base_generation(other.generation) != base_generation(self.generation):
            vendors = {vendor_of(r.generation) for r in (self, other)}
            out.append(f"GPU {other.generation}" + (", another vendor" if len(vendors) > 1 else ""))
        elif other.generation != self.generation:  # one of them judged apart for its link (links.py)
            apart = link_apart_parts(other.generation) is not None
            out.append(f"GPU {other.generation}" if apart else f"the link of {other.generation}'s measured parts")
        for f in Feature:
            if f is Feature.KERNEL:
                if other.kernel != self.kernel:
                    out.append(kernel_words(other.kernel))
            elif (self.features ^ other.features) & f:
                out.append(("without " if self.features & f else "with ") + FEATURE_WORDS[f])
        return out


def kernel_words(kernel: str) -> str:
    """'attention triton', or "its stack's own attention kernel" for ""."""
    return f"attention {kernel}" if kernel else "its stack's own attention kernel"


def distances(
    query: Regime, stacks: np.ndarray, generations: np.ndarray, features: np.ndarray, kernels: np.ndarray | None = None
) -> np.ndarray:
    """Distance from ``query`` to each row's regime (arrays of stack, architecture, bits and
    ``Regime.kernel``; None: every row its stack's own). Another kernel counts as the feature does,
    whether one of the two runs its stack's own or both run others."""
    families = np.array([STACK_FAMILIES.get(s, s) for s in stacks], dtype=object)
    stack_cost = np.where(
        stacks == query.stack, STACK_WEIGHTS[0], np.where(families == query.family, STACK_WEIGHTS[1], STACK_WEIGHTS[2])
    )
    differing = np.bitwise_xor(features, query.features)
    feature_cost = sum(((differing & f) > 0) * w for f, w in FEATURE_WEIGHTS.items() if f is not Feature.KERNEL)
    row_kernels = np.full(len(stacks), "", dtype=object) if kernels is None else kernels
    kernel_cost = (row_kernels != query.kernel) * FEATURE_WEIGHTS[Feature.KERNEL]
    return stack_cost + generation_distance(query.generation, generations) + feature_cost + kernel_cost


def link_apart_label(generation: str, gpu: str) -> str:
    return LINK_APART.format(generation=generation, gpu=gpu)


def link_apart_parts(generation: str) -> tuple[str, str] | None:
    """(architecture, GPU id) of a part's ``LINK_APART`` label; None for any other generation."""
    if not generation.endswith("'s link)"):
        return None
    architecture, _, rest = generation.partition(" (")
    return architecture, rest.removesuffix("'s link)")


def base_generation(generation: str) -> str:
    """The architecture of a part judged apart for its link ('Hopper' for "Hopper (h800's link)")."""
    parts = link_apart_parts(generation)
    return generation if parts is None else parts[0]


def generation_distance(query: str, generations: np.ndarray) -> np.ndarray:
    """``GENERATION_WEIGHT`` between architectures (plus ``VENDOR_WEIGHT`` between vendors),
    ``LINK_WEIGHT`` between a part judged apart for its link and its own architecture's other
    parts, 0 for the same."""
    bases = np.array([base_generation(str(g)) for g in generations], dtype=object)
    same_chip = bases == base_generation(query)
    vendors = np.array([vendor_of(str(g)) for g in generations], dtype=object)
    other = GENERATION_WEIGHT + (vendors != vendor_of(query)) * VENDOR_WEIGHT
    return np.where(generations == query, 0.0, np.where(same_chip, LINK_WEIGHT, other))
