"""A larger batch, where the one asked for is what holds a plan back: fewer sequences per step than
GPUs, so tensor, pipeline or context parallelism must split each sequence (trial s27c), or an
inventory that misses a deadline at that batch (trial s28b). Each is searched, not assumed: the
same request once more at one sequence per GPU, on the chosen GPU type and at most its count (review
s28: with the count free, the offer at twice the batch bought twice the GPUs; buyer trial s50: fewer
of them may then meet the request, which the offer says). An offer, never a choice: the
batch changes the training (learning rate, critical batch size), so only --global-batch-tokens
moves it (docs/ilp.md, "Batch").

``plan`` (planner/api/__init__.py) calls ``with_larger_batch`` and ``with_batch_fix`` with its own
one-search function, which this module does not import (it imports this one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from planner.accuracy import Risk
from planner.errors import Constraint, CountPastInventory, InfeasiblePlan
from planner.fmt import duration_words, money
from planner.limits import MAX_GPUS
from planner.plan import Plan
from planner.request import LARGER_BATCH_WORDS, PlanRequest, requested_batch_tokens
from planner.search.ilp import Objective
from planner.units import SECONDS_PER_HOUR

if TYPE_CHECKING:
    from planner.api import PlanResult

# A saving worth a word: below it, the band swamps it (as VARY_BATCH_HINT_FRACTION, notices.py).
LARGER_BATCH_HINT_FRACTION = 0.05
# Of the doublings of the batch below one sequence per GPU, the smallest that saves this share of
# that batch's saving is named too (trial s29b: a 405B on 4,096 GPUs was offered 32M tokens for
# its 4M, where Llama 3.1 trained at 16M): the batch is a training choice, and the smaller change
# the likelier one. A reading aid, not a fit: it picks which searched batch to name.
NEARER_BATCH_SHARE = 0.8

# ``search`` of planner/api with the caller's catalog, settings and calibration; ``probe=False``
# answers an infeasible request from its own table, without probing counts past it.
Search = Callable[..., "PlanResult"]


@dataclass(frozen=True)
class LargerBatch:
    """What a batch of one sequence per GPU would save where the batch asked for leaves fewer
    sequences than the chosen plan has GPUs (trial s27c: an 8B on 2,048 H100 at the default 2M
    tokens was forced into TP 4 x PP 2 at 27.7 % MFU; at 8M tokens HSDP alone trains it ~30 %
    sooner at p80, and nothing said so)."""

    batch_tokens: int  # one sequence per GPU of the chosen plan
    sequences: int  # the batch asked for (or the default), in sequences
    saving: float  # 1 - its figure / the chosen plan's, at the request's risk
    objective: Objective  # cost or time: the figure the saving is of
    risk: Risk
    split: str  # how the chosen plan splits each sequence: 'tp 4 x pp 2'
    figure: float  # its cost (USD) or time to train (hours) at the risk
    chosen_figure: float  # the chosen plan's
    nearer: NearerBatch | None = None  # a smaller batch that saves most of it


@dataclass(frozen=True)
class NearerBatch:
    """The smallest doubling of the chosen batch, below one sequence per GPU, that saves at least
    NEARER_BATCH_SHARE of what one sequence per GPU saves (on the same GPUs)."""

    batch_tokens: int
    saving: float  # 1 - its figure / the chosen plan's, at the request's risk
    plan: Plan | None = None  # the plan at that batch (review s30: JSON had the batch, not the plan)


def at_risk(p: Plan, objective: Objective, risk: Risk) -> float | None:
    """The plan's cost or time to train at the risk quantile (None: no band)."""
    return p.estimate.cost_usd_at(risk.value) if objective == Objective.COST else p.estimate.time_h_at(risk.value)


def one_sequence_per_gpu(request: PlanRequest, gpu: str, num_gpus: int) -> PlanRequest:
    """The request at one sequence per GPU of ``num_gpus`` x ``gpu``, on those GPUs alone."""
    assert request.seq_len is not None
    return at_batch(request, gpu, num_gpus, num_gpus * request.seq_len)


def at_batch(request: PlanRequest, gpu: str, num_gpus: int, batch_tokens: int) -> PlanRequest:
    """The request at ``batch_tokens`` per step, on ``num_gpus`` x ``gpu`` alone."""
    return request.model_copy(
        update={
            "global_batch_tokens": batch_tokens,
            "gpus": {gpu: num_gpus},
            "max_gpus": num_gpus,
            "top_k": 0,
            "per_gpu": False,
        }
    )


def sequences(p: Plan) -> int:
    """The plan's global batch in sequences."""
    return p.estimate.global_batch_tokens // p.training.seq_len


