"""A jobs file's prices and rented types as ``trainplan fleet`` and ``portfolio`` read them, and the
rent a fleet weighs buying against (the CLI's and the app's one rule); split out of
ui/portfolio_file.py, which reads and validates the file."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ui.portfolio_file import JobsFile


def purchase_prices(spec: JobsFile, catalog) -> dict[str, float]:
    """Explicit prices first, then catalog prices for the types listed in ``buy`` (catalog ids:
    ``with_catalog_ids``)."""
    prices = {g: p for g, p in spec.purchase_usd.items() if p is not None}
    for gpu_id in [*spec.buy, *(g for g, p in spec.purchase_usd.items() if p is None)]:
        gpu = catalog.gpu(gpu_id)
        if gpu.purchase_price_usd is None:
            raise ValueError(f"{gpu.id} has no purchase price in the catalog: give one in [purchase_usd]")
        prices.setdefault(gpu.id, gpu.purchase_price_usd)
    return prices


def rented_types(spec: JobsFile) -> frozenset[str]:
    """The ``rented`` types; each must be in [inventory]."""
    for gpu_id in spec.rented:
        if gpu_id not in spec.inventory:
            raise ValueError(f"rented: {gpu_id} is not in [inventory] (its count caps the GPUs rented at once)")
    return frozenset(spec.rented)


def fleet_options(spec: JobsFile, catalog) -> dict:
    """``plan_fleet``'s keyword inputs from the file: the ownership assumptions, each bought type's
    rent (the file's, else the price kind's or the catalog's price) and wall power overrides."""
    rent = fleet_rents(spec.rent_usd_per_gpu_hour, purchase_prices(spec, catalog), spec.price_kind, catalog)
    return {"tco": spec.ownership.tco(), "rent_usd_per_gpu_hour": rent, "wall_power_w": spec.ownership.wall_power_w}


def fleet_rents(given: dict[str, float], buy: Iterable[str], price_kind: str | None, catalog) -> dict[str, float]:
    """The rent ``plan_fleet`` weighs buying each type against: the rate given (``given``: the file's
    [rent_usd_per_gpu_hour], the app's GPU table's $/h), else for each type to buy (``buy``) the
    median of the price kind's offers or the catalog's price; the CLI and the app alike."""
    from planner.catalog.prices import catalog_with_price_kind

    priced = catalog_with_price_kind(catalog, price_kind)
    rent = dict(given)
    for gpu_id in buy:
        if gpu_id not in rent and gpu_id in priced.gpus:
            rent[gpu_id] = priced.gpus[gpu_id].price_per_gpu_hour_usd
    return rent
