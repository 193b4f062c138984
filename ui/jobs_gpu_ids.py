"""A jobs file's GPU types by their catalog ids (ui/portfolio_file.py reads the file, then names
each type so); split out of portfolio_file.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from planner.fmt import one_line

if TYPE_CHECKING:
    from ui.portfolio_file import JobsFile

__all__ = ["with_catalog_ids"]


def _catalog_ids(table: str, names: Iterable[str]) -> dict[str, str]:
    """Each GPU name's catalog id ('H100-SXM' -> h100-sxm), as plan's --gpus reads it; one line
    naming the table for an unknown type or two names of one type."""
    from planner.catalog.hardware import load_catalog

    catalog, ids = load_catalog(), dict[str, str]()
    for name in names:
        try:
            gpu_id = catalog.gpu(name).id
        except ValueError as exc:
            raise ValueError(f"{table}: {one_line(exc)}") from None
        twin = next((n for n, i in ids.items() if i == gpu_id), None)
        if twin is not None:
            raise ValueError(f"{table}: '{twin}' and '{name}' are both {gpu_id}; list it once")
        ids[name] = gpu_id
    return ids


def with_catalog_ids(spec: JobsFile) -> JobsFile:
    """The file with every GPU type named by its catalog id. Review s27b: `H100-SXM = 256` in
    [inventory] was a type no job could use, yet charged idle for the whole horizon."""

    def keyed(table: str, values: dict) -> dict:
        ids = _catalog_ids(table, values)
        return {ids[name]: value for name, value in values.items()}

    def listed(table: str, names: list[str]) -> list[str]:
        ids = _catalog_ids(table, dict.fromkeys(names))
        return [ids[name] for name in dict.fromkeys(names)]

    ownership = spec.ownership.model_copy(
        update={"wall_power_w": keyed("[ownership].wall_power_w", spec.ownership.wall_power_w)}
    )
    return spec.model_copy(
        update={
            "inventory": keyed("[inventory]", spec.inventory),
            "rented": listed("rented", spec.rented),
            "buy": listed("buy", spec.buy),
            "purchase_usd": keyed("[purchase_usd]", spec.purchase_usd),
            "rent_usd_per_gpu_hour": keyed("[rent_usd_per_gpu_hour]", spec.rent_usd_per_gpu_hour),
            "ownership": ownership,
        }
    )
