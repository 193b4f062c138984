"""What owning a GPU costs (the one TCO formula, :func:`ownership_usd`), where buying pays off
against renting (:func:`break_even`), and each type's economics for fleet sizing and the
portfolio's owned prices. Split out of planner/search/fleet.py, which sizes the fleet with them."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from planner.model.energy import energy_usd, gpu_wall_power_w
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.units import HOURS_PER_DAY, HOURS_PER_YEAR, MONTHS_PER_YEAR


@dataclass(frozen=True)
class TcoAssumptions:
    """What owning a GPU costs besides its price. ASSUMPTION: round mid-range figures, except
    ``pue``, the modelling settings' one (planner/model/settings.py, with its provenance)."""

    lifetime_years: float = 4.0  # straight-line amortisation period
    residual_fraction: float = 0.2  # resale value at end of life, fraction of the price
    pue: float = DEFAULT_SETTINGS.pue  # facility power / IT power
    electricity_usd_per_kwh: float = 0.10  # industrial rate
    hosting_usd_per_gpu_month: float = 150.0  # rack space, network, ops staff share
    idle_power_fraction: float = 0.2  # wall draw of an idle GPU's server share, fraction of its training draw
    staff_usd_per_gpu_month: float = 0.0  # staff beyond hosting's share (a fleet file's ``staff``)
    # What the money in the GPUs would earn elsewhere, per year (a buyer's discount rate; trial s36:
    # at 8 % the example's $3.07M outlay adds ~$0.2M a year, unsaid). Default 0: not charged.
    cost_of_capital_rate: float = 0.0

    def __post_init__(self) -> None:
        for name in ("lifetime_years", "pue"):
            if not getattr(self, name) > 0:
                raise ValueError(f"TcoAssumptions.{name}: expected > 0, got {getattr(self, name)}")
        for name in ("residual_fraction", "idle_power_fraction", "cost_of_capital_rate"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"TcoAssumptions.{name}: expected within [0, 1]")
        for name in ("electricity_usd_per_kwh", "hosting_usd_per_gpu_month", "staff_usd_per_gpu_month"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"TcoAssumptions.{name}: expected >= 0")


def ownership_usd(purchase_usd: float, tco: TcoAssumptions, hours: float) -> float:
    """The one TCO formula: the fixed cost of owning one GPU for ``hours`` wall-clock hours,

        purchase * (1 - residual) * hours / (lifetime_years * HOURS_PER_YEAR)
        + purchase * (1 + residual) / 2 * rate * hours / HOURS_PER_YEAR
        + (hosting + staff)_per_month * hours / (HOURS_PER_YEAR / 12)

    (straight-line depreciation to the resale value; the cost of capital, ``rate`` a year on the
    average book value of that depreciation, the simple-interest form of a capital charge; plus
    hosting and staff; power is extra, :func:`break_even`). Used by fleet sizing and by the app's
    amortised price per GPU-hour.
    """
    monthly = tco.hosting_usd_per_gpu_month + tco.staff_usd_per_gpu_month
    depreciation = purchase_usd * (1 - tco.residual_fraction) / (tco.lifetime_years * HOURS_PER_YEAR)
    capital = purchase_usd * (1 + tco.residual_fraction) / 2 * tco.cost_of_capital_rate / HOURS_PER_YEAR
    return (depreciation + capital) * hours + monthly * hours / (HOURS_PER_YEAR / MONTHS_PER_YEAR)


@dataclass(frozen=True)
class GpuEconomics:
    """Buying one GPU of a type. ``wall_power_w``: its share of its server's wall power while it
    trains (planner/model/energy.py ``gpu_wall_power_w``, host and network included)."""

    purchase_usd: float  # per GPU, with its share of server, network, install
    wall_power_w: float
    rent_usd_per_gpu_hour: float | None = None  # None: implied by the jobs' cost_usd columns
    # GPUs bought together: a server (an NVLink rack where its domain spans several), whose price
    # the per-GPU one shares (docs/hardware.md: GPU + 1/8 of an HGX server + network); trial s36:
    # fleet bought 4, 76 or 172 H100
    purchase_unit: int = 1

    def __post_init__(self) -> None:
        if not (self.purchase_usd >= 0 and self.wall_power_w >= 0 and self.purchase_unit >= 1):
            raise ValueError("GpuEconomics: purchase_usd and wall_power_w must be >= 0, purchase_unit >= 1")


