"""A fleet's answer (:class:`FleetSolution`): each option's GPUs bought and reserved, and how each
job holds its GPUs (:class:`Holding`); split out of planner/search/fleet.py, which solves for it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from planner.catalog.held_price import HeldPrice
from planner.plan_accuracy import summed_band
from planner.search.ilp import ScoredTable
from planner.search.late_band import LateAtBandEnd, LateOnRentRows
from planner.search.ownership import GpuBreakEven, busy_share, per_busy_hour
from planner.search.reserved import OwnedVsReserved, ReservedPrices
from planner.search.slots import list_schedule
from planner.units import HOURS_PER_DAY, SECONDS_PER_DAY

if TYPE_CHECKING:  # its records name a job's Holding, defined here
    from planner.catalog.prices import OffersRange
    from planner.search.held_warnings import HeldPriceWarning

__all__ = [
    "BreakEvenRent",
    "FleetAssignment",
    "FleetOption",
    "FleetPlan",
    "FleetSolution",
    "Holding",
    "PurchaseSaving",
    "band_factors",
    "compacted",
]

# A purchase whose saving over the horizon is under this share of its outlay is flagged (app50: 8
# MI325X, $320,000 up front, "bought" to save $1,321 over 30 days, 0.4 %). A total charges the
# horizon's straight-line depreciation and takes the GPUs to keep their book value after it: GPUs
# worth that share of their price less (resale, a newer generation) erase the saving, and GPU prices
# move by more than 5 % within months. A notice only: the optimiser still picks the cheapest total.
SMALL_SAVING_SHARE = 0.05


class Holding(StrEnum):
    """How a job of a fleet holds its GPUs, which says what it is charged."""

    OWNED = "owned"  # bought GPUs: paid for the horizon, the job pays their busy power
    RESERVED = "reserved"  # a reserved price kind's GPUs: paid for whole terms, nothing per busy hour
    RENTED = "rented"  # rented by the hour (on-demand or spot): the job pays its hours


class FleetOption(StrEnum):
    """A fleet's option, by its name in the text (``trainplan fleet``'s table, the app's labels by
    ``key``): the one that buys nothing is "rent only", or "reserve only" under a reserved price kind
    (``FleetSolution.options``, the one rule for both)."""

    MIXED = "mixed"
    RENT_ONLY = "rent only"
    RESERVE_ONLY = "reserve only"
    BUY_ONLY = "buy only"

    @property
    def key(self) -> str:
        """'reserve_only': the name as a key (the app's labels are ``fleet_option_<key>``)."""
        return self.name.lower()

    @property
    def json_key(self) -> str:
        """fleet --json's key of the option: the one that buys nothing is ``rent_only`` under either kind."""
        return "rent_only" if self is FleetOption.RESERVE_ONLY else self.key


@dataclass(frozen=True)
class FleetAssignment:
    job: str
    row: int
    gpu_id: str
    num_gpus: int
    holding: Holding
    start_s: float
    end_s: float
    # rent for rented jobs, busy power for jobs on owned GPUs, 0 on reserved ones (the term bills them)
    cost_usd: float
    # The 80 % band of its duration (and so of its cost: rent and busy power go by the hour) as
    # factors of them (``band_factors``; None: no evidence), trial s33: fleet showed no band.
    band: tuple[float, float] | None = None

    def banded(self, value: float) -> tuple[float, float] | None:
        return None if self.band is None else (value * self.band[0], value * self.band[1])


def band_factors(table: ScoredTable, row: int) -> tuple[float, float] | None:
    """A row's 80 % band of time over its time at the search's risk quantile (score.py's columns)."""
    extra = table.extra
    if "band_lo" not in extra:
        return None
    factor, lo, hi = (float(extra[key][row]) for key in ("time_factor", "band_lo", "band_hi"))
    if not (math.isfinite(lo) and math.isfinite(hi) and factor > 0):
        return None
    return lo / factor, hi / factor


@dataclass(frozen=True)
class FleetPlan:
    total_cost_usd: float
    purchased: dict[str, int]  # GPU type -> GPUs bought
    ownership_cost_usd: float  # fixed cost of the purchased GPUs over the horizon
    # what buying them costs up front; the ownership cost is its straight-line share over the horizon
    # to the resale value (trial s27: "$783k" for 64 H100 read as the outlay, $3.07M)
    purchase_usd: float
    running_cost_usd: float  # busy power of owned GPUs
    rent_cost_usd: float
    assignments: tuple[FleetAssignment, ...]
    # Under a reserved price kind: GPU type -> GPUs reserved, and their whole terms' bill (trial s44:
    # the rent counted job-hours at a rate that only a term buys, against a term's warning)
    reserved: dict[str, int] = field(default_factory=dict)
    reserved_cost_usd: float = 0.0
    # the whole terms the reservation is billed for: those its jobs need, at most the horizon's (review
    # s44: a 366-day horizon billed 2 one-year terms for jobs done by day 321); 0 where none is reserved
    reserved_terms: int = 0
    # GPUs already owned (I_g, [inventory]), held in every option beside those bought, and their
    # running cost over the horizon (sum_g F0_g I_g: hosting, staff, idle power; their price is sunk),
    # in the total (trial s51 H1: fleet ignored them and bought for jobs they could run)
    owned: dict[str, int] = field(default_factory=dict)
    owned_cost_usd: float = 0.0

    def total_band(self) -> tuple[float, float] | None:
        """The total with the jobs' costs (rent, or busy power) at their bands' ends, summed
        (``summed_band``), the ownership and reserved costs held. The idle draw, inside the ownership
        cost, would shrink a little as busy time grows: not counted. None where a job has no band."""
        jobs = self.assignments
        band = summed_band([a.banded(a.cost_usd) for a in jobs])
        if band is None:
            return None
        held = self.total_cost_usd - sum(a.cost_usd for a in jobs)
        return held + band[0], held + band[1]

    def busy_fraction(self, holding: Holding, days: float) -> float | None:
        """The bought (or reserved) GPUs' busy share of ``days`` (the horizon; for reserved GPUs the days
        their terms bill, review s44: "88 % of the 365 days" of a 3-year bill): their jobs' GPU-days
        over the GPUs held x the days (None: none held; trial s36: a fleet 81 % busy said only the
        rate at the file's 70 %)."""
        held = sum((self.owned_pool() if holding is Holding.OWNED else self.reserved).values())
        jobs = [a for a in self.assignments if a.holding is holding]
        return busy_share(sum(a.num_gpus * (a.end_s - a.start_s) for a in jobs) / SECONDS_PER_DAY, held, days)

    def owned_pool(self) -> dict[str, int]:
        """The GPUs owned jobs run on: those already owned (I_g) and those bought (b_g)."""
        return {g: self.owned.get(g, 0) + self.purchased.get(g, 0) for g in {**self.owned, **self.purchased}}

    def owned_busy_fraction(self, horizon_days: float) -> float | None:
        return self.busy_fraction(Holding.OWNED, horizon_days)

    def type_busy_fraction(self, gpu: str, days: float) -> float | None:
        """One type's owned GPUs (owned and bought, ``owned_pool``) busy share of ``days`` (None: none held)."""
        jobs = [a for a in self.assignments if a.holding is Holding.OWNED and a.gpu_id == gpu]
        busy = sum(a.num_gpus * (a.end_s - a.start_s) for a in jobs) / SECONDS_PER_DAY
        return busy_share(busy, self.owned_pool().get(gpu, 0), days)


@dataclass(frozen=True)
class BreakEvenRent:
    """The rent per GPU-hour below which renting a type beats buying it for these jobs (trial s51 M4:
    the answer rested on one median rent, and said only a break-even utilisation): one GPU bought costs
    F_g + u H v_g over the horizon, renting its u H busy hours u H r, equal at r* = F_g / (u H) + v_g
    (``per_busy_hour``, the one rule of an owned GPU's price per busy hour), u the busy share of the
    type's owned GPUs in ``option``'s schedule: the chosen (mixed) one where it buys the type, else buy only."""

    gpu_id: str
    option: FleetOption
    busy_fraction: float
    usd_per_gpu_hour: float


@dataclass(frozen=True)
class PurchaseSaving:
    """What the chosen (mixed) option buys, its outlay up front and what it saves over the horizon
    against the option that buys nothing (``against``: rent only, or reserve only)."""

    purchased: Mapping[str, int]  # GPU type -> GPUs bought
    outlay_usd: float
    saving_usd: float
    horizon_days: float
    against: FleetOption

    @property
    def saving_share(self) -> float:
        """The saving as a share of the outlay (0.004: 0.4 %)."""
        return self.saving_usd / self.outlay_usd

    @property
    def small(self) -> bool:
        """Whether the saving is too small for the money tied up (``SMALL_SAVING_SHARE``)."""
        return self.saving_share < SMALL_SAVING_SHARE


@dataclass(frozen=True)
class FleetSolution:
    mixed: FleetPlan
    # The option that buys nothing: every job rented, or under a reserved price kind (``reserved``)
    # every job on reserved GPUs ("reserve only"); None when some job runs only on ``held_only`` types
    rent_only: FleetPlan | None
    buy_only: FleetPlan | None  # None when some job has no GPU type that can be bought
    break_even: tuple[GpuBreakEven, ...]  # buying against the hourly rent; none under a reserved kind
    horizon_days: float
    solver: str
    # The held jobs start at one of num_slots slot boundaries of the horizon: an approximation
    # that more slots refine (trial s36: 24 in place of 12 bought 3-9 % cheaper fleets for 12-25
    # jobs, at 1.2-2.4x the time)
    num_slots: int = 12
    reserved: ReservedPrices | None = None  # the reserved price kind the jobs are held at, if any
    # buying against reserving, per type that can be bought, under a reserved kind
    owned_vs_reserved: tuple[OwnedVsReserved, ...] = ()
    # types to buy that no offer of the jobs' price kind rents and no rate is given for: bought or
    # not held (``size_fleet``)
    held_only: frozenset[str] = frozenset()
    # each type rented or reserved at a price, with where that price comes from (trial s48 H1: fleet
    # never said its answer rested on one provider's rate), and what the answer warns of them
    prices: Mapping[str, HeldPrice] = field(default_factory=dict)
    price_warnings: tuple[HeldPriceWarning, ...] = ()
    owned: Mapping[str, int] = field(default_factory=dict)  # GPUs already owned (I_g), in every option
    # the chosen option's jobs that end past their deadlines at their bands' slow ends (trial s51 M5)
    late_at_band_end: tuple[LateAtBandEnd, ...] = ()
    release_days: Mapping[str, float] = field(default_factory=dict)  # job -> its start_after_days, where set
    after: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # job -> the jobs it starts after, where set
    # what the request itself warns of, beside the solve's (the jobs file's: settings it reads and
    # ignores, deadlines past the horizon); fleet51 M2: they were on stderr only, not in --json
    request_warnings: tuple[str, ...] = ()
    # each type to buy's owned rate per hour held, busy or idle (F_g per hour: ``owned_rate``, the
    # portfolio's), and the range of its rent's price kind's listed offers (trial s51 M3, M4)
    held_usd_per_gpu_hour: Mapping[str, float] = field(default_factory=dict)
    rent_offers: Mapping[str, OffersRange] = field(default_factory=dict)
    # Why rent only is None where every job has a rent row: the jobs a chain of rent rows (P) ends late
    rent_only_late: tuple[LateOnRentRows, ...] = ()

    def break_even_rents(self) -> tuple[BreakEvenRent, ...]:
        """Each type to buy's ``BreakEvenRent`` at the busy hours of the first of mixed and buy only
        that buys it; a type neither buys has none."""
        hours = self.horizon_days * HOURS_PER_DAY
        out = []
        for b in self.break_even:
            for option, plan in ((FleetOption.MIXED, self.mixed), (FleetOption.BUY_ONLY, self.buy_only)):
                u = (
                    None
                    if plan is None or not plan.purchased.get(b.gpu_id)
                    else plan.type_busy_fraction(b.gpu_id, self.horizon_days)
                )
                if u:
                    rent = per_busy_hour(b.owned_fixed_usd, b.owned_usd_per_busy_hour, hours, u)
                    out.append(BreakEvenRent(b.gpu_id, option, u, rent))
                    break
        return tuple(out)

    @property
    def warning_words(self) -> tuple[str, ...]:
        """Every warning of the answer, the request's first: the reserved terms are billed
        (reserved_term), no longer warned of (session 44); the prices' (trial s48: a rent no median
        of offers backs, a kind above on-demand) and the jobs past their deadlines at their bands'
        slow ends (trial s51 M5)."""
        held = (w.words() for w in (*self.price_warnings, *self.late_at_band_end))
        return (*self.request_warnings, *held)

    def names_owned(self, option: FleetOption) -> bool:
        """Whether an option's name says it holds the GPUs already owned: each option holds them, and
        the one that buys nothing adds nothing; the mixed one's name stays (the text's and the app's rule)."""
        return bool(self.owned) and option is not FleetOption.MIXED

    def option_name(self, option: FleetOption) -> str:
        """An option's name in the text ("owned + rent", "owned + reserve", "owned + buy": ``names_owned``)."""
        return "owned + " + option.value.removesuffix(" only") if self.names_owned(option) else option.value

    @property
    def none_bought(self) -> FleetOption:
        """The name of the option that buys nothing: it rents, or under a reserved kind reserves."""
        return FleetOption.RENT_ONLY if self.reserved is None else FleetOption.RESERVE_ONLY

    def options(self) -> list[tuple[FleetOption, FleetPlan]]:
        """The options there are, the mixed (chosen) one first, each by its name: the one that buys
        nothing rents, or under a reserved price kind (``reserved``) reserves."""
        found = (
            (FleetOption.MIXED, self.mixed),
            (self.none_bought, self.rent_only),
            (FleetOption.BUY_ONLY, self.buy_only),
        )
        return [(option, p) for option, p in found if p is not None]

    def purchase(self) -> PurchaseSaving | None:
        """What the chosen option buys and saves; None where it buys nothing, or where there is no
        option that buys nothing to weigh it against (a job runs only on types to buy)."""
        bought = {g: n for g, n in self.mixed.purchased.items() if n}
        if not bought or self.rent_only is None or self.horizon_days <= 0:
            return None
        saving = self.rent_only.total_cost_usd - self.mixed.total_cost_usd
        return PurchaseSaving(bought, self.mixed.purchase_usd, saving, self.horizon_days, self.none_bought)


def compacted(
    assignments: list[FleetAssignment],
    purchased: Mapping[str, int],
    reserved: Mapping[str, int] | None = None,
    release_s: Mapping[str, float] | None = None,
    after: Sequence[Sequence[int]] | None = None,
) -> list[FleetAssignment]:
    """Every job list-scheduled in the order the slots started them (slots.py ``list_schedule``: no job
    starts later, trial s25: a job waited for its slot with the GPUs free): a held one on the GPUs
    bought (and, apart, those reserved), a rented one at once (no cap); none before its release
    (``release_s``: job -> seconds; none: 0) nor before its predecessors end (``after``: each one's,
    by index into ``assignments``; docs/ilp.md "Precedence"). Costs do not move: held GPUs are paid
    for the horizon (or the terms), busy hours and rent by the hour."""
    held = {Holding.OWNED: purchased, Holding.RESERVED: reserved or {}}
    pool = [f"{a.holding}:{a.gpu_id}" for a in assignments]  # each holding's GPUs of a type apart
    capacity = {f"{h}:{g}": count for h, counts in held.items() for g, count in counts.items()}
    every_job = sum(a.num_gpus for a in assignments)
    capacity |= {p: every_job for p, a in zip(pool, assignments, strict=True) if a.holding is Holding.RENTED}
    order = sorted(range(len(assignments)), key=lambda k: assignments[k].start_s)
    durations = [a.end_s - a.start_s for a in assignments]
    release = [(release_s or {}).get(a.job, 0.0) for a in assignments]
    counts = [a.num_gpus for a in assignments]
    starts = list_schedule(order, pool, counts, durations, capacity, release, after)
    return [replace(a, start_s=s, end_s=s + d) for a, s, d in zip(assignments, starts, durations, strict=True)]
