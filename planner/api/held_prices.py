"""What a many-job answer (fleet, portfolio) rents or reserves each GPU type at and where that price
comes from, and what it warns of (trial s48 H1, M4): a job held on a price with no median of offers
behind it (one provider's rate, an estimate), and each type priced above its on-demand median."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from planner.api.notices import dearer_kinds
from planner.catalog.hardware import Catalog
from planner.catalog.held_price import HeldPrice
from planner.model.settings import DEFAULT_SETTINGS
from planner.request import PlanRequest, priced_catalog
from planner.search.fleet_plan import Holding
from planner.search.held_warnings import DearerHeldPrice, EstimatedHeldPrice, HeldPriceWarning, ManyJobAnswer

if TYPE_CHECKING:  # explore.py builds the portfolio answer these prices are of
    from planner.api.explore import PortfolioPlan

__all__ = ["held_price_warnings", "held_prices", "portfolio_held_prices"]


def held_prices(requests: Mapping[str, PlanRequest], catalog: Catalog, gpus: Iterable[str]) -> dict[str, HeldPrice]:
    """Each of ``gpus`` at the price the jobs' searches rent it at (``priced_catalog``: the median of
    the price kind's offers, or the request's own quote), from the first request that prices it; a
    type without an offer of the kind and no quote is left out (it is held or not at all)."""
    out: dict[str, HeldPrice] = {}
    wanted = list(dict.fromkeys(catalog.gpu(g).id for g in gpus))
    for request in requests.values():
        # no pinned GPUs: a type the kind cannot price is left out here, not refused
        priced = priced_catalog(catalog, request.price_kind, [], dict(request.price_overrides), DEFAULT_SETTINGS)
        for gpu in wanted:
            spec = priced.gpus.get(gpu)
            if spec is not None and spec.price_per_gpu_hour_usd is not None and gpu not in out:
                out[gpu] = HeldPrice(gpu, spec.price_per_gpu_hour_usd, spec.price_basis, request.price_kind)
    return out


def held_price_warnings(
    requests: Mapping[str, PlanRequest],
    catalog: Catalog,
    prices: Mapping[str, HeldPrice],
    held_jobs: Mapping[tuple[str, Holding], list[str]],
    answer: ManyJobAnswer,
) -> tuple[HeldPriceWarning, ...]:
    """The warnings of the prices an answer shows (``catalog``: before any price kind priced it):
    each type priced above its on-demand median (``dearer_kinds``, once per type), and each type
    ``held_jobs`` ((GPU, rented or reserved) -> the jobs) holds jobs on at a price with no median of
    offers behind it, whose cost then rests on that one figure. A jobs file's jobs share one price
    kind and one set of quotes, so the first request speaks for them. Records, not words: the CLI
    says each one's ``words``, the app its page's language (app49)."""
    if not requests or not prices:
        return ()
    dearer = dearer_kinds(next(iter(requests.values())), catalog, list(prices))
    estimated = tuple(
        EstimatedHeldPrice(answer, holding, prices[gpu], tuple(jobs))
        for (gpu, holding), jobs in held_jobs.items()
        if gpu in prices and prices[gpu].basis.estimated
    )
    return (*(DearerHeldPrice(d) for d in dearer), *estimated)


def portfolio_held_prices(
    solution: PortfolioPlan, requests: Mapping[str, PlanRequest], catalog: Catalog
) -> tuple[dict[str, HeldPrice], tuple[HeldPriceWarning, ...]]:
    """The types a portfolio rents or reserves jobs on, at their prices (``held_prices``), and those
    prices' warnings (trial s48 H1, M4: a rent no median of offers backs, a kind above on-demand), as
    fleet's ``with_prices`` gives its own (review s48 M2: this was worked out in the CLI)."""
    reserved = {r.gpu_id for r in solution.reserved}
    held_jobs: dict[tuple[str, Holding], list[str]] = {}
    for a in solution.assignments:
        if a.gpu_id not in solution.held_types:
            holding = Holding.RESERVED if a.gpu_id in reserved else Holding.RENTED
            held_jobs.setdefault((a.gpu_id, holding), []).append(a.job)
    prices = held_prices(requests, catalog, [gpu for gpu, _ in held_jobs])
    return prices, held_price_warnings(requests, catalog, prices, held_jobs, ManyJobAnswer.PORTFOLIO)
