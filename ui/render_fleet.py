"""``trainplan fleet``'s output: rent vs buy, each option's jobs with the quantile their durations
are at, and where buying pays off (split from ui/render.py, as render_portfolio was)."""

from __future__ import annotations

from rich.table import Table

from planner.catalog.prices import shared_term_words
from planner.fmt import money, money_band, number_band
from planner.search.fleet import reserved_commitments
from planner.units import DAYS_PER_YEAR, HOURS_PER_DAY, SECONDS_PER_DAY
from ui.render import (
    add_columns,
    calibration_json,
    calibration_line,
    emit_json,
    no_infeasibility,
    out,
    warn,
    whole_words,
)


def fleet_assignment(a, risk: str | None = None) -> dict:
    """One job of a fleet option: where it runs (owned or rented GPUs) and when, its days and cost
    with their 80 % bands (null: no evidence), keyed as portfolio's (trial s33); ``risk``: the
    quantile of its band its duration is at (the search judges plans there, as plan does)."""
    days = (a.end_s - a.start_s) / SECONDS_PER_DAY
    return {
        "job": a.job,
        "gpu": a.gpu_id,
        "num_gpus": a.num_gpus,
        "owned": a.owned,
        "start_days": a.start_s / SECONDS_PER_DAY,
        "end_days": a.end_s / SECONDS_PER_DAY,
        "risk": risk,
        "days": days,
        "days_band": a.banded(days),
        "cost_usd": float(a.cost_usd),
        "cost_usd_band": a.banded(float(a.cost_usd)),
    }


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
        f" more of{replaced}"
    )


def fleet_assignment_line(a: dict) -> str:
    """'chat-8b: 32 x h100-sxm on owned GPUs, day 0.0-93.4 (at p80), 93.4 (71.0-97.7) days, busy
    power $7,316 ($5,561-$7,654)'."""
    where = "on owned GPUs" if a["owned"] else "rented"
    cost = "busy power" if a["owned"] else "rent"
    at = f" (at {a['risk']})" if a["risk"] else ""
    return (
        f"  {a['job']}: {a['num_gpus']} x {a['gpu']} {where}, day {a['start_days']:.1f}-{a['end_days']:.1f}{at},"
        f" {number_band(a['days'], a['days_band'], 1)} days, {cost} {money_band(a['cost_usd'], a['cost_usd_band'])}"
    )


def fleet(
    solution,
    *,
    as_json: bool,
    utilisation: float | None = None,
    risks: dict[str, str] | None = None,
    tco=None,
    price_kind: str | None = None,
    calibration=None,
) -> None:
    """``risks``: job -> the risk quantile its durations are at (fleet times jobs as plan judges them);
    ``tco``: the ownership assumptions the totals rest on, said under the table; ``price_kind``: the
    rent's, whose reserved term is said where the rent counts job-hours only; ``calibration``: the
    file the jobs were planned with (said first, and in --json)."""
    data = fleet_json(solution, utilisation, risks or {})
    data["warnings"] = reserved_term_lines(solution, price_kind)
    for line in data["warnings"]:  # on stderr, as plan's; in --json too
        warn(line)
    if as_json:
        emit_json(data if calibration is None else {**data, "calibration": calibration_json(calibration)})
        return
    calibration_line(calibration)
    table = Table(
        title=f"rent vs buy over {solution.horizon_days:.0f} days (80 % bands: every job's cost at its band's ends)",
        title_justify="left",
    )
    # the quantile the jobs are timed and priced at (trial s38: "total" was the p80 cost, unsaid)
    at = ", ".join(sorted(set((risks or {}).values())))
    add_columns(table, ("option", f"total at {at}" if at else "total", "GPUs bought", "bought for", "rent"))
    options = [(name, p) for name in ("mixed", "rent_only", "buy_only") if (p := data[name])]
    # one unit down each money column (trial s33: "$783,875" over "$2.01M")
    tops = {k: max(p[k] for _, p in options) for k in ("purchase_usd", "rent_cost_usd")}
    tops["total_cost_usd"] = max(max(p["total_cost_usd_band"] or (p["total_cost_usd"],)) for _, p in options)
    for name, p in options:
        bought = ", ".join(f"{g}={n}" for g, n in p["purchased"].items() if n) or "-"
        outlay = money(p["purchase_usd"], column_max=tops["purchase_usd"]) if p["purchase_usd"] else "-"
        total = money_band(p["total_cost_usd"], p["total_cost_usd_band"], column_max=tops["total_cost_usd"])
        rent = money(p["rent_cost_usd"], column_max=tops["rent_cost_usd"])
        table.add_row(name.replace("_", " "), total, bought, outlay, rent)
    out.print(whole_words(table))
    for name, p in options:
        if any(p["purchased"].values()):  # an option that buys (split_words)
            out.print(split_words(name, p, solution.horizon_days))
    if tco is not None:
        out.print(ownership_words(tco, solution.horizon_days), markup=False)
    out.print(slot_words(solution))
    out.print("mixed, job by job:")
    for a in data["mixed"]["assignments"]:
        out.print(fleet_assignment_line(a), markup=False)
    for b in data["break_even"]:
        break_even_lines(b, utilisation)


