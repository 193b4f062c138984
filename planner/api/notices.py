"""What the planner says beside an answer: the warnings a plan or an estimate carries (the figures
a limit judges, and a diagnosis's words of its risk, are planner/api/judged.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.accuracy import Risk
from planner.accuracy.regime import zero3_shards_across_nodes
from planner.api.accum_notices import defers_reduction_warnings
from planner.api.batch_notices import batch_beyond_published_warnings, batch_off_warnings
from planner.api.calibration_notices import extrapolated_memory_warnings
from planner.api.fixed_cost import fixed_cost_warnings
from planner.api.judged import judged_hours
from planner.api.network_notices import curve_elsewhere_warnings
from planner.api.price_notices import price_assumption_warnings
from planner.catalog.hardware import Catalog, GPUSpec, load_catalog
from planner.catalog.hf_config import encoder_warning
from planner.catalog.prices import DearerKind, catalog_with_price_kind, dearer_kind, dearer_than_on_demand
from planner.catalog.terms import Commitment, commitment
from planner.errors import InfeasiblePlan
from planner.fmt import duration_words, one_line
from planner.layout import ActivationCheckpointing, Sharding
from planner.model.moe import a2a_unpaired_share
from planner.model.profiles import own_model_profile_warning
from planner.model.stacks import Stack
from planner.model.structure import context_extension_warning
from planner.plan import Plan
from planner.request import (
    PlanRequest,
    default_global_batch_tokens,
    hf_experts_warning,
    left_out_gpus,
    request_term,
    requested_batch_tokens,
    solve_request,
)
from planner.search.ilp import NEAR_TIE_FRACTION, Objective, ScoredTable
from planner.stack_rules import a2a_layout_problem
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

# A plan that trains for longer than this gets a warning: GPUs, prices and methods rarely hold
# for a year, and "16 H100 for 1,244 days" was answered without a word (issue 10).
LONG_JOB_WARNING_DAYS = 365.0


def trains_too_long(chosen: Plan, risk: Risk | None = None) -> bool:
    """Whether the plan trains for over LONG_JOB_WARNING_DAYS, judged at ``risk`` (the CLI warns,
    the app's card too)."""
    hours = judged_hours(chosen, risk)
    return hours is not None and hours * SECONDS_PER_HOUR > LONG_JOB_WARNING_DAYS * SECONDS_PER_DAY


def search_warnings(
    request: PlanRequest,
    unpriced: Catalog,
    catalog: Catalog,
    chosen: Plan,
    varied: VaryBatch | None,
    other: Plan | None,
    shown: tuple[Plan, ...] = (),
) -> tuple[str, ...]:
    """Every warning a search's answer carries (the CLI prints them on stderr): ``unpriced``, the
    catalog before the request's prices; ``varied`` / ``other``: the batch the request could vary to;
    ``shown``: the other plans the answer prices (alternatives, ``--per-gpu`` rows)."""
    return (
        request.warnings
        + left_out_warnings(request, catalog)
        + long_job_warnings(chosen, risk=request.risk)
        + fixed_cost_warnings(chosen)
        + price_warnings(request, unpriced, chosen, shown)
        + price_assumption_warnings(chosen)
        + extrapolated_memory_warnings(chosen)
        + curve_elsewhere_warnings(chosen)
        + vary_batch_warnings(varied, other, chosen)
        + selective_words_warnings(chosen)
        + a2a_exposed_warnings(chosen)
        + serial_host_warnings(chosen)
        + host_staged_warnings(chosen, catalog.gpu(chosen.gpu))
        + zero3_across_nodes_warnings(chosen)
        + defers_reduction_warnings(chosen)
        + megatron_lm_era_warnings(chosen, catalog.gpu(chosen.gpu))
        + batch_beyond_published_warnings(chosen)
    )


def price_warnings(
    request: PlanRequest, catalog: Catalog, chosen: Plan, shown: tuple[Plan, ...] = ()
) -> tuple[str, ...]:
    """Warnings of the request's price kind: the GPU types a whole-catalog search left out for
    want of its offer (``unpriced_types``), ``dearer_warnings`` of every GPU the answer prices (the
    chosen plan's and ``shown``'s; ``catalog``: before the kind priced it), the chosen plan's term."""
    term = plan_commitment(request.price_kind, chosen)
    dearer = dearer_warnings(request, catalog, [p.gpu for p in (chosen, *shown)])
    return (*left_out_price_warnings(request, catalog), *dearer, *(() if term is None else (term.words(),)))


def dearer_warnings(request: PlanRequest, catalog: Catalog, gpus: list[str], fix: str | None = None) -> tuple[str, ...]:
    """``gpu_dearer``'s words for each of ``gpus`` an answer prices, once per GPU (trial s48 M4: only
    the chosen GPU's were said; a --per-gpu row and a fleet's types priced above on-demand were not);
    ``fix``: how the answer's user quotes a price (None: plan's --price)."""
    return tuple(d.words() if fix is None else d.words(fix) for d in dearer_kinds(request, catalog, gpus))


def dearer_kinds(request: PlanRequest, catalog: Catalog, gpus: list[str]) -> tuple[DearerKind, ...]:
    """``gpu_dearer`` of each of ``gpus``, once per GPU type (``catalog``: before the kind priced it)."""
    found = (gpu_dearer(request, catalog, gpu) for gpu in dict.fromkeys(catalog.gpu(g).id for g in gpus))
    return tuple(d for d in found if d is not None)


def left_out_price_warnings(request: PlanRequest, catalog: Catalog) -> tuple[str, ...]:
    """The GPU types a whole-catalog search leaves out for want of the price kind's offer."""
    dropped = unpriced_types(request, catalog)
    if not dropped:
        return ()
    return (
        f"--price-kind {request.price_kind}: {len(dropped)} GPU types without such an offer were not searched"
        f" ({', '.join(dropped)}); --price prices them",
    )


def unplanned_price_warnings(request: PlanRequest, catalog: Catalog) -> tuple[str, ...]:
    """What the request's price kind warns of where no plan is feasible (trial s43: an answer over
    budget under reserved-1y dropped the warnings that explain it): the types left out, each named
    type priced above its on-demand median (unless the request prices it), and a reserved term
    billed whole (``catalog``: before the kind priced it)."""
    dearer = dearer_warnings(request, catalog, list(request.gpus or {}))
    term = request_term(request)
    whole = (
        ()
        if term is None
        else (
            f"{request.price_kind} bills whole {term.years}-year terms: the costs here bill the GPUs for the"
            f" whole term{'' if term.filled == 0 else f' less the {term.filled:.0%} other work uses'}"
            " (--term-filled: the share of the rest other work uses)",
        )
    )
    return (*left_out_price_warnings(request, catalog), *dearer, *whole)


def left_out_warnings(request: PlanRequest, catalog: Catalog) -> tuple[str, ...]:
    """The named GPU types the search leaves out because the request cannot run on them
    (``gpu_problem``: the attention kernel, the precision); a whole-catalog search says nothing
    (trial s24: ``--gpus h100-sxm=64,a100-80gb-sxm=64,b200=64 --attention flash3`` searched the
    H100 alone without a word, while a lone A100 is refused)."""
    return tuple(
        f"{gpu} left out of the search: {one_line(why)}" for gpu, why in left_out_gpus(request, catalog).items()
    )


def plan_commitment(price_kind: str | None, p: Plan) -> Commitment | None:
    """The reserved term the plan's cost bills whole, when the job leaves some of it unused."""
    e, price = p.estimate, p.price_per_gpu_hour_usd
    hourly = None if price is None else p.billed_gpus * price
    return commitment(price_kind, e.term, p.gpu, p.billed_gpus, hourly, e.time_to_train_h)


def chosen_dearer(request: PlanRequest, catalog: Catalog, chosen: Plan) -> DearerKind | None:
    """The chosen GPU rented above its on-demand median under the request's price kind
    (``gpu_dearer``)."""
    return gpu_dearer(request, catalog, chosen.gpu)


def gpu_dearer(request: PlanRequest, catalog: Catalog, gpu: str) -> DearerKind | None:
    """``gpu`` rented above its on-demand median under the request's price kind (``dearer_kind``),
    unless the request quotes that GPU's price itself (``catalog``: before the kind priced it)."""
    spec = catalog.gpu(gpu)
    if any(catalog.gpu(g).id == spec.id for g in request.price_overrides):  # ids match case-blind
        return None
    return dearer_kind(spec, request.price_kind)


def unpriced_types(request: PlanRequest, catalog: Catalog) -> list[str]:
    """The GPU types a whole-catalog search under a price kind other than on-demand leaves out:
    those without an offer of that kind (``catalog_with_price_kind`` drops them)."""
    if request.gpus or request.price_kind in (None, "on-demand"):
        return []
    # the pricing's own rule, which keeps a type the request prices itself (review s29b)
    kept = catalog_with_price_kind(catalog, request.price_kind, priced=list(request.price_overrides)).gpus
    return sorted(g for g in catalog.gpus if g not in kept)


def estimate_warnings(p: Plan, price_kind: str | None, price: float | None = None) -> tuple[str, ...]:
    """What ``estimate`` warns of, as ``plan`` does: positions beyond the pretrained context, a
    price kind dearer than on-demand (unless ``price`` quotes the GPU), a reserved term longer
    than the job, a job over a year or shorter than its start-up, a batch far from the request or past any
    published one."""
    context = context_extension_warning(p.model, p.training.seq_len)
    experts = hf_experts_warning(p.model, p.stack, p.training.impl)
    gpu = load_catalog().gpu(p.gpu)
    dearer = None if price is not None else dearer_than_on_demand(gpu, price_kind)
    long = long_job_warnings(p, fix="trainplan plan --deadline-days sizes the GPU count for a date")
    term = plan_commitment(price_kind, p)
    own = own_model_profile_warning(p.model, p.stack)
    notes: tuple[str | None, ...] = (
        context, experts, own, encoder_warning(p.hf_config_path), dearer, None if term is None else term.words(),
        *long, *fixed_cost_warnings(p), *batch_off_warnings(p), *selective_words_warnings(p),
        *a2a_exposed_warnings(p), *serial_host_warnings(p), *host_staged_warnings(p, gpu),
        *zero3_across_nodes_warnings(p), *defers_reduction_warnings(p), *megatron_lm_era_warnings(p, gpu),
        *batch_beyond_published_warnings(p), *price_assumption_warnings(p), *extrapolated_memory_warnings(p),
        *curve_elsewhere_warnings(p),
    )  # fmt: skip
    return tuple(w for w in notes if w)


def serial_host(p: Plan) -> bool:
    """Whether the plan's stack profile times the host's dispatch in series with the GPU, not ahead
    of it (``host_overlap`` < 1: megatron-deepspeed, as both its measured sources ran it)."""
    return p.stack.serialises_host and p.estimate.time.breakdown_s.host_stall > 0


def serial_host_warnings(p: Plan) -> tuple[str, ...]:
    """The CLI's words of ``serial_host`` (review s32: the term was unsaid, and explain blamed a
    slow dispatch)."""
    if not serial_host(p):
        return ()
    t = p.estimate.time
    return (
        f"--stack {p.stack.value} is timed as its measured runs ran, with CUDA_LAUNCH_BLOCKING=1: the host's"
        f" dispatch runs in series with the GPU ({t.breakdown_s.host_stall:,.1f} s of the {t.step_s:,.1f} s step,"
        " a fitted time per block and micro-batch); BigScience measured the switch itself at 0-6 %, so a run"
        " without it may gain less than this",
    )


def host_staged(p: Plan, gpu: GPUSpec) -> bool:
    """Whether a multi-GPU plan runs on a GPU whose peer access is staged through host memory
    (trial s28b: RTX 4090 plans were timed as if GPUs reached each other directly over PCIe)."""
    return gpu.peer_access == "host-staged" and p.gpus_per_node > 1  # across nodes it is the network


def host_staged_warnings(p: Plan, gpu: GPUSpec) -> tuple[str, ...]:
    """The CLI's words of ``host_staged``."""
    if not host_staged(p, gpu):
        return ()
    return (
        f"{gpu.id}: the driver disables GPU peer-to-peer on this card, so NCCL stages GPU-to-GPU traffic"
        f" through host memory; the plan times it at the PCIe line rate"
        f" ({gpu.scaleup_bandwidth_bytes_per_s / 1e9:.0f} GB/s), which such traffic does not reach, so its"
        " communication is optimistic",
    )


def selective_under_megatron(p: Plan) -> bool:
    """Whether a Megatron stack's plan checkpoints 'selective' (trial s28b: a Megatron user's
    --recompute-granularity selective, mapped to --ac selective, got every other block recomputed,
    a configuration they never ran)."""
    return p.training.activation_checkpointing == ActivationCheckpointing.SELECTIVE and p.stack.megatron_recompute_flags


def selective_words_warnings(p: Plan) -> tuple[str, ...]:
    """The CLI's words of ``selective_under_megatron``."""
    if not selective_under_megatron(p):
        return ()
    return (
        "activation checkpointing 'selective' is torchtitan's layer-selective kind (every other block"
        " recomputed); Megatron's --recompute-granularity selective, which re-runs only the attention core,"
        " is --ac none here (flash attention keeps no scores; the megatron-lm profile's unfused attention"
        " recomputes its core)",
    )


# Exposed all-to-alls under this share of the step are not worth a word.
A2A_EXPOSED_WARNING_SHARE = 0.05


def a2a_exposed_under_megatron(p: Plan) -> bool:
    """Whether a Megatron-Core MoE plan over ep ranks spends over A2A_EXPOSED_WARNING_SHARE of its
    step in exposed all-to-alls that --moe-a2a-overlap would hide (trial s31: Qwen3-235B at 953
    tokens/s/GPU "validated" by rows that ran 1,575-1,712 with the overlap on)."""
    t = p.estimate.time
    material = t.breakdown_s.ep_comm > A2A_EXPOSED_WARNING_SHARE * t.step_s
    # review s32: not where the schedule would refuse it or pair nothing (one micro-batch)
    runs = a2a_layout_problem(p.layout, p.training) is None
    pairs = float(a2a_unpaired_share(p.layout.pp, p.layout.vpp, p.training.grad_accum)) < 1.0
    return p.stack.overlaps_moe_a2a and p.layout.ep > 1 and not p.moe_a2a_overlap and material and runs and pairs


def a2a_exposed_warnings(p: Plan) -> tuple[str, ...]:
    """The CLI's words of ``a2a_exposed_under_megatron``."""
    if not a2a_exposed_under_megatron(p):
        return ()
    t = p.estimate.time
    # review s31: not every measured row ran it (Qwen3-30B-A3B's recipes ran faster without it)
    return (
        f"the expert all-to-alls are timed exposed ({t.breakdown_s.ep_comm:,.1f} s of the {t.step_s:,.1f} s step);"
        " Megatron-Core can hide them under another micro-batch's compute, as Megatron-Bridge's Qwen3-235B"
        " recipes do: --moe-a2a-overlap times that (its host cost is not modelled)",
    )


def defaulted_accum_warning(p: Plan) -> str:
    """What an estimate with a pipeline and neither --grad-accum nor --global-batch-tokens took as its
    accumulation (``default_grad_accum``; trial s44 L2): a multiple of pp near the model's default
    batch, said as such where it is not that batch (review s44: a batch raised to pp was called it)."""
    t, pp = p.training, p.layout.pp
    default, batch = default_global_batch_tokens(p.model), p.estimate.global_batch_tokens
    which = "the model's default batch" if batch == default else f"near the model's default batch ({default:,})"
    return (
        f"--grad-accum not given: {t.grad_accum} micro-steps per step, a multiple of pp = {pp} (a pipeline runs pp"
        f" micro-batches in flight), {batch:,} tokens, {which}; --grad-accum or --global-batch-tokens sets it"
    )


# Architectures the 2021-22 Megatron-LM the megatron-lm profile times never ran on (it predates them).
MEGATRON_LM_ERA = ("Ampere",)
# The English of ``megatron_lm_after_its_era``, the CLI's and the card's.
MEGATRON_LM_ERA_WORDS = (
    "--stack megatron-lm is the Megatron-LM of 2021-22 (Narayanan et al. 2021, Korthikanti et al. 2022:"
    " unfused attention, no TransformerEngine), timed on {gpu}, a GPU it never ran on; today's Megatron-LM"
    " repository trains with Megatron-Core: --stack megatron-core"
)


def megatron_lm_after_its_era(p: Plan, gpu: GPUSpec) -> bool:
    """Whether a megatron-lm plan runs on an architecture its 2021-22 code never ran on (buyer trial
    s45 M1: Llama 3 70B on H100 under megatron-lm cost $1.71M against megatron-core's $1.16M, and
    'megatron-lm' names NVIDIA's current repository)."""
    return p.stack is Stack.MEGATRON_LM and gpu.generation not in MEGATRON_LM_ERA


def megatron_lm_era_warnings(p: Plan, gpu: GPUSpec) -> tuple[str, ...]:
    """The CLI's words of ``megatron_lm_after_its_era``."""
    return (MEGATRON_LM_ERA_WORDS.format(gpu=gpu.id),) if megatron_lm_after_its_era(p, gpu) else ()


def zero3_across_nodes(p: Plan) -> bool:
    """Whether the plan runs DeepSpeed's ZeRO-3 with its shards over more than one node, where no published run of
    today's DeepSpeed was found and the 2021 code's runs at 384-2,240 A100 ran 22-114 % slower than
    the model times them (docs/validation.md, "Known misses"; trial s43 #10: the miss was unsaid)."""
    s = p.layout.resolve(p.num_gpus)
    return bool(
        zero3_shards_across_nodes(p.stack.value, s.sharding is Sharding.FSDP, s.dp_shard, s.tp, s.cp, p.gpus_per_node)
    )


# The English of ``zero3_across_nodes``, the CLI's and the card's (review s44 L2: two copies had drifted).
ZERO3_ACROSS_NODES_WORDS = (
    "DeepSpeed ZeRO-3 across {nodes} nodes: no published run of today's DeepSpeed across nodes was found;"
    " the 2021 code's ZeRO-3 runs on 384-2,240 A100 (Narayanan et al. 2021, Table 2) ran 22-114 % slower"
    " than this model times them (one blocking gather per weight), not scored in the band, which is"
    " widened for it as for a feature no row measured (docs/validation.md, Known misses)"
)


def zero3_across_nodes_warnings(p: Plan) -> tuple[str, ...]:
    """The CLI's words of ``zero3_across_nodes``."""
    return (ZERO3_ACROSS_NODES_WORDS.format(nodes=p.num_nodes),) if zero3_across_nodes(p) else ()


def long_job_warnings(
    chosen: Plan, fix: str = "a deadline (--deadline-days) sizes the GPU count for a date", risk: Risk | None = None
) -> tuple[str, ...]:
    """A warning when the chosen plan trains for over LONG_JOB_WARNING_DAYS (at ``risk``), with ``fix``."""
    if not trains_too_long(chosen, risk):
        return ()
    hours = judged_hours(chosen, risk) or 0.0
    at = "" if risk is None or hours == chosen.estimate.time_to_train_h else f" at {risk.value}"
    return (f"the plan trains for {duration_words(hours * SECONDS_PER_HOUR)}{at}, over a year: {fix}",)


# A saving --vary-batch would bring that is worth a word: below it, the band swamps it.
VARY_BATCH_HINT_FRACTION = 0.05


@dataclass(frozen=True)
class VaryBatch:
    """What ``--vary-batch`` would choose instead of the exact-batch plan, and what it saves."""

    row: int  # its row of the scored table
    objective: Objective  # cost or time: the figure the saving is of
    saving: float  # 1 - its figure / the chosen plan's, at the request's risk
    risk: Risk
    batch_tokens: int  # its batch
    change: float  # its batch over the requested one, less 1


def vary_batch_choice(
    request: PlanRequest, table: ScoredTable, chosen: int, deadline_s: float | None, inventory: dict[str, int] | None
) -> VaryBatch | None:
    """The plan ``--vary-batch`` would choose, when the exact-batch rule costs the objective (cost
    or time, at the request's risk) over VARY_BATCH_HINT_FRACTION: the same ILP over the same
    scored rows without the batch target (a trial's 3M-token batch: 48 B200 at $122k, 64 at $93k
    with --vary-batch, and nothing said). None under ``mix`` (no one figure to compare)."""
    if request.vary_batch or request.objective == Objective.MIX:
        return None
    try:
        row = solve_request(
            request.model_copy(update={"vary_batch": True, "top_k": 0}), table, deadline_s, inventory
        ).row
    except InfeasiblePlan:
        return None
    objective = Objective(request.objective)
    measure = table.cost_usd if objective == Objective.COST else table.time_to_train_s
    saving = 1.0 - measure[row] / measure[chosen]
    if not saving > VARY_BATCH_HINT_FRACTION:
        return None
    batch = int(table.extra["batch_tokens"][row])
    return VaryBatch(
        row, objective, float(saving), Risk(request.risk), batch, batch / requested_batch_tokens(request) - 1
    )


def vary_batch_warnings(hint: VaryBatch | None, other: Plan | None, chosen: Plan) -> tuple[str, ...]:
    """The CLI's line for ``hint`` (``other``: its plan; ``chosen``: the exact-batch plan), with
    the cause when the exact batch is a prime number of sequences: no data-parallel degree but 1
    divides it (a trial's 4e6 tokens: 977 sequences of 4,096)."""
    if hint is None or other is None:
        return ()
    verb = "cost" if hint.objective == Objective.COST else "take"
    sequences = chosen.estimate.global_batch_tokens // chosen.training.seq_len
    prime = sequences > 3 and all(sequences % k for k in range(2, math.isqrt(sequences) + 1))
    cause = (
        f"; the batch asked for is {sequences:,} sequences of {chosen.training.seq_len:,} tokens, a prime:"
        " no data-parallel degree but 1 divides it"
        if prime
        else ""
    )
    return (
        f"--vary-batch: at {hint.batch_tokens:,} tokens per step ({hint.change:+.1%}) the plan would {verb}"
        f" {hint.saving:.0%} less at --risk {hint.risk.value} ({other.num_gpus} x {other.gpu}){cause}",
    )


@dataclass(frozen=True)
class TieRule:
    """Why a listed plan beats the chosen one on the objective: plans within ``fraction`` of the
    best listed one's figure (``best``, at ``risk``; USD or hours) count as tied, and the faster
    (cheaper) of them is chosen (planner/search/ilp.py NEAR_TIE_FRACTION). ``rank``: the best
    one's place in the listed alternatives, from 1."""

    objective: str  # "cost" or "time"
    risk: str
    fraction: float
    best: float
    rank: int


def tie_rule(result) -> TieRule | None:
    """The tie rule where it decided: a listed plan is better on the objective than the chosen one
    (trial s33: the app never said why 'Cheapest' was not the cheapest of its table)."""
    objective, risk = result.solution.objective, result.risk.value
    if objective not in (Objective.COST, Objective.TIME):
        return None
    cost = objective == Objective.COST

    def judged(p) -> float | None:
        return p.estimate.cost_usd_at(risk) if cost else p.estimate.time_h_at(risk)

    chosen, listed = judged(result.plan), [judged(a) for a in result.alternatives]
    if chosen is None or not any(v is not None and v < chosen for v in listed):
        return None
    best, rank = min((v, i) for i, v in enumerate(listed, start=1) if v is not None)
    return TieRule(objective.value, risk, NEAR_TIE_FRACTION, best, rank)
