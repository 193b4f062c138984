"""Where buying pays off in ``trainplan fleet``'s answer: against the rent (break-even utilisation and
rent, with the rent's offers, trial s51 M4) or, under a reserved price kind, against reserving; split
from ui/render_fleet.py."""

from __future__ import annotations

from planner.catalog.held_price import HeldPrice
from planner.catalog.prices import OffersRange
from planner.fmt import counted, money
from planner.search.fleet_plan import BreakEvenRent, FleetOption
from planner.search.ownership import per_busy_hour
from planner.units import DAYS_PER_YEAR, HOURS_PER_DAY
from ui.render import out


def basis_value(price: HeldPrice | None) -> str | None:
    """A price's basis in --json (``PriceBasis``), null where the type has none (held only)."""
    return None if price is None else price.basis.value


def break_even_json(solution, utilisation: float | None) -> list[dict]:
    """Each type to buy against its rent (``FleetSolution.break_even``): the busy share above which
    buying pays, and the rent below which renting beats buying at the answer's own busy hours
    (``FleetSolution.break_even_rents``) with the range of the rent's listed offers (trial s51 M4)."""
    rents = {r.gpu_id: r for r in solution.break_even_rents()}
    return [
        {
            "gpu": b.gpu_id,
            # null where buying never pays off (rent below the busy power, or above 100 % busy):
            # JSON has no Infinity.
            "utilisation": b.break_even_utilisation if b.pays_off else None,
            "buying_can_pay_off": b.pays_off,
            "rent_usd_per_gpu_hour": b.rent_usd_per_gpu_hour,
            "price_basis": basis_value(solution.prices.get(b.gpu_id)),  # where the rent comes from
            # one GPU bought over the horizon, idle (F_g), and what a busy hour adds (v_g, its power)
            "owned_fixed_usd": b.owned_fixed_usd,
            "busy_power_usd_per_gpu_hour": b.owned_usd_per_busy_hour,
            **break_even_rent_json(rents.get(b.gpu_id)),
            "rent_offers": offers_json(solution.rent_offers.get(b.gpu_id)),
        }
        | ({} if utilisation is None else {"owned_usd_per_busy_gpu_hour": owned_hourly(b, solution, utilisation)})
        for b in solution.break_even
    ]


def break_even_rent_json(rent: BreakEvenRent | None) -> dict:
    """r* = F_g / (u H) + v_g and the busy share u and option it is at (null: no option buys the type)."""
    return {
        "break_even_rent_usd_per_gpu_hour": None if rent is None else rent.usd_per_gpu_hour,
        "break_even_rent_busy_fraction": None if rent is None else rent.busy_fraction,
        "break_even_rent_option": None if rent is None else rent.option.json_key,
    }


def offers_json(span: OffersRange | None) -> dict | None:
    """The rent's price kind's listed offers: how many and their range (null: the catalog lists none)."""
    if span is None:
        return None
    return {
        "kind": span.kind,
        "count": span.count,
        "low_usd_per_gpu_hour": span.low_usd_per_gpu_hour,
        "high_usd_per_gpu_hour": span.high_usd_per_gpu_hour,
    }


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
    if (line := break_even_rent_words(b)) is not None:
        out.print(line, markup=False)


def break_even_rent_words(b: dict) -> str | None:
    """'  renting beats buying below $1.96 per GPU-hour at the mixed option's 71% busy (rent $5.07; the
    catalog's 6 on-demand offers run $3.49-$12.29)' (trial s51 M4: the answer rested on one median
    rent, and said only where utilisation pays); where no option buys the type, the rent and its
    offers alone; None where there is neither."""
    rent, offers = b["break_even_rent_usd_per_gpu_hour"], b["rent_offers"]
    if offers is None:
        span = ""
    elif offers["count"] > 1:
        span = (
            f"; the catalog's {offers['count']} {offers['kind']} offers run"
            f" ${offers['low_usd_per_gpu_hour']:,.2f}-${offers['high_usd_per_gpu_hour']:,.2f}"
        )
    else:
        span = f"; the catalog's one {offers['kind']} offer: ${offers['low_usd_per_gpu_hour']:,.2f}"
    if rent is None:
        return None if offers is None else f"  no option buys it (rent ${b['rent_usd_per_gpu_hour']:,.2f}{span})"
    option = FleetOption.MIXED if b["break_even_rent_option"] == FleetOption.MIXED.json_key else FleetOption.BUY_ONLY
    return (
        f"  renting beats buying below ${rent:,.2f} per GPU-hour at the {option.value} option's"
        f" {b['break_even_rent_busy_fraction']:.0%} busy (rent ${b['rent_usd_per_gpu_hour']:,.2f}{span})"
    )


def owned_hourly(b, solution, utilisation: float) -> float:
    """One owned GPU per busy GPU-hour at busy fraction ``utilisation``: its fixed cost over the
    horizon spread over the busy hours, plus its busy power (planner.search.ownership.break_even)."""
    hours = solution.horizon_days * HOURS_PER_DAY
    return per_busy_hour(b.owned_fixed_usd, b.owned_usd_per_busy_hour, hours, utilisation)
