"""The structural rules a configuration must satisfy to exist and to run on trainplan's trainer.

One list, used three ways: vectorised over every candidate of the search (``planner/search/space.py``,
``planner/model/estimate.py``), and for one configuration with the message of the first rule it breaks
(``estimate``'s ValueError and the trainer's static check in ``trainer/probe.py``). Keeping them
in one place is what guarantees that the planner never proposes a plan the trainer refuses.
Device-specific checks (fp8 hardware, memory) stay in the trainer.

Every rule says what it is (``Rule.trainer_only``): a law of the layout (heads split over tp, whole
pipeline stages, a schedule's micro-batch count), which binds every stack, or a limit of
trainplan's own trainer (the families its native decoder builds, what its Hugging Face path can
split, its vocabulary padding), which binds only plans trainplan runs: another stack's estimate
(``trainer`` False) sees the laws alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from planner.layout import Implementation, max_pipeline_stages
from planner.model.spec import ModelSpec


class Rule(NamedTuple):
    """Where a configuration keeps the rule (vectorised), the message when it does not, and whether
    the rule is a limit of trainplan's trainer rather than a law of the layout."""

    ok: np.ndarray
    message: Callable[[], str]
    trainer_only: bool = False


# Families whose blocks trainplan's native decoder (trainer/model.py) reproduces: sequential
# residual, full-width RoPE or learned positions, optional q/k norms (Qwen3, OLMo 2), post-norm
# blocks (OLMo 2), every layer windowed or none (Mistral v0.1, Phi-3). Mixtral is Mistral's block
# with a routed-expert MLP, which trainer/moe.py builds (with expert parallelism); DeepSeek-V3 is
# MLA (trainer/model.py LatentAttention), dense first blocks, then MoE blocks with shared experts
# and the sigmoid router; Qwen3-MoE is Qwen3's block with Mixtral's routed MLP. GPT-NeoX (parallel
# residual, partial rotary), MPT and BLOOM (ALiBi) and Gemma (sandwich norms, soft-caps, mixed
# local/global layers) are not among them.
NATIVE_FAMILIES = (
    "llama",
    "mistral",
    "qwen2",
    "gpt2",
    "qwen3",
    "olmo2",
    "phi3",
    "mixtral",
    "qwen3_moe",
    "deepseek_v3",
)
# The MoE families whose block trainer/moe.py builds: top-k routed SwiGLU experts (Mixtral;
# Qwen3-MoE: Qwen3's attention, the same softmax router), plus shared experts and group-limited
# sigmoid routing (DeepSeek-V3).
NATIVE_MOE_FAMILIES = ("mixtral", "qwen3_moe", "deepseek_v3")
# The MoE families whose dense blocks, if any, the native model places first as the spec says:
# Qwen3-MoE's dense blocks sit where mlp_only_layers / decoder_sparse_step put them, which the
# spec does not keep (its released models have none).
NATIVE_LEADING_DENSE_FAMILIES = ("mixtral", "deepseek_v3")
# The MoE families whose native block has always-on shared experts.
NATIVE_SHARED_EXPERT_FAMILIES = ("deepseek_v3",)
# The families whose latent attention (MLA) the native decoder builds.
NATIVE_MLA_FAMILIES = ("deepseek_v3",)
# Features the native decoder does not build, whatever the family says.
NATIVE_UNSUPPORTED = (
    ("position", "alibi"),
    ("embedding_norm", True),
    ("mlp", "geglu"),
    ("norm_placement", "sandwich"),
    ("embedding_scale", True),
)
# The native model pads its vocabulary to a multiple of this (Megatron-LM's
# --make-vocab-size-divisible-by default), so tensor parallelism can split odd vocabularies.
VOCAB_PAD_MULTIPLE = 128


