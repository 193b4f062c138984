"""The structural rules a configuration must satisfy to exist and to run on trainplan's trainer.

One list, used three ways: vectorised over every candidate of the search (``planner/search/space.py``,
``planner/model/estimate.py``), and for one configuration as the first rule it breaks, a code and its
figures (``estimate``'s RuleViolation; its English sentence in the trainer's static check,
``trainer/probe.py``). Keeping them
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
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from planner.errors import RuleCode, RuleViolation
from planner.layout import Implementation, max_pipeline_stages
from planner.model.spec import ModelSpec
from planner.rule_codes import Figures


class Rule(NamedTuple):
    """Where a configuration keeps the rule (vectorised), its code and the figures its sentence
    cites (computed on demand: the search never formats one), and whether the rule is a limit of
    trainplan's trainer rather than a law of the layout."""

    ok: np.ndarray
    code: RuleCode
    figures: Callable[[], Figures]
    trainer_only: bool = False

    def violation(self) -> RuleViolation:
        return RuleViolation(self.code, self.figures())

    def message(self) -> str:
        """The English sentence (planner/rule_codes.py)."""
        return str(self.violation())


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
    ("parallel_block", True),
)
# The native model pads its vocabulary to a multiple of this (Megatron-LM's
# --make-vocab-size-divisible-by default), so tensor parallelism can split odd vocabularies.
VOCAB_PAD_MULTIPLE = 128


