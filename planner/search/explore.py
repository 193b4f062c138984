"""Views over the scored candidates for the app and reports: frontier, scaling, why-not,
and the multi-job entry points (portfolio on a shared inventory, rent vs buy)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from planner.api import (
    SECONDS_PER_DAY,
    PlanRequest,
    PlanResult,
    allowed_gpus,
    candidate_table,
    catalog_with_prices,
    plan,
    plan_from_row,
    search_space,
)
from planner.catalog.hardware import Catalog, load_catalog
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.search.candidates import AC_CODES, SHARDING_CODES
from planner.search.ilp import CandidateTable, InfeasiblePlan, check_rows
from planner.search.portfolio import (
    FleetSolution,
    GpuEconomics,
    JobCandidates,
    PortfolioSolution,
    TcoAssumptions,
    size_fleet,
    solve_portfolio,
)
from planner.search.space import build_candidates


@dataclass(frozen=True)
class ScoredSearch:
    request: PlanRequest
    table: CandidateTable
    frame: pd.DataFrame  # one row per candidate that passes memory/divisibility/batch


def scored_search(
    request: PlanRequest, *, catalog: Catalog | None = None, settings: ModelingSettings = DEFAULT_SETTINGS
) -> ScoredSearch:
    """Every valid candidate with its time, cost and layout, as a DataFrame."""
    catalog = catalog_with_prices(catalog or load_catalog(), request.price_overrides)
    gpus = allowed_gpus(request, catalog)
    space = search_space(request)
    c = build_candidates(request.model, catalog, gpus, space)
    table = candidate_table(request.model, c, list(gpus), space, request.training_tokens, settings)
    ok = table.fits_memory & table.divisible & table.batch_ok
    idx = np.flatnonzero(ok)
    frame = pd.DataFrame(
        {
            "gpu": table.gpu_id[idx],
            "num_gpus": table.num_gpus[idx],
            "time_to_train_days": table.time_to_train_s[idx] / SECONDS_PER_DAY,
            "cost_usd": table.cost_usd[idx],
            "memory_gib": table.memory_need_gib[idx],
            "capacity_gib": table.capacity_gib[idx],
            "tp": c.tp[idx],
            "pp": c.pp[idx],
            "cp": c.cp[idx],
            "dp_replicate": c.dp_replicate[idx],
            "dp_shard": c.dp_shard[idx],
            "micro_batch": c.micro_batch[idx],
            "grad_accum": c.grad_accum[idx],
            "sharding": [SHARDING_CODES[i].value for i in c.sharding[idx]],
            "ac": [AC_CODES[i].value for i in c.ac[idx]],
            "row": idx,
        }
    )
    frame["layout"] = layout_labels(frame)
    return ScoredSearch(request=request, table=table, frame=frame)


def layout_labels(frame: pd.DataFrame) -> pd.Series:
    """Vectorised short description, e.g. 'fsdp dp_shard=16 tp=2 | mb 2 x 8 | ac full'."""
    label = frame["sharding"].astype(str)
    for axis in ("dp_replicate", "dp_shard", "tp", "pp", "cp"):
        degree = frame[axis].astype(int)
        label = label + np.where(degree > 1, " " + axis + "=" + degree.astype(str), "")
    return (
        label
        + " | mb "
        + frame["micro_batch"].astype(str)
        + " x "
        + frame["grad_accum"].astype(str)
        + " | ac "
        + frame["ac"].astype(str)
    )


def best_per_count(frame: pd.DataFrame, objective: str = "cost") -> pd.DataFrame:
    """The best layout for each (GPU type, count): the scaling and frontier charts' points."""
    key = "cost_usd" if objective == "cost" else "time_to_train_days"
    order = frame.sort_values([key, "time_to_train_days" if key == "cost_usd" else "cost_usd"])
    return order.groupby(["gpu", "num_gpus"], as_index=False).first()


def pareto_front(frame: pd.DataFrame) -> pd.Series:
    """True for points no other point beats on both cost and time."""
    order = frame.sort_values(["cost_usd", "time_to_train_days"]).index
    best_time, front = np.inf, pd.Series(False, index=frame.index)
    for i in order:
        t = frame.at[i, "time_to_train_days"]
        if t < best_time:
            front[i], best_time = True, t
    return front


