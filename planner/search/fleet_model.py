"""The fleet's ILP (:class:`FleetModel`, docs/ilp.md "Fleet sizing"): the GPUs held for the horizon,
bought or reserved (:class:`HeldPool`), each job's options on them, and the model solved for one
option's holdings and priced as a :class:`FleetPlan`; split out of planner/search/fleet.py, which
builds the options and solves the three options."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pulp

from planner.search.fleet_plan import FleetAssignment, FleetPlan, Holding, band_factors, compacted
from planner.search.ilp import chosen_index
from planner.search.job_candidates import JobCandidates, job_finish_s, limit_key
from planner.search.late_band import LateOnRentRows
from planner.search.ownership import GpuBreakEven, GpuEconomics
from planner.search.precedence import precedence_constraints, predecessors
from planner.search.reserved import ReservedPrices
from planner.search.slots import SlotOptions, usage_constraints
from planner.search.solver import new_binaries, new_variable, run_solver
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

__all__ = ["Choice", "FleetModel", "HeldPool", "owned_pool", "reserved_pool"]


@dataclass(frozen=True, eq=False)
class HeldPool:
    """GPUs a fleet holds for the horizon, bought or reserved: the options o on them (y_o) and each
    one's busy cost, and per type its fixed cost per GPU (F_g or F_r), the GPUs held together (u_g,
    w_r) and the most it may hold."""

    holding: Holding
    symbol: str  # the count variables' prefix: k_i bought units, m_i reserved ones
    options: SlotOptions
    busy_usd: np.ndarray
    fixed_usd: dict[str, float]
    unit: dict[str, int]
    cap: Mapping[str, int]
    usd_per_gpu_hour: Mapping[str, float] | None = None  # reserved: each type's rate
    terms: int | None = None  # reserved: the whole terms F_r bills
    # bought: the GPUs already owned (I_g) the options may use besides, and each one's running cost
    # over the horizon (F0_g: its price sunk), a constant of every total
    owned: Mapping[str, int] = field(default_factory=dict)
    owned_fixed_usd: Mapping[str, float] = field(default_factory=dict)

    def counts(self, problem: pulp.LpProblem, buying: bool = True) -> dict[str, pulp.LpVariable]:
        """k_g (m_r): the units of each type held, within its cap; none of a type only owned (no
        F_g), and none bought where the option buys nothing (``buying`` False: b = 0)."""
        adding = buying or self.holding is not Holding.OWNED
        types = sorted(set(self.options.gpu.tolist()) & set(self.fixed_usd)) if adding else []
        units = {g: self.unit.get(g, 1) for g in types}
        most = {g: None if (cap := self.cap.get(g)) is None else cap // u for g, u in units.items()}
        return {g: new_variable(problem, f"{self.symbol}_{i}", 0, most[g], pulp.LpInteger) for i, g in enumerate(units)}

    def capacity(self, counts: Mapping[str, pulp.LpVariable]):
        """(2)'s right-hand side per type: I_g + u_g k_g (the owned GPUs alone where none is added)."""
        return lambda g: self.owned.get(g, 0) + (self.unit.get(g, 1) * counts[g] if g in counts else 0)

    @property
    def owned_cost_usd(self) -> float:
        """sum_g F0_g I_g: the owned GPUs' running cost over the horizon."""
        return sum(self.owned_fixed_usd[g] * n for g, n in self.owned.items())


def owned_pool(
    options: SlotOptions,
    rates: list[GpuBreakEven],
    economics: Mapping[str, GpuEconomics],
    limits: Mapping[str, int],
    owned: tuple[Mapping[str, int], list[GpuBreakEven]] = ({}, []),
) -> HeldPool:
    """The GPUs bought, beside those already owned (``owned``: I_g and each type's running rates,
    ``running_break_even``): busy cost v_g n_o T_o / 3600 per option, F_g per GPU bought, bought by the
    server; F0_g per GPU owned."""
    counts, running = owned
    hours = options.num_gpus * (options.end_s - options.start_s) / SECONDS_PER_HOUR
    busy_rate = {b.gpu_id: b.owned_usd_per_busy_hour for b in [*running, *rates]}  # a bought type's own where both
    busy = np.array([busy_rate[g] for g in options.gpu]) * hours
    fixed = {b.gpu_id: b.owned_fixed_usd for b in rates}
    unit = {g: e.purchase_unit for g, e in economics.items()}
    owned_fixed = {b.gpu_id: b.owned_fixed_usd for b in running}
    return HeldPool(Holding.OWNED, "k", options, busy, fixed, unit, limits, owned=counts, owned_fixed_usd=owned_fixed)


def reserved_pool(
    options: SlotOptions, reserved: ReservedPrices, rate: Mapping[str, float], horizon_h: float
) -> HeldPool:
    """The GPUs reserved over ``horizon_h``: no busy cost, F_r per GPU at each type's ``rate``."""
    fixed = {g: reserved.fixed_usd(usd, horizon_h) for g, usd in rate.items()}
    unit = {g: reserved.unit.get(g, 1) for g in rate}
    busy = np.zeros(len(options.job))
    return HeldPool(Holding.RESERVED, "m", options, busy, fixed, unit, {}, dict(rate), reserved.terms(horizon_h))