def splits_sequences(p: Plan) -> bool:
    """Whether the plan's batch leaves fewer sequences than GPUs and tp, pp or cp split them."""
    return p.layout.tp * p.layout.pp * p.layout.cp > 1 and sequences(p) < p.num_gpus


def larger_batch_request(request: PlanRequest, chosen: Plan) -> PlanRequest | None:
    """The request at one sequence per GPU of ``chosen`` where it ``splits_sequences``; None
    otherwise, or with --vary-batch or the mix objective (no one figure to compare)."""
    if request.vary_batch or request.objective == Objective.MIX or not splits_sequences(chosen):
        return None
    return one_sequence_per_gpu(request, chosen.gpu, chosen.num_gpus)


def larger_batch_offer(request: PlanRequest, chosen: Plan, other: Plan) -> LargerBatch | None:
    """``other`` (the plan at the larger batch) against ``chosen``, at the request's risk; None
    when it saves no more than LARGER_BATCH_HINT_FRACTION, or splits its sequences too."""
    objective, risk = Objective(request.objective), Risk(request.risk)
    mine, theirs = at_risk(chosen, objective, risk), at_risk(other, objective, risk)
    if (
        mine is None
        or theirs is None
        or splits_sequences(other)
        or not 1.0 - theirs / mine > LARGER_BATCH_HINT_FRACTION
    ):
        return None
    layout = chosen.layout
    split = " x ".join(f"{axis} {n}" for axis, n in (("tp", layout.tp), ("pp", layout.pp), ("cp", layout.cp)) if n > 1)
    return LargerBatch(
        other.estimate.global_batch_tokens, sequences(chosen), 1.0 - theirs / mine, objective, risk, split, theirs, mine
    )


def larger_batch_warnings(offer: LargerBatch | None, other: Plan | None, chosen: Plan) -> tuple[str, ...]:
    """The CLI's line for ``offer`` (``other``: its plan)."""
    if offer is None or other is None:
        return ()
    cost = offer.objective == Objective.COST
    verb = "cost" if cost else "take"
    # buyer trial s48 M6: "77.1 days against 121.9" (p80) read against the 90.9-day headline and a
    # published 54 days, where the model's own figure at that batch is 57.5 days
    own = own_figures(other, chosen, cost)
    own_words = "" if own is None else f"; {against(*own, cost)} by the model's own figure"
    # trial s28d: "asked for" where the batch was the default, and a saving without its figures
    return (
        f"the batch, {offer.sequences:,} sequences, is fewer than the {chosen.num_gpus:,} GPUs, so {offer.split} split"
        f" each one; at {offer.batch_tokens:,} tokens per step ({per_gpu_words(chosen, other)}) the plan would {verb}"
        f" {offer.saving:.0%} less at --risk {offer.risk.value}: {against(offer.figure, offer.chosen_figure, cost)}"
        f" ({other.num_gpus:,} x {other.gpu}, {other.layout_words}{own_words})"
        + (
            ""
            if offer.nearer is None
            else f"; at {offer.nearer.batch_tokens:,} tokens it would already {verb} {offer.nearer.saving:.0%} less"
            + nearer_count_words(offer.nearer, chosen)
        )
        + ". A larger batch changes the training: --global-batch-tokens sets it",
    )


def fewer_gpus(chosen: Plan, other: Plan) -> bool:
    """Whether the plan at the larger batch takes fewer of the chosen plan's GPUs: its batch, not
    only its layout, lets fewer meet the deadline (the search at the chosen batch found none)."""
    return other.num_gpus < chosen.num_gpus


def per_gpu_words(chosen: Plan, other: Plan) -> str:
    """What the larger batch is per GPU: one sequence per GPU of the chosen plan's, on which the
    search may then take fewer (buyer trial s50 M2: the offer was dropped then, at p80 alone)."""
    if not fewer_gpus(chosen, other):
        return "one sequence per GPU"
    return f"one sequence per GPU of these {chosen.num_gpus:,}; at that batch {other.num_gpus:,} of them suffice"


def nearer_count_words(nearer: NearerBatch, chosen: Plan) -> str:
    """' on 1,024 of them' where the nearer batch's plan takes fewer of the GPUs (review s50 L6)."""
    if nearer.plan is None or not fewer_gpus(chosen, nearer.plan):
        return ""
    return f" on {nearer.plan.num_gpus:,} of them"


