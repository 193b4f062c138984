"""``plan_fleet``: rent (or reserve) vs buy for a set of jobs over a horizon, from their requests;
the model is planner/search/fleet.py's ``size_fleet`` (moved out of planner/api/explore.py, which
holds the jobs' candidates)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from planner.api.explore import job_candidates
from planner.api.held_prices import held_price_warnings, held_prices
from planner.api.judged import failed_jobs, jobs_judged_at_risk
from planner.api.reserved import held_only_types, reserved_prices, scored_as_held
from planner.catalog.hardware import Catalog, load_catalog
from planner.catalog.held_price import HeldPrice
from planner.catalog.prices import PriceBasis, offers_range
from planner.errors import InfeasiblePlan
from planner.model.energy import gpu_wall_power_w
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.plan_calibration import PlanCalibration
from planner.request import PlanRequest
from planner.search.fleet import FleetSolution, Holding, size_fleet
from planner.search.held_warnings import ManyJobAnswer
from planner.search.late_band import late_at_band_end
from planner.search.ownership import OwnedGpus, TcoAssumptions, economics_for, owned_rate
from planner.units import SECONDS_PER_DAY

__all__ = ["plan_fleet"]


def plan_fleet(
    requests: dict[str, PlanRequest],
    purchase_usd: dict[str, float],
    horizon_days: float,
    *,
    tco: TcoAssumptions = TcoAssumptions(),
    num_slots: int = 12,
    catalog: Catalog | None = None,
    settings: ModelingSettings | None = None,
    rent_usd_per_gpu_hour: dict[str, float] | None = None,
    wall_power_w: dict[str, float] | None = None,
    calibration: PlanCalibration | None = None,
    owned: dict[str, int] | None = None,
    rented: frozenset[str] = frozenset(),
    release_days: dict[str, float] | None = None,
    after: Mapping[str, Sequence[str]] | None = None,
) -> FleetSolution:
    """How many GPUs of each type to buy vs rent for a set of jobs over a horizon (rent and wall
    power per type: given, else the catalog's; the jobs' own rent is their requests' prices;
    ``calibration``: as ``plan_portfolio``'s). Under a reserved price kind the jobs' GPUs are
    reserved for whole terms instead of rented (planner/api/reserved.py ``reserved_prices``); a type to
    buy that the jobs' price kind has no offer for is bought or not held (``held_only_types``).
    ``owned``: GPUs already owned per type (a jobs file's [inventory]), held beside those bought, their
    price sunk (``OwnedGpus``); one neither to buy nor in ``rented`` is never rented. ``release_days``:
    job -> the day it may start (its deadline counts from day 0). ``after``: job -> the jobs it starts
    after (P, docs/ilp.md "Precedence")."""
    catalog = catalog or load_catalog()
    settings_or_default = settings or DEFAULT_SETTINGS
    held_only = held_only_types(requests, purchase_usd, catalog, rent_usd_per_gpu_hour or {})
    requests = scored_as_held(requests, held_only, catalog)
    release, waits = release_days or {}, {n: tuple(a) for n, a in (after or {}).items() if a}
    jobs = [
        replace(job_candidates(r, n, catalog, settings, calibration), release_s=release.get(n, 0.0) * SECONDS_PER_DAY)
        for n, r in requests.items()
    ]
    jobs = [replace(job, after=waits.get(job.name, ())) for job in jobs]
    economics = economics_for(catalog, purchase_usd, settings_or_default, rent_usd_per_gpu_hour, wall_power_w)
    reserved = reserved_prices(requests, catalog, settings_or_default, rent_usd_per_gpu_hour, held_only=held_only)
    held = owned_gpus(catalog, owned or {}, settings_or_default, wall_power_w)
    unrented = frozenset(held) - set(economics) - set(rented)
    try:
        solution = size_fleet(
            jobs,
            economics,
            horizon_days,
            tco,
            num_slots=num_slots,
            reserved=reserved,
            held_only=held_only,
            owned=held,
            unrented=unrented,
        )
    except InfeasiblePlan as answer:  # the risk clause as plan's and portfolio's (trial s48 L3)
        raise fleet_answer(answer, requests) from None
    held_rate = {
        g: owned_rate(e, tco).held_usd_per_gpu_hour for g, e in economics.items()
    }  # F_g per hour, as portfolio's
    releases = {n: d for n, d in release.items() if d}
    solution = replace(solution, release_days=releases, after=waits, held_usd_per_gpu_hour=held_rate)
    return with_prices(solution, requests, catalog, rent_usd_per_gpu_hour or {})


def owned_gpus(
    catalog: Catalog, owned: dict[str, int], settings: ModelingSettings, wall_power_w: dict[str, float] | None
) -> dict[str, OwnedGpus]:
    """Each owned type's GPUs at its wall power: the given one, else the catalog's by the one rule
    (planner/model/energy.py), as a type to buy is powered (``economics_for``)."""
    power = {catalog.gpu(g).id: w for g, w in (wall_power_w or {}).items()}
    out = {}
    for name, count in owned.items():
        gpu = catalog.gpu(name)
        out[gpu.id] = OwnedGpus(count, power.get(gpu.id, gpu_wall_power_w(gpu, settings)))
    return out


def fleet_answer(answer: InfeasiblePlan, requests: dict[str, PlanRequest]) -> InfeasiblePlan:
    """``size_fleet``'s infeasible answer with the quantile each job's days and cost are judged at
    (``jobs_judged_at_risk``); an answer of no one job as it is."""
    failed = failed_jobs(answer)
    if not failed:
        return answer
    return jobs_judged_at_risk(failed, {name: requests[name].risk for name, _ in failed})


def with_prices(
    solution: FleetSolution, requests: dict[str, PlanRequest], catalog: Catalog, given: dict[str, float]
) -> FleetSolution:
    """The answer with the price of each type it rents or reserves (and weighs buying against) and its
    basis (``given``: a rate the caller set, the user's where it is not the jobs' own price), and the
    warnings of those prices: the chosen (mixed) option's jobs on a price no median of offers backs
    (trial s48 H1: 128 MI325X rented at TensorWave's one rate, unsaid), every type priced above its
    on-demand median (M4)."""
    options = [p for p in (solution.mixed, solution.rent_only, solution.buy_only) if p is not None]
    shown = [b.gpu_id for b in solution.break_even]
    shown += [] if solution.reserved is None else list(solution.reserved.usd_per_gpu_hour)
    shown += [a.gpu_id for p in options for a in p.assignments if a.holding is not Holding.OWNED]
    prices = held_prices(requests, catalog, [g for g in shown if g not in solution.held_only])
    for gpu, usd in given.items():
        gpu = catalog.gpu(gpu).id
        if gpu in prices and usd != prices[gpu].usd_per_gpu_hour:
            prices[gpu] = HeldPrice(gpu, usd, PriceBasis.USER, prices[gpu].kind)
    held_jobs: dict[tuple[str, Holding], list[str]] = {}
    for a in solution.mixed.assignments:
        if a.holding is not Holding.OWNED:
            held_jobs.setdefault((a.gpu_id, a.holding), []).append(a.job)
    warnings = held_price_warnings(requests, catalog, prices, held_jobs, ManyJobAnswer.FLEET_MIXED)
    late = (
        late_at_band_end(
            a.job,
            a.start_s,
            None if (b := a.banded(a.end_s - a.start_s)) is None else b[1] / SECONDS_PER_DAY,
            requests[a.job].deadline_days,
        )
        for a in solution.mixed.assignments
    )
    # the range of each rent buying is weighed against: its kind's offers (trial s51 M4: one median, unsaid)
    kind = next(iter(requests.values())).price_kind if requests else None
    spans = {b.gpu_id: offers_range(catalog.gpu(b.gpu_id), kind) for b in solution.break_even}
    return replace(
        solution,
        prices=prices,
        price_warnings=warnings,
        late_at_band_end=tuple(w for w in late if w),
        rent_offers={g: span for g, span in spans.items() if span is not None},
    )
