"""Job dependencies in a portfolio and a fleet (docs/ilp.md "Precedence"): the set P of pairs
i -> j, job j starting after job i ends, from each job's ``JobCandidates.after`` (a jobs file's
``after = [...]``). The one rule for a cycle, each job's earliest start along its chains (its heads),
the answer when a chain cannot end by a job's deadline, and S_j >= E_i in a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pulp

from planner.errors import Constraint, InfeasiblePlan
from planner.search.job_candidates import JobCandidates, days_field, limit_key
from planner.search.slots import jobs_infeasible, respecting
from planner.units import SECONDS_PER_DAY

__all__ = [
    "ChainStarts",
    "chain_ends",
    "chain_starts",
    "chained",
    "cycle_of",
    "precedence_constraints",
    "predecessors",
]

# Each job's predecessors, by index: after[j] = {i : (i, j) in P}
After = Sequence[Sequence[int]]


def cycle_of(after: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle of ``after`` (job -> the jobs it starts after), in the order the jobs would run,
    its first job repeated at the end ("a -> b -> a": b after a, a after b); None: there is none."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done, no cycle through it
    order = {name: k for k, name in enumerate(after)}
    path: list[str] = []

    def walk(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for before in after.get(name, ()):
            if state.get(before) == 1:  # back to a job on the path: the cycle, in running order
                ring = path[path.index(before) :][::-1]
                first = min(range(len(ring)), key=lambda k: order[ring[k]])  # from the job listed first
                return [*ring[first:], *ring[:first], ring[first]]
            if before not in state and (found := walk(before)) is not None:
                return found
        path.pop()
        state[name] = 2
        return None

    for name in after:
        if name not in state and (found := walk(name)) is not None:
            return found
    return None


def predecessors(jobs: Sequence[JobCandidates]) -> tuple[tuple[int, ...], ...]:
    """P as each job's predecessors' indices; a name that is no other job, or a cycle, is refused
    (ValueError: the jobs file refuses them first, naming the key)."""
    index = {job.name: j for j, job in enumerate(jobs)}
    for job in jobs:
        for name in job.after:
            if name not in index or name == job.name:
                raise ValueError(f"job {job.name!r}: after {name!r}, which is not another job of the portfolio")
    cycle = cycle_of({job.name: job.after for job in jobs})
    if cycle is not None:
        raise ValueError(f"after: the jobs wait on each other in a cycle ({' -> '.join(cycle)})")
    return tuple(tuple(sorted({index[name] for name in job.after})) for job in jobs)


@dataclass(frozen=True)
class ChainStarts:
    """Each job's earliest start along its chains, head_j = max(r_j, max_{i -> j} head_i + T_i) with
    T_i job i's fastest row (seconds), and the predecessor that sets it (None: its release does)."""

    start_s: tuple[float, ...]
    via: tuple[int | None, ...]

    def chain(self, j: int) -> list[int]:
        """The jobs whose ends set j's earliest start, first to last, then j."""
        out = [j]
        while (i := self.via[out[-1]]) is not None:
            out.append(i)
        return out[::-1]


def chain_starts(jobs: Sequence[JobCandidates], after: After, fastest_s: Sequence[float]) -> ChainStarts:
    """Each job's head (:class:`ChainStarts`), no schedule starts it earlier."""
    start: list[float] = [job.release_s for job in jobs]
    via: list[int | None] = [None] * len(jobs)
    for j in respecting(range(len(jobs)), after):
        for i in after[j]:
            if (end := start[i] + fastest_s[i]) > start[j]:
                start[j], via[j] = end, i
    return ChainStarts(tuple(start), tuple(via))


def chain_ends(
    jobs: Sequence[JobCandidates], after: After, fastest_s: Sequence[float], finish_by: Sequence[float | None]
) -> list[float | None]:
    """Each job's tail, the latest end no schedule that ends every job by its D_j beats:
    L_j = min(D_j, min_{(j, k) in P} L_k - T_k) with T_k job k's fastest row (seconds; None: no limit)."""
    tail = list(finish_by)
    for k in reversed(respecting(range(len(jobs)), after)):  # each job's successors before it
        if (limit := tail[k]) is None:
            continue
        for i in after[k]:
            tail[i] = min(t for t in (tail[i], limit - fastest_s[k]) if t is not None)
    return tail


def _late_chains(
    jobs: Sequence[JobCandidates], heads: ChainStarts, fastest_s: Sequence[float], finish_by: Sequence[float | None]
) -> list[tuple[str, InfeasiblePlan]]:
    """Each job whose chain ends it past its D_j (deadline, or horizon) even on every job's fastest
    row, as a deadline answer naming the chain ("sft-70b: after pretrain-70b, which ends on day
    41.2 at the earliest; ..."), for ``jobs_infeasible``."""
    out = []
    for j, job in enumerate(jobs):
        limit, i = finish_by[j], heads.via[j]
        if limit is None or i is None or heads.start_s[j] + fastest_s[j] <= limit * (1 + 1e-12):
            continue
        names = [jobs[k].name for k in heads.chain(j)]
        chain = f" (the chain {' -> '.join(names)})" if len(names) > 2 else ""
        day, key, end_s = SECONDS_PER_DAY, limit_key(job, limit), heads.start_s[j] + fastest_s[j]
        detail = (
            f"job {job.name!r}: after {jobs[i].name!r}, which ends on day {heads.start_s[j] / day:,.1f} at the"
            f" earliest{chain}; {job.name!r} needs {fastest_s[j] / day:,.1f} days and must end by day"
            f" {limit / day:,g} ({key}, from day 0)"
        )
        fix = f"set {key} to {days_field(end_s)} or more, or drop {jobs[i].name!r} from after"
        # no available: plan's probe past the inventory (portfolio_answer.py) would size this job alone
        answer = InfeasiblePlan(Constraint.DEADLINE, detail, fix, required=end_s, job=job.name, chain=tuple(names))
        out.append((job.name, answer))
    return out


def precedence_constraints(
    problem: pulp.LpProblem, after: After, starts: Sequence[pulp.LpAffineExpression], ends: Sequence
) -> None:
    """S_j >= E_i for every (i, j) in P."""
    for j, before in enumerate(after):
        for i in before:
            problem += starts[j] >= ends[i]


def chained(
    jobs: Sequence[JobCandidates], fastest: Sequence[float], finish_by: Sequence[float | None]
) -> list[JobCandidates]:
    """The jobs with each one's head for its release (``ChainStarts``: no schedule starts it earlier,
    so the models lose nothing and the slotted ones offer no start before it), ``fastest`` each
    job's fastest row that fits alone (seconds); a chain that cannot end by a job's D_j is refused,
    naming it. Unchanged where no job has ``after``."""
    if not any(job.after for job in jobs):
        return list(jobs)
    after = predecessors(jobs)
    heads = chain_starts(jobs, after, fastest)
    late = _late_chains(jobs, heads, fastest, finish_by)
    if late:
        raise jobs_infeasible(late)
    return [replace(job, release_s=head) for job, head in zip(jobs, heads.start_s, strict=True)]
