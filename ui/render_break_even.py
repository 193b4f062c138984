"""Where buying pays off in ``trainplan fleet``'s answer: against the rent (break-even utilisation and
rent, with the rent's offers, trial s51 M4) or, under a reserved price kind, against reserving; split
from ui/render_fleet.py."""

from __future__ import annotations

from planner.catalog.held_price import HeldPrice
from planner.fmt import counted, money
from planner.search.ownership import per_busy_hour
from planner.units import DAYS_PER_YEAR, HOURS_PER_DAY
from ui.render import out


def basis_value(price: HeldPrice | None) -> str | None:
    """A price's basis in --json (``PriceBasis``), null where the type has none (held only)."""
    return None if price is None else price.basis.value


def break_even_json(solution, utilisation: float | None) -> list[dict]:
    """Each type to buy against its rent (``FleetSolution.break_even``)."""
    return [
        {
            "gpu": b.gpu_id,
            # null where buying never pays off (rent below the busy power, or above 100 % busy):
            # JSON has no Infinity.
            "utilisation": b.break_even_utilisation if b.pays_off else None,
            "buying_can_pay_off": b.pays_off,
            "rent_usd_per_gpu_hour": b.rent_usd_per_gpu_hour,
            "price_basis": basis_value(solution.prices.get(b.gpu_id)),  # where the rent comes from
        }
        | ({} if utilisation is None else {"owned_usd_per_busy_gpu_hour": owned_hourly(b, solution, utilisation)})
        for b in solution.break_even
    ]


def owned_vs_reserved_json(c, utilisation: float | None) -> dict:
    """One type bought against reserved (``OwnedVsReserved``): both paid idle or busy, so no
    break-even utilisation of rent: each one's cost over the horizon, and the busy share below
    which buying is cheaper (1: at any; 0: at none)."""
    out = {
        "gpu": c.gpu_id,
        "owned_usd": c.owned_fixed_usd,  # one bought GPU over the horizon, idle
        "owned_usd_busy_throughout": c.owned_full_usd,
        "reserved_usd": c.reserved_usd,
        "reserved_usd_per_gpu_hour": c.reserved_usd_per_gpu_hour,
        "buying_cheaper_below_utilisation": c.buying_cheaper_below,
    }
    if utilisation is not None:
        owned, reserved = c.per_busy_hour(utilisation)
        out |= {"owned_usd_per_busy_gpu_hour": owned, "reserved_usd_per_busy_gpu_hour": reserved}
    return out


def owned_vs_reserved_words(c: dict, term: dict, horizon_days: float, utilisation: float | None) -> str:
    """'h100-sxm: one bought costs $185,849 over the 365 days idle, $195,000 busy throughout; one
    reserved $47,497 (reserved-1y, 1 term): reserving is cheaper at any utilisation'."""
    below = c["buying_cheaper_below_utilisation"]
    if below >= 1.0:
        verdict = "buying is cheaper at any utilisation"
    elif below <= 0.0:
        verdict = "reserving is cheaper at any utilisation"
    else:
        verdict = f"buying is cheaper below {below:.0%} busy (its power is extra), reserving above"
    line = (
        f"{c['gpu']}: one bought costs {money(c['owned_usd'])} over the {horizon_days:,.0f} days idle,"
        f" {money(c['owned_usd_busy_throughout'])} busy throughout; one reserved {money(c['reserved_usd'])}"
        f" ({term['kind']}, {counted(term['terms'], 'term')}): {verdict}"
    )
    past = term["terms"] * term["term_years"] * DAYS_PER_YEAR - horizon_days
    if past >= 1 and term["filled"] < 1:  # review s44 M1: the comparison is not like for like there
        line += (
            f" (the reserved GPU's terms run {past:,.0f} days past the horizon and are charged here, less"
            f" term_filled's share; the bought GPU keeps its resale value)"
        )
    if utilisation is not None:
        line += (
            f"\n  at {utilisation:.0%} busy: owned ${c['owned_usd_per_busy_gpu_hour']:,.2f} per busy GPU-hour,"
            f" reserved ${c['reserved_usd_per_busy_gpu_hour']:,.2f}"
        )
    return line


def break_even_lines(b: dict, utilisation: float | None) -> None:
    """Where buying one GPU type pays off (or that it never does), and its owned rate."""
    if b["buying_can_pay_off"]:
        out.print(f"{b['gpu']}: buying pays off above {b['utilisation']:.0%} utilisation")
    else:
        out.print(
            f"{b['gpu']}: buying never pays off at ${b['rent_usd_per_gpu_hour']:,.2f} rent per GPU-hour, even 100 % busy"
        )
    if utilisation is not None:
        out.print(
            f"  owned at {utilisation:.0%} busy: ${b['owned_usd_per_busy_gpu_hour']:,.2f} per GPU-hour,"
            f" rent ${b['rent_usd_per_gpu_hour']:,.2f}"
        )


def owned_hourly(b, solution, utilisation: float) -> float:
    """One owned GPU per busy GPU-hour at busy fraction ``utilisation``: its fixed cost over the
    horizon spread over the busy hours, plus its busy power (planner.search.ownership.break_even)."""
    hours = solution.horizon_days * HOURS_PER_DAY
    return per_busy_hour(b.owned_fixed_usd, b.owned_usd_per_busy_hour, hours, utilisation)
