"""Time slots shared by the portfolio's many-job approximation (planner/search/portfolio.py) and fleet
(planner/search/fleet.py) ILPs: each job's rows (planner/search/job_candidates.py ``job_rows``) expanded
over the start slots of the horizon, the per-slot GPU usage constraints (docs/ilp.md), the list
schedule every answer is read back on, and the answers when jobs cannot run alone or cannot share
the inventory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from planner.errors import Constraint, InfeasiblePlan, PortfolioSearchStopped
from planner.fmt import counted
from planner.search.ilp import check_rows
from planner.search.job_candidates import JobCandidates, job_finish_s
from planner.search.solver import make_solver, run_solver
from planner.units import SECONDS_PER_DAY

# Seconds the slotted model's branch and bound may run before its incumbent is taken: the 18-job
# bench case (bench/bench_plan.py) proved its optimum in 51-135 s on the 2-core machine; at 30 s its
# incumbent was 0.6 % above that optimum, at 10 s 4 %, far inside the bands of the jobs' times
# (2026-12-05). The slotted model approximates the schedule already (docs/ilp.md "Many jobs").
SLOTTED_TIME_LIMIT_S = 30.0
# Seconds it searches on where it had no schedule at all by then, before it gives up and says so:
# a 25-job file with tight deadlines ran 21 minutes without an answer until its user killed it
# (trial s36); the 18-job bench case has its first schedule in under a second.
SLOTTED_SEARCH_LIMIT_S = 270.0
# Seconds it runs where the lanes' schedule is within LANES_GAP of the bound LB already
# (planner/search/lanes.py): enough for the cases it proves at once to keep their answer (the 10-job
# bench case: ~1 s), and no more: the 18-job case's slotted optimum is 4 % above its lanes'.
CERTIFIED_SLOTTED_LIMIT_S = 2.0

__all__ = [
    "CERTIFIED_SLOTTED_LIMIT_S",
    "SLOTTED_SEARCH_LIMIT_S",
    "SLOTTED_TIME_LIMIT_S",
    "SlotOptions",
    "concat_options",
    "expand_starts",
    "held_slots",
    "jobs_infeasible",
    "list_schedule",
    "respecting",
    "shared_inventory_infeasible",
    "slot_length_s",
    "slotted_span_s",
    "solve_slotted",
    "subset_options",
    "usage_constraints",
]


@dataclass(frozen=True, eq=False)
class SlotOptions:
    """Every (job, row, start slot) a model may pick, one entry per array index."""

    job: np.ndarray
    row: np.ndarray
    gpu: np.ndarray
    num_gpus: np.ndarray
    cost_usd: np.ndarray
    start_slot: np.ndarray
    busy_slots: np.ndarray  # slots occupied from start_slot on (duration rounded up)
    start_s: np.ndarray
    end_s: np.ndarray

    @property
    def end_days(self) -> np.ndarray:
        """Each option's end in days, the unit the portfolio's objective and slot bound weigh."""
        return self.end_s / SECONDS_PER_DAY


def slot_length_s(horizon_s: float | None, num_slots: int) -> float | None:
    if num_slots < 1:
        raise ValueError(f"num_slots: expected >= 1, got {num_slots}")
    if horizon_s is not None and not (math.isfinite(horizon_s) and horizon_s > 0):
        raise ValueError(f"horizon: expected a positive duration, got {horizon_s!r}")
    if num_slots > 1 and horizon_s is None:
        raise ValueError("num_slots > 1 needs a horizon to cut into slots")
    return None if horizon_s is None else horizon_s / num_slots


def expand_starts(
    job_index: int, job: JobCandidates, rows: np.ndarray, num_slots: int, slot_s: float | None, finish_by: float | None
) -> SlotOptions:
    """Each row at each start slot from which it still finishes by ``finish_by``; a released job
    (``release_s``) starts at its release in the slot that holds it, and at no earlier slot."""
    table = job.table
    T = table.time_to_train_s[rows]
    starts = np.arange(num_slots)
    slot_start = starts * (slot_s or 0.0)
    # the offset into its slot of a start at the release (0 where there is none, so as before)
    offset = np.maximum(job.release_s - slot_start, 0.0)
    reachable = slot_start + (slot_s or np.inf) > job.release_s
    start_s = slot_start + offset
    end_s = start_s[None, :] + T[:, None]
    ok = (end_s <= (finish_by if finish_by is not None else np.inf) * (1 + 1e-12)) & reachable[None, :]
    row_at, slot_at = np.nonzero(ok)
    if slot_s is None:  # one slot and no horizon: every job starts at its release and holds slot 0
        busy = np.ones(len(row_at), dtype=np.int64)
    else:
        busy = np.maximum(np.ceil((offset[slot_at] + T[row_at]) / slot_s - 1e-9), 1).astype(np.int64)
    chosen = rows[row_at]
    return SlotOptions(
        job=np.full(len(chosen), job_index),
        row=chosen,
        gpu=table.gpu_id[chosen],
        num_gpus=table.num_gpus[chosen],
        cost_usd=table.cost_usd[chosen],
        start_slot=starts[slot_at],
        busy_slots=busy,
        start_s=start_s[slot_at],
        end_s=end_s[row_at, slot_at],
    )


def subset_options(options: SlotOptions, keep: np.ndarray) -> SlotOptions:
    return SlotOptions(**{name: getattr(options, name)[keep] for name in SlotOptions.__dataclass_fields__})


def concat_options(parts: Sequence[SlotOptions]) -> SlotOptions:
    names = SlotOptions.__dataclass_fields__
    return SlotOptions(**{name: np.concatenate([getattr(p, name) for p in parts]) for name in names})


def held_slots(start_slot: np.ndarray, busy_slots: np.ndarray, num_slots: int) -> int:
    """Slots whose GPU usage is bounded: the horizon's, and past it every slot an option still
    holds (a job started late in the portfolio's span may run beyond it; unbounded there, the
    model could plan jobs that overlap on more GPUs than the inventory has)."""
    return max(num_slots, int(np.max(start_slot + busy_slots, initial=0)))


def usage_constraints(
    problem: pulp.LpProblem, options: SlotOptions, y: list[pulp.LpVariable], num_slots: int, num_jobs: int, limit_of
) -> None:
    """For each GPU type g and slot t: sum of n_o y_o over options running in t <= limit_of(g)."""
    for gpu in sorted(set(options.gpu.tolist())):
        of_type = options.gpu == gpu
        limit = limit_of(gpu)
        for slot in range(held_slots(options.start_slot, options.busy_slots, num_slots)):
            running = np.flatnonzero(
                of_type & (options.start_slot <= slot) & (slot < options.start_slot + options.busy_slots)
            )
            if len(running) == 0:
                continue
            if isinstance(limit, (int, float)):  # skip slots where even each job's largest fits
                peak = np.zeros(num_jobs)
                np.maximum.at(peak, options.job[running], options.num_gpus[running])
                if peak.sum() <= limit:
                    continue
            used = pulp.LpAffineExpression((y[i], float(options.num_gpus[i])) for i in running)
            problem += used <= limit


def jobs_infeasible(failed: Sequence[tuple[str, InfeasiblePlan]]) -> InfeasiblePlan:
    """The jobs that cannot run alone (name, answer), all in one answer (trial s25: a second job's
    memory answer hid behind the first's deadline): under their constraint when they share one (the
    first one's figures), else ``Constraint.JOBS``; each job's own answer in ``jobs``. Where each is a
    late chain's (``InfeasiblePlan.chain``), each job runs alone: the heading says what ends them late."""
    first = failed[0][1]
    chains = all(exc.chain for _, exc in failed)
    heading = "cannot end in time after the jobs they start after (after)" if chains else "cannot run on their own"
    if len(failed) == 1:
        return first
    details = "; ".join(exc.detail for _, exc in failed)
    fixes = "; ".join(f"job {name!r}: {exc.fix}" for name, exc in failed)
    same = len({exc.constraint for _, exc in failed}) == 1
    return InfeasiblePlan(
        first.constraint if same else Constraint.JOBS,
        f"{len(failed)} jobs {heading}: {details}",
        fixes,
        required=first.required if same else None,
        available=first.available if same else None,
        jobs=tuple(failed),
    )


def respecting(order: Sequence[int], after: Sequence[Sequence[int]]) -> list[int]:
    """``order`` with each job moved after its predecessors where it came before one of them, the
    rest kept (the first job in ``order`` whose predecessors are all placed goes next): unchanged
    where ``order`` respects P already, as every model's order of starts does."""
    left, out, placed = list(order), list[int](), set[int]()
    while left:
        j = next(j for j in left if placed.issuperset(after[j]))
        left.remove(j)
        out.append(j)
        placed.add(j)
    return out


def list_schedule(
    order: Sequence[int],
    gpu: Sequence[str],
    num_gpus: Sequence[int],
    duration: Sequence[float],
    inventory: Mapping[str, int],
    release: Sequence[float] | None = None,
    after: Sequence[Sequence[int]] | None = None,
) -> list[float]:
    """Start times of a serial list schedule: each job, in ``order``, starts at the earliest time
    from its ``release`` (None: 0 for all) and its predecessors' ends (``after``: each job's, by
    index; None: none) at which its GPU type has its ``num_gpus`` free for its whole duration, given
    the jobs placed before it (every job fits the inventory alone). A job listed before one of its
    predecessors waits for it (``respecting``). Times in the unit of ``duration``."""
    start = [math.nan] * len(order)
    placed: list[int] = []
    if after is not None:
        order = respecting(order, after)
    for j in order:
        same = [k for k in placed if gpu[k] == gpu[j]]
        ready = 0.0 if release is None else release[j]
        if after is not None:
            ready = max([ready, *(start[i] + duration[i] for i in after[j])])
        for t in sorted({ready, *(end for k in same if (end := start[k] + duration[k]) > ready)}):
            end = t + duration[j]
            checks = [t, *(start[k] for k in same if t < start[k] < end)]
            if all(
                num_gpus[j] + sum(num_gpus[k] for k in same if start[k] <= tau < start[k] + duration[k])
                <= inventory[gpu[j]]
                for tau in checks
            ):
                start[j] = t
                break
        placed.append(j)
    return start


def shared_inventory_infeasible(
    jobs: Sequence[JobCandidates], inventory: Mapping[str, int], horizon_s: float | None, exact: bool
) -> InfeasiblePlan:
    """Each job fits alone, so the GPUs are too few for all of them together. A lower bound says
    how far off: for each finish time t (a job's deadline, or the horizon), the jobs due by t need
    at least their least GPU-time that meets it, and the inventory offers sum_g inv_g x t GPU-time
    by then over the types those jobs can run on (a relaxation). The first t where need exceeds
    offer is named (``Constraint.SHARED_INVENTORY``, GPU-seconds); where none does, the GPU-time
    suffices and the jobs do not pack, which only the exact model proves (trial s25: "need 1,210
    GPU-days, the inventory offers 1,280" read as a contradiction: the deadlines bound it)."""
    limits = ", ".join(f"{gpu}<={count}" for gpu, count in inventory.items())
    detail = f"the {len(jobs)} jobs cannot share the inventory ({limits})"
    fix = "add GPUs, lengthen the horizon or the deadlines, or drop a job"
    due = sorted(
        ((finish, job) for job in jobs if (finish := job_finish_s(job, horizon_s)) is not None), key=lambda d: d[0]
    )
    need, usable = 0.0, set()
    for count, (finish, job) in enumerate(due, start=1):
        window = finish - job.release_s  # each job fits alone, so it has rows that end in time from its release
        rows = np.flatnonzero(check_rows(job.table, deadline_s=window, inventory=inventory).feasible())
        need += float(np.min(job.table.num_gpus[rows] * job.table.time_to_train_s[rows]))
        usable |= set(job.table.gpu_id[rows].tolist())
        offered = sum(n for gpu, n in inventory.items() if gpu in usable) * finish
        if need > offered and (count == len(due) or due[count][0] > finish):
            detail += (
                f" in time: the jobs due by day {finish / SECONDS_PER_DAY:,.1f} ({counted(count, 'job')}) need at least"
                f" {need / SECONDS_PER_DAY:,.0f} GPU-days, the inventory offers"
                f" {offered / SECONDS_PER_DAY:,.0f} GPU-days by then"
            )
            return InfeasiblePlan(Constraint.SHARED_INVENTORY, detail, fix, required=need, available=offered)
    if due:
        pack = "no schedule of them does" if exact else "the slotted model found no schedule of them (exact=True may)"
        detail += (
            f": their GPU-days fit ({need / SECONDS_PER_DAY:,.0f} needed by day {due[-1][0] / SECONDS_PER_DAY:,.1f}),"
            f" but {pack} (each job's GPUs are fixed while it runs)"
        )
    return InfeasiblePlan(Constraint.SHARED_INVENTORY, detail, fix, required=need or None, available=None)


def solve_slotted(
    problem: pulp.LpProblem, solver: str, warm_start: bool, limit_s: float | None = None, search_on: bool = True
) -> tuple[bool | None, str]:
    """``run_solver`` for a slotted model: under ``limit_s`` (None: SLOTTED_TIME_LIMIT_S), its
    incumbent taken; where that stopped before any, None, or with ``search_on``
    SLOTTED_SEARCH_LIMIT_S more, then ``PortfolioSearchStopped``."""
    try:
        limit = SLOTTED_TIME_LIMIT_S if limit_s is None else limit_s
        return run_solver(problem, solver, limit, warm_start=warm_start, accept_incumbent=True)
    except RuntimeError:  # no schedule at all by the limit: search on, up to a bound
        if not search_on:
            return None, make_solver(solver)[1]
    try:
        return run_solver(problem, solver, SLOTTED_SEARCH_LIMIT_S, warm_start=warm_start, accept_incumbent=True)
    except RuntimeError as exc:
        total = SLOTTED_TIME_LIMIT_S + SLOTTED_SEARCH_LIMIT_S
        raise PortfolioSearchStopped(
            f"the schedule search found no schedule of the jobs in {total:.0f} s (none proven impossible either):"
            " loosen the tightest deadlines, drop or split off jobs, or add GPUs"
        ) from exc


def slotted_span_s(
    days: np.ndarray, job: np.ndarray, num_jobs: int, horizon_s: float | None, latest_release_s: float = 0.0
) -> float:
    """The time the slotted model cuts into slots, from each job's rows' ``days`` (``job``: each
    row's job): twice the jobs' fastest rows run one after another, which a serial schedule fits
    even with each start rounded to a slot, or the horizon where shorter. Not the horizon itself,
    nor twice the slowest rows' (trial s27: a 100-year horizon, or none, cut slots of 570 days,
    every job started in the first, and the answer cost 25 % more than under a 60-day horizon); a
    longer schedule only holds the owned inventory longer (a rented row costs its rent whenever it
    runs). ``latest_release_s``: the latest job's release, added (a job released past the span had
    no slot to start in)."""
    fastest = float(sum(np.min(days[job == j]) for j in range(num_jobs)))
    span = 2 * fastest * SECONDS_PER_DAY + latest_release_s
    return span if horizon_s is None else min(horizon_s, span)
