"""What reserving each GPU type costs under the requests' reserved price kind (``reserved_prices``):
the one place a fleet (planner/api/fleet.py) and a portfolio (planner/api/explore.py
``plan_portfolio``) read the kind, rate and rent unit their reservations are priced at."""

from __future__ import annotations

from planner.api import request_catalog
from planner.catalog.hardware import Catalog
from planner.model.settings import ModelingSettings
from planner.request import PlanRequest, request_term
from planner.search.reserved import ReservedPrices

__all__ = ["reserved_prices"]


def reserved_prices(
    requests: dict[str, PlanRequest],
    catalog: Catalog,
    settings: ModelingSettings,
    rent_usd_per_gpu_hour: dict[str, float] | None = None,
    what: str = "fleet",
) -> ReservedPrices | None:
    """Under the requests' reserved price kind (None for another kind), what reserving each of their
    GPU types costs: ``rent_usd_per_gpu_hour``'s rate where given, else the request's own price (the
    median of the kind's offers, or its ``price_overrides``), reserved in the GPUs its offers rent
    together (``rent_unit_gpus``; a quote of one's own is per GPU). A fleet (or a portfolio, ``what``)
    holds one reservation per type, so every job must be at one price kind and term (ValueError)."""
    terms = {request_term(r) for r in requests.values()}
    if terms == {None}:
        return None
    kinds = {r.price_kind for r in requests.values()}
    if len(terms) > 1 or len(kinds) > 1:
        named = ", ".join(sorted(str(k) for k in kinds))
        raise ValueError(f"{what}: every job must rent at one price kind and term to share reservations, got {named}")
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
