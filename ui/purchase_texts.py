"""A fleet's purchase said where it is recommended: "Buy 8 × mi325x: $320,000 up front, saves $1,321
over 30 days vs renting", and a notice where that saving is small for the money tied up
(``PurchaseSaving.small``). One formatter for ``trainplan fleet`` (its English labels) and the app's
rent-vs-buy view (app50: the outlay sat in a column and a caption; a buyer could read the
depreciated total as the price)."""

from __future__ import annotations

from planner.fmt import money
from planner.search.fleet_plan import FleetOption, PurchaseSaving
from ui.i18n import Labels

# what the purchase is weighed against, by the option that buys nothing (ui/i18n_fleet.py)
AGAINST_KEYS = {FleetOption.RENT_ONLY: "fleet_against_rent", FleetOption.RESERVE_ONLY: "fleet_against_reserve"}


# The count's sign: the page writes "8 × mi325x", the CLI's lines "8 x mi325x" (typed on any terminal)
APP_TIMES, CLI_TIMES = "×", "x"


def bought_gpus(tr: Labels, purchased: dict[str, int], times: str = APP_TIMES) -> str:
    """'8 × mi325x', types joined as running text."""
    return tr.join(f"{n:,} {times} {g}" for g, n in purchased.items() if n)


def purchase_text(tr: Labels, p: PurchaseSaving, times: str = APP_TIMES) -> str:
    """The purchase, its outlay up front first, and what it saves over the horizon (``times``: the
    count's sign, ``CLI_TIMES`` in ``trainplan fleet``'s line)."""
    return tr(
        "fleet_purchase",
        gpus=bought_gpus(tr, dict(p.purchased), times),
        outlay=money(p.outlay_usd),
        saving=money(max(p.saving_usd, 0.0)),  # the mixed option is the cheapest: a solver's residue is 0
        days=p.horizon_days,
        against=tr(AGAINST_KEYS[p.against]),
    )


def small_saving_text(tr: Labels, p: PurchaseSaving) -> str | None:
    """The notice of a purchase that saves little for its outlay; None where the saving is not small."""
    if not p.small:
        return None
    return tr(
        "fleet_small_saving",
        outlay=money(p.outlay_usd),
        saving=money(max(p.saving_usd, 0.0)),
        days=p.horizon_days,
        share=max(p.saving_share, 0.0),
        against=tr(AGAINST_KEYS[p.against]),  # reserving where the answer weighs a reserved price (review s50 L4)
    )
