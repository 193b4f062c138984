"""Counts beyond the search: the smallest GPU count that fits, what a memory-bound answer's fix
names (issue 28), and whether a GPU-count cap binds (``cap_diagnosis``).

When no candidate within the inventory fits in memory, the diagnosis (planner/search/diagnosis.py)
knows only the rows it was given. :func:`memory_fix` scores the counts above the inventory with
the same candidate generator and memory model as the plan, in growing windows, and names the
smallest count at which some layout fits, is valid and reaches the batch: a whole GPU count that
was checked, not a multiplier of one row's degrees. docs/ilp.md ("Infeasibility diagnosis").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from planner.catalog.hardware import Catalog
from planner.errors import Constraint, CountPastInventory, InfeasiblePlan
from planner.fmt import duration_words, money
from planner.layout import ActivationCheckpointing
from planner.model.settings import ModelingSettings
from planner.request import LARGER_BATCH_WORDS, CountLimits, PlanRequest, requested_batch_tokens
from planner.search.diagnosis import diagnose
from planner.search.ilp import check_rows
from planner.search.score import scored_table, search_space
from planner.search.space import DEFAULT_MAX_GPUS, build_candidates
from planner.stack_rules import sequence_split_stacks

__all__ = [
    "CAP_PROBE_FACTOR",
    "CAP_PROBE_MIN",
    "PROBE_GROWTH",
    "PROBE_MAX_GPUS",
    "FittingCount",
    "cap_diagnosis",
    "deadline_fix",
    "memory_fix",
    "smallest_fitting_count",
]

# When a cap left the search empty, the counts up to this many times the cap are scored to tell
# whether the cap binds (docs/ilp.md, "GPU-count limits").
CAP_PROBE_FACTOR = 8
CAP_PROBE_MIN = 4 * DEFAULT_MAX_GPUS
# Each window of the probe reaches this many times further than the last (the first starts past
# the searched count); no count above PROBE_MAX_GPUS is tried (the largest runs published use
# ~16-25k GPUs: Llama 3 405B on 16,384 H100).
PROBE_GROWTH = 8
PROBE_MAX_GPUS = 65536


@dataclass(frozen=True)
class FittingCount:
    """The smallest count of one GPU type at which a candidate fits, with that candidate."""

    gpu: str
    num_gpus: int
    layout: str  # Layout.describe() (and its recompute) of the fitting candidate with the least memory
    need_gib: float
    capacity_gib: float
    time_to_train_s: float  # that candidate's, as the limits judge it (ScoredTable.limit_figures)
    batch_tokens: int = 0  # its global batch (the request's within the batch tolerance)
    # the least cost at that count of the candidates that pass, as a budget judges it (a deadline
    # fix's GPUs may cost more than the request's budget: trial s43)
    cost_usd: float = float("nan")
    label: str | None = None  # that candidate's ScoredTable.row_label, as the JSON's named plans give it

    def batch_words(self, requested: int) -> str:
        """', at a global batch of 4,079,616 tokens (-2.7 %)' where it is not the one asked for
        (trial s38: a deadline fix named a plan at another batch without a word)."""
        if not self.batch_tokens or self.batch_tokens == requested:
            return ""
        return f", at a global batch of {self.batch_tokens:,} tokens ({self.batch_tokens / requested - 1:+.1%})"


def smallest_fitting_count(
    request: PlanRequest,
    catalog: Catalog,
    gpu: str,
    searched: int,
    settings: ModelingSettings,
    deadline_s: float | None = None,
) -> FittingCount | None:
    """The fewest ``gpu`` GPUs above ``searched`` at which some candidate passes the memory,
    divisibility and batch constraints (and meets ``deadline_s``, given one); None when no count
    up to PROBE_MAX_GPUS does.

    Windows (searched, 8 x searched], ... cover the search's count grid (whole nodes on a ~1.25x
    grid, at powers of two and at three times them); the whole-node counts between the last grid count that failed
    and the first that fits are then scored too, so the answer is the smallest whole-node count."""
    low = searched
    while low < PROBE_MAX_GPUS:
        high = min(max(low * PROBE_GROWTH, 8), PROBE_MAX_GPUS)
        found = _first_fit(request, catalog, gpu, (low, high), settings, (), deadline_s)
        if found is not None:
            below, fit = found
            node = catalog.node(catalog.gpu(gpu).default_node).gpus_per_node
            between = tuple(range((below // node + 1) * node, fit.num_gpus, node))
            if between:
                refined = _first_fit(request, catalog, gpu, (below, fit.num_gpus - 1), settings, between, deadline_s)
                fit = fit if refined is None else refined[1]
            return fit
        low = high
    return None


def _first_fit(
    request: PlanRequest,
    catalog: Catalog,
    gpu: str,
    window: tuple[int, int],
    settings: ModelingSettings,
    extra: tuple[int, ...],
    deadline_s: float | None,
) -> tuple[int, FittingCount] | None:
    """Score the counts in window = (low, high] (with ``extra``); the largest count tried below
    the first that fits (and meets ``deadline_s``; ``low`` when none) and that fit, or None."""
    low, high = window
    space = replace(search_space(request, high), min_gpus=low + 1, extra_counts=extra)
    c = build_candidates(request.model, catalog, {gpu: high}, space)
    if len(c) == 0:
        return None
    # Every row that fits: the least memory need below is read over all of them.
    table = scored_table(request, catalog, c, [gpu], space, settings, prune_dominated=False)
    checks = check_rows(table, deadline_s=deadline_s)
    ok = checks.memory & checks.divisibility & checks.batch & checks.deadline
    if not ok.any():
        return None
    count = int(table.num_gpus[ok].min())
    tried = table.num_gpus[table.num_gpus < count]
    rows = np.flatnonzero(ok & (table.num_gpus == count))
    if (~c.offload[rows].astype(bool)).any():  # a layout that keeps its states on the GPUs first
        rows = rows[~c.offload[rows].astype(bool)]
    row = int(rows[np.argmin(table.memory_need_gib[rows])])
    offload = " with CPU offload" if c.offload[row] else ""
    # trial s29b: the layout without its recompute did not fit when estimated as printed
    training, layout = c.training(row), c.layout(row)
    ac = (
        ""
        if training.activation_checkpointing == ActivationCheckpointing.NONE
        else f", ac {training.describe_ac(layout.pp)}"
    )
    fit = FittingCount(
        gpu=gpu,
        num_gpus=count,
        layout=layout.describe() + ac + offload,
        need_gib=float(table.memory_need_gib[row]),
        capacity_gib=float(table.capacity_gib[row]),
        time_to_train_s=float(checks.time_s[row]),  # as the deadline judged it
        batch_tokens=int(table.extra["batch_tokens"][row]),
        label=table.row_label(row),
        cost_usd=float(np.nanmin(checks.cost_usd[rows])) if np.isfinite(checks.cost_usd[rows]).any() else np.nan,
    )
    return (int(tried.max()) if len(tried) else low), fit


def least_past_the_search(
    request: PlanRequest,
    catalog: Catalog,
    searched: dict[str, int],
    settings: ModelingSettings,
    deadline_s: float | None = None,
) -> FittingCount | None:
    """Of each type's ``smallest_fitting_count`` past its searched count, the one that needs the
    fewest times that count (then the fewest GPUs); None when no type has one."""
    found = [
        f for g, n in searched.items() if (f := smallest_fitting_count(request, catalog, g, n, settings, deadline_s))
    ]
    return min(found, key=lambda f: (f.num_gpus / searched[f.gpu], f.num_gpus), default=None)


def memory_fix(
    error: InfeasiblePlan,
    request: PlanRequest,
    catalog: Catalog,
    searched: dict[str, int],
    settings: ModelingSettings,
) -> InfeasiblePlan:
    """``error`` (a memory-bound answer) with its fix replaced by the smallest checked count of
    the GPU type that needs the fewest times its searched count; unchanged for other constraints."""
    if error.constraint is not Constraint.MEMORY:
        return error
    best = least_past_the_search(request, catalog, searched, settings)
    if best is None:
        types = ", ".join(searched)
        fix = (
            f"no count of {types} GPUs up to {PROBE_MAX_GPUS:,} has a layout that fits and reaches the batch: "
            "a GPU type with more memory, or another global batch or sequence length"
        )
        if stacks := sequence_split_stacks(request.stack, int(request.seq_len or 0)):
            fix += f"; {request.stack} has no context parallelism to split the sequence ({', '.join(stacks)} have)"
    else:
        fix = (
            f"use at least {best.num_gpus} {best.gpu} GPUs, the smallest count that fits "
            f"({best.layout}: {best.need_gib:.1f} of {best.capacity_gib:.1f} GiB"
            f"{best.batch_words(requested_batch_tokens(request))})"
        )
    # trial s33 (app): its sentence advised "shard over more GPUs" where no count fits
    return error.but(fix=fix, more_gpus_help=best is not None)


def deadline_fix(
    error: InfeasiblePlan,
    request: PlanRequest,
    catalog: Catalog,
    searched: dict[str, int],
    settings: ModelingSettings,
    joined: str = " or ",
) -> InfeasiblePlan:
    """``error`` (a deadline-bound answer on an inventory: its rows stop at the GPUs on hand) with
    the smallest checked count above the inventory that meets the deadline added to its fix after
    ``joined`` (typed in ``more_gpus``), or word that none up to PROBE_MAX_GPUS does; unchanged for
    other constraints. plan's answer and each job's of a portfolio (planner/api/portfolio_answer.py)."""
    deadline_s = error.available
    if error.constraint is not Constraint.DEADLINE or deadline_s is None:
        return error
    best = least_past_the_search(request, catalog, searched, settings, deadline_s)
    if best is None:
        batch = requested_batch_tokens(request)  # each data-parallel rank needs a sequence of it
        more = (
            # trial s28d: "up to 65,536" beside an inventory of 2,048 read as a misprint: it is the probe
            f"; no count of {', '.join(searched)} GPUs, even past the inventory up to {PROBE_MAX_GPUS:,}, meets the"
            f" deadline at a global batch of {batch:,} tokens"
        )
        # the diagnosis's fix may name the batch that does already (review s28: two batch clauses)
        if error.batch_tokens is None:
            more += LARGER_BATCH_WORDS
    else:
        more = (
            f"{joined}{best.num_gpus:,} {best.gpu} GPUs, more than the inventory has "
            f"({best.layout} finishes in {duration_words(best.time_to_train_s)}"
            f"{best.batch_words(requested_batch_tokens(request))})"
        ) + over_budget_words(best, request)
    count = None if best is None else named_count(best, request)
    return error.but(fix=error.fix + more, more_gpus_help=best is not None, more_gpus=count)


def named_count(best: FittingCount, request: PlanRequest) -> CountPastInventory:
    """``best`` typed for the interfaces, with what the CLI's words add: its batch where
    ``batch_words`` names one, its cost where ``over_budget_words`` says it breaks the budget."""
    asked = requested_batch_tokens(request)
    batch = best.batch_tokens if best.batch_words(asked) else None
    over = bool(over_budget_words(best, request))
    return CountPastInventory(
        best.gpu,
        best.num_gpus,
        best.time_to_train_s,
        layout=best.label,
        batch_tokens=batch,
        batch_change=None if batch is None else batch / asked - 1,
        cost_usd=best.cost_usd if over else None,
        budget_usd=request.budget_usd if over else None,
    )


def over_budget_words(best: FittingCount, request: PlanRequest) -> str:
    """'; at that count it costs $3.52M at p80, over the $3.00M budget' where a deadline fix's GPUs
    break the request's budget (trial s43: the fix named 648 H100 without a word that they cost 17 %
    more than the budget the same request set)."""
    budget = request.budget_usd
    if budget is None or not best.cost_usd > budget:
        return ""
    return (
        f"; at that count it costs {money(best.cost_usd)} at {request.risk.value}, over the request's"
        f" {money(budget)} budget"
    )


def cap_diagnosis(
    within: InfeasiblePlan,
    request: PlanRequest,
    catalog: Catalog,
    gpus: dict[str, int | None],
    limits: CountLimits,
    deadline_s: float | None,
    settings: ModelingSettings,
) -> InfeasiblePlan:
    """Why a capped search found nothing: score the counts up to CAP_PROBE_FACTOR x the cap (never
    past an inventory) and diagnose them with the caps as limits, so the answer names the cap when
    more GPUs than it allows would do (constraint 'inventory', docs/ilp.md). Where the probe binds
    on the same layout or batch rule as the search within the caps (``within``), more GPUs change
    nothing and the search's own answer stands: it cites the counts searched, not the probe's."""
    probed = _probe_diagnosis(request, catalog, gpus, limits, deadline_s, settings)
    same_rule = probed.constraint == within.constraint in (Constraint.DIVISIBILITY, Constraint.BATCH)
    return within if same_rule else probed


def _probe_diagnosis(
    request: PlanRequest,
    catalog: Catalog,
    gpus: dict[str, int | None],
    limits: CountLimits,
    deadline_s: float | None,
    settings: ModelingSettings,
) -> InfeasiblePlan:
    probe: dict[str, int | None] = {}
    for gpu, limit in limits.limits.items():
        wider = max(limit * CAP_PROBE_FACTOR, CAP_PROBE_MIN)
        probe[gpu] = limit if gpu not in limits.caps else min(gpus[gpu] or wider, wider)
    largest = max(n for n in probe.values() if n is not None)
    space = replace(search_space(request, largest), extra_counts=tuple(sorted(set(limits.limits.values()))))
    c = build_candidates(request.model, catalog, probe, space)
    table = scored_table(request, catalog, c, list(gpus), space, settings)
    checks = check_rows(
        table, deadline_s=deadline_s, budget_usd=request.budget_usd, inventory=limits.limits, count_caps=limits.caps
    )
    assert not checks.feasible().any(), "the probe's rows within the limits are the search's rows"
    return diagnose(table, checks)
