"""One job of a portfolio or fleet (planner/search/portfolio.py, fleet.py): its scored candidates and
limits (:class:`JobCandidates`), the rows it may run on alone (:func:`job_rows`), and where it has none,
the answer in the jobs file's own keys (deadline_days, horizon_days, start_after_days)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from planner.errors import Constraint, InfeasiblePlan
from planner.fmt import duration_words
from planner.search.diagnosis import allow_deadline_words, deadline_takes, diagnose
from planner.search.ilp import ScoredTable, check_rows, nearest_batch, pareto_mask
from planner.search.ties import tie_order
from planner.units import SECONDS_PER_DAY

__all__ = ["RENT_BUDGET_WORDS", "JobCandidates", "days_field", "job_finish_s", "job_rows", "limit_key"]


# What a budget bounds where a job's table is priced at rent (plan's, a fleet's rented jobs).
RENT_BUDGET_WORDS = "its rent at the job's risk quantile, which a budget bounds"


@dataclass(frozen=True)
class JobCandidates:
    """One job's scored candidates and its own limits (times from the start of the horizon)."""

    name: str
    table: ScoredTable
    deadline_s: float | None = None
    # on the cost its answer reports (a portfolio's: candidate_rows' reported_costs); size_fleet ignores it
    budget_usd: float | None = None
    # The requested global batch (tokens; needs table.extra["batch_tokens"]): of the rows feasible
    # on their own, only those of the achievable batch nearest it are offered, as in solve_single.
    batch_target: int | None = None
    # The horizon of the portfolio the job is part of (None: unknown or none): a deadline answer
    # whose plan ends past it names horizon_days too (buyer trial s45: "set deadline_days to
    # 233.804 or more" under a 90-day horizon, which then refused it).
    horizon_s: float | None = None
    # r_j: the job starts no earlier (a jobs file's start_after_days; trial s51 H4: every job was
    # available on day 0); its deadline still counts from day 0
    release_s: float = 0.0
    # the jobs of the same portfolio (fleet) it starts after, by name: (i, j) in P for each i named
    # (a jobs file's after; docs/ilp.md "Precedence"); its deadline still counts from day 0
    after: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not (math.isfinite(self.release_s) and self.release_s >= 0):
            raise ValueError(f"JobCandidates.release_s: expected a finite time >= 0, got {self.release_s!r}")


def job_finish_s(job: JobCandidates, horizon_s: float | None) -> float | None:
    limits = [t for t in (job.deadline_s, horizon_s) if t is not None]
    return min(limits) if limits else None


def job_rows(
    job: JobCandidates,
    inventory: Mapping[str, int] | None,
    finish_by: float | None,
    budget_usd: float | None,
    prune_cost: np.ndarray | None,
    budget_words: str = RENT_BUDGET_WORDS,
) -> np.ndarray:
    """Rows of one job that are feasible on their own, at the batch nearest its target, minus
    dominated ones (if pruning): those that end by ``finish_by`` from its release (``release_s``).
    ``budget_words``: what the table's cost, which a budget bounds, is."""
    window = None if finish_by is None else finish_by - job.release_s
    if window is not None and window <= 0:
        raise _no_window(job, finish_by)
    checks = check_rows(
        job.table, deadline_s=window, budget_usd=budget_usd, inventory=inventory, batch_target=job.batch_target
    )
    rows = np.flatnonzero(checks.feasible())
    if len(rows) == 0:
        reason = diagnose(job.table, checks)
        detail, fix = f"job {job.name!r}: {reason.detail}", reason.fix
        if reason.constraint is Constraint.DEADLINE and job.release_s > 0:
            detail, fix = _released_deadline_answer(job, finish_by, reason.required, detail)
        elif reason.constraint is Constraint.DEADLINE:
            detail, fix = _deadline_answer(job, finish_by, reason.required, detail, fix)
        if reason.constraint is Constraint.BUDGET:
            # trial s27: a job shown at $25k owned cost was refused a $30k budget "costs $89.6k"
            detail += f" ({budget_words})"
        raise reason.but(detail=detail, fix=fix, job=job.name)
    if job.batch_target is not None:
        rows = rows[nearest_batch(job.table.extra["batch_tokens"][rows], job.batch_target)]
    # As plan's: of rows tied at an efficiency ceiling the pruning keeps the first, so the one the
    # model rates fastest goes first (trial s25: portfolio chose a recomputing layout plan does not).
    rows = tie_order(job.table, rows)
    if prune_cost is None:
        return rows
    table = job.table
    return rows[
        pareto_mask(table.gpu_id[rows], prune_cost[rows], table.time_to_train_s[rows], size=table.num_gpus[rows])
    ]


