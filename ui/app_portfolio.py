"""The app's portfolio answer without Streamlit (split out of ui/app_core.py, app49): the jobs
solved on one inventory (``planner.api.explore.plan_portfolio``) as a table and totals, with the
warnings of the prices it rents at as the planner's records (``portfolio_held_prices``), which the
view words in the page's language (ui/held_price_texts.py)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pandas as pd

from planner.api import PlanRequest
from planner.catalog.hardware import Catalog, load_catalog
from planner.errors import InfeasiblePlan
from planner.fmt import one_line
from planner.model.settings import ModelingSettings
from planner.plan_calibration import PlanCalibration
from planner.search.held_warnings import HeldPriceWarning
from planner.search.late_band import LateAtBandEnd
from planner.search.ownership import TcoAssumptions
from planner.units import SECONDS_PER_DAY
from ui.app_core import Infeasible

if TYPE_CHECKING:  # the portfolio's modules load when a portfolio is solved
    from planner.api.explore import PortfolioPlan
    from planner.api.portfolio import HorizonHolding


@dataclass(frozen=True)
class PortfolioOutcome:
    frame: pd.DataFrame | None = None  # one row per job: gpu, num_gpus, layout, start/end days, cost
    total_cost_usd: float | None = None  # the jobs' GPU-hours at the owned rates
    total_cost_band: tuple[float, float] | None = None  # the jobs' 80 % bands summed (summed_band)
    idle_cost_usd: float | None = None  # owned GPU-hours no job used before the last one ends
    idle_cost_band: tuple[float, float] | None = None  # every job at its band's ends (portfolio_bands)
    makespan_days: float | None = None
    makespan_band_days: tuple[float, float] | None = None  # every job at its band's ends (portfolio_bands)
    holds_gpus: bool = False  # any type held (owned): only then can GPUs idle at a cost
    # how far above a lower bound on every schedule the many-job answer may lie (None: a proven optimum)
    stopped_gap: float | None = None
    lanes: bool = False  # the many-job answer is the lanes' schedule (planner/search/lanes.py)
    infeasible: Infeasible | None = None
    error: str | None = None
    # With ``infeasible``: the jobs it names cannot run on their own and the frame is the others'
    # schedule without them (trial s35, round 2: one such job blanked every other job's schedule).
    left_out: tuple[str, ...] = ()
    # Under a reserved price kind the rented types' GPUs reserved for whole terms, and what the
    # portfolio pays in all (its jobs, idle held GPUs and the terms' unused hours): session 44, the
    # page showed the jobs' cost alone while the choices were made on the terms' bill
    reserved: tuple = ()  # planner.search.portfolio_reserved.ReservedGpus
    billed_usd: float | None = None
    # the prices' warnings the CLI prints (a rent no median of offers backs, a kind above on-demand):
    # records, worded by the view in the page's language (app49: the page had none of them)
    price_warnings: tuple[HeldPriceWarning, ...] = ()
    # the jobs past their deadlines at their bands' slow ends (trial s51 M5), worded by the view
    late: tuple[LateAtBandEnd, ...] = ()
    # with a horizon and GPUs held: what holding them idle from the last job's end to the horizon
    # costs, their busy share of it, and the bill to it (trial s51 M1, the CLI's), worded by the view
    horizon: HorizonHolding | None = None


def solve_jobs(
    requests: dict[str, PlanRequest],
    inventory: dict[str, int],
    *,
    objective: str,
    horizon_days: float | None,
    num_slots: int,
    settings: ModelingSettings,
    catalog: Catalog | None = None,
    rented: frozenset[str] = frozenset(),
    purchase_usd: dict[str, float] | None = None,
    tco: TcoAssumptions | None = None,
    calibration: PlanCalibration | None = None,
    release_days: dict[str, float] | None = None,
    after: dict[str, tuple[str, ...]] | None = None,
) -> PortfolioOutcome:
    """``planner.api.explore.plan_portfolio`` as a table: one row per job's chosen plan, its days at
    its risk quantile and its owned-rate cost with their 80 % bands (planner/api/portfolio.py).
    Where some jobs cannot run on their own, their answer and the others' schedule without them.
    ``calibration``: the record of the file ``catalog`` was calibrated with (its plans keep it)."""
    from planner.api.explore import plan_portfolio

    plan_of = functools.partial(
        plan_portfolio,
        inventory=inventory,
        objective=objective,
        horizon_days=horizon_days,
        num_slots=num_slots,
        catalog=catalog,
        settings=settings,
        rented=rented,
        purchase_usd=purchase_usd,
        tco=tco or TcoAssumptions(),
        calibration=calibration,
        release_days=release_days or None,
        after=after or None,
    )
    unpriced = catalog or load_catalog()  # the prices' warnings read it before any price kind
    try:
        return portfolio_outcome(plan_of(requests), requests, unpriced)
    except InfeasiblePlan as exc:
        answer = PortfolioOutcome(infeasible=Infeasible.of(exc))
        alone = tuple(name for name, _ in exc.jobs) or ((exc.job,) if exc.job else ())
        others = {name: request for name, request in requests.items() if name not in alone}
        if not alone or not others:  # no job can run alone, or the jobs do not fit together
            return answer
        try:  # trial s35 (round 2): one such job blanked every other job's schedule
            rest = plan_of(others)
        except (InfeasiblePlan, ValueError):  # the others' own answer comes once these are mended
            return answer
        return replace(portfolio_outcome(rest, others, unpriced), infeasible=answer.infeasible, left_out=alone)
    except ValueError as exc:
        return PortfolioOutcome(error=one_line(exc))


def portfolio_outcome(solution: PortfolioPlan, requests: dict[str, PlanRequest], catalog: Catalog) -> PortfolioOutcome:
    """A solved portfolio as the app's table and totals, with its prices' warnings (``requests``:
    its jobs'; ``catalog``: the one it was planned on)."""
    from planner.api.held_prices import portfolio_held_prices
    from planner.api.portfolio import horizon_holding, job_figures, late_at_band_ends, portfolio_bands
    from ui.render_portfolio import cost_per_gpu_hour

    nan = (math.nan, math.nan)
    figures = {a.job: job_figures(a) for a in solution.assignments}
    frame = pd.DataFrame(
        [
            {
                "job": a.job,
                "gpu": a.gpu_id,
                "num_gpus": a.num_gpus,
                "layout": a.plan.layout_words,
                # the training and pp, worded per page by the view (portfolio_view.with_training_words)
                "training": (a.plan.training, a.plan.layout.pp),
                "start_days": a.start_s / SECONDS_PER_DAY,
                "end_days": a.end_s / SECONDS_PER_DAY,
                "days": figures[a.job].days,
                "time_p10_days": (figures[a.job].days_band or nan)[0],
                "time_p90_days": (figures[a.job].days_band or nan)[1],
                "cost_usd": a.cost_usd,
                "cost_p10_usd": (figures[a.job].owned_cost_band or nan)[0],
                "cost_p90_usd": (figures[a.job].owned_cost_band or nan)[1],
                # trial s39: the CLI's rate and basis were not on the page (worded per page by the view)
                "usd_per_gpu_h": cost_per_gpu_hour(a),
                "owned": a.gpu_id in solution.held_types,
                "validated": figures[a.job].standing,  # worded per page by the view
            }
            for a in solution.assignments
        ]
    )
    ordered = [figures[a.job] for a in solution.assignments]
    bands = portfolio_bands(solution, ordered)
    return PortfolioOutcome(
        frame=frame,
        total_cost_usd=solution.total_cost_usd,
        total_cost_band=bands.jobs_cost_usd,
        idle_cost_usd=solution.idle_cost_usd,
        idle_cost_band=bands.idle_cost_usd,
        makespan_days=solution.makespan_s / SECONDS_PER_DAY,
        makespan_band_days=bands.makespan_days,
        holds_gpus=solution.holds_gpus,
        stopped_gap=solution.stopped_gap,
        lanes=solution.lanes,
        reserved=solution.reserved,
        billed_usd=solution.billed_usd,
        price_warnings=portfolio_held_prices(solution, requests, catalog)[1],
        late=tuple(late_at_band_ends(solution, {name: r.deadline_days for name, r in requests.items()})),
        horizon=horizon_holding(solution, ordered, bands),
    )
