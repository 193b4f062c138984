"""The app's fleet answer without Streamlit: rent (or reserve) vs buy for the portfolio's jobs over
a horizon (``planner.api.fleet.plan_fleet``, the model of ``trainplan fleet``), asked as the CLI asks
it from a jobs file (ui/cli_portfolio.py ``fleet``): the types to buy at their purchase prices, each
job free to run on every allowed type, the rent each type to buy is weighed against
(``fleet_rents``, one rule for both)."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.api import PlanRequest
from planner.catalog.hardware import Catalog
from planner.errors import InfeasiblePlan
from planner.fmt import one_line
from planner.model.settings import ModelingSettings
from planner.plan_calibration import PlanCalibration
from planner.search.fleet_plan import FleetSolution
from planner.search.ownership import TcoAssumptions
from ui.app_core import Infeasible
from ui.fleet_inputs import fleet_rents


@dataclass(frozen=True)
class FleetAsk:
    """What the fleet view asks beside the jobs (hashable: ``st.cache_data`` keys on it)."""

    buy: tuple[tuple[str, float], ...]  # each type to buy and its purchase price (USD per GPU)
    horizon_days: float
    num_slots: int  # the held jobs' start slots over the horizon (an approximation: more refine it)
    gpus: tuple[str, ...]  # the types a job may run on: rented, reserved or bought
    # the GPU table's own rents (USD per GPU-hour), the price kind and a reserved term's filled share:
    # one price basis for every job, as a jobs file's
    rents: tuple[tuple[str, float], ...] = ()
    price_kind: str | None = None
    term_filled: float = 0.0
    tco: TcoAssumptions = field(default_factory=TcoAssumptions)
    # GPUs already owned per type (the GPU table's counts, where the view says so): held in every
    # option, their price sunk, as a jobs file's [inventory] under trainplan fleet (trial s51 H1)
    owned: tuple[tuple[str, int], ...] = ()
    release_days: tuple[tuple[str, float], ...] = ()  # job -> its start_after_days, where set (s51 H4)
    after: tuple[tuple[str, tuple[str, ...]], ...] = ()  # job -> the jobs it starts after, where any (s52)


@dataclass(frozen=True)
class FleetOutcome:
    """The answer (``plan_fleet``'s, its prices and their warnings included), or why there is none."""

    solution: FleetSolution | None = None
    infeasible: Infeasible | None = None
    error: str | None = None


def fleet_requests(requests: dict[str, PlanRequest], ask: FleetAsk) -> dict[str, PlanRequest]:
    """Each job's request on the fleet's types (no count: the fleet sizes what is held, as the CLI's
    ``{g: None for g in [*prices, *rented]}``) at the ask's prices, validated again."""
    gpus = dict.fromkeys([*ask.gpus, *(g for g, _ in ask.buy)])
    update = {"gpus": gpus, "price_overrides": dict(ask.rents), "price_kind": ask.price_kind}
    update["term_filled"] = ask.term_filled
    return {
        name: PlanRequest.model_validate({**request.model_dump(mode="json"), **update})
        for name, request in requests.items()
    }


def solve_fleet(
    requests: dict[str, PlanRequest],
    ask: FleetAsk,
    *,
    settings: ModelingSettings,
    catalog: Catalog,
    calibration: PlanCalibration | None = None,
) -> FleetOutcome:
    """``plan_fleet`` of the jobs (``fleet_requests``) as the CLI calls it; its infeasible answer as
    plain data, a refused input as its one line."""
    from planner.api.fleet import plan_fleet

    buy = dict(ask.buy)
    try:
        rent = fleet_rents(dict(ask.rents), buy, ask.price_kind, catalog)
        solution = plan_fleet(
            fleet_requests(requests, ask),
            buy,
            ask.horizon_days,
            tco=ask.tco,
            num_slots=ask.num_slots,
            catalog=catalog,
            settings=settings,
            rent_usd_per_gpu_hour=rent,
            calibration=calibration,
            owned=dict(ask.owned) or None,
            release_days=dict(ask.release_days) or None,
            after=dict(ask.after) or None,
        )
    except InfeasiblePlan as exc:
        return FleetOutcome(infeasible=Infeasible.of(exc))
    except ValueError as exc:
        return FleetOutcome(error=one_line(exc))
    return FleetOutcome(solution=solution)