# A job's choice: the held pool and its option there, or None (rented by the hour)
Choice = tuple[HeldPool, int] | None


@dataclass(frozen=True, eq=False)
class FleetModel:
    r"""The fleet's time-indexed ILP (planner/search/fleet.py ``size_fleet``). Over a horizon H cut into S
    slots, with owned options o = (job j, row c, start slot s) of GPU types that can be bought (as in
    ``solve_portfolio``), fixed cost F_g and busy cost v_g per GPU-hour from ``break_even``, and R_j =
    the rent of job j's rented row: of the rows that finish by min(D_j, H), the fastest within eps =
    NEAR_TIE_FRACTION of the cheapest, as plan's cost objective picks (rented GPUs have no capacity
    limit, so no other rented row of the job is worth more than that eps):

        variables   b_g = u_g k_g, k_g in Z, 0 <= b_g <= max_purchase_g;   y_o, z_j in {0, 1}
        minimise    sum_g F_g b_g + sum_o v_g(o) n_o T_o / 3600 y_o + sum_j R_j z_j
        subject to  (1) sum_{o of job j} y_o + z_j = 1                            for every j
                    (2) sum_{o : g(o) = g, s_o <= t < s_o + L_o} n_o y_o <= b_g    for every g, t

    u_g: the GPUs bought together (``GpuEconomics.purchase_unit``: a server, whose share each
    GPU's price holds). ``held``: the pools of (2), bought then reserved; ``solve`` takes the
    holdings an option allows (z = 0 without rent, b = 0 buying nothing).
    """

    jobs: Sequence[JobCandidates]
    held: list[HeldPool]  # the GPUs bought, then (under a reserved kind) those reserved
    rent_rows: list[int | None]  # None: the job runs only on held-only types
    num_slots: int
    price_usd: dict[str, float]  # each type's purchase price
    horizon_s: float

    def solve(
        self, holdings: Collection[Holding], solver: str, time_limit_s: float | None, buying: bool = True
    ) -> tuple[FleetPlan | None, str]:
        """The least-cost plan whose jobs hold their GPUs only in the ways ``holdings`` names (``buying``
        False: it buys nothing, its owned jobs on the GPUs already owned)."""
        num_jobs, pools = len(self.jobs), [p for p in self.held if p.holding in holdings]
        rent = Holding.RENTED in holdings
        job_of = np.concatenate([p.options.job for p in pools])
        if not rent and len(set(job_of.tolist())) < num_jobs:
            return None, solver
        problem = pulp.LpProblem("fleet", pulp.LpMinimize)
        y = new_binaries(problem, "y", len(job_of))
        z = new_binaries(problem, "z", num_jobs) if rent else []
        where = [(p, i) for p in pools for i in range(len(p.options.job))]
        counts = [p.counts(problem, buying) for p in pools]
        rents = [
            0.0 if r is None else float(job.table.cost_usd[r]) for job, r in zip(self.jobs, self.rent_rows, strict=True)
        ]
        problem += (
            pulp.LpAffineExpression(zip(y, np.concatenate([p.busy_usd for p in pools]).tolist(), strict=True))
            + pulp.lpSum(
                pulp.LpAffineExpression((k[g], p.unit.get(g, 1) * p.fixed_usd[g]) for g in k)
                for p, k in zip(pools, counts, strict=True)
            )
            + pulp.LpAffineExpression(zip(z, rents, strict=False))  # z is empty when renting is not allowed
        )
        for j in range(num_jobs):  # (1); z_j = 0 where the job has no rent row (held-only types)
            problem += pulp.lpSum(y[i] for i in np.flatnonzero(job_of == j)) + (z[j] if rent else 0) == 1
            if rent and self.rent_rows[j] is None:
                problem += z[j] == 0
        first = 0
        for p, k in zip(pools, counts, strict=True):  # (2), bought (with the owned) and reserved apart
            ys = y[first : first + len(p.options.job)]
            usage_constraints(problem, p.options, ys, self.num_slots, num_jobs, p.capacity(k))
            first += len(ys)
        self._precedence(problem, pools, (y, job_of), z)
        optimal, solver_name = run_solver(problem, solver, time_limit_s)
        if not optimal:
            return None, solver_name
        chosen: list[Choice] = [None] * num_jobs
        for j in range(num_jobs):
            mine = np.flatnonzero(job_of == j)
            if len(mine) and (y[pick := int(mine[chosen_index([y[i] for i in mine])])].varValue or 0) > 0.5:
                chosen[j] = where[pick]
        held = {
            p.holding: {g: p.unit.get(g, 1) * round(k[g].varValue or 0) for g in k}
            for p, k in zip(pools, counts, strict=True)
        }
        return self.plan(held, chosen), solver_name

    def late(self, plan: FleetPlan) -> tuple[LateOnRentRows, ...]:
        """The jobs of ``plan`` that end past their D_j (deadline, or the horizon): none in a solved
        plan, by (2) and P; in one whose jobs are all rented, priced as given, a chain's (P)."""
        out = []
        for job, a in zip(self.jobs, plan.assignments, strict=True):
            limit = job_finish_s(job, self.horizon_s) or self.horizon_s
            if a.end_s > limit * (1 + 1e-12):
                day = SECONDS_PER_DAY
                out.append(LateOnRentRows(job.name, job.after, a.end_s / day, limit / day, limit_key(job, limit)))
        return tuple(out)

    def _precedence(
        self, problem: pulp.LpProblem, pools: Sequence[HeldPool], held: tuple[list, np.ndarray], z: list
    ) -> None:
        """S_j >= E_i for (i, j) in P (docs/ilp.md "Precedence"), in days: a held job's start and end
        are its option's (``held``: the y_o and each one's job); a rented one (z_j = 1) starts at Q_j,
        r_j <= Q_j <= D_j - T_j (its rent row's T_j), Q_j = 0 where it is held, and ends at Q_j + T_j z_j."""
        after = predecessors(self.jobs)
        if not any(after):
            return
        y, job_of = held
        day = [np.concatenate([getattr(p.options, t) for p in pools]) / SECONDS_PER_DAY for t in ("start_s", "end_s")]
        S, E = (
            [
                pulp.LpAffineExpression((y[i], float(days[i])) for i in np.flatnonzero(job_of == j))
                for j in range(len(self.jobs))
            ]
            for days in day
        )
        for j, (job, row) in enumerate(zip(self.jobs, self.rent_rows, strict=True)):
            if not z or row is None:
                continue
            T = float(job.table.time_to_train_s[row]) / SECONDS_PER_DAY
            latest = (job_finish_s(job, self.horizon_s) or self.horizon_s) / SECONDS_PER_DAY - T
            Q = new_variable(problem, f"Q_{j}", 0, latest)
            problem += job.release_s / SECONDS_PER_DAY * z[j] <= Q
            problem += latest * z[j] >= Q
            S[j], E[j] = S[j] + Q, E[j] + Q + T * z[j]
        precedence_constraints(problem, after, S, E)

    def plan(self, held: Mapping[Holding, Mapping[str, int]], chosen: Sequence[Choice]) -> FleetPlan:
        """Price a decision: the GPUs held (bought, reserved) and, per job, its held option (None: rented)."""
        assignments = [self._assignment(j, choice) for j, choice in enumerate(chosen)]
        purchased, reserved = (dict(held.get(h, {})) for h in (Holding.OWNED, Holding.RESERVED))
        bought = self.held[0]  # the GPUs bought and already owned
        pool = {g: bought.owned.get(g, 0) + purchased.get(g, 0) for g in {**bought.owned, **purchased}}
        release = {job.name: job.release_s for job in self.jobs}
        assignments = compacted(assignments, pool, reserved, release, predecessors(self.jobs))
        fixed = {p.holding: p.fixed_usd for p in self.held}
        terms = next((p.terms or 0 for p in self.held if p.holding is Holding.RESERVED), 0)
        ownership = sum(fixed[Holding.OWNED][g] * count for g, count in purchased.items())
        reserving = sum(fixed[Holding.RESERVED][g] * count for g, count in reserved.items())
        running = sum(a.cost_usd for a in assignments if a.holding is Holding.OWNED)
        rent = sum(a.cost_usd for a in assignments if a.holding is Holding.RENTED)
        return FleetPlan(
            total_cost_usd=ownership + running + rent + reserving + bought.owned_cost_usd,
            purchased={g: c for g, c in purchased.items() if c > 0},
            ownership_cost_usd=ownership,
            purchase_usd=sum(self.price_usd[g] * count for g, count in purchased.items()),
            running_cost_usd=running,
            rent_cost_usd=rent,
            assignments=tuple(assignments),
            reserved={g: c for g, c in reserved.items() if c > 0},
            reserved_cost_usd=reserving,
            reserved_terms=terms if any(reserved.values()) else 0,
            owned=dict(bought.owned),
            owned_cost_usd=bought.owned_cost_usd,
        )

    def _assignment(self, j: int, choice: Choice) -> FleetAssignment:
        job = self.jobs[j]
        if choice is None:
            row, table = self.rent_rows[j], job.table
            assert row is not None, "a job without a rent row is held (z_j = 0)"
            # rented at once: on its release (0: none)
            start, cost = job.release_s, float(table.cost_usd[row])
            end = start + float(table.time_to_train_s[row])
            gpu, n = str(table.gpu_id[row]), int(table.num_gpus[row])
            return FleetAssignment(job.name, row, gpu, n, Holding.RENTED, start, end, cost, band_factors(table, row))
        pool, i = choice
        o, row = pool.options, int(pool.options.row[i])
        return FleetAssignment(
            job.name,
            row,
            str(o.gpu[i]),
            int(o.num_gpus[i]),
            pool.holding,
            float(o.start_s[i]),
            float(o.end_s[i]),
            float(pool.busy_usd[i]),
            band_factors(job.table, row),
        )