def padded_vocab_size(vocab_size: int) -> int:
    return -(-vocab_size // VOCAB_PAD_MULTIPLE) * VOCAB_PAD_MULTIPLE


def native_unsupported(model: ModelSpec) -> list[str]:
    """The model's features the native decoder lacks (``field=value``): another family, ALiBi,
    an embedding norm (BLOOM), Gemma's block, MLA or experts outside DeepSeek's / Mixtral's /
    Qwen3-MoE's; empty for the Llama relatives, the GPT-2/3 family, Mixtral, Qwen3-MoE without
    dense blocks and DeepSeek-V3."""
    found = [] if model.family in NATIVE_FAMILIES else [f"family={model.family!r}"]
    found += [f"{field}={value!r}" for field, value in NATIVE_UNSUPPORTED if getattr(model, field) == value]
    found += [
        f"{field}={getattr(model, field)!r}" for field in ("attn_softcap", "final_softcap") if getattr(model, field)
    ]
    found += ["mla (latent attention)"] if model.mla is not None and model.family not in NATIVE_MLA_FAMILIES else []
    if 0 < model.sliding_layers < model.num_layers:
        found.append(f"sliding_layers={model.sliding_layers} of {model.num_layers}")
    shared_ok = not model.shared_experts or model.family in NATIVE_SHARED_EXPERT_FAMILIES
    dense_ok = not model.dense_layers or model.family in NATIVE_LEADING_DENSE_FAMILIES
    moe_native = model.family in NATIVE_MOE_FAMILIES and shared_ok
    found += [] if dense_ok else [f"dense_layers={model.dense_layers} (placed by mlp_only_layers)"]
    return found + ([f"num_experts={model.num_experts}"] if model.num_experts > 1 and not moe_native else [])


def hf_tensor_parallel_unsupported(model: ModelSpec) -> list[str]:
    """Tensor parallelism of a Hugging Face model splits Llama-style q/k/v/o and gate/up/down
    projections (trainer/tensor_parallel.py): dense gated-MLP blocks with separate q, k, v
    (not Phi-3's fused weights or MLA) and per-head q/k norms if any."""
    found = [f"mlp={model.mlp!r}"] if model.mlp in ("gelu", "relu2") else []
    found += ["fused_projections=True"] if model.fused_projections else []
    found += ["mla"] if model.mla is not None else []
    found += ["qk_norm='full'"] if model.qk_norm == "full" else []
    return found + ([f"num_experts={model.num_experts}"] if model.num_experts > 1 else [])


def default_implementation(model: ModelSpec) -> Implementation:
    """The native trainer where it can build the model, Hugging Face transformers otherwise."""
    return Implementation.HF if native_unsupported(model) else Implementation.NATIVE


def context_extension_warning(model: ModelSpec, seq_len: int) -> str | None:
    """A warning when ``seq_len`` exceeds the model's ``max_position_embeddings`` (``max_seq_len``),
    else None. Not an error: training longer than the pretrained context is context extension, and
    the trainer builds its position table or RoPE cache for the longer sequence (trainer/model.py)."""
    if seq_len <= model.max_seq_len:
        return None
    return (
        f"seq_len {seq_len} exceeds {model.name}'s max_position_embeddings {model.max_seq_len}: "
        "planned as context extension (positions beyond the pretrained context)"
    )


def structural_rules(
    model: ModelSpec,
    *,
    tp,
    pp,
    cp,
    seq_len,
    grad_accum,
    scaleup_domain_size,
    hf,
    fp8,
    one_f_one_b,
    vpp=1,
    shard_group=1,
    ep=1,
    trainer=True,
) -> list[Rule]:
    """The rules in the order they are reported; arguments are scalars or equal-length arrays
    (``hf``, ``fp8``, ``one_f_one_b`` booleans). Messages are formatted only on demand.
    ``trainer`` False: another stack's estimate (estimate-only: trainer/job.py emits trainplan's
    plans only), which only the laws of the layout bind."""
    rules = _layout_rules(model, tp=tp, pp=pp, cp=cp, seq_len=seq_len, grad_accum=grad_accum, hf=hf,
                          fp8=fp8, one_f_one_b=one_f_one_b, vpp=vpp, scaleup_domain_size=scaleup_domain_size)  # fmt: skip
    rules += _expert_rules(model, tp=tp, hf=hf, shard_group=shard_group, ep=ep)
    return rules if trainer else [r for r in rules if not r.trainer_only]


def _layout_rules(
    model: ModelSpec, *, tp, pp, cp, seq_len, grad_accum, hf, fp8, one_f_one_b, vpp, scaleup_domain_size
) -> list[Rule]:
    hf, fp8, one_f_one_b = (np.asarray(v, dtype=bool) for v in (hf, fp8, one_f_one_b))

    def split(value: int, degree, what: str, axis: str) -> Rule:
        return Rule(value % degree == 0, lambda: f"{what} {value} is not divisible by {axis}={degree}")

    def trainer(ok, message: Callable[[], str]) -> Rule:
        return Rule(np.asarray(ok), message, trainer_only=True)

    not_native, not_hf_tp = native_unsupported(model), hf_tensor_parallel_unsupported(model)
    return [
        trainer(
            hf | (not not_native), lambda: f"the native trainer cannot build {', '.join(not_native)}; use impl 'hf'"
        ),
        split(model.num_heads, tp, "num_heads", "tp"),
        split(model.num_kv_heads, tp, "num_kv_heads", "tp"),
        trainer(
            (tp == 1) | ~hf | (not not_hf_tp),
            lambda: (
                f"tensor parallelism of a Hugging Face model needs Llama-style blocks ({', '.join(not_hf_tp)}); "
                f"use impl 'native'"
            ),
        ),
        split(model.ffn_hidden_size, tp, "ffn_hidden_size", "tp"),
        trainer(
            (tp == 1) | hf | (model.qk_norm != "full"),
            lambda: "the native trainer's whole-projection q/k norm (OLMo 2) runs on one rank's heads: use tp=1",
        ),
        # trainplan pads the vocabulary to a multiple of 128; Megatron pads to 128 x tp.
        trainer(
            hf | (padded_vocab_size(model.vocab_size) % tp == 0),
            lambda: (
                f"vocab_size {model.vocab_size} (padded to {padded_vocab_size(model.vocab_size)}, "
                f"vocabulary-parallel loss) is not divisible by tp={tp}"
            ),
        ),
        # Sequence parallelism splits each context-parallel rank's seq_len/cp tokens over tp
        # (Megatron asserts the same of its sequence-parallel layers).
        Rule(
            (tp == 1) | hf | (seq_len % (tp * cp) == 0),
            lambda: f"seq_len (sequence parallelism) {seq_len} is not divisible by tp*cp={tp * cp}",
        ),
        # A tensor-parallel group's collectives run on every layer: it stays inside NVLink.
        Rule(
            (tp <= scaleup_domain_size) & (scaleup_domain_size % tp == 0),
            lambda: f"tp={tp} must fit inside one scale-up domain of {scaleup_domain_size} GPUs",
        ),
        # Uneven stages (planner/layout.py stage_layer_counts): any pp x vpp up to the layer count
        # plus the embedding's and the head's stages.
        Rule(
            pp * vpp <= max_pipeline_stages(model.num_layers),
            lambda: (
                f"pp*vpp={pp * vpp} pipeline stages exceed {max_pipeline_stages(model.num_layers)} (num_layers"
                f" {model.num_layers}, plus a stage for the embedding and one for the head)"
            ),
        ),
        trainer((pp == 1) | ~hf, lambda: "pipeline parallelism (pp > 1) needs impl 'native'"),
        # A 1F1B schedule keeps pp micro-batches in flight.
        Rule(
            (pp == 1) | ~one_f_one_b | (grad_accum >= pp),
            lambda: f"the 1f1b schedule needs grad_accum >= pp ({grad_accum} < {pp}): raise grad_accum or use gpipe",
        ),
        # torch's interleaved 1F1B runs grad_accum // pp rounds of equal size (Megatron's needs
        # micro-batches divisible by pp, a stricter form of the same law).
        Rule(
            (vpp == 1) | (grad_accum % np.maximum(1, grad_accum // pp) == 0),
            lambda: (
                f"the interleaved schedule needs grad_accum ({grad_accum}) divisible by grad_accum // pp "
                f"(use a multiple of pp={pp})"
            ),
        ),
        trainer((cp == 1) | ~hf, lambda: "context parallelism (cp > 1) needs impl 'native'"),
        trainer(
            (cp == 1) | (model.sliding_window is None) | (seq_len <= (model.sliding_window or 0)),
            lambda: (
                f"context parallelism has no sliding-window mask (window {model.sliding_window} < seq_len {seq_len})"
            ),
        ),
        # Load-balanced context parallelism gives each rank two chunks of the sequence.
        Rule(
            (cp == 1) | (seq_len % (2 * cp) == 0),
            lambda: f"seq_len (load-balanced context parallel) {seq_len} is not divisible by 2*cp={2 * cp}",
        ),
        # Native blocks take torchao's float8 tensor-parallel styles (trainer/tensor_parallel.py).
        trainer(~fp8 | (tp == 1) | ~hf, lambda: "fp8 with tensor parallelism needs impl 'native'"),
    ]


def _expert_rules(model: ModelSpec, *, tp, hf, shard_group, ep) -> list[Rule]:
    """MoE: how experts split over the ep ranks and shard over the rest (planner/layout.py). The
    last three are trainplan's trainer's (trainer/moe.py, trainer/parallel.py): Megatron-Core, for
    one, runs experts with tensor parallelism."""
    ep, hf = np.asarray(ep), np.asarray(hf, dtype=bool)
    local_experts = model.num_experts // np.maximum(ep, 1)
    expert_shards = np.maximum(np.asarray(shard_group) // np.maximum(ep, 1), 1)
    return [
        Rule((ep == 1) | np.asarray(model.is_moe), lambda: f"ep={ep} needs a mixture-of-experts model"),
        # Each ep rank holds whole experts, an equal share of them.
        Rule(model.num_experts % ep == 0, lambda: f"num_experts {model.num_experts} is not divisible by ep={ep}"),
        Rule((ep == 1) | ~hf, lambda: "expert parallelism (ep > 1) needs impl 'native' (trainer/moe.py)", True),
        # The native MoE block keeps whole experts on each rank (no expert tensor parallelism).
        Rule(
            (tp == 1) | hf | np.asarray(not model.is_moe),
            lambda: "tensor parallelism of native MoE blocks (expert tp) is not built: use tp=1 or ep",
            True,
        ),
        # Fused expert tensors [experts, ...] shard evenly only by whole experts or along the
        # hidden dim (trainer/parallel.py shard_placement); otherwise some ranks hold whole experts.
        Rule(
            (model.num_experts == 1) | (local_experts % expert_shards == 0) | (model.hidden_size % expert_shards == 0),
            lambda: (
                f"MoE expert weights ({local_experts} experts{' per ep rank' if ep > 1 else ''}, hidden "
                f"{model.hidden_size}) do not shard evenly over dp_shard*cp{'/ep' if ep > 1 else ''}="
                f"{expert_shards} ranks: use a count that divides {local_experts} or {model.hidden_size}"
            ),
            True,
        ),
    ]


def structurally_valid(model: ModelSpec, **values) -> np.ndarray:
    """True where every rule holds (vectorised)."""
    ok = np.asarray(True)
    for rule in structural_rules(model, **values):
        ok = ok & rule.ok
    return ok


def first_structural_problem(model: ModelSpec, **values) -> str | None:
    """The message of the first rule one configuration breaks, or None."""
    values = {name: np.asarray(value).item() for name, value in values.items()}  # one row -> scalars
    for rule in structural_rules(model, **values):
        if not bool(np.all(rule.ok)):
            return rule.message()
    return None
