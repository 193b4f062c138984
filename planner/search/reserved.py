"""Reserved GPUs as a held resource (:class:`ReservedPrices`): under a reserved price kind a fleet
commits to GPUs of a type for whole terms, paid every hour busy or idle, as it pays for the GPUs it
buys; what one reserved GPU costs against one bought (:class:`OwnedVsReserved`); and the terms a
portfolio's rented jobs share (:func:`held_commitments`). Split out of planner/search/fleet.py,
which sizes the fleet with them (docs/ilp.md "Fleet sizing")."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from planner.catalog.prices import Commitment, TermBilling, term_billing
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

__all__ = ["HeldJob", "OwnedVsReserved", "ReservedPrices", "held_commitments"]


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
        busy_h = self.horizon_hours * utilisation
        owned = self.owned_fixed_usd / busy_h + self.owned_usd_per_busy_hour
        return owned, self.reserved_usd / busy_h if busy_h > 0 else math.inf


class HeldJob(Protocol):
    """A job that holds GPUs of one type over a span at a cost (a fleet's or a portfolio's)."""

    @property
    def gpu_id(self) -> str: ...
    @property
    def num_gpus(self) -> int: ...
    @property
    def start_s(self) -> float: ...
    @property
    def end_s(self) -> float: ...
    @property
    def cost_usd(self) -> float: ...


def held_commitments(rented: Sequence[HeldJob], kind: str | None) -> tuple[Commitment, ...]:
    """A reserved price kind's terms for each type the ``rented`` jobs hold (``Commitment``; none for
    other kinds): the most GPUs they hold at once, each billed every hour of the whole terms their
    span takes (``TermBilling.terms``) at the rate their rent implies. Their rent counts their
    hours only: they share the terms (a portfolio's jobs, ``request_settings(whole_terms=False)``;
    a fleet reserves the terms instead, ``ReservedPrices``)."""
    term = term_billing(kind)
    if term is None:
        return ()
    out = []
    for gpu in sorted({a.gpu_id for a in rented}):
        jobs = [a for a in rented if a.gpu_id == gpu]
        gpu_hours = sum(a.num_gpus * (a.end_s - a.start_s) for a in jobs) / SECONDS_PER_HOUR
        rate = sum(a.cost_usd for a in jobs) / gpu_hours if gpu_hours > 0 else 0.0
        # the most held at once: at some job's start every job running then holds its GPUs
        peak = max(sum(b.num_gpus for b in jobs if b.start_s <= a.start_s < b.end_s) for a in jobs)
        span_s = max(a.end_s for a in jobs) - min(a.start_s for a in jobs)
        terms = term.terms(span_s / SECONDS_PER_HOUR)  # review s43: a span past the term holds more than one
        assert kind is not None
        cost = peak * rate * terms * term.term_h
        out.append(Commitment(kind, gpu, peak, term.years, span_s / SECONDS_PER_DAY, cost, terms=terms))
    return tuple(out)
