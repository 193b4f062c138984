"""What a reserved price bills: whole terms of 1 or 3 years, paid hour by hour whether used or not
(``TermBilling``), and the warning that a job leaves some of its terms unused (``Commitment``).
Split from planner/catalog/prices.py, which reads the offers these kinds price GPUs at."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.fmt import money
from planner.units import DAYS_PER_YEAR, HOURS_PER_DAY, HOURS_PER_YEAR

# The term a reserved offer binds its buyer to, paid hour by hour whether used or not: EC2
# reservations and Savings Plans, Google committed-use discounts and Azure reservations are sold
# for 1 or 3 years (the offers' sources in hw_catalog/prices).
RESERVED_TERM_YEARS: dict[str, int] = {"reserved-1y": 1, "reserved-3y": 3}


@dataclass(frozen=True)
class TermBilling:
    """What a reserved price bills a job that holds its GPUs alone (``ModelingSettings.term``):
    whole terms, of which other work uses and pays ``filled`` of the hours beyond the job (trial
    s42 H2: billed by the job's hours, 512 GPUs for 36.5 days tied 256 for 72.8 days, where the
    1-year term bills the 512 twice the 256's)."""

    term_h: float
    filled: float = 0.0

    @property
    def years(self) -> int:
        return round(self.term_h / HOURS_PER_YEAR)

    def held_terms(self, hours: np.ndarray | float) -> np.ndarray:
        """The whole terms a job of ``hours`` holds its GPUs for (at least one)."""
        return np.maximum(np.ceil(np.asarray(hours, dtype=float) / self.term_h), 1.0)

    def terms(self, hours: float) -> int:
        """``held_terms`` of one job."""
        return int(self.held_terms(hours))

    def words(self) -> str:
        """How a cost is billed under it, for the cost line: '' where other work fills the whole
        rest (billed by the job's hours; review s43: "whole terms" was said of it)."""
        if self.filled >= 1.0:
            return ""
        if self.filled == 0.0:
            return f"billed for whole {self.years}-year terms"
        return f"billed for its hours and {1 - self.filled:.0%} of the rest of its {self.years}-year terms"

    def billed_hours(self, hours: np.ndarray | float) -> np.ndarray:
        """The hours billed for a job of ``hours``: its own and the unfilled rest of its last term."""
        whole = self.held_terms(hours) * self.term_h
        return hours + (whole - hours) * (1.0 - self.filled)


def term_billing(kind: str | None, filled: float = 0.0) -> TermBilling | None:
    """The term a price ``kind`` bills whole (reserved kinds; None for on-demand and spot)."""
    years = RESERVED_TERM_YEARS.get(kind or "")
    if not 0.0 <= filled <= 1.0:
        raise ValueError(f"--term-filled must be between 0 and 1, got {filled:g}")
    if years is None and filled:  # a flag that would change nothing says so
        reserved = " or ".join(RESERVED_TERM_YEARS)
        raise ValueError(f"--term-filled {filled:g} applies to a reserved term: give --price-kind {reserved}")
    return None if years is None else TermBilling(years * HOURS_PER_YEAR, filled)


def billed_hours(hours: np.ndarray | float, term: TermBilling | None) -> np.ndarray:
    """The hours a job of ``hours`` pays for: its own, or under a reserved term ``billed_hours``."""
    return np.asarray(hours, dtype=float) if term is None else term.billed_hours(hours)


def rebilled(cost_usd, hours, new_hours, term: TermBilling | None):
    """A cost billed for ``hours`` billed instead for ``new_hours`` on the same GPUs at the same
    price (a band's end, a risk quantile's time): by the hours billed, which under a reserved
    term are not the job's (``billed_hours``)."""
    return cost_usd * billed_hours(new_hours, term) / billed_hours(hours, term)


@dataclass(frozen=True)
class Commitment:
    """A reserved price kind's term against the job it prices (``commitment``): the cost bills
    whole terms, of which other work pays ``filled`` of the hours beyond the job."""

    kind: str
    gpu: str
    num_gpus: int  # billed: whole rental units (``billed_gpus``), which the term reserves
    term_years: int
    job_days: float
    term_cost_usd: float  # the terms' whole bill, as if nothing else used the rest
    filled: float = 0.0
    terms: int = 1  # the whole terms the job holds its GPUs for (``TermBilling.terms``)

    @property
    def used_share(self) -> str:
        """``4%``, ``0.2%``: the share of its terms the job uses (a decimal below 10 %)."""
        share = self.job_days / (self.terms * self.term_years * DAYS_PER_YEAR)
        return f"{share:.0%}" if share >= 0.1 else f"{share:.1%}"

    @property
    def held_for(self) -> str:
        """'for the term', or 'for its 8 terms ($3.67M a term)' (review s43: 8 terms' bill read as one's)."""
        if self.terms == 1:
            return "for the term"
        return f"for its {self.terms} terms ({money(self.term_cost_usd / self.terms)} a term)"

    def words(self) -> str:
        """The CLI's warning (the app words the same record in its page's language)."""
        rest = (
            "the whole term, as if no other work used the rest (--term-filled: the share it uses)"
            if self.filled == 0
            else f"the job's hours and {1 - self.filled:.0%} of the rest (--term-filled {self.filled:g})"
        )
        return (
            f"{self.kind} bills whole {self.term_years}-year terms: {self.num_gpus} {self.gpu} {self.held_for} cost "
            f"{money(self.term_cost_usd)}, for a job of {self.job_days:,.1f} days ({self.used_share} of "
            f"{'it' if self.terms == 1 else 'them'}); the cost counts {rest}"
        )


def commitment(
    kind: str | None,
    term: TermBilling | None,
    gpu: str,
    num_gpus: int,
    usd_per_hour: float | None,
    job_hours: float | None,
) -> Commitment | None:
    """The reserved ``term`` a job (``job_hours`` on ``num_gpus`` billed ``usd_per_hour`` together)
    is billed for whole under ``kind``, when it leaves some of it unused; None for a job billed by
    the hour, an unpriced job, or one that fills its terms."""
    reserved = kind in RESERVED_TERM_YEARS
    if not reserved or term is None or usd_per_hour is None or not job_hours or job_hours % term.term_h == 0:
        return None
    assert kind is not None
    terms = term.terms(job_hours)
    cost = usd_per_hour * terms * term.term_h
    return Commitment(kind, gpu, num_gpus, term.years, job_hours / HOURS_PER_DAY, cost, term.filled, terms)
