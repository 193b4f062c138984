"""Reserved GPUs as a held resource (:class:`ReservedPrices`): under a reserved price kind a fleet
commits to GPUs of a type for whole terms, paid every hour busy or idle, as it pays for the GPUs it
buys; and what one reserved GPU costs against one bought (:class:`OwnedVsReserved`). Split out of
planner/search/fleet.py, which sizes the fleet with them (docs/ilp.md "Fleet sizing"); a
portfolio reserves its rented types with them too (planner/search/portfolio_reserved.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from planner.catalog.terms import TermBilling
from planner.search.ownership import per_busy_hour

__all__ = ["OwnedVsReserved", "ReservedPrices"]


@dataclass(frozen=True)
class ReservedPrices:
    """A reserved price ``kind`` for a fleet: each rentable type g may be reserved, u_r(g) GPUs
    at a time (``unit``: what the provider rents together, 1 where not given), at
    ``usd_per_gpu_hour`` (not given: the type's rent, ``size_fleet``) for every hour of the whole
    terms covering the horizon (``term``; its ``filled`` share of the hours past the horizon that
    other work pays is not charged). There is no hourly rent at that rate: the term is the bill."""

    kind: str
    term: TermBilling
    usd_per_gpu_hour: Mapping[str, float] = field(default_factory=dict)
    unit: Mapping[str, int] = field(default_factory=dict)

    def fixed_usd(self, usd_per_gpu_hour: float, horizon_h: float) -> float:
        """F_r: one GPU reserved over the horizon, billed as ``TermBilling.billed_hours`` bills a
        job that holds its GPUs for ``horizon_h`` (the one term rule: whole terms, less ``filled``)."""
        return usd_per_gpu_hour * float(self.term.billed_hours(horizon_h))

    def terms(self, horizon_h: float) -> int:
        """The whole terms a reservation over the horizon takes."""
        return self.term.terms(horizon_h)


@dataclass(frozen=True)
class OwnedVsReserved:
    """One GPU of a type over the horizon of H hours, bought or reserved, both paid busy or idle:
    owning costs F_g + u H v_g at busy fraction u (``ownership.break_even``: its power while busy is
    extra), reserving F_r whatever u (the cloud pays the power). So owning is cheaper below
    u* = (F_r - F_g) / (H v_g), and no rent-style break-even applies: a reserved GPU idles at a cost."""

    gpu_id: str
    owned_fixed_usd: float  # F_g
    owned_usd_per_busy_hour: float  # v_g
    reserved_usd: float  # F_r
    reserved_usd_per_gpu_hour: float
    horizon_hours: float
    terms: int  # the whole terms F_r bills

    @property
    def owned_full_usd(self) -> float:
        """Owning it busy every hour of the horizon: F_g + H v_g."""
        return self.owned_fixed_usd + self.horizon_hours * self.owned_usd_per_busy_hour

    @property
    def buying_cheaper_below(self) -> float:
        """u*, within [0, 1]: 1 where owning is cheaper even busy all the horizon, 0 where it is
        dearer even idle."""
        if self.owned_full_usd <= self.reserved_usd:
            return 1.0
        if self.owned_fixed_usd >= self.reserved_usd:
            return 0.0
        return (self.reserved_usd - self.owned_fixed_usd) / (self.horizon_hours * self.owned_usd_per_busy_hour)

    def per_busy_hour(self, utilisation: float) -> tuple[float, float]:
        """(owned, reserved) USD per busy GPU-hour at busy fraction ``utilisation``: each fixed cost
        spread over the busy hours, the owned one plus its busy power (the owned rate's formula)."""
        hours = self.horizon_hours
        owned = per_busy_hour(self.owned_fixed_usd, self.owned_usd_per_busy_hour, hours, utilisation)
        return owned, per_busy_hour(self.reserved_usd, 0.0, hours, utilisation)
