"""``plan_fleet``: rent (or reserve) vs buy for a set of jobs over a horizon, from their requests;
the model is planner/search/fleet.py's ``size_fleet`` (moved out of planner/api/explore.py, which
holds the jobs' candidates)."""

from __future__ import annotations

from planner.api import request_catalog
from planner.api.explore import job_candidates
from planner.catalog.hardware import Catalog, load_catalog
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.plan_calibration import PlanCalibration
from planner.request import PlanRequest, request_term
from planner.search.fleet import FleetSolution, size_fleet
from planner.search.ownership import TcoAssumptions, economics_for
from planner.search.reserved import ReservedPrices

__all__ = ["fleet_reserved_prices", "plan_fleet"]


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
) -> FleetSolution:
    """How many GPUs of each type to buy vs rent for a set of jobs over a horizon (rent and wall
    power per type: given, else the catalog's; the jobs' own rent is their requests' prices;
    ``calibration``: as ``plan_portfolio``'s). Under a reserved price kind the jobs' GPUs are
    reserved for whole terms instead of rented (``fleet_reserved_prices``)."""
    catalog = catalog or load_catalog()
    settings_or_default = settings or DEFAULT_SETTINGS
    jobs = [job_candidates(r, name, catalog, settings, calibration) for name, r in requests.items()]
    economics = economics_for(catalog, purchase_usd, settings_or_default, rent_usd_per_gpu_hour, wall_power_w)
    reserved = fleet_reserved_prices(requests, catalog, settings_or_default, rent_usd_per_gpu_hour)
    return size_fleet(jobs, economics, horizon_days, tco, num_slots=num_slots, reserved=reserved)


def fleet_reserved_prices(
    requests: dict[str, PlanRequest],
    catalog: Catalog,
    settings: ModelingSettings,
    rent_usd_per_gpu_hour: dict[str, float] | None = None,
) -> ReservedPrices | None:
    """Under the requests' reserved price kind (None for another kind), what reserving each of their
    GPU types costs: ``rent_usd_per_gpu_hour``'s rate where given, else the request's own price (the
    median of the kind's offers, or its ``price_overrides``), reserved in the GPUs its offers rent
    together (``rent_unit_gpus``; a quote of one's own is per GPU). A fleet holds one reservation per
    type, so every job must be at one price kind and term (ValueError)."""
    terms = {request_term(r) for r in requests.values()}
    if terms == {None}:
        return None
    kinds = {r.price_kind for r in requests.values()}
    if len(terms) > 1 or len(kinds) > 1:
        named = ", ".join(sorted(str(k) for k in kinds))
        raise ValueError(f"fleet: every job must rent at one price kind and term to share reservations, got {named}")
    (term,), (kind,) = terms, kinds
    assert term is not None and kind is not None
    given = {catalog.gpu(g).id: usd for g, usd in (rent_usd_per_gpu_hour or {}).items()}
    rates: dict[str, float] = {}
    unit: dict[str, int] = {}
    for request in requests.values():
        priced = request_catalog(request, catalog, settings)
        for gpu_id in request.gpus or priced.gpus:
            spec = priced.gpu(gpu_id)
            rates.setdefault(spec.id, given.get(spec.id, spec.price_per_gpu_hour_usd))
            unit.setdefault(spec.id, spec.rent_unit_gpus)
    return ReservedPrices(kind, term, rates, unit)