@dataclass(frozen=True)
class OwnedGpus:
    """I_g GPUs of a type a fleet already owns (a jobs file's [inventory]): their purchase is sunk (no
    outlay, no amortisation, no cost of capital); holding them costs their running cost over the
    horizon, F0_g (:func:`running_break_even`), and v_g per busy hour, as a bought GPU's."""

    count: int
    wall_power_w: float

    def __post_init__(self) -> None:
        if not (self.count >= 1 and self.wall_power_w >= 0):
            raise ValueError("OwnedGpus: count must be >= 1 and wall_power_w >= 0")


def running_break_even(gpu: str, owned: OwnedGpus, tco: TcoAssumptions, horizon_hours: float) -> GpuBreakEven:
    """An owned GPU over the horizon: :func:`break_even` at a purchase price of 0, so F0_g is its
    hosting, staff and idle power alone (its price sunk) and v_g its busy power; no rent."""
    return break_even(
        gpu, GpuEconomics(purchase_usd=0.0, wall_power_w=owned.wall_power_w), tco, horizon_hours, math.nan
    )


@dataclass(frozen=True)
class GpuBreakEven:
    gpu_id: str
    owned_fixed_usd: float  # one GPU over the horizon: amortisation, hosting, idle power
    owned_usd_per_busy_hour: float  # extra power while it trains
    rent_usd_per_gpu_hour: float
    break_even_utilisation: float  # busy fraction above which buying is cheaper (inf: never)

    @property
    def pays_off(self) -> bool:
        """Whether some busy fraction up to 100 % makes an owned GPU cheaper than renting it."""
        return math.isfinite(self.break_even_utilisation) and self.break_even_utilisation <= 1.0


def break_even(
    gpu: str, economics: GpuEconomics, tco: TcoAssumptions, horizon_hours: float, rent_usd_per_gpu_hour: float
) -> GpuBreakEven:
    """Owning one GPU for H hours costs F + u H v at busy fraction u; renting u H hours costs u H r.

    F: :func:`ownership_usd` plus the idle draw (``idle_power_fraction`` of the training draw)
    all H hours; v: the rest of the training draw while busy, so a busy hour pays the energy
    :func:`planner.model.energy.energy_usd` gives for one GPU-hour, as the estimate counts it."""
    power_usd = float(energy_usd(1.0, economics.wall_power_w, tco.pue, tco.electricity_usd_per_kwh))
    fixed = (
        ownership_usd(economics.purchase_usd, tco, horizon_hours) + tco.idle_power_fraction * power_usd * horizon_hours
    )
    busy = (1 - tco.idle_power_fraction) * power_usd
    margin = rent_usd_per_gpu_hour - busy
    utilisation = fixed / (horizon_hours * margin) if margin > 0 else math.inf
    return GpuBreakEven(gpu, fixed, busy, rent_usd_per_gpu_hour, utilisation)


def per_busy_hour(fixed_usd: float, busy_usd_per_hour: float, hours: float, utilisation: float) -> float:
    """A held GPU's cost per busy GPU-hour at busy fraction ``utilisation`` of ``hours``: its fixed
    cost over them spread over the busy hours, plus what each busy hour adds (inf: never busy). The
    one rule of the app's "bought" price, the fleet's owned and reserved rates (review s44: restated)."""
    busy_h = hours * utilisation
    return fixed_usd / busy_h + busy_usd_per_hour if busy_h > 0 else math.inf


@dataclass(frozen=True)
class HourlyRate:
    """What one GPU of a held inventory costs: ``held`` each hour it is held, busy or idle, and
    ``busy`` on top for each hour a job trains on it (the portfolio's prices)."""

    held_usd_per_gpu_hour: float
    busy_usd_per_gpu_hour: float = 0.0


