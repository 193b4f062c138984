"""The MILP solvers behind every model of planner/search (PuLP with HiGHS or CBC): a quiet
solver with a zero optimality gap, optionally started from the variables' initial values, and
the variable constructors that work across PuLP versions.
"""

from __future__ import annotations

import functools
import math
import os
import warnings

import pulp

__all__ = ["make_solver", "new_binaries", "new_variable", "run_solver", "stopped_gap"]


@functools.cache
def _highs_available() -> bool:
    try:
        import highspy
    except ImportError:
        return False
    # highspy prints a banner on the first Highs() of a process, before any option can be
    # set: take it once here with stdout pointed at /dev/null so that solves stay quiet.
    saved_stdout = os.dup(1)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            highspy.Highs()
    finally:
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
    return True


def make_solver(
    solver: str = "auto",
    time_limit_s: float | None = None,
    warm_start: bool = False,
    gap_rel: float = 0.0,
    target: float | None = None,
) -> tuple[pulp.LpSolver, str]:
    """A quiet PuLP solver with a zero optimality gap, and its name ("highs" or "cbc");
    ``warm_start``: it starts from the variables' initial values (``setInitialValue``). For a model
    whose answer need only come close: ``gap_rel``, a relative gap to its own bound, and ``target``, an
    objective at or under which HiGHS stops (CBC's command line has no such option: it runs on).

    ``auto`` takes HiGHS when ``highspy`` is importable (in-process, no files), else CBC
    (a subprocess whose temporary files PuLP deletes).
    """
    choice = solver.lower()
    if choice not in ("auto", "cbc", "highs"):
        raise ValueError(f"solver: expected auto, cbc or highs, got {solver!r}")
    if choice == "highs" and not _highs_available():
        raise ValueError("solver='highs' needs the highspy package (pip install highspy)")
    if choice == "highs" or (choice == "auto" and _highs_available()):
        highs = _HiGHSFromStart if warm_start else pulp.HiGHS
        extra = {} if target is None else {"objective_target": target}
        return highs(msg=False, gapRel=gap_rel, gapAbs=0.0, timeLimit=time_limit_s, **extra), "highs"
    # No ``threads`` option: CBC's default is serial, while ``-threads 1`` switches the bundled
    # CBC 2.10 to its threaded search, which now and then idles 10 s before returning.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # PuLP 3 deprecates the bundled CBC
        cbc = pulp.PULP_CBC_CMD(
            msg=False, gapRel=gap_rel, gapAbs=0.0, timeLimit=time_limit_s, keepFiles=False, warmStart=warm_start
        )
        return cbc, "cbc"


def new_binaries(problem: pulp.LpProblem, prefix: str, count: int) -> list[pulp.LpVariable]:
    return [new_variable(problem, f"{prefix}{i}", cat=pulp.LpBinary) for i in range(count)]


def new_variable(
    problem: pulp.LpProblem, name: str, low: float | None = 0, high: float | None = None, cat: str = pulp.LpContinuous
) -> pulp.LpVariable:
    if hasattr(problem, "add_variable"):  # PuLP >= 3.3 attaches variables to the model
        return problem.add_variable(name, low, high, cat=cat)
    return pulp.LpVariable(name, low, high, cat=cat)


def run_solver(
    problem: pulp.LpProblem,
    solver: str,
    time_limit_s: float | None,
    warm_start: bool = False,
    accept_incumbent: bool = False,
    gap_rel: float = 0.0,
    target: float | None = None,
) -> tuple[bool, str]:
    """Solve in place; (solved?, solver name). False means proven infeasible. ``accept_incumbent``:
    a feasible solution the time limit stopped at counts as solved (``stopped_gap`` says how far
    from proven), for a model that is an approximation already."""
    engine, name = make_solver(solver, time_limit_s, warm_start, gap_rel, target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        status = pulp.LpStatus[problem.solve(engine)]
    # A time limit can leave HiGHS holding the warm start (or any incumbent), which PuLP still calls
    # "Optimal": only a proven optimum is one (review s31).
    solution = getattr(problem, "sol_status", pulp.LpSolutionOptimal)
    if status == "Optimal" and solution == pulp.LpSolutionOptimal:
        return True, name
    if accept_incumbent and solution == pulp.LpSolutionIntegerFeasible:
        return True, name
    if status == "Infeasible":
        return False, name
    raise RuntimeError(
        f"{name} stopped without an optimal solution (status {status}"
        + (f", time limit {time_limit_s} s)" if time_limit_s else ")")
    )


def stopped_gap(problem: pulp.LpProblem) -> float | None:
    """After a solve: None for a proven optimum, else the incumbent's relative gap to the bound
    (HiGHS's ``mip_gap``; nan where the solver does not say, as CBC's command line)."""
    if getattr(problem, "sol_status", pulp.LpSolutionOptimal) != pulp.LpSolutionIntegerFeasible:
        return None
    model = getattr(problem, "solverModel", None)
    return float(model.getInfo().mip_gap) if model is not None else math.nan


class _HiGHSFromStart(pulp.HiGHS):
    """PuLP's in-process HiGHS handed the variables' initial values as its first incumbent
    (PuLP's HiGHS class has no ``warmStart``; its columns follow ``lp.variables()``)."""

    def callSolver(self, lp: pulp.LpProblem) -> None:
        import highspy

        start = highspy.HighsSolution()
        start.col_value = [float(var.varValue or 0.0) for var in lp.variables()]
        start.value_valid = True
        lp.solverModel.setSolution(start)  # an infeasible start is dropped by HiGHS, not an error
        super().callSolver(lp)