def against(figure: float, chosen_figure: float, cost: bool) -> str:
    """'$1.20M against $1.50M' or '77.1 days against 121.9 days' (hours in)."""
    if cost:
        return f"{money(figure)} against {money(chosen_figure)}"
    return f"{duration_words(figure * SECONDS_PER_HOUR)} against {duration_words(chosen_figure * SECONDS_PER_HOUR)}"


def own_figures(other: Plan, chosen: Plan, cost: bool) -> tuple[float, float] | None:
    """The two plans' cost (USD) or time to train (hours) by the model's own figure, the headline's."""
    figures = [p.estimate.cost_usd if cost else p.estimate.time_to_train_h for p in (other, chosen)]
    return None if figures[0] is None or figures[1] is None else (figures[0], figures[1])


def with_larger_batch(result: PlanResult, request: PlanRequest, search: Search) -> PlanResult:
    """``result`` with the larger-batch offer, where there is one."""
    larger = larger_batch_request(request, result.plan)
    if larger is None:
        return result
    try:
        other = search(larger, probe=False).plan
    except InfeasiblePlan:  # a deadline or budget the larger batch's plans miss: nothing to offer
        return result
    # On fewer of the GPUs too (buyer trial s50 M2; review s28b had dropped those offers): the search
    # at the chosen batch took its count as the cheapest or only one that meets the request, so it is
    # the larger batch that lets fewer GPUs do; the line says how many (per_gpu_words).
    offer = larger_batch_offer(request, result.plan, other)
    if offer is None:
        return result
    offer = replace(offer, nearer=nearer_batch(request, result.plan, offer, search))
    warnings = result.warnings + larger_batch_warnings(offer, other, result.plan)
    return replace(result, larger_batch=offer, larger_batch_plan=other, warnings=warnings)


def nearer_batch(request: PlanRequest, chosen: Plan, offer: LargerBatch, search: Search) -> NearerBatch | None:
    """The smallest doubling of ``chosen``'s batch below ``offer``'s that saves, on at most the same
    GPUs, at least NEARER_BATCH_SHARE of ``offer``'s saving (and more than LARGER_BATCH_HINT_FRACTION);
    None when none does. One search per doubling, each as ``with_larger_batch``'s."""
    objective, risk = Objective(request.objective), Risk(request.risk)
    needed = max(NEARER_BATCH_SHARE * offer.saving, LARGER_BATCH_HINT_FRACTION)
    tokens = 2 * chosen.estimate.global_batch_tokens
    while tokens < offer.batch_tokens:
        try:
            other = search(at_batch(request, chosen.gpu, chosen.num_gpus, tokens), probe=False).plan
        except InfeasiblePlan:
            tokens *= 2
            continue
        batch, theirs = other.estimate.global_batch_tokens, at_risk(other, objective, risk)
        if batch < offer.batch_tokens and theirs is not None and 1.0 - theirs / offer.chosen_figure >= needed:
            return NearerBatch(batch, 1.0 - theirs / offer.chosen_figure, other)
        tokens *= 2
    return None


def deadline_batch_request(answer: InfeasiblePlan, request: PlanRequest) -> PlanRequest | None:
    """For a deadline the inventory misses: the request at one sequence per GPU of its largest
    inventory count, when the batch asked for has fewer sequences than that and the answer names
    no batch of its own (``InfeasiblePlan.batch_tokens``: the diagnosis's batch-bound fix, review
    s28: both at once gave two batches). None without an inventory, or with --vary-batch."""
    if answer.constraint is not Constraint.DEADLINE or answer.batch_tokens is not None or request.vary_batch:
        return None
    cap = request.max_gpus or MAX_GPUS  # review s28b: --max-gpus binds this search too
    counts = {g: min(n, cap) for g, n in (request.gpus or {}).items() if n is not None}
    if not counts or request.seq_len is None:
        return None
    gpu = max(counts, key=lambda g: counts[g])
    if requested_batch_tokens(request) // request.seq_len >= counts[gpu]:
        return None
    return one_sequence_per_gpu(request, gpu, counts[gpu])


def hours_at_risk(p: Plan, risk: Risk) -> float:
    """The hours a larger batch's plan takes at ``risk`` (its own figure where it has no band): what
    a deadline answer's batch offer says."""
    hours = at_risk(p, Objective.TIME, risk)
    return (p.estimate.time_to_train_h if hours is None else hours) or 0.0


