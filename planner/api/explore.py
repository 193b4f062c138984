"""Views over the scored candidates for the app and reports: frontier, scaling, why-not,
and the multi-job entry points (portfolio on a shared inventory, rent vs buy)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd

from planner.accuracy import DEFAULT_RISK, Risk
from planner.api import PlanResult, plan_from_row, rate_gpus, request_catalog
from planner.api.chart_points import best_per_count, pareto_front
from planner.api.notices import fixed_cost_warnings, long_job_warnings
from planner.api.portfolio_answer import portfolio_answer
from planner.api.reserved import held_only_types, reserved_prices, scored_as_held
from planner.api.why_not import WhyNot, why_not, why_not_answer  # re-exported: split out of here
from planner.catalog.hardware import Catalog, load_catalog
from planner.catalog.terms import TermBilling, rebilled
from planner.errors import InfeasiblePlan
from planner.model.candidates import AC_CODES, SHARDING_CODES, Candidates
from planner.model.rowwise import distinct
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.plan import Plan
from planner.plan_calibration import PlanCalibration
from planner.request import (
    PlanRequest,
    allowed_gpus,
    count_limits,
    request_settings,
    request_term,
    requested_batch_tokens,
)
from planner.search.ilp import ScoredTable, check_rows
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import HourlyRate, TcoAssumptions, economics_for, owned_rate
from planner.search.portfolio import PortfolioSolution, ReservedGpus, solve_portfolio
from planner.search.reserved import ReservedPrices
from planner.search.score import scored_table, search_space, sure_fit_table
from planner.search.space import build_candidates
from planner.search.table import LABEL_AXES, layout_label
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR


@dataclass(frozen=True)
class ScoredSearch:
    request: PlanRequest
    table: ScoredTable
    candidates: Candidates  # what ``plan_for_row`` re-scores and ``frame`` reads
    gpu_ids: tuple[str, ...] = ()
    catalog: Catalog | None = None  # with the request's price overrides
    calibration: PlanCalibration | None = None  # the file ``catalog`` was calibrated with, if any
    # a reserved term billed whole (``request_settings``); False for a portfolio's or fleet's jobs
    whole_terms: bool = True

    @cached_property
    def frame(self) -> pd.DataFrame:
        """One row per candidate that passes memory/divisibility/batch, built on first read (a
        portfolio reads none: its strings were a quarter of its time, issue 28)."""
        return search_frame(self.table, self.candidates, request_term(self.request) if self.whole_terms else None)

    def plan_for_row(self, row: int, settings: ModelingSettings | None = None) -> Plan:
        """Candidate ``row`` of the table as a runnable Plan (re-scored through ``estimate``;
        ``settings`` None: the request's stack profile)."""
        if self.catalog is None:
            raise ValueError("this search kept no catalog to re-score with (scored_search keeps it)")
        return plan_from_row(
            self.request,
            self.candidates,
            row,
            list(self.gpu_ids),
            self.catalog,
            request_settings(self.request, settings, self.whole_terms),
            self.calibration,
        )


def scored_search(
    request: PlanRequest,
    *,
    catalog: Catalog | None = None,
    settings: ModelingSettings | None = None,
    calibration: PlanCalibration | None = None,
    whole_terms: bool = True,
) -> ScoredSearch:
    """Every valid candidate with its time, cost and layout (``frame``, a DataFrame) (``settings``
    None: the request's stack profile, as ``plan``; ``whole_terms``: as ``request_settings``)."""
    settings = request_settings(request, settings, whole_terms)
    catalog = request_catalog(request, catalog or load_catalog(), settings)
    gpus = allowed_gpus(request, catalog)
    limits = count_limits(request, gpus)
    space = search_space(request, limits.largest)
    c = build_candidates(request.model, catalog, dict(limits.limits), space)
    # as plan: a file's measured kernel rates lift the ceiling of its GPUs (review s38: portfolio and
    # fleet held them where plan did not, and their plans did not record the file)
    table = scored_table(request, catalog, c, list(gpus), space, settings, rate_gpus(calibration))
    return ScoredSearch(request, table, c, tuple(gpus), catalog, calibration, whole_terms)


def search_frame(table: ScoredTable, c: Candidates, term: TermBilling | None = None) -> pd.DataFrame:
    """The rows of ``table`` that pass memory, divisibility and batch and were timed
    (``ScoredTable.valid``), with the model's figures, their 80 % band, the figures at the
    request's risk and each row's layout (``term``: the reserved term the costs bill whole)."""
    idx = np.flatnonzero(table.valid())
    # The model's figures with their 80 % band; the search judged them at the request's risk.
    model_s = table.extra["model_time_s"][idx]
    lo, hi = table.extra["band_lo"][idx], table.extra["band_hi"][idx]
    # The model's own cost as the table holds it, the number a budget judges (ScoredTable.limit_figures;
    # review s46 L11: re-derived here, the chart judged a copy); its band's ends billed as it is.
    model_cost, model_h = table.extra["model_cost_usd"][idx], model_s / SECONDS_PER_HOUR
    cost_lo, cost_hi = (rebilled(model_cost, model_h, model_h * f, term) for f in (lo, hi))
    frame = pd.DataFrame(
        {
            "gpu": table.gpu_id[idx],
            "num_gpus": table.num_gpus[idx],
            "time_to_train_days": model_s / SECONDS_PER_DAY,
            "cost_usd": model_cost,
            "time_lo_days": model_s * lo / SECONDS_PER_DAY,
            "time_hi_days": model_s * hi / SECONDS_PER_DAY,
            "cost_lo_usd": cost_lo,
            "cost_hi_usd": cost_hi,
            "time_at_risk_days": table.time_to_train_s[idx] / SECONDS_PER_DAY,
            "cost_at_risk_usd": table.cost_usd[idx],
            "memory_gib": table.memory_need_gib[idx],
            "capacity_gib": table.capacity_gib[idx],
            # the scored table's column (score.may_not_fit, MemoryBand.may_not_fit's rule): the
            # charts mark and pass over these rows at --risk p80 / p90 as the search does
            "may_not_fit": table.extra["may_not_fit"][idx],
            "tp": c.tp[idx],
            "pp": c.pp[idx],
            "cp": c.cp[idx],
            "dp_replicate": c.dp_replicate[idx],
            "dp_shard": c.dp_shard[idx],
            "vpp": c.vpp[idx],
            "ep": c.ep[idx],
            "micro_batch": c.micro_batch[idx],
            "grad_accum": c.grad_accum[idx],
            "sharding": _CODE_VALUES[SHARDING_CODES][c.sharding[idx]],
            "ac": _CODE_VALUES[AC_CODES][c.ac[idx]],
            "row": idx,
        }
    )
    # Once per distinct layout (a few per GPU type and count): strings cost (issue 28).
    first, inverse = distinct([c.sharding[idx], c.ac[idx], *(frame[k].to_numpy() for k in _LABEL_COLUMNS)], len(idx))
    labels = np.array(row_labels(frame.iloc[first]), dtype=object)
    frame["layout"] = pd.Series(labels[inverse], index=frame.index, dtype=frame["sharding"].dtype)
    return frame


# The enum codes' string values, to index by code; and the numeric columns a label reads.
_CODE_VALUES = {codes: np.array([code.value for code in codes], dtype=object) for codes in (SHARDING_CODES, AC_CODES)}
_AXES = LABEL_AXES
_LABEL_COLUMNS = (*_AXES, "micro_batch", "grad_accum")


def layout_labels(frame: pd.DataFrame) -> pd.Series:
    """Vectorised short description, e.g. 'fsdp dp_shard=16 tp=2 | mb 2 x 8 | ac full'."""
    label = frame["sharding"].astype(str)
    for axis in _AXES:
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


def row_labels(frame: pd.DataFrame) -> list[str]:
    """``layout_labels``' strings, row by row in Python: for tens of thousands of rows a
    format per row is faster than pandas' string columns (issue 28)."""
    columns = [frame[k].tolist() for k in ("sharding", *_AXES, "micro_batch", "grad_accum", "ac")]
    return [
        layout_label(sharding, degrees, micro_batch, grad_accum, ac)
        for sharding, *degrees, micro_batch, grad_accum, ac in zip(*columns, strict=True)
    ]


def plan_label(p: Plan) -> str:
    """``layout_labels`` of one plan: 'zero1 dp_shard=12 tp=2 | mb 2 x 21 | ac none'."""
    layout, training = p.layout, p.training
    return layout_label(
        layout.sharding.value,
        [getattr(layout, axis) for axis in _AXES],
        training.micro_batch,
        training.grad_accum,
        training.activation_checkpointing.value,
    )


def job_candidates(
    request: PlanRequest,
    name: str,
    catalog: Catalog,
    settings: ModelingSettings | None,
    calibration: PlanCalibration | None = None,
):
    """A job's scored table for the multi-job ILPs; labels filled for the rows that can be chosen."""
    # a fleet's and a portfolio's jobs share the terms their reservations bill (``ReservedPrices``):
    # billed by the hour here
    search = scored_search(request, catalog=catalog, settings=settings, calibration=calibration, whole_terms=False)
    return _job_candidates(search, name)


def _job_candidates(search: ScoredSearch, name: str, labelled: bool = True) -> JobCandidates:
    """``labelled`` False: the rows keep empty labels (``plan_portfolio`` labels its answer by its
    plans, ``PortfolioJob.label``, and needs no string per row)."""
    request = search.request
    deadline = None if request.deadline_days is None else request.deadline_days * SECONDS_PER_DAY
    table = search.table.judged_times()
    if request.risk.judges_memory:  # as plan's search (solve_at_risk): the sure fits, where they can do the job
        sure = sure_fit_table(table)
        table = sure if check_rows(sure, deadline_s=deadline, budget_usd=request.budget_usd).feasible().any() else table
    if labelled:
        labels = np.full(len(table), "", dtype=object)
        labels[search.frame["row"].to_numpy()] = search.frame["layout"].to_numpy()
        table = replace(table, label=labels)  # review s42: search.table here dropped the sure rows
    batch = None if request.vary_batch else requested_batch_tokens(request)
    return JobCandidates(name=name, table=table, deadline_s=deadline, budget_usd=request.budget_usd, batch_target=batch)


@dataclass(frozen=True)
class PortfolioJob:
    """One job of a portfolio: the runnable plan chosen for it and when it runs."""

    job: str
    plan: Plan
    start_s: float
    end_s: float
    cost_usd: float  # as the portfolio ILP priced it: GPU-hours at the owned rates, or a rented type's rent
    risk: Risk = DEFAULT_RISK  # the quantile of its time the ILP scheduled it at (its request's)

    @property
    def gpu_id(self) -> str:
        return self.plan.gpu

    @property
    def num_gpus(self) -> int:
        return self.plan.num_gpus

    @property
    def label(self) -> str:
        return plan_label(self.plan)


@dataclass(frozen=True)
class PortfolioPlan:
    """``plan_portfolio``'s answer: one Plan per job, with the schedule's totals."""

    assignments: tuple[PortfolioJob, ...]
    objective_value: float
    total_cost_usd: float  # the jobs' costs: GPU-hours at the owned rates, rent on the rented types
    idle_cost_usd: float  # owned GPU-hours no job used before the makespan (the ILP minimises both)
    makespan_s: float
    solver: str
    num_variables: int
    exact: bool = True  # the continuous model's optimum; False: the slotted approximation's (docs/ilp.md)
    # many jobs: the objective above lower_bound, relative (None: the optimum of the model that answered)
    stopped_gap: float | None = None
    lower_bound: float | None = None  # no schedule's objective is lower (planner/search/lanes.py)
    lanes: bool = False  # the lanes' schedule answered, not the slotted model's
    # What plan would have warned of each job ("job: ..."): its request, a run over a year, fixed costs.
    warnings: tuple[str, ...] = ()
    inventory: tuple[tuple[str, int], ...] = ()  # (type, count) shared: held, or a rented type's cap
    release_days: tuple[tuple[str, float], ...] = ()  # (job, day) of each job released after day 0
    after: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (job, the jobs it starts after) where set
    # each held (owned) type's cost per GPU-hour, busy or idle (PortfolioSolution's F_g); the
    # inventory's other types are rented by the hour, or reserved for whole terms (``reserved``)
    held_usd_per_gpu_hour: tuple[tuple[str, float], ...] = ()
    # under a reserved price kind, the rented types' GPUs reserved and their terms' bill
    reserved: tuple[ReservedGpus, ...] = ()
    # what the portfolio pays (PortfolioSolution.billed_usd): the jobs, the held GPUs' idle hours
    # and the reserved terms' unused ones
    billed_usd: float = 0.0
    horizon_days: float | None = None  # the jobs file's horizon_days (None: none given)

    @property
    def held_types(self) -> tuple[str, ...]:
        return tuple(g for g, _ in self.held_usd_per_gpu_hour)

    @property
    def holds_gpus(self) -> bool:
        """Whether any GPU is held: only then can one idle at a cost."""
        return bool(self.held_types)


def plan_portfolio(
    requests: dict[str, PlanRequest],
    inventory: dict[str, int],
    *,
    objective: str = "cost",
    horizon_days: float | None = None,
    num_slots: int = 1,
    catalog: Catalog | None = None,
    settings: ModelingSettings | None = None,
    tco: TcoAssumptions = TcoAssumptions(),
    purchase_usd: dict[str, float] | None = None,
    rented: frozenset[str] = frozenset(),
    wall_power_w: dict[str, float] | None = None,
    calibration: PlanCalibration | None = None,
    release_days: dict[str, float] | None = None,
    after: Mapping[str, Sequence[str]] | None = None,
) -> PortfolioPlan:
    """Several jobs sharing one owned inventory; each gets one runnable Plan and a start time.

    Each GPU is priced at its ownership (``owned_rate``: ``purchase_usd``, else the catalog's
    purchase estimate, under ``tco``; a type with neither: its rent). A type in ``rented`` is not
    held: its count caps the GPUs rented at once, each costs its rent while busy and nothing idle
    (F_g = 0, v_g = rent); under the requests' reserved price kind it is reserved for whole terms
    instead, up to that count (``reserved_prices``, as a fleet reserves). Start times are continuous up to ``EXACT_MAX_JOBS`` jobs;
    ``num_slots`` only refines the slotted model used above. ``calibration``: the record of the
    file ``catalog`` was calibrated with: its measured kernel rates lift the ceiling as in ``plan``,
    and every plan keeps it. ``release_days``: job -> the day it may start (deadlines count from day 0).
    ``after``: job -> the jobs it starts after (P, docs/ilp.md "Precedence")."""
    catalog = catalog or load_catalog()
    held = {g: n for g, n in inventory.items() if g not in rented}
    requests, reserved = _held_requests(requests, held, catalog, settings, rented)
    searches = {
        # a portfolio's jobs share the terms its reservations bill: billed by the hour
        name: scored_search(r, catalog=catalog, settings=settings, calibration=calibration, whole_terms=False)
        for name, r in requests.items()
    }
    horizon = None if horizon_days is None else horizon_days * SECONDS_PER_DAY
    jobs = _portfolio_jobs(searches, horizon, release_days or {}, after or {})
    rates = owned_rates(catalog, held, tco, settings or DEFAULT_SETTINGS, purchase_usd, wall_power_w)
    try:
        solution: PortfolioSolution = solve_portfolio(
            jobs, inventory, objective, rates=rates, horizon_s=horizon, num_slots=num_slots, rented=rented,
            reserved=reserved,
        )  # fmt: skip
    except InfeasiblePlan as answer:  # plan's count past the inventory and risk clause (trial s48 M7, L3)
        raise portfolio_answer(answer, searches, settings) from None
    assignments = _job_plans(solution, searches, settings)
    warnings = tuple(  # the reserved terms are billed (``reserved``), no longer warned of (session 44)
        f"{a.job}: {note}"
        for a in assignments
        for note in requests[a.job].warnings + long_job_warnings(a.plan) + fixed_cost_warnings(a.plan)
    )
    inputs = (inventory, horizon_days, release_days or {}, after or {})
    return _portfolio_plan(solution, assignments, warnings, inputs)


def _held_requests(
    requests: dict[str, PlanRequest],
    held: Mapping[str, int],
    catalog: Catalog,
    settings: ModelingSettings | None,
    rented: frozenset[str],
) -> tuple[dict[str, PlanRequest], ReservedPrices | None]:
    """The requests with each held type that has no offer of their price kind scored at its catalog
    rate (held at its ownership; review s45 M1: it refused the whole portfolio), and the reserved
    prices of the ``rented`` types under a reserved price kind (None: none rented, or an hourly kind)."""
    held_only = held_only_types(requests, held, catalog)
    requests = scored_as_held(requests, held_only, catalog)
    if not rented:
        return requests, None
    settings_or_default = settings or DEFAULT_SETTINGS
    return requests, reserved_prices(requests, catalog, settings_or_default, what="portfolio", held_only=held_only)


def _portfolio_jobs(
    searches: Mapping[str, ScoredSearch],
    horizon_s: float | None,
    release_days: Mapping[str, float],
    after: Mapping[str, Sequence[str]],
) -> list[JobCandidates]:
    """Each job's candidates with the horizon (a deadline answer past it names horizon_days too:
    job_candidates.py), its release r_j and the jobs it starts after (P)."""
    return [
        replace(
            _job_candidates(search, name, labelled=False),
            horizon_s=horizon_s,
            release_s=release_days.get(name, 0.0) * SECONDS_PER_DAY,
            after=tuple(after.get(name, ())),
        )
        for name, search in searches.items()
    ]


def _job_plans(
    solution: PortfolioSolution, searches: Mapping[str, ScoredSearch], settings: ModelingSettings | None
) -> tuple[PortfolioJob, ...]:
    """Each assignment's runnable Plan, re-scored from its row, with its times and cost."""
    return tuple(
        PortfolioJob(
            job=a.job,
            plan=searches[a.job].plan_for_row(a.row, settings),
            start_s=a.start_s,
            end_s=a.end_s,
            cost_usd=a.cost_usd,
            risk=searches[a.job].request.risk,
        )
        for a in solution.assignments
    )


def _portfolio_plan(
    solution: PortfolioSolution,
    assignments: tuple[PortfolioJob, ...],
    warnings: tuple[str, ...],
    inputs: tuple[Mapping[str, int], float | None, Mapping[str, float], Mapping[str, Sequence[str]]],
) -> PortfolioPlan:
    """The solver's answer with each job's plan (``assignments``), the jobs' ``warnings`` and the
    inputs it echoes: the inventory, horizon_days, each job's release day and predecessors."""
    inventory, horizon_days, release_days, after = inputs
    return PortfolioPlan(
        assignments=assignments,
        objective_value=solution.objective_value,
        total_cost_usd=solution.total_cost_usd,
        idle_cost_usd=solution.idle_cost_usd,
        makespan_s=solution.makespan_s,
        solver=solution.solver,
        num_variables=solution.num_variables,
        exact=solution.exact,
        stopped_gap=solution.stopped_gap,
        lower_bound=solution.lower_bound,
        lanes=solution.lanes,
        inventory=tuple(sorted(inventory.items())),
        release_days=tuple(sorted((n, d) for n, d in release_days.items() if d)),
        after=tuple(sorted((n, tuple(a)) for n, a in after.items() if a)),
        held_usd_per_gpu_hour=solution.held_usd_per_gpu_hour,
        reserved=solution.reserved,
        billed_usd=solution.billed_usd,
        horizon_days=horizon_days,
        warnings=warnings,
    )


def owned_rates(
    catalog: Catalog,
    inventory: dict[str, int],
    tco: TcoAssumptions,
    settings: ModelingSettings,
    purchase_usd: dict[str, float] | None = None,
    wall_power_w: dict[str, float] | None = None,
) -> dict[str, HourlyRate]:
    """Each inventory type's owned rate per GPU-hour (``owned_rate``) at ``purchase_usd`` or the
    catalog's purchase estimate, and at ``wall_power_w`` where given (trial s27: the portfolio read
    the catalog's power whatever the jobs file said); types with neither price are left out (the
    portfolio prices them at rent)."""
    prices = held_purchase_prices(catalog, inventory, purchase_usd)
    known = {g: usd for g, (usd, _) in prices.items() if usd is not None}
    economics = economics_for(catalog, known, settings, wall_power_w=wall_power_w)
    return {g: owned_rate(economics[catalog.gpu(g).id], tco) for g in known}


def held_purchase_prices(
    catalog: Catalog, inventory: Iterable[str], purchase_usd: dict[str, float] | None = None
) -> dict[str, tuple[float | None, bool]]:
    """Each held type's purchase price, the one ``owned_rates`` prices it at: ``purchase_usd``'s
    (matched by catalog id, as any name of the type), else the catalog's estimate (None: neither),
    and whether it was given (the CLI's owned-rate basis says which)."""
    given = {catalog.gpu(g).id: usd for g, usd in (purchase_usd or {}).items()}
    out: dict[str, tuple[float | None, bool]] = {}
    for g in inventory:
        gid = catalog.gpu(g).id
        out[g] = (given[gid], True) if gid in given else (catalog.gpu(g).purchase_price_usd, False)
    return out


__all__ = [
    "PlanResult",
    "PortfolioJob",
    "PortfolioPlan",
    "ScoredSearch",
    "WhyNot",
    "best_per_count",
    "check_rows",
    "held_purchase_prices",
    "owned_rates",
    "pareto_front",
    "plan_from_row",
    "plan_label",
    "plan_portfolio",
    "replace",
    "scored_search",
    "why_not",
    "why_not_answer",
]
