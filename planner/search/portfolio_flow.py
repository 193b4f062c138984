"""The exact portfolio model's resource flows, (3)-(7) of ``solve_portfolio`` (planner/search/portfolio.py):
every GPU a job uses comes from the source or from a job that ended before it started (Artigues,
Michelon & Reusser 2003); split out of portfolio.py, which writes the rest of the model."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pulp

from planner.search.portfolio_rows import PortfolioRows, dot
from planner.search.solver import new_variable

__all__ = ["flow_constraints"]


def flow_constraints(
    problem: pulp.LpProblem,
    options: PortfolioRows,
    y: list[pulp.LpVariable],
    S: list[pulp.LpVariable],
    E: list[pulp.LpAffineExpression],
    M: pulp.LpVariable,
    inventory: Mapping[str, int],
    sources: Mapping[str, int | pulp.LpAffineExpression],
    H: float,
) -> None:
    """(3)-(7) of :func:`solve_portfolio`; ``sources``: what the source 0 offers of each type, inv_g
    or a reserved pool q_r ((7) keeps inv_r >= q_r: valid for every schedule, and linear)."""
    jobs = range(len(S))
    N = {
        (j, g): int(np.max(options.n[(options.job == j) & (options.gpu == g)], initial=0))
        for j in jobs
        for g in inventory
    }
    x: dict[tuple[int, int], pulp.LpVariable] = {}
    for i in jobs:
        for j in jobs:
            if i != j and any(N[i, g] and N[j, g] for g in inventory):
                x[i, j] = new_variable(problem, f"x_{i}_{j}", cat=pulp.LpBinary)
                problem += S[j] >= E[i] - H * (1 - x[i, j])  # (3)
    for k, (g, limit) in enumerate(inventory.items()):
        users = [j for j in jobs if N[j, g]]
        inflow: dict[int, list[pulp.LpVariable]] = {j: [] for j in users}
        outflow: dict[int, list[pulp.LpVariable]] = {-1: [], **{j: [] for j in users}}
        for i in [-1, *users]:
            for j in users:
                if i == j:
                    continue
                f = new_variable(problem, f"f_{i + 1}_{j}_{k}", 0, N[j, g] if i < 0 else min(N[i, g], N[j, g]))
                if i >= 0:
                    problem += f <= min(N[i, g], N[j, g]) * x[i, j]  # (4)
                inflow[j].append(f)
                outflow[i].append(f)
        for j in users:
            n_jg = dot(y, options.n, (options.job == j) & (options.gpu == g))
            problem += pulp.lpSum(inflow[j]) == n_jg  # (5)
            problem += pulp.lpSum(outflow[j]) <= n_jg  # (6)
        problem += pulp.lpSum(outflow[-1]) <= sources[g]
        gpu_days = pulp.lpSum(dot(y, options.n * options.T, (options.job == j) & (options.gpu == g)) for j in users)
        problem += limit * M >= gpu_days  # (7)
