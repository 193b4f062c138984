"""A first schedule and a bound for the portfolio's slotted model (planner/search/portfolio.py):
a greedy schedule in the model's own slots gives an incumbent U, and every option whose least
possible objective exceeds U is dropped before the solver sees it. Both are exact reductions:
the dropped options are in no solution better than U, and U's own options are kept, so the
optimum does not move; the solver starts from U (docs/ilp.md "Many jobs").

The slotted objective is a H M + sum_o c_o z_o with M >= e_o for every picked option o and
inv_g M >= the GPU-days of type g (a = w_C / C_ref, H the held cost per day, c_o an option's
busy and time terms). Any schedule that picks o costs at least

    LB(o) = a H max(e_o, M_0) + c_o + sum_{k != j(o)} min_{o' of k} c_o',
    M_0 = max_k min_{o' of k} e_o',

so o can go when LB(o) > U. Reserved types (a reserved price kind) add a sum_r F_r q_r >= 0 to
the objective: U counts it (the GPUs the greedy schedule holds at once), LB(o) leaves it out and
stays a lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from planner.search.slots import held_slots

if TYPE_CHECKING:
    from planner.search.portfolio_reserved import ReservedPools

__all__ = ["Bounded", "SlottedInstance", "bounded_options", "greedy_schedule", "prunable"]

# Relative slack on the bound: an option within it of the incumbent is kept (the solver's own
# tolerances decide between near-equal schedules, not this test).
BOUND_SLACK = 1e-9
# Rounds of re-placing each job given the others after the greedy pass.
IMPROVING_ROUNDS = 5


@dataclass(frozen=True, eq=False)
class SlottedInstance:
    """The slotted model's options o, one entry per array index, and its scalars."""

    job: np.ndarray
    gpu: np.ndarray
    num_gpus: np.ndarray
    start_slot: np.ndarray
    busy_slots: np.ndarray
    end_days: np.ndarray  # e_o
    gpu_days: np.ndarray  # n_o T_o
    cost: np.ndarray  # c_o: the option's busy and time terms of the objective
    held: float  # a H: the objective's weight on the makespan M
    inventory: Mapping[str, int]
    num_slots: int
    num_jobs: int
    reserved: ReservedPools | None = None  # the reserved types, whose q_r the objective pays F_r for
    reserved_weight: float = 0.0  # a: the weight on their cost, as on the held cost

    def reserved_usd(self, gpu: str, peak: float) -> float:
        """a F_r q_r for ``peak`` GPUs of ``gpu`` in use at once (0: not a reserved type)."""
        if self.reserved is None or gpu not in self.reserved.types:
            return 0.0
        r = self.reserved.types[gpu]
        return self.reserved_weight * r.usd_per_gpu * r.gpus(peak)

    def peaks(self, picked: Sequence[int]) -> dict[str, float]:
        """Each type's most GPUs in use in a slot."""
        rows = np.asarray(picked, dtype=int)
        slots = np.arange(held_slots(self.start_slot[rows], self.busy_slots[rows], self.num_slots))
        holds = (self.start_slot[rows, None] <= slots) & (slots < (self.start_slot + self.busy_slots)[rows, None])
        used = holds * self.num_gpus[rows, None]
        return {g: float(np.max(used[self.gpu[rows] == g].sum(axis=0), initial=0)) for g in set(self.gpu[rows])}

    def makespan(self, picked: Sequence[int]) -> float:
        """The least M the model allows for one option per job: the last end, or a type's
        GPU-days over its count where longer."""
        rows = np.asarray(picked, dtype=int)
        per_type = [
            float(np.sum(self.gpu_days[rows][self.gpu[rows] == g])) / limit for g, limit in self.inventory.items()
        ]
        return max(float(np.max(self.end_days[rows])), *per_type)

    def least_per_job(self, values: np.ndarray) -> np.ndarray:
        """Each job's least of ``values`` (one per option) over its options."""
        return np.array([float(np.min(values[self.job == j])) for j in range(self.num_jobs)])

    def objective(self, picked: Sequence[int]) -> float:
        """The model's objective for one option per job, at its least makespan and pools."""
        reserved = sum(self.reserved_usd(g, peak) for g, peak in self.peaks(picked).items())
        return self.held * self.makespan(picked) + float(np.sum(self.cost[np.asarray(picked, dtype=int)])) + reserved


def greedy_schedule(instance: SlottedInstance) -> tuple[list[int], float] | None:
    """The best of a few greedy schedules (jobs largest first, longest first, in order): each job
    takes the option of least added objective among those its type's free GPUs allow in every
    slot it holds. None when every order leaves a job with no option (the solver decides)."""
    jobs = range(instance.num_jobs)
    least_days, least_end = instance.least_per_job(instance.gpu_days), instance.least_per_job(instance.end_days)
    orders = {
        tuple(sorted(jobs, key=lambda j: -least_days[j])),
        tuple(sorted(jobs, key=lambda j: -least_end[j])),
        tuple(jobs),
    }
    best: tuple[list[int], float] | None = None
    for order in sorted(orders):
        picked = _greedy_in_order(instance, order)
        if picked is not None:
            value = instance.objective(picked)
            if best is None or value < best[1]:
                best = (picked, value)
    return best