def owned_rate(economics: GpuEconomics, tco: TcoAssumptions) -> HourlyRate:
    """Owning one GPU, per hour: :func:`break_even`'s fixed cost F_g (amortisation, hosting,
    staff, idle power) for one hour, and its busy power v_g."""
    costs = break_even("", economics, tco, 1.0, math.inf)
    return HourlyRate(costs.owned_fixed_usd, costs.owned_usd_per_busy_hour)


def owned_usd_per_busy_gpu_hour(economics: GpuEconomics, tco: TcoAssumptions, utilisation: float) -> float:
    """Owning a GPU as USD per busy GPU-hour at busy fraction ``utilisation``: :func:`owned_rate`'s
    fixed cost spread over the busy hours, plus the busy power (the app's "bought" price)."""
    if not 0 < utilisation <= 1:
        raise ValueError(f"utilisation must be in (0, 1], got {utilisation}")
    rate = owned_rate(economics, tco)
    return per_busy_hour(rate.held_usd_per_gpu_hour, rate.busy_usd_per_gpu_hour, 1.0, utilisation)


def economics_for(
    catalog,
    purchase_usd: Mapping[str, float],
    settings: ModelingSettings = DEFAULT_SETTINGS,
    rent_usd_per_gpu_hour: Mapping[str, float] | None = None,
    wall_power_w: Mapping[str, float] | None = None,
) -> dict[str, GpuEconomics]:
    """Buying each GPU type at ``purchase_usd``: its wall power (the given one, else the catalog's
    by the one rule, planner/model/energy.py) and its rent (the given one, else the catalog's price)."""
    rent = {catalog.gpu(g).id: usd for g, usd in (rent_usd_per_gpu_hour or {}).items()}
    power = {catalog.gpu(g).id: w for g, w in (wall_power_w or {}).items()}
    out = {}
    for gpu_id, usd in purchase_usd.items():
        gpu = catalog.gpu(gpu_id)
        node = catalog.node(gpu.default_node)
        out[gpu.id] = GpuEconomics(
            purchase_usd=usd,
            wall_power_w=power.get(gpu.id, gpu_wall_power_w(gpu, settings)),
            rent_usd_per_gpu_hour=rent.get(gpu.id, gpu.price_per_gpu_hour_usd),
            purchase_unit=max(node.gpus_per_node, node.scaleup_domain_size),
        )
    return out


def idle_usd(
    held_usd_per_gpu_hour: Mapping[str, float],
    inventory: Mapping[str, int],
    busy_gpu_days: Iterable[tuple[str, float]],
    makespan_days: float,
) -> float:
    """What the held GPU-hours no job used by the makespan M cost, at each type's held rate F_g:
    24 sum_g F_g (inv_g M - busy_g), ``busy_gpu_days`` each job's (type, GPU-days), ``idle_of``'s
    rounding (the portfolio's idle cost, and its band's ends at other job times:
    planner/api/portfolio.py). A type without a held rate (rented) idles at no cost."""
    F = held_usd_per_gpu_hour
    held = sum(rate * HOURS_PER_DAY * inventory[g] * makespan_days for g, rate in F.items())
    used = sum(F.get(g, 0.0) * HOURS_PER_DAY * days for g, days in busy_gpu_days)
    return idle_of(held, used)


def busy_share(busy_gpu_days: float, held_gpus: int, days: float) -> float | None:
    """Held GPUs' busy share of ``days``: their jobs' GPU-days over the GPUs held x the days (None: none
    held), the one rule of the fleet's "busy 71 % of the 365 days" and the portfolio's over its horizon."""
    if not held_gpus or days <= 0:
        return None
    return busy_gpu_days / (held_gpus * days)


def idle_of(held: float, used: float) -> float:
    """The held cost no job used: held >= used, and a difference of two sums that is rounding
    alone (below a millionth of the held cost) is none (trial s26b: "$0.00" of idle cost)."""
    idle = held - used
    return idle if idle > 1e-6 * abs(held) else 0.0
