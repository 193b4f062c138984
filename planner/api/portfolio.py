"""A portfolio job's figures on the basis the portfolio schedules and prices it, with their bands.

``plan_portfolio`` (planner/api/explore.py) schedules each job at the search's risk quantile of
its time (``--risk``, default p80: docs/ilp.md "Risk") and prices it at the inventory's owned
rate (planner/search/ownership.py ``owned_rate``), not at rent (a type the app rents up to a cap,
not held, at its rent). So one job's "days" and "cost" there differ from ``trainplan
estimate``'s median time and rent. ``job_figures`` names that basis and
reads each figure's 80 % band and envelope from the job's plan: ``plan_from_row`` made its
estimate through ``judged_estimate``, so ``Estimate.uncertainty`` is planner/accuracy's
``uncertainty``, the one ``plan`` and ``estimate`` report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.accuracy import Risk
from planner.api.explore import PortfolioJob, PortfolioPlan
from planner.plan_accuracy import Standing, summed_band
from planner.search.late_band import LateAtBandEnd, late_at_band_end
from planner.search.ownership import busy_share, idle_usd
from planner.search.slots import list_schedule
from planner.units import HOURS_PER_DAY, SECONDS_PER_DAY

__all__ = [
    "HorizonHolding",
    "JobFigures",
    "PortfolioBands",
    "horizon_holding",
    "job_figures",
    "late_at_band_ends",
    "portfolio_bands",
]


@dataclass(frozen=True)
class JobFigures:
    """One job's scheduled days and owned-rate cost, their 80 % bands and the band's envelope."""

    job: str
    risk: Risk  # the quantile of the time to train the portfolio scheduled the job at
    days: float  # the job's scheduled duration: its time to train at ``risk``
    days_band: tuple[float, float] | None  # the 80 % band of its time to train, days (None: no band)
    owned_cost_usd: float  # its GPU-hours at the inventory's owned rates (not rent; a rented type: rent)
    owned_cost_band: tuple[float, float] | None  # the same GPU-hours over the ends of the time band
    validated: bool | None  # a measured row of the plan's regime exists (None: no band)
    standing: Standing | None  # validated, not independent (circular) or outside (None: no band)
    envelope: str | None  # the band's sentence: validated, or how far outside and how much widened
    # The model's own figure, the one ``plan`` leads with (buyer trial s50 L5: the JSON gave only the
    # risk's): its time to train, and its cost at the rate ``owned_cost_usd`` is at (None: no time)
    model_days: float | None = None
    model_cost_usd: float | None = None


def job_figures(job: PortfolioJob) -> JobFigures:
    """``job``'s figures at the quantile its search judged it at (``PortfolioJob.risk``)."""
    risk = job.risk
    days = (job.end_s - job.start_s) / SECONDS_PER_DAY
    # The owned cost is GPU-hours at a per-type rate: it scales with the days at a fixed count.
    per_day = job.cost_usd / days if days > 0 else 0.0
    own_h = job.plan.estimate.time_to_train_h
    model_days = None if own_h is None else own_h / HOURS_PER_DAY
    model_cost = None if model_days is None else model_days * per_day
    u = job.plan.estimate.uncertainty
    if u is None or u.time_to_train_h is None:
        return JobFigures(job.job, Risk(risk), days, None, job.cost_usd, None, None, None, None, model_days, model_cost)
    low, high = (hours / HOURS_PER_DAY for hours in u.time_to_train_h)
    return JobFigures(
        job=job.job,
        risk=Risk(risk),
        days=days,
        days_band=(low, high),
        owned_cost_usd=job.cost_usd,
        owned_cost_band=(low * per_day, high * per_day),
        validated=u.validated,
        standing=u.standing,
        envelope=u.envelope,
        model_days=model_days,
        model_cost_usd=model_cost,
    )


@dataclass(frozen=True)
class PortfolioBands:
    """The portfolio's totals' 80 % bands (None: a job has no band), every job's time at its band's
    ends at once: the jobs are timed by one model, whose errors move together (``summed_band``)."""

    jobs_cost_usd: tuple[float, float] | None  # the jobs' owned-rate costs
    makespan_days: tuple[float, float] | None  # the day the last job ends
    idle_cost_usd: tuple[float, float] | None  # held GPU-hours no job used by then, at F_g (None: none held)


def portfolio_bands(portfolio: PortfolioPlan, figures: Sequence[JobFigures]) -> PortfolioBands:
    """``figures``: the jobs' ``job_figures``, in the assignments' order (trial s35, round 2: "All
    jobs done after 105.8 days" and its idle cost had no band beside their jobs' bands)."""
    ends = _band_schedules(portfolio, figures)
    if ends is None:
        return PortfolioBands(summed_band([f.owned_cost_band for f in figures]), None, None)
    makespans = [max(s + d for s, d in zip(start, days, strict=True)) for start, days in ends]
    # Idle GPU-days are not monotone in the jobs' times (a faster job can leave a type idle longer),
    # so the band spans the idle cost of both ends' schedules and of the portfolio's own.
    idle = [_idle_cost_usd(portfolio, days, makespan) for (_, days), makespan in zip(ends, makespans, strict=True)]
    idle.append(portfolio.idle_cost_usd)
    return PortfolioBands(
        jobs_cost_usd=summed_band([f.owned_cost_band for f in figures]),
        makespan_days=(makespans[0], makespans[1]),
        idle_cost_usd=(min(idle), max(idle)) if portfolio.holds_gpus else None,
    )