# fleet --json's keys beside "feasible" and the infeasible ones: null when no fleet is found.
FLEET_KEYS = ("mixed", "rent_only", "buy_only", "horizon_days", "num_slots", "break_even", "warnings")


def split_words(name: str, p: dict, horizon_days: float) -> str:
    """An option that buys: 'buy only: ownership $1.24M + busy power $0.11M + rent $0; the 144 owned
    GPUs busy 81 % of the 365 days' (trial s36: the text showed the total alone)."""
    return (
        f"{name.replace('_', ' ')}: ownership {money(p['ownership_cost_usd'])} + busy power"
        f" {money(p['running_cost_usd'])} + rent {money(p['rent_cost_usd'])}; the {sum(p['purchased'].values()):,}"
        f" owned GPUs busy {p['owned_busy_fraction']:.0%} of the {horizon_days:,.0f} days"
    )


def slot_words(solution) -> str:
    """That the fleet is the slotted model's (trial s36: its answer moved with num_slots, unsaid)."""
    days = solution.horizon_days / solution.num_slots
    return (
        f"approximate: jobs on owned GPUs start at one of {solution.num_slots} slots of {days:,.1f} days"
        " (num_slots in the jobs file); more slots may find a cheaper fleet, at more solve time"
    )


def reserved_term_lines(solution, price_kind: str | None) -> list[str]:
    """Each option's reserved term (``reserved_commitments``): 'rent only: reserved-3y bills its
    whole 3-year term: ...' (trial s36: fleet priced a reservation by the job-hour, unsaid)."""
    options = (("mixed", solution.mixed), ("rent only", solution.rent_only))
    return [f"{name}: {shared_term_words(c)}" for name, plan in options for c in reserved_commitments(plan, price_kind)]


def fleet_json(solution, utilisation: float | None, risks: dict[str, str]) -> dict:
    def plan_dict(p):
        if p is None:
            return None
        return {
            "total_cost_usd": float(p.total_cost_usd),
            "total_cost_usd_band": p.total_band(),
            "purchased": p.purchased,
            "ownership_cost_usd": float(p.ownership_cost_usd),
            "purchase_usd": float(p.purchase_usd),
            "rent_cost_usd": float(p.rent_cost_usd),
            "running_cost_usd": float(p.running_cost_usd),
            "owned_busy_fraction": p.owned_busy_fraction(solution.horizon_days),
            "assignments": [fleet_assignment(a, risks.get(a.job)) for a in p.assignments],
        }

    break_even = [
        {
            "gpu": b.gpu_id,
            # null where buying never pays off (rent below the busy power, or above 100 % busy):
            # JSON has no Infinity.
            "utilisation": b.break_even_utilisation if b.pays_off else None,
            "buying_can_pay_off": b.pays_off,
            "rent_usd_per_gpu_hour": b.rent_usd_per_gpu_hour,
        }
        | ({} if utilisation is None else {"owned_usd_per_busy_gpu_hour": owned_hourly(b, solution, utilisation)})
        for b in solution.break_even
    ]
    return {
        "feasible": True,
        **no_infeasibility(),
        "mixed": plan_dict(solution.mixed),
        "rent_only": plan_dict(solution.rent_only),
        "buy_only": plan_dict(solution.buy_only),
        "horizon_days": solution.horizon_days,
        "num_slots": solution.num_slots,  # the owned jobs' start slots (an approximation: slot_words)
        "break_even": break_even,
    }


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
    return b.owned_fixed_usd / (hours * utilisation) + b.owned_usd_per_busy_hour