def with_batch_fix(answer: InfeasiblePlan, request: PlanRequest, search: Search) -> InfeasiblePlan:
    """``answer`` with the larger batch at which the inventory meets the deadline (trial s28b:
    DeepSeek-V3 at the default 4M tokens, 1,024 sequences on 2,048 H800, 'needed' 7,168 GPUs; at
    8M tokens 2,048 finish in 81 days at p80), where there is one."""
    larger = deadline_batch_request(answer, request)
    if larger is None:
        return past_the_cap_batch_fix(answer, request, search)
    try:
        other = search(larger, probe=False).plan
    except InfeasiblePlan:
        return answer
    hours = hours_at_risk(other, Risk(larger.risk))
    on_hand = larger.max_gpus or other.num_gpus
    words = (
        f"; or a batch of one sequence per GPU of the {on_hand:,} on hand, --global-batch-tokens"
        f" {larger.global_batch_tokens}, at which {other.num_gpus:,} x {other.gpu} finish in"
        f" {duration_words(hours * SECONDS_PER_HOUR)} at {larger.risk.value} (a larger batch changes the training)"
    )
    return answer.but(
        fix=answer.fix + words, batch_tokens=larger.global_batch_tokens, batch_seconds=hours * SECONDS_PER_HOUR
    )


# How many times the asked batch a deadline no count meets is searched again at (a step that
# doubles twice: Llama 3.1 405B's 16M tokens against the 4M default, trial s45).
PAST_CAP_BATCH_FACTOR = 4


def past_the_cap_batch_fix(answer: InfeasiblePlan, request: PlanRequest, search: Search) -> InfeasiblePlan:
    """A deadline that no GPU count meets, probed past the count cap of types without an inventory
    (``more_gpus_help`` False): the fix names the batch it was probed at, and what the request at
    PAST_CAP_BATCH_FACTOR x that batch answers (buyer trial s45 H2: Llama 3.1 405B, 15.6T tokens in
    60 days on H100 read 'no count up to 32,768 GPUs meets the deadline', the 4M batch unsaid; at
    Meta's 16M batch 26,880 H100 finish in 54 days)."""
    if answer.constraint is not Constraint.DEADLINE or answer.more_gpus_help is not False or request.vary_batch:
        return answer
    inventory = any(n is not None for n in (request.gpus or {}).values())  # count_probe words those
    if answer.batch_tokens is not None or inventory:
        return answer
    batch = requested_batch_tokens(request)
    words = f" at a global batch of {batch:,} tokens"
    past_cap = None  # the larger batch's plan past the count cap, where only that meets the deadline
    larger = request.model_copy(update={"global_batch_tokens": PAST_CAP_BATCH_FACTOR * batch})
    seconds = None  # the larger batch's time, where a plan within the cap meets the deadline there
    try:
        other = search(larger).plan
        hours = hours_at_risk(other, Risk(larger.risk))
        seconds = hours * SECONDS_PER_HOUR
        found = f"{other.num_gpus:,} x {other.gpu} finish in {duration_words(seconds)} at {larger.risk.value}"
    except InfeasiblePlan as exc:
        found = exc.fix if exc.constraint is Constraint.DEADLINE and exc.more_gpus_help else ""
        past_cap = past_the_cap_plan(exc, larger, search) if found else None
    if found:
        words += (
            f"; at {PAST_CAP_BATCH_FACTOR}x that batch, --global-batch-tokens {larger.global_batch_tokens}:"
            f" {found} (a larger batch changes the training)"
        )
    else:
        words += LARGER_BATCH_WORDS
    if seconds is None:
        return answer.but(fix=answer.fix + words, larger_batch=past_cap)
    # typed, as with_batch_fix's: the app's card words it (review s45 M3)
    return answer.but(fix=answer.fix + words, batch_tokens=larger.global_batch_tokens, batch_seconds=seconds)


def past_the_cap_plan(answer: InfeasiblePlan, larger: PlanRequest, search: Search) -> CountPastInventory | None:
    """The plan at ``larger``'s batch on the type and up to the count cap ``answer`` names
    (``raised_cap``), typed for the app to word (app53 M1: the 中文 page dropped the only fix that
    met a 1-day deadline): that type searched up to that count; None where the answer names none or
    the search finds none."""
    named = answer.raised_cap
    if named is None:
        return None
    capped = larger.model_copy(update={"max_gpus": named.num_gpus, "gpus": {named.gpu: None}})
    try:
        other = search(capped, probe=False).plan
    except InfeasiblePlan:
        return None
    batch = larger.global_batch_tokens
    return CountPastInventory(
        other.gpu,
        other.num_gpus,
        hours_at_risk(other, Risk(larger.risk)) * SECONDS_PER_HOUR,
        layout=other.layout_words,
        risk=larger.risk.value,
        batch_tokens=batch,
        batch_change=None if batch is None else PAST_CAP_BATCH_FACTOR - 1.0,
    )
