"""What owning a GPU costs, said once for fleet and portfolio: how a bought GPU's price is charged
(``depreciation_words``, ``ownership_words``) and what the owned-GPU rate rests on, in words and
typed in --json (:class:`OwnedBasis`); split from ui/render_fleet.py and ui/render_portfolio.py."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from planner.fmt import money
from planner.search.ownership import TcoAssumptions
from planner.units import DAYS_PER_YEAR


def depreciation_words(tco) -> str:
    """How a bought GPU's price is charged (ownership.py's TCO formula), in fleet's and portfolio's
    words alike: 'straight-line over 5 years to a 20% resale value'."""
    return f"straight-line over {tco.lifetime_years:g} years to a {tco.residual_fraction:.0%} resale value"


def ownership_words(tco, horizon_days: float) -> str:
    """What an owned GPU adds to a total (trial s27: $783k for 64 H100 read as their price, $3.07M);
    over a horizon longer than the life, that the share charged counts replacements (trial s36: 10
    years charged $384k of depreciation on 4 H100 "bought for" $192k, unexplained)."""
    lives = horizon_days / (tco.lifetime_years * DAYS_PER_YEAR)
    replaced = (
        f"; the horizon is {lives:.1f} lifetimes, so it counts replacing them as they age out, which the"
        " outlay (one purchase) does not show"
        if lives > 1
        else ""
    )
    capital = (
        f", {tco.cost_of_capital_rate:.0%} a year on its average book value (cost of capital)"
        if tco.cost_of_capital_rate
        else ", no cost of capital (cost_of_capital_rate in [ownership])"
    )
    return (
        f"a total counts each bought GPU's purchase {depreciation_words(tco)} for the {horizon_days:,.0f}"
        f" days{capital}, plus hosting,"
        f" staff and power: not the outlay ('bought for'), which a shorter life or no resale would charge"
        f" more of{replaced}. {FLEET_ASSUMES}"
    )


# What fleet assumes and never said outside docs/ilp.md (trial s51 L3: "B200 lead times of months
# matter when buying in December for jobs on day 0").
FLEET_ASSUMES = (
    "It assumes GPUs bought run from day 0 (no lead time), rented or reserved capacity is there whenever a"
    " job starts, and a job runs wholly on owned, reserved or rented GPUs (docs/ilp.md)"
)


@dataclass(frozen=True)
class OwnedBasis:
    """What the owned-GPU rate rests on: ``prices``, each held type's purchase price and whether the
    jobs file gave it (None: no price, priced at its rent; ``held_purchase_prices``), and ``tco``, the
    ownership settings (planner/search/ownership.py)."""

    prices: dict[str, tuple[float | None, bool]]
    tco: TcoAssumptions

    def words(self) -> str:
        """``owned_basis_words``."""
        return owned_basis_words(self.prices, self.tco)

    def json(self, held_usd_per_gpu_hour: dict[str, float]) -> dict:
        """The same, typed (buyer trial s50 L5: only prose): each held type's price and the rate it
        gives (``held_usd_per_gpu_hour``: the portfolio's own), then the ownership settings."""
        gpus = [
            {
                "gpu": gpu,
                "purchase_usd": usd,
                "purchase_usd_given": given,  # false: the catalog's estimate
                # each hour held, busy or idle; a job's hours add its power (the assignments'
                # cost_per_gpu_hour_usd)
                "held_usd_per_gpu_hour": held_usd_per_gpu_hour.get(gpu),
            }
            for gpu, (usd, given) in sorted(self.prices.items())
        ]
        return {"gpus": gpus, **dataclasses.asdict(self.tco)}


def owned_basis_words(prices: dict[str, tuple[float | None, bool]], tco) -> str:
    """What the owned-GPU rate rests on (trial s36: the $48k per H100 and the ownership settings
    behind "owned-GPU rate 1.43" were nowhere in the text): ``prices``: held type -> (its purchase
    price, whether the jobs file gave it; None: no price, priced at its rent)."""
    bought = ", ".join(
        f"{gpu} at its rent (no purchase price)"
        if usd is None
        else f"{gpu} bought at {money(usd)} ({'yours' if given else 'the catalog estimate'})"
        for gpu, (usd, given) in sorted(prices.items())
    )
    capital = f"{tco.cost_of_capital_rate:.0%} cost of capital" if tco.cost_of_capital_rate else "no cost of capital"
    return (
        f"owned-GPU rate: {bought}; {depreciation_words(tco)}, {capital}, hosting and staff"
        f" {money(tco.hosting_usd_per_gpu_month + tco.staff_usd_per_gpu_month)} per GPU-month, PUE {tco.pue:g} at"
        f" ${tco.electricity_usd_per_kwh:g}/kWh, an idle GPU drawing {tco.idle_power_fraction:.0%} of its training power"
        " ([purchase_usd] and [ownership] in the jobs file)"
    )