def padded_vocab_size(vocab_size: int) -> int:
    return -(-vocab_size // VOCAB_PAD_MULTIPLE) * VOCAB_PAD_MULTIPLE


class NativeGap(NamedTuple):
    """A feature of the model the native decoder lacks: ``feature``, a stable name the app words
    ("family", "mla", "dense_layers", ...; app53 M6: it showed the CLI's ``field=value``), the figure
    its words need (a family, a count), and the CLI's words."""

    feature: str
    value: str
    words: str


def native_gaps(model: ModelSpec) -> list[NativeGap]:
    """The model's features the native decoder lacks: another family, ALiBi, an embedding norm
    (BLOOM), Gemma's block, MLA, chunked attention or experts outside DeepSeek's / Mixtral's /
    Qwen3-MoE's; empty for the Llama relatives, the GPT-2/3 family, Mixtral, Qwen3-MoE without
    dense blocks and DeepSeek-V3."""
    family = model.family
    found = [] if family in NATIVE_FAMILIES else [NativeGap("family", family, f"family={family!r}")]
    found += [NativeGap(f, str(v), f"{f}={v!r}") for f, v in NATIVE_UNSUPPORTED if getattr(model, f) == v]
    found += [
        NativeGap("softcap", field, f"{field}={getattr(model, field)!r}")
        for field in ("attn_softcap", "final_softcap")
        if getattr(model, field)
    ]
    if model.mla is not None and family not in NATIVE_MLA_FAMILIES:
        found.append(NativeGap("mla", "", "mla (latent attention)"))
    if model.partial_rotary_factor < 1:  # trainer/model.py's RoPE rotates every channel of a head
        factor = f"{model.partial_rotary_factor:g}"
        found.append(NativeGap("partial_rotary", factor, f"partial_rotary_factor={factor}"))
    if 0 < model.sliding_layers < model.num_layers:
        layers = f"{model.sliding_layers} of {model.num_layers}"
        found.append(NativeGap("sliding_layers", str(model.sliding_layers), f"sliding_layers={layers}"))
    # trainer/model.py's attention is causal or windowed on every layer: no chunk mask (Llama 4),
    # so neither a native run nor context parallelism (native only) would time what it plans.
    if model.chunked_layers:
        words = f"chunked_layers={model.chunked_layers} (attention_chunk={model.attention_chunk})"
        found.append(NativeGap("chunked_layers", str(model.chunked_layers), words))
    shared_ok = not model.shared_experts or family in NATIVE_SHARED_EXPERT_FAMILIES
    # where the family's dense blocks sit (leading for GLM, DeepSeek-V2, AFMoE; where mlp_only_layers puts
    # them for Qwen-MoE) is not kept by the spec: say what the decoder does, not where they are (families53)
    if model.dense_layers and family not in NATIVE_LEADING_DENSE_FAMILIES:
        leading = " or ".join(NATIVE_LEADING_DENSE_FAMILIES)
        words = f"dense_layers={model.dense_layers} (the native decoder places dense blocks for {leading} only)"
        found.append(NativeGap("dense_layers", str(model.dense_layers), words))
    if model.num_experts > 1 and not (family in NATIVE_MOE_FAMILIES and shared_ok):
        found.append(NativeGap("experts", str(model.num_experts), f"num_experts={model.num_experts}"))
    return found


def native_unsupported(model: ModelSpec) -> list[str]:
    """``native_gaps`` in the CLI's words (``field=value``)."""
    return [gap.words for gap in native_gaps(model)]


def hf_tensor_parallel_unsupported(model: ModelSpec) -> list[str]:
    """Tensor parallelism of a Hugging Face model splits Llama-style q/k/v/o and gate/up/down
    projections (trainer/tensor_parallel.py): dense gated-MLP blocks with separate q, k, v
    (not Phi-3's fused weights or MLA) and per-head q/k norms if any."""
    found = [f"mlp={model.mlp!r}"] if model.mlp in ("gelu", "relu2") else []
    found += ["fused_projections=True"] if model.fused_projections else []
    found += ["mla"] if model.mla is not None else []
    found += ["qk_norm='full'"] if model.qk_norm == "full" else []
    found += ["parallel_block=True"] if model.parallel_block else []  # two RowwiseParallel: two reductions
    found += ["attention_output_gate=True"] if model.attention_output_gate else []  # gate_proj is in no TP plan
    return found + ([f"num_experts={model.num_experts}"] if model.num_experts > 1 else [])


def default_implementation(model: ModelSpec) -> Implementation:
    """The native trainer where it can build the model, Hugging Face transformers otherwise."""
    return Implementation.HF if native_unsupported(model) else Implementation.NATIVE


@dataclass(frozen=True)
class ContextExtension:
    """``seq_len`` past the model's ``max_position_embeddings`` (``max_seq_len``). Not an error:
    training longer than the pretrained context is context extension with RoPE or ALiBi; a learned
    absolute table (GPT-2/3, ``learned``) does not extend, and the trainer grows it to ``seq_len``
    rows (trainer/model.py, trainer/hf_model.py), the new ones untrained. The CLI says ``words()``;
    the app words the fields in the page's language (ui/plan_card.py)."""

    model: str
    seq_len: int
    max_seq_len: int
    learned: bool

    def words(self) -> str:
        past = f"seq_len {self.seq_len} exceeds {self.model}'s max_position_embeddings {self.max_seq_len}"
        if self.learned:
            return (
                f"{past}, and its positions are learned: not context extension, the position table grows to"
                f" {self.seq_len} rows and rows {self.max_seq_len} and up start untrained (a new model's context;"
                f" --seq-len {self.max_seq_len} keeps the pretrained one)"
            )
        return f"{past}: planned as context extension (positions beyond the pretrained context)"


def context_extension(model: ModelSpec, seq_len: int) -> ContextExtension | None:
    """The request's context extension, None within the pretrained context."""
    if seq_len <= model.max_seq_len:
        return None
    return ContextExtension(model.name, seq_len, model.max_seq_len, model.position == "learned")


def context_extension_warning(model: ModelSpec, seq_len: int) -> str | None:
    """The CLI's words of ``context_extension``, else None."""
    found = context_extension(model, seq_len)
    return None if found is None else found.words()


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
    """The layout's rules in the order they are reported: the family's, then tensor, pipeline and
    context parallelism's, then fp8's."""
    hf, fp8, one_f_one_b = (np.asarray(v, dtype=bool) for v in (hf, fp8, one_f_one_b))
    not_native = native_unsupported(model)
    return [
        _limit(hf | (not not_native), RuleCode.NATIVE_UNSUPPORTED, lambda: {"features": ", ".join(not_native)}),
        *_tensor_rules(model, tp=tp, cp=cp, seq_len=seq_len, hf=hf, scaleup_domain_size=scaleup_domain_size),
        *_pipeline_rules(model, pp=pp, vpp=vpp, grad_accum=grad_accum, hf=hf, one_f_one_b=one_f_one_b),
        *_context_rules(model, cp=cp, seq_len=seq_len, hf=hf),
        # Native blocks take torchao's float8 tensor-parallel styles (trainer/tensor_parallel.py).
        _limit(~fp8 | (tp == 1) | ~hf, RuleCode.FP8_TP_HF, lambda: {"tp": tp}),
    ]


def _law(ok, code: RuleCode, figures: Callable[[], Figures] = dict) -> Rule:
    """A law of the layout: it binds every stack."""
    return Rule(np.asarray(ok), code, figures)


def _limit(ok, code: RuleCode, figures: Callable[[], Figures] = dict) -> Rule:
    """A limit of trainplan's own trainer: it binds only the plans trainplan runs."""
    return Rule(np.asarray(ok), code, figures, trainer_only=True)


def _tensor_rules(model: ModelSpec, *, tp, cp, seq_len, hf, scaleup_domain_size) -> list[Rule]:
    """What tensor parallelism splits evenly, and where its group runs."""

    def split(value: int, code: RuleCode) -> Rule:
        return _law(value % tp == 0, code, lambda: {"value": value, "tp": tp})

    not_hf_tp = hf_tensor_parallel_unsupported(model)
    vocab, padded = model.vocab_size, padded_vocab_size(model.vocab_size)
    return [
        split(model.num_heads, RuleCode.TP_HEADS),
        split(model.num_kv_heads, RuleCode.TP_KV_HEADS),
        _limit((tp == 1) | ~hf | (not not_hf_tp), RuleCode.HF_TP, lambda: {"features": ", ".join(not_hf_tp)}),
        split(model.ffn_hidden_size, RuleCode.TP_FFN),
        _limit((tp == 1) | hf | (model.qk_norm != "full"), RuleCode.QK_NORM_TP, lambda: {"tp": tp}),
        # trainplan pads the vocabulary to a multiple of 128; Megatron pads to 128 x tp.
        _limit(hf | (padded % tp == 0), RuleCode.TP_VOCAB, lambda: {"vocab": vocab, "padded": padded, "tp": tp}),
        # Sequence parallelism splits each context-parallel rank's seq_len/cp tokens over tp
        # (Megatron asserts the same of its sequence-parallel layers).
        _law(
            (tp == 1) | hf | (seq_len % (tp * cp) == 0),
            RuleCode.SEQ_TP_CP,
            lambda: {"seq_len": seq_len, "degree": tp * cp},
        ),
        _law(
            tp_in_domain(tp, scaleup_domain_size),
            RuleCode.TP_DOMAIN,
            lambda: {"tp": tp, "domain": scaleup_domain_size},
        ),
    ]


def _pipeline_rules(model: ModelSpec, *, pp, vpp, grad_accum, hf, one_f_one_b) -> list[Rule]:
    """How many stages the layers allow, and the micro-batches a schedule needs."""
    max_stages = max_pipeline_stages(model.num_layers)
    return [
        # Uneven stages (planner/layout.py stage_layer_counts): any pp x vpp up to the layer count
        # plus the embedding's and the head's stages.
        _law(
            pp * vpp <= max_stages,
            RuleCode.PP_LAYERS,
            lambda: {"stages": pp * vpp, "max_stages": max_stages, "num_layers": model.num_layers},
        ),
        _limit((pp == 1) | ~hf, RuleCode.PP_NATIVE, lambda: {"pp": pp}),
        # A 1F1B schedule keeps pp micro-batches in flight.
        _law(
            (pp == 1) | ~one_f_one_b | (grad_accum >= pp),
            RuleCode.ONE_F_ONE_B_ACCUM,
            lambda: {"grad_accum": grad_accum, "pp": pp},
        ),
        # torch's interleaved 1F1B runs grad_accum // pp rounds of equal size (Megatron's needs
        # micro-batches divisible by pp, a stricter form of the same law).
        _law(
            (vpp == 1) | (grad_accum % np.maximum(1, grad_accum // pp) == 0),
            RuleCode.VPP_ACCUM,
            lambda: {"grad_accum": grad_accum, "pp": pp},
        ),
    ]


def _context_rules(model: ModelSpec, *, cp, seq_len, hf) -> list[Rule]:
    """Where context parallelism runs, and how it splits the sequence."""
    return [
        _limit((cp == 1) | ~hf, RuleCode.CP_NATIVE, lambda: {"cp": cp}),
        _limit(
            (cp == 1) | (model.sliding_window is None) | (seq_len <= (model.sliding_window or 0)),
            RuleCode.CP_SLIDING,
            lambda: {"window": model.sliding_window or 0, "seq_len": seq_len},  # broken only with a window
        ),
        # Load-balanced context parallelism gives each rank two chunks of the sequence.
        _law((cp == 1) | (seq_len % (2 * cp) == 0), RuleCode.SEQ_CP, lambda: {"seq_len": seq_len, "degree": 2 * cp}),
    ]


def _expert_rules(model: ModelSpec, *, tp, hf, shard_group, ep) -> list[Rule]:
    """MoE: how experts split over the ep ranks and shard over the rest (planner/layout.py). The
    last three are trainplan's trainer's (trainer/moe.py, trainer/parallel.py): Megatron-Core, for
    one, runs experts with tensor parallelism."""
    ep, hf = np.asarray(ep), np.asarray(hf, dtype=bool)
    not_native = native_unsupported(model)  # the native MoE block cannot build it: no way to ep there
    local_experts = model.num_experts // np.maximum(ep, 1)
    expert_shards = np.maximum(np.asarray(shard_group) // np.maximum(ep, 1), 1)
    experts, hidden = model.num_experts, model.hidden_size

    def shard_figures() -> Figures:
        return {"local_experts": local_experts, "hidden": hidden, "shards": expert_shards}

    return [
        Rule((ep == 1) | np.asarray(model.is_moe), RuleCode.EP_DENSE, lambda: {"ep": ep}),
        # Each ep rank holds whole experts, an equal share of them.
        Rule(np.asarray(experts % ep == 0), RuleCode.EP_EXPERTS, lambda: {"experts": experts, "ep": ep}),
        Rule((ep == 1) | ~hf | bool(not_native), RuleCode.EP_NATIVE, lambda: {"ep": ep}, True),
        Rule((ep == 1) | ~hf | (not not_native), RuleCode.EP_FAMILY, lambda: {"features": ", ".join(not_native)}, True),
        # The native MoE block keeps whole experts on each rank (no expert tensor parallelism).
        Rule((tp == 1) | hf | np.asarray(not model.is_moe), RuleCode.MOE_TP, lambda: {"tp": tp}, True),
        # Fused expert tensors [experts, ...] shard evenly only by whole experts or along the
        # hidden dim (trainer/parallel.py shard_placement); otherwise some ranks hold whole experts.
        # The sentence differs with ep > 1 (experts per ep rank), hence two codes; only one
        # configuration's rule is ever reported, where ep is a scalar.
        Rule(
            (experts == 1) | (local_experts % expert_shards == 0) | (hidden % expert_shards == 0),
            RuleCode.MOE_SHARD_EP if bool(np.any(ep > 1)) else RuleCode.MOE_SHARD,
            shard_figures,
            True,
        ),
    ]


def tp_in_domain(tp, scaleup_domain_size):
    """A tensor-parallel group's collectives run on every layer: it stays inside NVLink (a divisor
    of the scale-up domain). The only rule that reads the domain (planner/search/space.py derives
    a smaller domain's rows from a larger one's by it)."""
    return (tp <= scaleup_domain_size) & (scaleup_domain_size % tp == 0)


def structurally_valid(model: ModelSpec, **values) -> np.ndarray:
    """True where every rule holds (vectorised)."""
    ok = np.asarray(True)
    for rule in structural_rules(model, **values):
        ok = ok & rule.ok
    return ok


def first_structural_violation(model: ModelSpec, **values) -> RuleViolation | None:
    """The first rule one configuration breaks (code and figures), or None."""
    values = {name: np.asarray(value).item() for name, value in values.items()}  # one row -> scalars
    for rule in structural_rules(model, **values):
        if not bool(np.all(rule.ok)):
            return rule.violation()
    return None


def first_structural_problem(model: ModelSpec, **values) -> str | None:
    """The English sentence of the first rule one configuration breaks, or None."""
    violation = first_structural_violation(model, **values)
    return None if violation is None else str(violation)