def _deadline_answer(
    job: JobCandidates, finish_by: float | None, required_s: float | None, detail: str, fix: str
) -> tuple[str, str]:
    """A job's deadline answer: which limit ended first, and a fix naming every jobs-file key that
    ends before the fastest plan does (its deadline_days, the horizon_days): raising one alone
    would be refused by the other (buyer trial s45)."""
    horizon_s = job.horizon_s if finish_by == job.deadline_s else finish_by
    if finish_by != job.deadline_s:
        # The horizon, not a deadline of the job's, set the limit (the job may have none).
        horizon = duration_words(finish_by or 0.0)
        ends = "ends first" if job.deadline_s is None else "ends before the job's deadline"
        detail += f" (the horizon of {horizon} {ends})"
    limits = (("deadline_days", job.deadline_s), ("horizon_days", horizon_s))
    short = [key for key, limit in limits if limit is not None and required_s and limit < required_s]
    if not required_s or (short == ["horizon_days"] and finish_by != job.deadline_s):
        return detail, fix + " (the horizon: horizon_days)"
    return _in_days_fields(required_s, detail, fix, short or ["deadline_days"])


def limit_key(job: JobCandidates, finish_by: float | None) -> str:
    """The jobs-file key of the limit ``finish_by`` is: the job's deadline_days, else horizon_days."""
    return "deadline_days" if finish_by == job.deadline_s else "horizon_days"


def _no_window(job: JobCandidates, finish_by: float | None) -> InfeasiblePlan:
    """A job released on or after its deadline (or the horizon): no time to run in (the jobs file
    refuses it before; the API's callers may not)."""
    day, key = (finish_by or 0.0) / SECONDS_PER_DAY, limit_key(job, finish_by)
    detail = (
        f"job {job.name!r}: released on day {job.release_s / SECONDS_PER_DAY:,g} (start_after_days), not"
        f" before its {key} of day {day:,g}, which counts from day 0"
    )
    fix = f"set start_after_days below {day:,g}, or raise {key}"
    return InfeasiblePlan(Constraint.DEADLINE, detail, fix, required=None, available=finish_by, job=job.name)


def _released_deadline_answer(
    job: JobCandidates, finish_by: float | None, required_s: float | None, detail: str
) -> tuple[str, str]:
    """A released job's deadline answer: the days between its release and its deadline (or the
    horizon), which count from day 0, and the two keys that would make room (trial s51 H4)."""
    release, limit = job.release_s / SECONDS_PER_DAY, (finish_by or 0.0) / SECONDS_PER_DAY
    key = limit_key(job, finish_by)
    detail += (
        f"; it starts on day {release:,g} at the earliest (start_after_days) and must end by day {limit:,g}"
        f" ({key}, from day 0): {limit - release:,.1f} days"
    )
    if not required_s:
        return detail, f"raise {key} or lower start_after_days"
    need = required_s / SECONDS_PER_DAY
    latest = math.floor((limit - need) * 10) / 10
    lower = f", or start_after_days to {latest:g} or less" if latest >= 0 else ""
    return detail, f"set {key} to {days_field(job.release_s + required_s)} or more{lower}"


def days_field(seconds: float) -> str:
    """The least number of days a jobs-file field needs to hold ``seconds``: rounded up to one
    decimal, as every duration prints (buyer trial s45: "233.804" beside "233.8" everywhere else),
    or to three under a day, where a tenth (2.4 hours) is too coarse (trial s27: a 79-minute job)."""
    decimals = 1 if seconds >= SECONDS_PER_DAY else 3
    scale = 10**decimals
    least = math.ceil(seconds / SECONDS_PER_DAY * scale - 1e-9) / scale
    return f"{least:.{decimals}f}".rstrip("0").rstrip(".")  # review s34: :g cut 1234.562 to 1234.56


def _in_days_fields(required_s: float, detail: str, fix: str, keys: list[str]) -> tuple[str, str]:
    """A job's deadline answer in the jobs file's own fields (``keys``) and unit, one figure in both
    places: the least number of days that does (``days_field``; trial s27: "allow 79 minutes" for a
    field written in days; trial s33: "needs 5.9 days ... allow 6 days (deadline_days = 5.871)", one
    figure three ways, the least below the "needs")."""
    if not deadline_takes(required_s):  # no field takes it (the fix says so: allow_deadline_words)
        return detail, fix
    days = days_field(required_s)
    detail = detail.replace(duration_words(required_s), f"{days} days", 1)
    allow = allow_deadline_words(required_s)
    field = f"set {' and '.join(keys)} to {days} or more"
    return detail, fix.replace(allow, field, 1) if allow in fix else f"{fix}; {field}"
