"""What reserving each GPU type costs under the requests' reserved price kind (``reserved_prices``):
the one place a fleet (planner/api/fleet.py) and a portfolio (planner/api/explore.py
``plan_portfolio``) read the kind, rate and rent unit their reservations are priced at."""

from __future__ import annotations

from collections.abc import Collection

from planner.api import request_catalog
from planner.catalog.hardware import Catalog
from planner.catalog.prices import offers_of
from planner.model.settings import ModelingSettings
from planner.request import PlanRequest, request_term
from planner.search.reserved import ReservedPrices

__all__ = ["held_only_types", "reserved_prices", "scored_as_held"]


def reserved_prices(
    requests: dict[str, PlanRequest],
    catalog: Catalog,
    settings: ModelingSettings,
    rent_usd_per_gpu_hour: dict[str, float] | None = None,
    what: str = "fleet",
    held_only: frozenset[str] = frozenset(),
) -> ReservedPrices | None:
    """Under the requests' reserved price kind (None for another kind), what reserving each of their
    GPU types costs: ``rent_usd_per_gpu_hour``'s rate where given, else the request's own price (the
    median of the kind's offers, or its ``price_overrides``), reserved in the GPUs its offers rent
    together (``rent_unit_gpus``; a quote of one's own is per GPU). A fleet (or a portfolio, ``what``)
    holds one reservation per type, so every job must be at one price kind and term (ValueError).
    ``held_only`` (``held_only_types``) are left unpriced: they are held (bought) or not at all."""
    terms = {request_term(r) for r in requests.values()}
    if terms == {None}:
        return None
    kinds = {r.price_kind for r in requests.values()}
    if len(terms) > 1 or len(kinds) > 1:  # review s44 L9: one kind at two term_filled named the kind alone
        named = ", ".join(sorted({_kind_words(r) for r in requests.values()}))
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
            if spec.id in held_only:
                continue
            rates.setdefault(spec.id, given.get(spec.id, spec.price_per_gpu_hour_usd))
            unit.setdefault(spec.id, spec.rent_unit_gpus)
    return ReservedPrices(kind, term, rates, unit)


def _kind_words(request: PlanRequest) -> str:
    """'reserved-1y' or 'reserved-1y (term_filled 0.5)': a request's kind, and the share of its term
    other work fills where any."""
    filled = request.term_filled or 0.0
    return f"{request.price_kind}" + (f" (term_filled {filled:g})" if filled else "")


def held_only_types(
    requests: dict[str, PlanRequest], held: Collection[str], catalog: Catalog, given: Collection[str] = ()
) -> frozenset[str]:
    """Under the requests' price kind (one, not on-demand: a GPU without such an offer keeps its
    catalog price there), the ``held`` types (bought by a fleet, owned in a portfolio's inventory)
    that no offer of that kind rents and no rate is given for (``given``, or a request's own price):
    they are held or not at all, never rented nor reserved (review s44 M5, s45 M1: one such type
    refused the whole answer, though holding it needs no rent)."""
    kinds = {r.price_kind for r in requests.values()}
    if len(kinds) != 1 or kinds <= {None, "on-demand"}:  # mixed kinds are refused where they matter
        return frozenset()
    (kind,) = kinds
    assert kind is not None
    priced = {catalog.gpu(g).id for g in given} | {
        catalog.gpu(g).id for r in requests.values() for g in r.price_overrides
    }
    specs = [catalog.gpu(g) for g in held]
    return frozenset(g.id for g in specs if not offers_of(g, kind) and g.id not in priced)


def scored_as_held(
    requests: dict[str, PlanRequest], held_only: frozenset[str], catalog: Catalog
) -> dict[str, PlanRequest]:
    """The requests with each ``held_only`` type at its catalog rate: a price only to score its rows
    (a held option is priced by ownership; the type is never rented nor reserved)."""
    if not held_only:
        return requests
    placeholder = {g: catalog.gpu(g).price_per_gpu_hour_usd for g in sorted(held_only)}
    return {
        n: r.model_copy(update={"price_overrides": {**placeholder, **r.price_overrides}}) for n, r in requests.items()
    }
