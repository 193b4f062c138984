"""Why the single-job model has no feasible row: which constraint binds, by how much, and a fix.

:func:`planner.search.ilp.check_rows` evaluates every constraint per row into a :class:`RowChecks`;
when no row passes them all, :func:`diagnose` re-imposes them one at a time and turns the
first one that empties the candidate set into an :class:`InfeasiblePlan` with numbers and a
fix. The rules are in docs/ilp.md ("Infeasibility diagnosis").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from planner.errors import ROW_CONSTRAINTS, Constraint, InfeasiblePlan, NamedPlan
from planner.fmt import budget_amounts, duration_words, money
from planner.limits import MAX_BUDGET_USD, MAX_DAYS
from planner.search.ties import NEAR_TIE_FRACTION, fastest_near_cheapest, nearest_batch
from planner.units import SECONDS_PER_DAY

__all__ = ["RowChecks", "Unplanned", "binding_per_type", "diagnose"]

# What a budget answer says of the plan it names where that is not the cheapest but the fastest of
# the plans within NEAR_TIE_FRACTION of it (the app's card reads it: ui/infeasible_words.py).
NEAR_CHEAPEST_WORDS = f"the fastest within {NEAR_TIE_FRACTION:.0%} of the lowest cost"


class TableColumns(Protocol):
    """The columns of :class:`planner.search.ilp.ScoredTable` the diagnosis reads (a protocol,
    so this module does not import the ILP module that imports it)."""

    @property
    def gpu_id(self) -> np.ndarray: ...
    @property
    def num_gpus(self) -> np.ndarray: ...
    @property
    def capacity_gib(self) -> np.ndarray: ...
    @property
    def memory_need_gib(self) -> np.ndarray: ...
    @property
    def extra(self) -> dict[str, np.ndarray]: ...
    def row_label(self, row: int) -> str | None: ...


@dataclass(frozen=True, eq=False)
class RowChecks:
    """Per-row pass/fail of each constraint (bool arrays) and the limits they were checked against."""

    memory: np.ndarray  # fits, less the untimed rows below
    divisibility: np.ndarray
    batch: np.ndarray
    gpu_type: np.ndarray  # the row's GPU type has a non-zero inventory
    inventory: np.ndarray  # n_c <= inv[g(c)]
    deadline: np.ndarray
    budget: np.ndarray
    inventory_limits: dict[str, int] | None
    deadline_s: float | None
    budget_usd: float | None
    # Each row's time and cost as the limits judged them (ScoredTable.limit_figures): the
    # diagnosis cites these, so "needs 31 days" is the figure the 30-day deadline refused.
    time_s: np.ndarray
    cost_usd: np.ndarray
    # The types whose limit in ``inventory_limits`` is a GPU-count cap (max_gpus), not an inventory.
    count_caps: dict[str, int] = field(default_factory=dict)
    # Rows that fit but were left untimed (ScoredTable.dominated): a twin passes every check they
    # pass, so they change no answer; the counts in the messages include them.
    untimed: np.ndarray | None = None
    # The global batch (tokens) the search keeps rows at (``nearest_batch``); None: any.
    batch_target: int | None = None

    def passes(self, constraint: Constraint) -> np.ndarray:
        return getattr(self, constraint.value)

    def feasible(self) -> np.ndarray:
        ok = self.gpu_type.copy()
        for constraint in ROW_CONSTRAINTS:
            ok &= self.passes(constraint)
        return ok


@dataclass(frozen=True)
class Unplanned:
    """A GPU type with no feasible row (``--per-gpu``): the constraint that rules it out and, where
    that is the deadline, its fastest time as the deadline judged it (trial s47 L4: "no plan on
    h200-sxm (deadline)" said which, not by how far; ``RowChecks.time_s``)."""

    gpu: str
    constraint: Constraint
    fastest_s: float | None = None


def binding_per_type(gpu_ids: np.ndarray, checks: RowChecks, kept: np.ndarray) -> tuple[Unplanned, ...]:
    """For each allowed GPU type with no row in ``kept`` (the feasible rows the batch rule keeps),
    what rules it out: the constraint that empties its rows, in ``diagnose``'s order, or the batch
    where the batch rule dropped all its feasible rows (trial s27: `plan --per-gpu` said "no plan on
    a100-80gb-sxm meets the request (deadline, budget, inventory, memory or batch)", not which)."""
    binding: list[Unplanned] = []
    planned = set(gpu_ids[kept].tolist())
    for gpu in dict.fromkeys(gpu_ids.tolist()):
        passing = (gpu_ids == gpu) & checks.gpu_type
        if gpu in planned or not passing.any():
            continue
        for constraint in ROW_CONSTRAINTS:
            before, passing = passing, passing & checks.passes(constraint)
            if not passing.any():
                fastest = float(np.nanmin(checks.time_s[before])) if constraint is Constraint.DEADLINE else None
                binding.append(Unplanned(str(gpu), constraint, fastest))
                break
        else:  # feasible rows, none at the batch the others meet (review s27)
            binding.append(Unplanned(str(gpu), Constraint.BATCH))
    return tuple(binding)


def diagnose(table: TableColumns, checks: RowChecks) -> InfeasiblePlan:
    """Name the constraint that empties the candidate set, with numbers and a fix.

    Rows of GPU types outside the inventory are out of scope from the start. The constraints
    are then re-imposed one at a time in :class:`Constraint` order (memory, divisibility,
    batch, inventory, deadline, budget); the first one after which no row is left binds,
    and its message is computed on the rows that passed the earlier ones.
    """
    passing = checks.gpu_type
    if not passing.any():
        return _explain_gpu_types(table, checks)
    for constraint in ROW_CONSTRAINTS:
        narrowed = passing & checks.passes(constraint)
        if not narrowed.any():
            return _EXPLAIN[constraint](table, checks, passing)
        passing = narrowed
    raise AssertionError("diagnose() called on a table with a feasible row")


def _explain_gpu_types(table: TableColumns, checks: RowChecks) -> InfeasiblePlan:
    types = ", ".join(sorted(set(table.gpu_id.tolist()))) or "none"
    return InfeasiblePlan(
        Constraint.INVENTORY,
        f"no candidate uses a GPU type in the inventory ({_inventory_text(checks)}); candidate GPU types: {types}",
        "add GPUs of one of those types to the inventory",
        required=1,
        available=0,
    )


def _explain_memory(table: TableColumns, checks: RowChecks, passing: np.ndarray) -> InfeasiblePlan:
    # Rows whose offloaded states overflow the host are explained by the host; the GPU's need
    # is read on the others (when there are any).
    host = _host_bound(table, passing)
    device = passing & ~host if (passing & ~host).any() else passing
    # Compare like with like: the smallest need on the allowed GPU type with the most memory.
    capacity = float(np.max(table.capacity_gib[device]))
    largest = device & (table.capacity_gib == capacity)
    pool = np.flatnonzero(largest & checks.divisibility if (largest & checks.divisibility).any() else largest)
    row = int(pool[np.argmin(table.memory_need_gib[pool])])
    need = float(table.memory_need_gib[row])
    detail = f"needs {need:.1f} GiB per GPU, the largest allowed GPU has {capacity:.1f} GiB"
    if need <= capacity:
        detail += " less the headroom the fit rule keeps free"
    if checks.count_caps:
        detail += f" (at up to {int(table.num_gpus[passing].max())} GPUs, beyond the max_gpus cap)"
    if host.any():
        rows = np.flatnonzero(host)
        least = int(rows[np.argmin(table.extra["host_need_gib"][rows])])
        detail += (
            f"; with offload a node's states need {table.extra['host_need_gib'][least]:,.0f} GiB of host memory, "
            f"its host allows {table.extra['host_capacity_gib'][least]:,.0f} GiB"
        )
    return InfeasiblePlan(Constraint.MEMORY, detail, _memory_fix(table, passing), required=need, available=capacity)


def _host_bound(table: TableColumns, passing: np.ndarray) -> np.ndarray:
    """The rows whose offloaded states do not fit their node's host memory (planner/model/host.py;
    none when the table has no host columns)."""
    if "host_need_gib" not in table.extra or "host_capacity_gib" not in table.extra:
        return np.zeros_like(passing)
    return passing & (table.extra["host_need_gib"] > table.extra["host_capacity_gib"])


def _memory_fix(table: TableColumns, passing: np.ndarray) -> str:
    """The table's own fix: more GPUs than it searched. No count is named here: a count is named
    only once it was checked to fit (planner/count_probe.py replaces this fix in plan())."""
    searched = int(table.num_gpus[passing].max())
    return (
        f"more GPUs than the {searched} searched, to shard the states and activations over "
        "(FSDP, tensor or pipeline parallel), or a GPU with more memory"
    )


def _with_untimed(checks: RowChecks, passing: np.ndarray, *also: np.ndarray) -> int:
    """How many rows ``passing`` holds, with the untimed rows of the allowed types that pass
    ``also`` (they fit: memory passes them)."""
    if checks.untimed is None:
        return int(passing.sum())
    untimed = checks.untimed & checks.gpu_type
    for check in also:
        untimed = untimed & check
    return int((passing | untimed).sum())


def _explain_divisibility(table: TableColumns, checks: RowChecks, passing: np.ndarray) -> InfeasiblePlan:
    return InfeasiblePlan(
        Constraint.DIVISIBILITY,
        f"none of the {_with_untimed(checks, passing)} candidates that fit in memory "
        f"({_count_range(table, passing)} GPUs) has a valid layout (heads % tp, layers % pp, "
        "degrees multiplying to the GPU count, tp within the scale-up domain)",
        "allow other GPU counts or tp/pp degrees",
    )


def _explain_batch(table: TableColumns, checks: RowChecks, passing: np.ndarray) -> InfeasiblePlan:
    return InfeasiblePlan(
        Constraint.BATCH,
        f"none of the {_with_untimed(checks, passing, checks.divisibility)} valid layouts that fit "
        f"({_count_range(table, passing)} GPUs) reaches the target global batch within tolerance",
        "widen the batch tolerance (batch_tolerance, --batch-tolerance) or pick a global batch the "
        "data-parallel degrees divide",
    )


def _explain_inventory(table: TableColumns, checks: RowChecks, passing: np.ndarray) -> InfeasiblePlan:
    limits = checks.inventory_limits or {}
    best: tuple[float, str, int] | None = None
    for gpu in sorted(set(table.gpu_id[passing].tolist())):
        smallest = int(table.num_gpus[passing & (table.gpu_id == gpu)].min())
        shortfall = smallest / limits[gpu]
        if best is None or shortfall < best[0]:
            best = (shortfall, gpu, smallest)
    assert best is not None
    _, gpu, smallest = best
    if gpu in checks.count_caps:
        return InfeasiblePlan(
            Constraint.INVENTORY,
            f"the smallest plan that fits needs {smallest} {gpu} GPUs, the GPU-count cap allows "
            f"{gpu}<={limits[gpu]} (max_gpus)",
            f"raise max_gpus (--max-gpus) to {smallest}",
            required=smallest,
            available=limits[gpu],
        )
    return InfeasiblePlan(
        Constraint.INVENTORY,
        f"the smallest plan that fits needs {smallest} {gpu} GPUs, the inventory allows {gpu}<={limits[gpu]}",
        f"allow {smallest} {gpu} GPUs or a GPU type with more memory",
        required=smallest,
        available=limits[gpu],
    )


def _explain_deadline(table: TableColumns, checks: RowChecks, passing: np.ndarray) -> InfeasiblePlan:
    T = checks.time_s
    fastest = float(T[passing].min())
    assert checks.deadline_s is not None
    fix = allow_deadline_words(fastest)
    more_gpus_help, batch_tokens, batch_seconds, raised_cap = None, None, None, None
    bigger = checks.gpu_type & checks.memory & checks.divisibility & checks.batch & ~checks.inventory & checks.deadline
    if bigger.any():  # more GPUs than the inventory has would meet the deadline
        more_gpus_help = True
        rows = np.flatnonzero(bigger)
        row = int(rows[np.lexsort((T[rows], table.num_gpus[rows]))[0]])
        finish = f"{table.num_gpus[row]} {table.gpu_id[row]} finish in {duration_words(float(T[row]))}"
        if table.gpu_id[row] in checks.count_caps:
            fix += f" or raise max_gpus (--max-gpus) to {table.num_gpus[row]} ({finish})"
            raised_cap = NamedPlan(str(table.gpu_id[row]), int(table.num_gpus[row]), float(T[row]))
        else:
            fix += f" or more GPUs ({finish})"
    elif (bound := _batch_bound_fix(table, checks)) is not None:
        fix += bound[0]
        batch_tokens, batch_seconds = bound[1], bound[2]
    elif (beyond := checks.gpu_type & ~checks.inventory).any():  # rows past the limits were scored
        probed = " (probed past the max_gpus cap)" if checks.count_caps else ""
        fix += f"; no count up to {int(table.num_gpus[beyond].max()):,} GPUs{probed} meets the deadline"
        more_gpus_help = False
    # A search's rows stop at the inventory: count_probe.deadline_fix probes past it.
    return InfeasiblePlan(
        Constraint.DEADLINE,
        f"the fastest plan needs {duration_words(fastest)} with the allowed inventory ({_inventory_text(checks)})",
        fix,
        required=fastest,
        available=checks.deadline_s,
        more_gpus_help=more_gpus_help,
        batch_tokens=batch_tokens,
        batch_seconds=batch_seconds,
        raised_cap=raised_cap,
    )


def _batch_bound_fix(table: TableColumns, checks: RowChecks) -> tuple[str, int, float] | None:
    """When only the global batch keeps more GPUs from meeting the deadline (data parallelism
    needs at least one sequence per rank and step), the batch that would let them, in words, and
    in tokens, with its time. Its time is the fastest of that batch's and count's rows (trial s28c: an arbitrary
    row's, 46.4 h where the plan at that batch takes 42.7 h)."""
    bound = checks.gpu_type & checks.memory & checks.divisibility & ~checks.batch & checks.inventory & checks.deadline
    if not bound.any() or "batch_tokens" not in table.extra:
        return None
    rows = np.flatnonzero(bound)
    batch, T = table.extra["batch_tokens"], checks.time_s
    # smallest such batch, then fewest GPUs, then the fastest
    row = int(rows[np.lexsort((T[rows], table.num_gpus[rows], batch[rows]))[0]])
    words = (
        # trial s30: "4,734,976 tokens" read as an odd batch to pick: it is a floor, a sequence per rank
        f"; the global batch caps the GPU count: a global batch of at least {int(batch[row]):,} tokens "
        f"(global_batch_tokens, --global-batch-tokens; a sequence for each data-parallel rank) lets "
        f"{table.num_gpus[row]} {table.gpu_id[row]} finish in {duration_words(float(T[row]))}"
    )
    return words, int(batch[row]), float(T[row])


def _explain_budget(table: TableColumns, checks: RowChecks, passing: np.ndarray) -> InfeasiblePlan:
    C, T = checks.cost_usd, checks.time_s
    rows = np.flatnonzero(passing)
    cheapest = float(C[rows].min())
    # the fastest within NEAR_TIE_FRACTION of the cheapest (trial s42: "the cheapest plan (32 x
    # h100-sxm, 653.1 days)" where 512 finished in 41 days for the same $2.55M), and its own cost
    # quoted and asked for (app53 H1: the lowest cost was quoted beside the plan named, and a
    # budget raised to it bought the 469-day plan, not the 118-day one named)
    row = _bought_at(table, checks, rows, float(C[fastest_near_cheapest(C, T, rows)]))
    named_cost = float(C[row])
    budget = checks.budget_usd
    assert budget is not None
    cost_words, budget_words, raise_to = budget_amounts(named_cost, budget)
    # trial s28b: the answer named no plan, so "$3.2M" could not be looked up; trial s28d: nor how
    # long it takes (the cheapest of 2,048 H100 was 8 of them for 2,289 days)
    # at most NEAR_TIE_FRACTION over the cheapest: ``_bought_at`` picks under the near tie's own cost
    near = "" if named_cost == cheapest else f": {NEAR_CHEAPEST_WORDS}"
    which = f" ({table.num_gpus[row]} x {table.gpu_id[row]}, {duration_words(float(T[row]))}{near})"
    scope = f"the cheapest plan that meets the deadline{which}" if checks.deadline_s else f"the cheapest plan{which}"
    fix, fastest = f"raise the budget to {raise_to}" if named_cost <= MAX_BUDGET_USD else PAST_BUDGET_LIMIT_WORDS, None
    if checks.deadline_s is not None:
        within_budget = (
            checks.gpu_type & checks.memory & checks.divisibility & checks.batch & checks.inventory & checks.budget
        )
        if within_budget.any() and deadline_takes(slowest := float(T[within_budget].min())):
            fastest = slowest
            fix += f" or extend the deadline to {duration_words(fastest, round_up=True)}"
    return InfeasiblePlan(
        Constraint.BUDGET,
        f"{scope} costs {cost_words} > {budget_words}",
        fix,
        required=named_cost,
        available=budget,
        named=NamedPlan(
            str(table.gpu_id[row]), int(table.num_gpus[row]), float(T[row]), table.row_label(row), named_cost
        ),
        within_budget_seconds=fastest,
        deadline_seconds=checks.deadline_s,
    )


def _bought_at(table: TableColumns, checks: RowChecks, rows: np.ndarray, budget: float) -> int:
    """The row of ``rows`` a budget of ``budget`` buys, as the search keeps them (app53 H1): those
    within it, at the batch asked for (``nearest_batch``: where a row meets the batch exactly, the
    rows off it drop out), then the fastest near their cheapest. That row, at its own cost, is
    what a budget raised to that cost buys again."""
    C, T = checks.cost_usd, checks.time_s
    within = rows[C[rows] <= budget]
    if checks.batch_target is not None and "batch_tokens" in table.extra:
        within = within[nearest_batch(table.extra["batch_tokens"][within], checks.batch_target)]
    return fastest_near_cheapest(C, T, within)


# A fix past what the inputs take (planner/limits.py) names none (buyer trial s48 L1: "allow
# 1,368,891 days", which --deadline-days refuses past a century): the request itself is too big.
PAST_DEADLINE_LIMIT_WORDS = f"no deadline up to the {MAX_DAYS:,}-day limit (a century) fits: train fewer tokens"
PAST_BUDGET_LIMIT_WORDS = f"no budget up to the {money(MAX_BUDGET_USD)} limit fits: train fewer tokens"


def deadline_takes(seconds: float) -> bool:
    """Whether a deadline of ``seconds`` is one --deadline-days and the jobs files take (MAX_DAYS)."""
    return seconds <= MAX_DAYS * SECONDS_PER_DAY


def allow_deadline_words(required_s: float) -> str:
    """'allow 27.7 days' (rounded up), or that no deadline the inputs take fits."""
    return (
        f"allow {duration_words(required_s, round_up=True)}"
        if deadline_takes(required_s)
        else PAST_DEADLINE_LIMIT_WORDS
    )


_EXPLAIN = {
    Constraint.MEMORY: _explain_memory,
    Constraint.DIVISIBILITY: _explain_divisibility,
    Constraint.BATCH: _explain_batch,
    Constraint.INVENTORY: _explain_inventory,
    Constraint.DEADLINE: _explain_deadline,
    Constraint.BUDGET: _explain_budget,
}


def _inventory_text(checks: RowChecks) -> str:
    if checks.inventory_limits is None:
        return "no inventory limit"
    caps, limits = checks.count_caps, checks.inventory_limits
    if caps and set(caps) == set(limits) and len(set(caps.values())) == 1:
        return f"GPU counts capped at {next(iter(caps.values()))} per type by max_gpus"
    text = ", ".join(f"{gpu}<={count}" + (" (max_gpus cap)" if gpu in caps else "") for gpu, count in limits.items())
    return text or "empty"


def _count_range(table: TableColumns, rows: np.ndarray) -> str:
    low, high = int(table.num_gpus[rows].min()), int(table.num_gpus[rows].max())
    return str(low) if low == high else f"{low}-{high}"