def why_not(
    request: PlanRequest, gpu_id: str, *, catalog: Catalog | None = None, settings: ModelingSettings = DEFAULT_SETTINGS
) -> str:
    """Why a GPU type lost: its own best plan compared with the winner, or what rules it out."""
    catalog = catalog or load_catalog()
    gpu = catalog.gpu(gpu_id).id
    inventory = (request.gpus or {}).get(gpu) if request.gpus and gpu in request.gpus else None
    only = request.model_copy(update={"gpus": {gpu: inventory}, "top_k": 0})
    try:
        mine = plan(only, catalog=catalog, settings=settings).plan
    except InfeasiblePlan as exc:
        return f"{gpu} is infeasible: {exc}"
    try:
        winner = plan(request.model_copy(update={"top_k": 0}), catalog=catalog, settings=settings).plan
    except InfeasiblePlan as exc:
        return f"no GPU type is feasible: {exc}"
    if winner.gpu == gpu:
        return f"{gpu} is the chosen GPU type"
    e, w = mine.estimate, winner.estimate
    return (
        f"{gpu}: best plan {mine.num_gpus} GPUs ({mine.layout.describe()}) costs ${e.cost_usd:,.0f} in "
        f"{e.time_to_train_h / 24:.1f} days (MFU {e.throughput.mfu:.0%}); the chosen {winner.gpu} plan costs "  # type: ignore[operator]  # time_to_train_h: set, plans here have training tokens
        f"${w.cost_usd:,.0f} in {w.time_to_train_h / 24:.1f} days"  # type: ignore[operator]  # time_to_train_h: set, plans here have training tokens
    )


def job_candidates(request: PlanRequest, name: str, catalog: Catalog, settings: ModelingSettings):
    """A job's scored table for the multi-job ILPs; labels filled for the rows that can be chosen."""
    search = scored_search(request, catalog=catalog, settings=settings)
    deadline = None if request.deadline_days is None else request.deadline_days * SECONDS_PER_DAY
    labels = np.full(len(search.table), "", dtype=object)
    labels[search.frame["row"].to_numpy()] = search.frame["layout"].to_numpy()
    table = replace(search.table, label=labels)
    return JobCandidates(name=name, table=table, deadline_s=deadline, budget_usd=request.budget_usd)


def plan_portfolio(
    requests: dict[str, PlanRequest],
    inventory: dict[str, int],
    *,
    objective: str = "cost",
    horizon_days: float | None = None,
    num_slots: int = 1,
    catalog: Catalog | None = None,
    settings: ModelingSettings = DEFAULT_SETTINGS,
) -> PortfolioSolution:
    """Several jobs sharing one inventory; each picks one candidate and a start slot."""
    catalog = catalog or load_catalog()
    jobs = [job_candidates(r, name, catalog, settings) for name, r in requests.items()]
    horizon = None if horizon_days is None else horizon_days * SECONDS_PER_DAY
    return solve_portfolio(jobs, inventory, objective, horizon_s=horizon, num_slots=num_slots)


def plan_fleet(
    requests: dict[str, PlanRequest],
    purchase_usd: dict[str, float],
    horizon_days: float,
    *,
    tco: TcoAssumptions = TcoAssumptions(),
    num_slots: int = 12,
    catalog: Catalog | None = None,
    settings: ModelingSettings = DEFAULT_SETTINGS,
) -> FleetSolution:
    """How many GPUs of each type to buy vs rent for a set of jobs over a horizon."""
    catalog = catalog or load_catalog()
    jobs = [job_candidates(r, name, catalog, settings) for name, r in requests.items()]
    economics = {
        g: GpuEconomics(
            purchase_usd=usd,
            tdp_w=catalog.gpu(g).tdp_watts,
            rent_usd_per_gpu_hour=catalog.gpu(g).price_per_gpu_hour_usd,
        )
        for g, usd in purchase_usd.items()
    }
    return size_fleet(jobs, economics, horizon_days, tco, num_slots=num_slots)


__all__ = [
    "PlanResult",
    "ScoredSearch",
    "best_per_count",
    "check_rows",
    "pareto_front",
    "plan_fleet",
    "plan_from_row",
    "plan_portfolio",
    "replace",
    "scored_search",
    "why_not",
]
