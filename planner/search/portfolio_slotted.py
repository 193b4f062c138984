"""The portfolio's slotted model for many jobs (planner/search/portfolio.py ``solve_portfolio`` above
EXACT_MAX_JOBS jobs; docs/ilp.md "Many jobs"): each job's rows at each start slot, written into a
problem, pruned by the greedy bound of planner/search/slot_bound.py where it may be."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pulp

from planner.search.portfolio_objective import ModelRead, Portfolio, model_objective, solved_pool
from planner.search.portfolio_rows import dot
from planner.search.precedence import precedence_constraints, predecessors
from planner.search.slot_bound import Bounded, SlottedInstance, bounded_options
from planner.search.slots import (
    SlotOptions,
    concat_options,
    expand_starts,
    slot_length_s,
    subset_options,
    usage_constraints,
)
from planner.search.solver import new_binaries, new_variable
from planner.units import SECONDS_PER_DAY


@dataclass(frozen=True, eq=False)
class _Offered:
    """The options o = (j, c, s) the model may pick, each one's row in ``PortfolioRows`` (``source``),
    and the greedy bound that pruned them (None: none did)."""

    slotted: SlotOptions
    source: np.ndarray
    bounded: Bounded | None


def slotted_order(
    problem: pulp.LpProblem, p: Portfolio, slotting: tuple[float, int], prune: bool
) -> Callable[[], ModelRead]:
    r"""The approximation for many jobs: ``slotted_span_s`` (twice the fastest rows run serially,
    which a serial schedule fits even with rounding, or the horizon where shorter) cut into slots of dt
    (``slotting``: that span and the number of slots); options o = (j, c, s) start at s dt and hold
    their GPUs for L_c = ceil(T_c / dt) slots (planner/search/slots.py); e_o = s dt + T_c:

        minimise    w_C (24 sum_g inv_g F_g M + sum_o v_g n_o T_o z_o + sum_r F_r q_r) / C_ref
                      + w_T sum_o e_o z_o / T_ref,j
        subject to  sum_{o of j} z_o = 1,   M >= sum_{o of j} e_o z_o           every job j
                    sum_{o of j} start_o z_o >= sum_{o of i} e_o z_o           every (i, j) in P
                    sum_{o : g(o) = g, s_o <= t < s_o + L_o} n_o z_o <= inv_g    every g, slot t
                    inv_g M >= sum_{o : g(o) = g} n_o T_o z_o                     every g

    (q_r for inv_g in the slot bound of a reserved type r: ``solve_portfolio``.) Returns what reads,
    once solved, the chosen rows, the jobs in order of start and the GPUs reserved.
    """
    num_slots = slotting[1]
    jobs, options, weights, inventory = p.jobs, p.options, p.weights, p.inventory
    offered = _offered(p, slotting, prune)
    slotted, source = offered.slotted, offered.source
    z = new_binaries(problem, "z", len(source))
    M = new_variable(problem, "M", 0, None)
    m = {} if weights.reserved is None else weights.reserved.counts(problem)
    _warm_start(offered.bounded, z, M, m)
    ends = [dot(z, slotted.end_days, slotted.job == j) for j in range(len(jobs))]
    problem += model_objective(weights, M, (z, options.v_cost[source], slotted.job), ends, m)
    for j in range(len(jobs)):
        problem += pulp.lpSum(z[i] for i in np.flatnonzero(slotted.job == j)) == 1
        problem += ends[j] <= M
    starts = [dot(z, slotted.start_s / SECONDS_PER_DAY, slotted.job == j) for j in range(len(jobs))]
    precedence_constraints(problem, predecessors(jobs), starts, ends)  # on the options' own times: docs/ilp.md
    pools = {**inventory, **({} if weights.reserved is None else weights.reserved.sizes(m))}
    usage_constraints(problem, slotted, z, num_slots, len(jobs), pools.__getitem__)
    # (7) of the exact model: every schedule delivers its GPU-days by M, so the cut removes no
    # solution, but it tightens the relaxation: 18 jobs over 36 slots took 23-30 s of CPU without
    # it, 11-12 s with it, the same answer (bench/bench_plan.py, "portfolio 18 jobs").
    gpu_days = options.n[source] * options.T[source]
    for g, limit in inventory.items():
        problem += limit * M >= dot(z, gpu_days, options.gpu[source] == g)

    def read() -> ModelRead:
        chosen = np.flatnonzero([(var.varValue or 0) > 0.5 for var in z])
        order = sorted(range(len(jobs)), key=lambda j: (min(slotted.start_s[chosen][slotted.job[chosen] == j]), j))
        return [int(source[i]) for i in chosen], order, solved_pool(weights, m)

    return read


def _offered(p: Portfolio, slotting: tuple[float, int], prune: bool) -> _Offered:
    """Each job's rows at every start slot from which they end in time, less those no schedule as
    good as the greedy one picks (planner/search/slot_bound.py). The greedy schedule knows no P, so
    with any it stands aside and every option is kept."""
    horizon_s, num_slots = slotting
    jobs, options = p.jobs, p.options
    slot_s = slot_length_s(horizon_s, num_slots)
    index_of = {(int(j), int(r)): i for i, (j, r) in enumerate(zip(options.job, options.row, strict=True))}
    slotted = concat_options(
        [
            expand_starts(j, job, options.row[options.job == j], num_slots, slot_s, p.finish_by[j])
            for j, job in enumerate(jobs)
        ]
    )
    source = np.array([index_of[int(j), int(r)] for j, r in zip(slotted.job, slotted.row, strict=True)], dtype=int)
    if not prune or any(job.after for job in jobs):
        return _Offered(slotted, source, None)
    bounded = bounded_options(_instance(slotted, source, p, num_slots))
    return _Offered(subset_options(slotted, bounded.keep), source[bounded.keep], bounded)


def _warm_start(
    bounded: Bounded | None, z: list[pulp.LpVariable], M: pulp.LpVariable, m: Mapping[str, pulp.LpVariable]
) -> None:
    """The solver starts from the greedy schedule, where one was found."""
    if bounded is None or bounded.start is None:
        return
    for i, var in enumerate(z):
        var.setInitialValue(1 if i in bounded.start else 0)
    M.setInitialValue(bounded.makespan_days)
    for g, units in bounded.reserved_units.items():
        m[g].setInitialValue(units)


def _instance(slotted: SlotOptions, source: np.ndarray, p: Portfolio, num_slots: int) -> SlottedInstance:
    """The slotted model's options with their objective terms, as ``model_objective`` weighs them."""
    options, weights, end_days = p.options, p.weights, slotted.end_days
    return SlottedInstance(
        job=slotted.job,
        gpu=slotted.gpu,
        num_gpus=slotted.num_gpus,
        start_slot=slotted.start_slot,
        busy_slots=slotted.busy_slots,
        end_days=end_days,
        gpu_days=options.n[source] * options.T[source],
        cost=weights.row_terms(options.v_cost[source], end_days, slotted.job),
        held=weights.held,
        inventory={g: count for g, count in p.inventory.items() if count > 0},  # none of a type: no options
        reserved=weights.reserved,
        reserved_weight=weights.usd,
        num_slots=num_slots,
        num_jobs=len(p.jobs),
    )