class _Partial:
    """A schedule being built: the GPUs each type has in use per slot and its GPU-days."""

    def __init__(self, instance: SlottedInstance) -> None:
        self.instance = instance
        slots = np.arange(held_slots(instance.start_slot, instance.busy_slots, instance.num_slots))
        # holds[o, t]: option o holds its GPUs in slot t
        self.holds = (instance.start_slot[:, None] <= slots) & (
            slots < (instance.start_slot + instance.busy_slots)[:, None]
        )
        types = list(instance.inventory)
        self.type_of = np.array([types.index(g) for g in instance.gpu], dtype=int)
        self.limit = np.array([instance.inventory[g] for g in types], dtype=float)
        self.used = np.zeros((len(types), len(slots)))  # GPUs in use per type and slot
        self.gpu_days = np.zeros(len(types))

    def add(self, o: int, sign: int = 1) -> None:
        g = self.type_of[o]
        self.used[g, self.holds[o]] += sign * self.instance.num_gpus[o]
        self.gpu_days[g] += sign * float(self.instance.gpu_days[o])

    def best_option(self, j: int, ends: float) -> int | None:
        """Job j's option of least objective, given the others (their latest end ``ends``)."""
        inst = self.instance
        mine = np.flatnonzero(inst.job == j)
        g = self.type_of[mine]
        over = (self.used[g] + inst.num_gpus[mine, None]) > self.limit[g, None]
        mine = mine[~np.any(over & self.holds[mine], axis=1)]
        if len(mine) == 0:
            return None
        g = self.type_of[mine]
        with_own = (self.gpu_days[g] + inst.gpu_days[mine]) / self.limit[g]
        grown = np.maximum.reduce(
            [np.full(len(mine), max(ends, float(np.max(self.gpu_days / self.limit)))), inst.end_days[mine], with_own]
        )
        return int(mine[np.argmin(inst.held * grown + inst.cost[mine] + self.reserved_growth(mine))])

    def reserved_growth(self, options: np.ndarray) -> np.ndarray:
        """What each option adds to the reserved pools' cost: its type's peak grown to hold it."""
        inst, g = self.instance, self.type_of[options]
        if inst.reserved is None:
            return np.zeros(len(options))
        types = list(inst.inventory)
        now = self.used.max(axis=1, initial=0)
        with_it = np.max(np.where(self.holds[options], self.used[g] + inst.num_gpus[options, None], 0), axis=1)
        return np.array(
            [
                inst.reserved_usd(types[k], max(now[k], w)) - inst.reserved_usd(types[k], now[k])
                for k, w in zip(g, with_it, strict=True)
            ]
        )


def _greedy_in_order(instance: SlottedInstance, order: Sequence[int]) -> list[int] | None:
    """Each job in ``order`` takes its best option given those before it; then each job in turn
    re-takes its best given all the others, while that lowers the objective."""
    partial, picked = _Partial(instance), [0] * instance.num_jobs
    for count, j in enumerate(order):
        ends = max((float(instance.end_days[picked[k]]) for k in order[:count]), default=0.0)
        o = partial.best_option(j, ends)
        if o is None:
            return None
        partial.add(o)
        picked[j] = o
    value = instance.objective(picked)
    for _ in range(IMPROVING_ROUNDS):
        before = value
        for j in order:
            partial.add(picked[j], -1)
            ends = max((float(instance.end_days[picked[k]]) for k in order if k != j), default=0.0)
            o = partial.best_option(j, ends)
            trial = [*picked[:j], o, *picked[j + 1 :]] if o is not None else picked
            if o is not None and (new := instance.objective(trial)) < value:
                picked, value = trial, new
            partial.add(picked[j])
        if value >= before:
            break
    return picked


def prunable(instance: SlottedInstance, incumbent: float) -> np.ndarray:
    """Options whose least objective LB(o) exceeds ``incumbent`` (the module docstring)."""
    least_cost = instance.least_per_job(instance.cost)
    least_end = float(np.max(instance.least_per_job(instance.end_days)))
    # sum_g inv_g M >= every job's GPU-days, each at least its least
    least_days = instance.least_per_job(instance.gpu_days)
    spread = (instance.gpu_days - least_days[instance.job] + float(np.sum(least_days))) / sum(
        instance.inventory.values()
    )
    bound = (
        instance.held * np.maximum(np.maximum(instance.end_days, least_end), spread)
        + instance.cost
        - least_cost[instance.job]
        + float(np.sum(least_cost))
    )
    return bound > incumbent * (1 + BOUND_SLACK) + BOUND_SLACK


@dataclass(frozen=True, eq=False)
class Bounded:
    """What :func:`bounded_options` keeps: a mask over the options, and the greedy schedule's
    picks (indices among the kept options, one per job) and makespan in days, if one fits."""

    keep: np.ndarray
    start: tuple[int, ...] | None
    makespan_days: float
    reserved_units: Mapping[str, int] = field(default_factory=dict)  # m_r the greedy schedule holds


def bounded_options(instance: SlottedInstance) -> Bounded:
    """The options a schedule no worse than the greedy one may pick (all when no greedy schedule
    fits): the slotted model's optimum over them is its optimum over all."""
    first = greedy_schedule(instance)
    if first is None:
        return Bounded(np.ones(len(instance.job), dtype=bool), None, 0.0)
    picked, value = first
    keep = ~prunable(instance, value)
    position = np.cumsum(keep) - 1
    units = {}
    if instance.reserved is not None:
        pools = instance.reserved.types
        units = {
            g: math.ceil(pools[g].gpus(p) / pools[g].unit) for g, p in instance.peaks(picked).items() if g in pools
        }
        units = {g: units.get(g, 0) for g in pools}
    return Bounded(keep, tuple(int(position[o]) for o in picked), instance.makespan(picked), units)
