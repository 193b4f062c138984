"""Several jobs on one GPU inventory (:func:`solve_portfolio`): an ILP over each job's candidate
and continuous start times, with resource flows for the shared GPUs, then a list schedule in the
ILP's order; the model is in ``_exact_order``'s docstring and in docs/ilp.md, the many-job
approximation in planner/search/portfolio_slotted.py. The inventory is held: each
GPU costs its ownership (planner/search/ownership.py ``owned_rate``) until the last job ends; a
rented type costs its rent, or under a reserved price kind is reserved for whole terms
(planner/search/portfolio_reserved.py). Rows: portfolio_rows.py; the objective's weights and its one
rule for a row: portfolio_objective.py. Rent vs buy: planner/search/fleet.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pulp

from planner.search.ilp import Objective, objective_weights
from planner.search.job_candidates import JobCandidates, job_finish_s
from planner.search.lanes import LANES_GAP, RowTerms, assignment_bound, lane_schedule
from planner.search.ownership import HourlyRate, idle_usd
from planner.search.portfolio_flow import flow_constraints
from planner.search.portfolio_objective import (
    ModelRead,
    Portfolio,
    PortfolioWeights,
    model_objective,
    portfolio_weights,
    solved_pool,
)
from planner.search.portfolio_reserved import ReservedGpus, ReservedPools, reserved_answer, reserved_rates
from planner.search.portfolio_rows import PortfolioRows, candidate_rows, dot, hourly
from planner.search.portfolio_slotted import slotted_order
from planner.search.portfolio_ties import gap_to_bound, settle_near_ties
from planner.search.precedence import chained, precedence_constraints, predecessors
from planner.search.reserved import ReservedPrices
from planner.search.slots import (
    CERTIFIED_SLOTTED_LIMIT_S,
    SLOTTED_TIME_LIMIT_S,
    list_schedule,
    shared_inventory_infeasible,
    slotted_span_s,
    solve_slotted,
)
from planner.search.solver import new_binaries, new_variable, run_solver, stopped_gap
from planner.units import SECONDS_PER_DAY

__all__ = ["SLOTTED_TIME_LIMIT_S", "JobAssignment", "PortfolioSolution", "ReservedGpus", "solve_portfolio"]


@dataclass(frozen=True)
class JobAssignment:
    job: str
    row: int  # row in the job's own table
    gpu_id: str
    num_gpus: int
    label: str
    start_s: float
    end_s: float
    # its GPU-hours at the held and busy rates (rent when the type has no owned rate; on a reserved
    # type at the reserved rate: its share of the terms, billed in PortfolioSolution.reserved)
    cost_usd: float


@dataclass(frozen=True)
class PortfolioSolution:
    assignments: tuple[JobAssignment, ...]
    objective_value: float
    total_cost_usd: float  # the jobs' costs: their GPU-hours at the held and busy rates
    idle_cost_usd: float  # held GPU-hours no job used before the makespan; the objective counts both
    makespan_s: float
    solver: str
    num_variables: int
    exact: bool  # True: the continuous model's optimum; False: the slotted approximation's, compacted
    # The answer's objective above lower_bound, relative to the objective; None: the optimum of the
    # model that answered (the exact one, or the slotted one proven where its schedule answered)
    stopped_gap: float | None = None
    # F_g, each held type's cost per GPU-hour whether busy or idle (a rented type's is 0): what an
    # idle GPU-hour of it costs
    held_usd_per_gpu_hour: tuple[tuple[str, float], ...] = ()
    # Under a reserved price kind, the rented types' GPUs reserved for whole terms (ReservedPools)
    reserved: tuple[ReservedGpus, ...] = ()
    # Many jobs: LB, no schedule's objective is lower (planner/search/lanes.py); None: the exact model
    lower_bound: float | None = None
    lanes: bool = False  # the lanes' schedule answered, not the slotted model's (planner/search/lanes.py)
    order: tuple[int, ...] = ()  # the jobs in the order they were list-scheduled (portfolio_ties.py)

    @property
    def reserved_idle_usd(self) -> float:
        """The reserved terms' hours no job uses: their bill less the jobs' shares (``cost_usd``)."""
        return sum(r.idle_usd for r in self.reserved)

    @property
    def billed_usd(self) -> float:
        """What the portfolio pays: the held types until the makespan, their busy cost, the rent
        and the reserved terms whole."""
        return self.total_cost_usd + self.idle_cost_usd + self.reserved_idle_usd


# Jobs above which the exact model gives way to the slotted one: its branch and bound over
# orders took 0.1-0.7 s for 4 jobs of 30-60 rows on 2 GPU types, 0.2-2 s for 5 and over 30 s
# for 8 (HiGHS, this project's 2-core machine); the slotted model 0.1 s for 10 jobs.
EXACT_MAX_JOBS = 4


def solve_portfolio(
    jobs: Sequence[JobCandidates],
    inventory: Mapping[str, int],
    objective: Objective | str = Objective.COST,
    *,
    rates: Mapping[str, HourlyRate] | None = None,
    rented: frozenset[str] = frozenset(),
    cost_weight: float = 0.5,
    horizon_s: float | None = None,
    num_slots: int = 1,
    exact: bool | None = None,
    solver: str = "auto",
    prune: bool = True,
    time_limit_s: float | None = None,
    reserved: ReservedPrices | None = None,
) -> PortfolioSolution:
    r"""Choose one candidate and a start time for every job, sharing ``inventory``: the exact model
    of :func:`_exact_order` (its notation: R_j, F_g, v_g, D_j, H), its rows from ``candidate_rows``.

    ``reserved`` (a reserved price kind): each ``rented`` type r is instead reserved for whole
    terms (planner/search/portfolio_reserved.py ``ReservedPools``): an integer pool q_r = u_r m_r
    <= inv_r at F_r per GPU, the rate times every billed hour of the terms covering the span
    (``horizon_s``, else ``slotted_span_s``); its rows cost nothing busy (v_r = 0, the cloud pays the
    power). The objective's cost gains sum_r F_r q_r, (6)'s source bound reads q_r for inv_r, every
    job ends within the terms, and C_ref prices a reserved row at F_r spread over the span.

    ``exact`` None: this model up to EXACT_MAX_JOBS jobs; above, the slotted approximation of
    ``slotted_order`` (max(num_slots, 2 |J|) slots) or the lanes' schedule, whichever is better, with
    LB, a bound on every schedule (planner/search/lanes.py; :func:`_many_jobs`). Either way the chosen rows
    are list-scheduled in the model's order of starts (:func:`list_schedule`), which ends no job later, the
    solution is scored on that schedule, and each job's near tie settled as plan's (portfolio_ties.py)."""
    _check_jobs(jobs, num_slots)
    F, v = hourly(jobs, inventory, rates, rented)
    finish_by = [job_finish_s(job, horizon_s) for job in jobs]
    reserved_rate = reserved_rates(jobs, inventory, rented, reserved)
    options = candidate_rows(jobs, inventory, finish_by, F, v, prune, rented, reserved_rate)
    jobs = chained(jobs, _fastest_s(options, len(jobs)), finish_by)  # r_j: each job's head along P
    pools = _reserved_pools(reserved, reserved_rate, inventory, options, jobs, horizon_s)
    if pools is not None:
        inventory, finish_by = pools.bounds(inventory, finish_by)
    weights = portfolio_weights(options, len(jobs), objective_weights(objective, cost_weight), F, inventory, pools)
    portfolio = Portfolio(jobs, options, weights, inventory, finish_by)
    problem = pulp.LpProblem("portfolio", pulp.LpMinimize)
    solving = (solver, time_limit_s)
    exact = len(jobs) <= EXACT_MAX_JOBS if exact is None else exact
    if exact:
        solution = _solve_exact(problem, portfolio, solving, horizon_s)
    else:
        slots = (horizon_s, max(num_slots, 2 * len(jobs)))
        solution = _many_jobs(problem, portfolio, pools, slots, prune, solving)

    def score(capacity: Mapping[str, int], read: ModelRead) -> PortfolioSolution:
        return _read(replace(portfolio, inventory=capacity), read)

    solution = settle_near_ties(solution, options, objective, finish_by, weights.T_ref, inventory, score)
    held = tuple(sorted((g, F[g]) for g in inventory if g not in rented))
    return replace(solution, num_variables=len(problem.variables()), held_usd_per_gpu_hour=held)


def _check_jobs(jobs: Sequence[JobCandidates], num_slots: int) -> None:
    if not jobs:
        raise ValueError("jobs: expected at least one job")
    if len({job.name for job in jobs}) != len(jobs):
        raise ValueError("jobs: job names must be unique")
    if num_slots < 1:
        raise ValueError(f"num_slots: expected >= 1, got {num_slots}")


def _fastest_s(options: PortfolioRows, num_jobs: int) -> list[float]:
    """Each job's fastest row, seconds: the time its chain's heads count (precedence.py ``chained``)."""
    return [float(np.min(options.T[options.job == j])) * SECONDS_PER_DAY for j in range(num_jobs)]


def _reserved_pools(
    reserved: ReservedPrices | None,
    reserved_rate: Mapping[str, float],
    inventory: Mapping[str, int],
    options: PortfolioRows,
    jobs: Sequence[JobCandidates],
    horizon_s: float | None,
) -> ReservedPools | None:
    """The reserved types' pools over the span their terms cover: the horizon, else the slotted span
    from the latest release (None: no reserved price kind, or no type reserved)."""
    if reserved is None or not reserved_rate:
        return None
    latest = max(job.release_s for job in jobs)
    span = horizon_s if horizon_s is not None else slotted_span_s(options.T, options.job, len(jobs), None, latest)
    return ReservedPools.of(reserved, reserved_rate, inventory, span)


def _solve_exact(
    problem: pulp.LpProblem, p: Portfolio, solving: tuple[str, float | None], horizon_s: float | None
) -> PortfolioSolution:
    """The exact model (:func:`_exact_order`) solved and its answer read: H bounds every left-justified
    schedule (the latest release, then every job's slowest row in turn), D_j = min(deadline, horizon, H)."""
    r = [job.release_s / SECONDS_PER_DAY for job in p.jobs]  # r_j, days
    H = max(r) + float(sum(np.max(p.options.T[p.options.job == j]) for j in range(len(p.jobs))))
    D = [min(H, math.inf if d is None else d / SECONDS_PER_DAY) for d in p.finish_by]
    order_of = _exact_order(problem, p.options, p.weights, p.inventory, (r, D), (H, predecessors(p.jobs)))
    optimal, solver_name = run_solver(problem, *solving)
    if not optimal:
        raise shared_inventory_infeasible(p.jobs, p.inventory, horizon_s, True)
    return replace(_read(p, order_of()), solver=solver_name, exact=True)


def _many_jobs(
    problem: pulp.LpProblem,
    p: Portfolio,
    pools: ReservedPools | None,
    slots: tuple[float | None, int],
    prune: bool,
    solving: tuple[str, float | None],
) -> PortfolioSolution:
    """LB on every schedule and the lanes' schedule first (planner/search/lanes.py), then the slotted
    model (``slots``: the horizon, the number of slots): for a short time only where LB certifies the
    lanes already, enough to keep an optimum it proves at once. The better of the two answers.
    ``solving``: the solver and the caller's time limit."""
    solver, time_limit_s = solving
    bound, lanes = _lanes(p, solving, pools)
    if any(job.release_s or job.after for job in p.jobs):  # the lanes know no release nor P (LB still bounds)
        lanes = None
    certified = lanes is not None and gap_to_bound(lanes, bound) <= LANES_GAP
    horizon_s, num_slots = slots
    span = slotted_span_s(p.options.T, p.options.job, len(p.jobs), horizon_s, max(job.release_s for job in p.jobs))
    order_of = slotted_order(problem, p, (span, num_slots), prune)
    limit = time_limit_s if time_limit_s is not None else (CERTIFIED_SLOTTED_LIMIT_S if certified else None)
    solved, solver_name = solve_slotted(problem, solver, prune, limit, search_on=lanes is None and time_limit_s is None)
    if solved is None and lanes is None:
        raise RuntimeError(f"{solver_name} found no schedule of the slotted model by its time limit of {limit} s")
    answers = ([_read(p, order_of())] if solved else []) + ([lanes] if lanes else [])
    if not answers:  # the slotted model proved it has none, and the lanes found none
        raise shared_inventory_infeasible(p.jobs, p.inventory, horizon_s, False)
    best = min(answers, key=lambda answer: answer.objective_value)  # the slotted model's on a tie
    proven = bool(solved) and best is answers[0] and stopped_gap(problem) is None
    gap = None if proven else gap_to_bound(best, bound)
    return replace(best, solver=solver_name, stopped_gap=gap, lower_bound=bound, lanes=best is lanes)


def _lanes(
    p: Portfolio, solving: tuple[str, float | None], pools: ReservedPools | None
) -> tuple[float, PortfolioSolution | None]:
    """LB and the lanes' schedule, list-scheduled and scored as an answer (planner/search/lanes.py);
    none under reserved pools, whose size the lanes do not choose."""
    options, weights = p.options, p.weights
    terms = RowTerms(
        job=options.job,
        gpu=options.gpu,
        n=options.n,
        T=options.T,
        k=weights.row_terms(options.v_cost, options.T, options.job),  # at E_j = T_c
        held=weights.held,
        deadline=np.array([math.inf if d is None else d / SECONDS_PER_DAY for d in p.finish_by]),
        smith=weights.T_ref,
        inventory={g: count for g, count in p.inventory.items() if count > 0},
    )
    solver, time_limit_s = solving  # the caller's limit caps each MIP's own (review s45 L5)
    bound = assignment_bound(terms, solver, time_limit_s)
    found = None if pools is not None else lane_schedule(terms, solver, bound, time_limit_s=time_limit_s)
    if found is None:
        return bound, None
    return bound, _read(p, (list(found.rows), list(found.order), {}))


def _exact_order(
    problem: pulp.LpProblem,
    options: PortfolioRows,
    weights: PortfolioWeights,
    inventory: Mapping[str, int],
    window: tuple[list[float], list[float]],
    bounds: tuple[float, Sequence[Sequence[int]]],
) -> Callable[[], ModelRead]:
    r"""Write the exact model into ``problem``; returns what reads, once solved, the chosen option per
    job, the jobs in order of start and the GPUs reserved per type. ``window``: each job's release
    r_j and D_j, days; ``bounds``: H and each job's predecessors (P, docs/ilp.md "Precedence").

    Jobs j; rows c in R_j (memory, divisibility, batch, C_c <= B_j, n_c <= inv_g(c) as filters);
    the GPU types g of the inventory cost F_g per held GPU-hour and v_g per busy one (``rates``;
    a type without one: F_g = the rent its rows imply, v_g = 0; a ``rented`` type, not held, its
    count a cap on GPUs rented at once: F_g = 0, and each row costs its own rent C_c, its job's price and
    whole-node billing, in place of v_g n_c T_c). Times in days; H = r_max + sum_j max_c T_c bounds any
    left-justified schedule, D_j = min(deadline, horizon, H):

        variables   y_c, x_ij in {0, 1};  r_j <= S_j;  M >= 0;  f_ijg >= 0 (i in {0} + J, j in J)
        minimise    w_C (24 sum_g inv_g F_g M + sum_c v_g n_c T_c y_c) / C_ref
                      + w_T sum_j E_j / T_ref,j,        E_j = S_j + sum_{c in R_j} T_c y_c
        subject to  (1) sum_{c in R_j} y_c = 1                                 every job j
                    (2) E_j <= D_j,  E_j <= M                                   every job j
                    (3) S_j >= E_i - H (1 - x_ij)                               i != j sharing a type
                    (4) f_ijg <= min(N_ig, N_jg) x_ij                            N_jg = max n_c of j on g
                    (5) sum_{i in {0} + J} f_ijg = n_jg := sum_{c in R_j, g(c)=g} n_c y_c
                    (6) sum_j f_ijg <= n_ig,   sum_j f_0jg <= inv_g
                    (7) inv_g M >= sum_j sum_{c in R_j, g(c)=g} n_c T_c y_c      every type g
                    (8) S_j >= E_i                                             every (i, j) in P

    (4)-(6) route each GPU from the source 0 or from a job that ended before (x_ij = 1), so the
    jobs running at any moment hold at most inv_g of type g: the resource-flow model of the
    RCPSP (Artigues, Michelon & Reusser 2003), exact in continuous time. Held GPUs cost until
    the makespan M: the GPUs are free for other work once the portfolio ends, so an idle one
    costs what owning it does. (7), GPU-days within what the inventory offers by M, holds for
    every schedule and tightens the relaxation. C_ref = sum_j min_c (F_g + v_g) n_c T_c, T_ref,j = min_c T_c."""
    r, D = window
    H, after = bounds
    num_jobs = len(D)
    y = new_binaries(problem, "y", len(options.job))
    S = [new_variable(problem, f"S_{j}", r[j], D[j]) for j in range(num_jobs)]
    M = new_variable(problem, "M", 0, H)
    m = {} if weights.reserved is None else weights.reserved.counts(problem)
    E = [S[j] + dot(y, options.T, options.job == j) for j in range(num_jobs)]
    problem += model_objective(weights, M, (y, options.v_cost, options.job), E, m)
    for j in range(num_jobs):
        problem += pulp.lpSum(y[i] for i in np.flatnonzero(options.job == j)) == 1  # (1)
        problem += E[j] <= D[j]  # (2)
        problem += E[j] <= M
    precedence_constraints(problem, after, S, E)
    sources = {**inventory, **({} if weights.reserved is None else weights.reserved.sizes(m))}
    flow_constraints(problem, options, y, S, E, M, inventory, sources, H)  # (3)-(7)

    def read() -> ModelRead:
        picked = [int(i) for i in np.flatnonzero([(var.varValue or 0) > 0.5 for var in y])]
        order = sorted(range(num_jobs), key=lambda j: (S[j].varValue or 0.0, j))
        return picked, order, solved_pool(weights, m)

    return read


def _read(p: Portfolio, read: ModelRead) -> PortfolioSolution:
    """The picked rows, list-scheduled in the model's order of starts (``read``: the rows, the
    order, the GPUs reserved) on ``inventory`` (a reserved type's: the GPUs reserved) and scored as
    the ILP scores them; a reserved type's GPUs are the most its jobs then hold at once, in whole
    units. Which model answered is the caller's to fill in."""
    picked, order, pool = read
    jobs, options, weights = p.jobs, p.options, p.weights
    inventory = {**p.inventory, **pool}  # the list schedule holds no more than the GPUs reserved
    chosen = [next(i for i in picked if options.job[i] == j) for j in range(len(jobs))]
    days = [float(options.T[i]) for i in chosen]
    release = [job.release_s / SECONDS_PER_DAY for job in jobs]
    start = list_schedule(
        order,
        [str(options.gpu[i]) for i in chosen],
        [int(options.n[i]) for i in chosen],
        days,
        inventory,
        release,
        predecessors(jobs),
    )
    end = [s + t for s, t in zip(start, days, strict=True)]
    makespan = max(end)
    reserved = reserved_answer(weights.reserved, options, chosen, start, end)
    rows = weights.row_terms(options.v_cost[chosen], np.array(end), np.arange(len(chosen)))
    value = weights.objective(makespan, sum(r.cost_usd for r in reserved), float(np.sum(rows)))
    assignments = tuple(
        JobAssignment(
            job=jobs[j].name,
            row=int(options.row[i]),
            gpu_id=str(options.gpu[i]),
            num_gpus=int(options.n[i]),
            label=str(jobs[j].table.label[options.row[i]]),
            start_s=start[j] * SECONDS_PER_DAY,
            end_s=end[j] * SECONDS_PER_DAY,
            cost_usd=float(options.job_cost[i]),
        )
        for j, i in enumerate(chosen)
    )
    return PortfolioSolution(
        assignments=assignments,
        objective_value=float(value),
        total_cost_usd=float(sum(options.job_cost[i] for i in chosen)),
        idle_cost_usd=idle_usd(
            weights.F, inventory, ((a.gpu_id, a.num_gpus * d) for a, d in zip(assignments, days, strict=True)), makespan
        ),
        makespan_s=makespan * SECONDS_PER_DAY,
        solver="",
        num_variables=0,
        exact=False,
        reserved=reserved,
        order=tuple(order),
    )
