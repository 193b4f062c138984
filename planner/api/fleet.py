"""``plan_fleet``: rent (or reserve) vs buy for a set of jobs over a horizon, from their requests;
the model is planner/search/fleet.py's ``size_fleet`` (moved out of planner/api/explore.py, which
holds the jobs' candidates)."""

from __future__ import annotations

from planner.api.explore import job_candidates
from planner.api.reserved import held_only_types, reserved_prices, scored_as_held
from planner.catalog.hardware import Catalog, load_catalog
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.plan_calibration import PlanCalibration
from planner.request import PlanRequest
from planner.search.fleet import FleetSolution, size_fleet
from planner.search.ownership import TcoAssumptions, economics_for

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
) -> FleetSolution:
    """How many GPUs of each type to buy vs rent for a set of jobs over a horizon (rent and wall
    power per type: given, else the catalog's; the jobs' own rent is their requests' prices;
    ``calibration``: as ``plan_portfolio``'s). Under a reserved price kind the jobs' GPUs are
    reserved for whole terms instead of rented (planner/api/reserved.py ``reserved_prices``); a type to
    buy that the jobs' price kind has no offer for is bought or not held (``held_only_types``)."""
    catalog = catalog or load_catalog()
    settings_or_default = settings or DEFAULT_SETTINGS
    held_only = held_only_types(requests, purchase_usd, catalog, rent_usd_per_gpu_hour or {})
    requests = scored_as_held(requests, held_only, catalog)
    jobs = [job_candidates(r, name, catalog, settings, calibration) for name, r in requests.items()]
    economics = economics_for(catalog, purchase_usd, settings_or_default, rent_usd_per_gpu_hour, wall_power_w)
    reserved = reserved_prices(requests, catalog, settings_or_default, rent_usd_per_gpu_hour, held_only=held_only)
    return size_fleet(jobs, economics, horizon_days, tco, num_slots=num_slots, reserved=reserved, held_only=held_only)