def _band_schedules(
    portfolio: PortfolioPlan, figures: Sequence[JobFigures]
) -> list[tuple[list[float], list[float]]] | None:
    """(start days, days) of every job at its band's fast end, then at its slow end, on the same
    GPUs in the same order (``list_schedule``, as the portfolio's own schedule); None where a job
    has no band."""
    jobs = portfolio.assignments
    bands = [f.days_band for f in figures]
    if not jobs or any(b is None for b in bands):
        return None
    order = sorted(range(len(jobs)), key=lambda j: (jobs[j].start_s, j))
    gpus, counts = [a.gpu_id for a in jobs], [a.num_gpus for a in jobs]
    # a reserved type holds the GPUs reserved, not its cap (as the portfolio's own schedule)
    inventory = {**dict(portfolio.inventory), **{r.gpu_id: r.num_gpus for r in portfolio.reserved}}
    schedules = []
    release = [dict(portfolio.release_days).get(a.job, 0.0) for a in jobs]  # none starts before its release
    index, after = {a.job: j for j, a in enumerate(jobs)}, dict(portfolio.after)
    before = [[index[n] for n in after.get(a.job, ())] for a in jobs]  # nor before its predecessors end
    for end in (0, 1):
        days = [b[end] for b in bands if b]
        schedules.append((list_schedule(order, gpus, counts, days, inventory, release, before), days))
    return schedules


def _idle_cost_usd(portfolio: PortfolioPlan, days: Sequence[float], makespan_days: float) -> float:
    """The portfolio's idle cost (``idle_usd``, its own rule) with the jobs at ``days``."""
    busy = ((job.gpu_id, job.num_gpus * d) for job, d in zip(portfolio.assignments, days, strict=True))
    return idle_usd(dict(portfolio.held_usd_per_gpu_hour), dict(portfolio.inventory), busy, makespan_days)


def late_at_band_ends(portfolio: PortfolioPlan, deadline_days: Mapping[str, float | None]) -> list[LateAtBandEnd]:
    """The jobs that end past their deadlines (``deadline_days``: each job's, None for none) at the
    slow ends of their bands, their starts as scheduled (trial s51 M5; ``late_at_band_end``)."""
    late = []
    for job in portfolio.assignments:
        band = job_figures(job).days_band
        slow = None if band is None else band[1]
        if (found := late_at_band_end(job.job, job.start_s, slow, deadline_days.get(job.job))) is not None:
            late.append(found)
    return late


@dataclass(frozen=True)
class HorizonHolding:
    """The owned inventory held to the horizon (trial s51 M1: "all done by day 262" and its idle cost
    stopped there, and a budget holder's year has 103 days more): the owned GPUs idle from the
    makespan M to the horizon H at their held rate F_g (``idle_usd``, the rule of the idle cost before
    M: a held GPU-hour costs F_g busy or idle, a busy one v_g more, as fleet counts an owned GPU), and
    the owned GPU-hours' busy share of the horizon (``busy_share``, fleet's rule). Bands: every job at
    its band's ends (``PortfolioBands``), None where a job has none."""

    horizon_days: float
    holding_usd: float  # 24 sum_g F_g inv_g (H - M): after the last job ends, to the horizon
    holding_band_usd: tuple[float, float] | None  # at the makespan band's late end, then its early end
    owned_busy_fraction: float | None  # the owned types' jobs' GPU-days over inv_g x H (None: none owned)
    owned_busy_fraction_band: tuple[float, float] | None
    billed_usd: float  # what the portfolio pays (PortfolioPlan.billed_usd) plus ``holding_usd``: to H


def horizon_holding(
    portfolio: PortfolioPlan, figures: Sequence[JobFigures], bands: PortfolioBands
) -> HorizonHolding | None:
    """``portfolio``'s owned GPUs held to its horizon (None: no horizon, or no GPU held);
    ``figures``: the jobs' ``job_figures`` in the assignments' order, ``bands``: ``portfolio_bands``."""
    horizon = portfolio.horizon_days
    if horizon is None or not portfolio.holds_gpus:
        return None
    rates, inventory = dict(portfolio.held_usd_per_gpu_hour), dict(portfolio.inventory)

    def holding(makespan_days: float) -> float:
        return idle_usd(rates, inventory, (), max(horizon - makespan_days, 0.0))

    def busy(days: Sequence[float]) -> float | None:
        owned = [(a, d) for a, d in zip(portfolio.assignments, days, strict=True) if a.gpu_id in rates]
        return busy_share(sum(a.num_gpus * d for a, d in owned), sum(inventory[g] for g in rates), horizon)

    usd = holding(portfolio.makespan_s / SECONDS_PER_DAY)
    span = bands.makespan_days
    ends = [f.days_band for f in figures]
    known = [b for b in ends if b is not None]
    low, high = (busy([b[end] for b in known]) if len(known) == len(ends) else None for end in (0, 1))
    return HorizonHolding(
        horizon_days=horizon,
        holding_usd=usd,
        holding_band_usd=None if span is None else (holding(span[1]), holding(span[0])),
        owned_busy_fraction=busy([f.days for f in figures]),
        owned_busy_fraction_band=None if low is None or high is None else (low, high),
        billed_usd=portfolio.billed_usd + usd,
    )
