"""``trainplan fleet``'s output: rent vs buy, each option's jobs with the quantile their durations
are at, and where buying pays off (split from ui/render.py, as render_portfolio was)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from planner.catalog.held_price import HeldPrice, rates_line
from planner.fmt import counted, money, money_band, number_band
from planner.model.run_loss_inputs import DEFAULT_RUN_LOSSES, RunLossInputs
from planner.search.fleet import Holding
from planner.search.late_band import LateOnRentRows
from planner.units import HOURS_PER_DAY, SECONDS_PER_DAY
from ui.i18n import Labels
from ui.purchase_texts import CLI_TIMES, purchase_text, small_saving_text
from ui.render import (
    add_columns,
    emit_json,
    no_infeasibility,
    out,
    warn,
    whole_words,
)
from ui.render_break_even import (
    basis_value,
    break_even_json,
    break_even_lines,
    owned_vs_reserved_json,
    owned_vs_reserved_words,
)
from ui.render_calibration import calibration_json, calibration_line
from ui.render_lines import after_line, figures_words, jobs_run_losses_json, release_line
from ui.render_ownership import OwnedBasis, ownership_words

if TYPE_CHECKING:
    from ui.jobs_overrides import Overrides


def fleet_assignment(
    a,
    risk: str | None = None,
    losses: RunLossInputs = DEFAULT_RUN_LOSSES,
    price: HeldPrice | None = None,
    release: float | None = None,
    after: Sequence[str] = (),
) -> dict:
    """One job of a fleet option: where it runs (``held``: owned, reserved or rented GPUs; ``owned``
    as before session 44) and when, its days and cost with their 80 % bands (null: no evidence), keyed
    as portfolio's (trial s33); ``risk``: the quantile of its band its duration is at (the search
    judges plans there, as plan does); ``losses``: the jobs file's run-loss figures its days rest on;
    ``price``: its type's rent or reserved rate, whose basis a rented or reserved job carries."""
    days = (a.end_s - a.start_s) / SECONDS_PER_DAY
    return {
        "job": a.job,
        "gpu": a.gpu_id,
        "num_gpus": a.num_gpus,
        "owned": a.holding is Holding.OWNED,
        "held": a.holding.value,
        "start_days": a.start_s / SECONDS_PER_DAY,
        "end_days": a.end_s / SECONDS_PER_DAY,
        "start_after_days": release,  # its release, where the jobs file sets one (trial s51 H4)
        "after": list(after) or None,  # the jobs it starts after, where the jobs file sets them
        "risk": risk,
        "days": days,
        "days_band": a.banded(days),
        # rent on rented GPUs, busy power on owned ones (their held cost is the option's), 0 on reserved
        # ones; portfolio's is GPU-hours at the full owned rate: the two keys below say which (s51 M3)
        "cost_usd": float(a.cost_usd),
        "cost_usd_band": a.banded(float(a.cost_usd)),
        "busy_power_usd": float(a.cost_usd) if a.holding is Holding.OWNED else None,
        "rent_usd": float(a.cost_usd) if a.holding is Holding.RENTED else None,
        "run_losses": losses.model_dump(mode="json"),  # as portfolio's and plan's (null: the default)
        # where its rent (reserved rate) comes from, as plan's price_basis (null: on owned GPUs)
        "price_basis": None if a.holding is Holding.OWNED else basis_value(price),
    }


def fleet_assignment_line(a: dict) -> str:
    """'chat-8b: 32 x h100-sxm on owned GPUs, day 0.0-93.4 (at p80), 93.4 (71.0-97.7) days, busy
    power $7,316 ($5,561-$7,654)'; on reserved GPUs the term pays it: '..., paid by the reserved term';
    with the file's run-loss figures: '...; on your figures: input stalls 5 %'."""
    where = {"owned": "on owned GPUs", "reserved": "on reserved GPUs", "rented": "rented"}[a["held"]]
    at = f" (at {a['risk']})" if a["risk"] else ""
    if a["held"] == Holding.RESERVED:
        cost = "paid by the reserved term"
    else:
        label = "busy power" if a["owned"] else "rent"
        cost = f"{label} {money_band(a['cost_usd'], a['cost_usd_band'])}"
    return (
        f"  {a['job']}: {a['num_gpus']} x {a['gpu']} {where}, day {a['start_days']:.1f}-{a['end_days']:.1f}{at},"
        f" {number_band(a['days'], a['days_band'], 1)} days, {cost}"
    ) + (f"; {words}" if (words := figures_words(RunLossInputs(**a["run_losses"]))) else "")


def fleet(
    solution,
    *,
    as_json: bool,
    utilisation: float | None = None,
    risks: dict[str, str] | None = None,
    owned_basis: OwnedBasis | None = None,
    calibration=None,
    losses: dict[str, RunLossInputs] | None = None,
    overrides: Overrides | None = None,
) -> None:
    """``risks``: job -> the risk quantile its durations are at (fleet times jobs as plan judges them);
    ``owned_basis``: the types to buy's prices and the ownership assumptions the totals rest on, said
    under the table and typed in --json (``owned_rate``, as portfolio's); ``calibration``: the
    file the jobs were planned with (said first, and in --json). Under a reserved price kind the
    option that buys nothing reserves ("reserve only") and the terms are billed, not warned of;
    ``losses``: job -> the jobs file's run-loss figures (said on each job's line, and in --json);
    ``overrides``: the jobs file keys the command line set (said first, and in --json)."""
    data = fleet_json(solution, utilisation, risks or {}, losses, owned_basis)
    data |= {} if overrides is None else {"overrides": overrides.json()}
    if as_json:
        emit_json(data if calibration is None else {**data, "calibration": calibration_json(calibration)})
        return
    for message in data["warnings"]:  # on stderr, as plan's and portfolio's
        warn(message)
    purchase = solution.purchase()
    if purchase is not None and (notice := small_saving_text(EN, purchase)) is not None:
        warn(notice)
    if overrides is not None and (line := overrides.line()) is not None:
        out.print(line, markup=False)
    calibration_line(calibration)
    out.print(whole_words(option_table(solution, data, risks or {})))
    if purchase is not None:  # the outlay where the answer buys, not only in its column (app50)
        out.print(purchase_text(EN, purchase, CLI_TIMES), markup=False)
    for name, p in option_rows(solution, data):
        # an option that holds GPUs (split_words): one that buys or reserves, or the chosen one on owned GPUs
        if any(p["purchased"].values()) or p["reserved"] or (p["owned"] and p is data["mixed"]):
            out.print(split_words(name, p, solution.horizon_days, data["reserved_term"] is not None))
    if data["reserved_term"] is not None:
        out.print(term_words(data["reserved_term"], solution.horizon_days), markup=False)
    for line in _not_held_words(solution, data):
        out.print(line, markup=False)
    if data["owned"]:
        out.print(owned_words(data["owned"], data["mixed"]["owned_cost_usd"], solution.horizon_days), markup=False)
    if owned_basis is not None:
        out.print(ownership_words(owned_basis.tco, solution.horizon_days), markup=False)
    out.print(slot_words(solution))
    if solution.prices:
        out.print(rates_words(solution), markup=False)
    for line in (release_line(solution.release_days), after_line(solution.after)):
        if line is not None:
            out.print(line, markup=False)
    out.print("mixed, job by job:")
    for a in data["mixed"]["assignments"]:
        out.print(fleet_assignment_line(a), markup=False)
    for b in data["break_even"]:
        break_even_lines(b, utilisation)
    for c in data["owned_vs_reserved"]:
        out.print(owned_vs_reserved_words(c, data["reserved_term"], solution.horizon_days, utilisation), markup=False)


def rates_words(solution) -> str:
    """'rent per GPU-hour: b200 at $5.48/GPU-h (median of on-demand offers); mi325x at $1.95/GPU-h (one
    provider's listed rate, not a median of offers)', as plan says its price (trial s48 H1: the whole
    answer rested on MI325X's one rate, unsaid); under a reserved kind its rates."""
    what = "rent" if solution.reserved is None else f"{solution.reserved.kind} rate"
    return rates_line(what, solution.prices)


def option_rows(solution, data: dict) -> list[tuple[str, dict]]:
    """The options there are (``FleetSolution.options``: which, and their names in the text), each
    with its JSON (``data``, ``fleet_json``'s)."""
    return [(solution.option_name(option), data[option.json_key]) for option, _ in solution.options()]


def option_table(solution, data: dict, risks: dict[str, str]) -> Table:
    """Each option's total, GPUs bought and their outlay, and its rent or, under a reserved price
    kind, the GPUs it reserves and their terms' bill."""
    reserving = data["reserved_term"] is not None
    title = "reserve vs buy" if reserving else "rent vs buy"
    table = Table(
        title=f"{title} over {data['horizon_days']:.0f} days (80 % bands: every job's cost at its band's ends)",
        title_justify="left",
    )
    # the quantile the jobs are timed and priced at (trial s38: "total" was the p80 cost, unsaid)
    at = ", ".join(sorted(set(risks.values())))
    last = ("GPUs reserved", "reserved terms") if reserving else ("rent",)
    add_columns(table, ("option", f"total at {at}" if at else "total", "GPUs bought", "bought for", *last))
    options = option_rows(solution, data)
    # one unit down each money column (trial s33: "$783,875" over "$2.01M")
    keys = ("purchase_usd", "rent_cost_usd", "reserved_cost_usd")
    tops = {k: max(p[k] for _, p in options) for k in keys}
    tops["total_cost_usd"] = max(max(p["total_cost_usd_band"] or (p["total_cost_usd"],)) for _, p in options)
    for name, p in options:
        bought = held_words(p["purchased"])
        outlay = money(p["purchase_usd"], column_max=tops["purchase_usd"]) if p["purchase_usd"] else "-"
        total = money_band(p["total_cost_usd"], p["total_cost_usd_band"], column_max=tops["total_cost_usd"])
        if reserving:
            term = money(p["reserved_cost_usd"], column_max=tops["reserved_cost_usd"])
            table.add_row(name, total, bought, outlay, held_words(p["reserved"]), term)
        else:
            table.add_row(name, total, bought, outlay, money(p["rent_cost_usd"], column_max=tops["rent_cost_usd"]))
    return table


def held_words(held: dict[str, int]) -> str:
    """'h100-sxm=64', or '-' where none is held."""
    return ", ".join(f"{g}={n}" for g, n in held.items() if n) or "-"


EN = Labels("en")  # the app's English labels: the purchase line is one formatter for both (ui/purchase_texts.py)

# fleet --json's keys beside "feasible" and the infeasible ones: null when no fleet is found.
FLEET_KEYS = (
    "mixed",
    "rent_only",
    "buy_only",
    "horizon_days",
    "num_slots",
    "break_even",
    "reserved_term",
    "owned_vs_reserved",
    "held_only",
    "owned",
    "rent_only_late",
    "warnings",
    "purchase",
    "run_losses",
    "owned_rate",
)


def split_words(name: str, p: dict, horizon_days: float, reserving: bool = False) -> str:
    """An option that buys: 'buy only: ownership $1.24M + busy power $0.11M + rent $0; the 144 owned
    GPUs busy 81 % of the 365 days' (trial s36: the text showed the total alone); one that reserves
    says its terms' bill and its reserved GPUs' busy share in place of the rent (``reserving``: under
    a reserved price kind, where no job is rented)."""
    owned = sum(p["purchased"].values()) + sum(p["owned"].values())
    running = f"{name}: owned GPUs' running {money(p['owned_cost_usd'])} + " if p["owned"] else f"{name}: "
    if not reserving:
        return (
            f"{running}ownership {money(p['ownership_cost_usd'])} + busy power"
            f" {money(p['running_cost_usd'])} + rent {money(p['rent_cost_usd'])}; the {owned:,}"
            f" owned GPUs busy {p['owned_busy_fraction']:.0%} of the {horizon_days:,.0f} days"
        )
    busy = (
        [f"the {owned:,} owned GPUs busy {p['owned_busy_fraction']:.0%} of the {horizon_days:,.0f} days"]
        if owned
        else []
    )
    if p["reserved"]:  # review s44: of the days the terms bill, not of the horizon
        busy.append(
            f"the {sum(p['reserved'].values()):,} reserved GPUs busy {p['reserved_busy_fraction']:.0%} of the"
            f" {p['reserved_billed_days']:,.0f} days their {counted(p['reserved_terms'], 'term')} bill"
        )
    return (
        f"{running}ownership {money(p['ownership_cost_usd'])} + busy power {money(p['running_cost_usd'])}"
        f" + reserved terms {money(p['reserved_cost_usd'])}; {', '.join(busy) or 'nothing held'}"
    )


def term_words(term: dict, horizon_days: float) -> str:
    """What a reserved GPU costs, under the table (trial s44: the rent counted job-hours at a rate
    only a term buys): 'reserved-1y bills whole 1-year terms: a reserved GPU is paid every hour of
    the 1 term covering the 365 days, busy or idle, ...; per GPU: h100-sxm $47,497 ($5.42 an hour)'."""
    rest = (
        "busy or idle"
        if term["filled"] == 0
        else f"less the {term['filled']:.0%} of the hours past the {horizon_days:,.0f} days other work pays"
    )
    per_gpu = ", ".join(
        f"{g} {money(term['usd_per_gpu'][g])} (${rate:,.2f} an hour)" for g, rate in term["usd_per_gpu_hour"].items()
    )
    per_gpu = f". Per GPU over the {counted(term['terms'], 'term')}: {per_gpu}" if per_gpu else ""
    return (
        f"{term['kind']} bills whole {term['term_years']}-year terms: a reserved GPU is paid every hour of the"
        f" whole terms its jobs need (at most the {counted(term['terms'], 'term')} covering the"
        f" {horizon_days:,.0f} days), {rest}, and nothing per busy hour (the cloud pays the power); no job is"
        f" rented by the hour at that rate{per_gpu}"
    )


def owned_words(owned: dict[str, int], running_usd: float, horizon_days: float) -> str:
    """The GPUs already owned, in every option (trial s51 H1: fleet ignored them): 'already owned, in
    every option: h100-sxm=256; their price is sunk (no outlay, amortisation or cost of capital), their
    hosting, staff and idle power over the 365 days, $0.78M, is in every total; GPUs bought are added'."""
    return (
        f"already owned, in every option: {held_words(owned)}; their price is sunk (no outlay, amortisation"
        f" or cost of capital), their hosting, staff and idle power over the {horizon_days:,.0f} days,"
        f" {money(running_usd)}, is in every total; 'GPUs bought' is what an option adds to them"
    )


def _not_held_words(solution, data: dict) -> list[str]:
    """Why a type is never rented (``held_only``), and why rent only has no row where every job can be
    rented (review after52 M3: the table left it out without a word)."""
    lines = [held_only_words(data["held_only"])] if data["held_only"] else []
    return lines + ([rent_only_late_words(solution.rent_only_late)] if solution.rent_only_late else [])


def held_only_words(types: list[str]) -> str:
    """'b200: no offer of the jobs' price kind and no rate given, so bought or not held ...'."""
    return (
        f"{', '.join(types)}: no offer of the jobs' price kind and no rate given, so bought or not held, never"
        " rented or reserved ([rent_usd_per_gpu_hour] in the jobs file rents it at a rate of one's own)"
    )


def rent_only_late_words(late: Sequence[LateOnRentRows]) -> str:
    """'rent only: none: with every job on its rent row, chat-70b (after chat-8b) ends on day 64.6,
    past its deadline_days of day 60 ...'."""
    return (
        f"rent only: none: with every job on its rent row, {'; '.join(w.words() for w in late)} (no type it may"
        " rent runs it fast enough after them)"
    )


def slot_words(solution) -> str:
    """That the fleet is the slotted model's (trial s36: its answer moved with num_slots, unsaid), and
    that the schedule shown is the compacted one (review52 L2: with releases and ``after`` the starts
    shown fell between the slots the words named; docs/ilp.md, the fleet's compaction)."""
    days = solution.horizon_days / solution.num_slots
    held = "owned GPUs" if solution.reserved is None else "owned or reserved GPUs"
    return (
        f"approximate: the solver starts jobs on {held} at one of {solution.num_slots} slots of {days:,.1f} days"
        " (num_slots in the jobs file), or at a release day or a predecessor's end; the schedule shown then starts"
        " each as early as its GPUs, release and predecessors allow; more slots may find a cheaper fleet, at more solve time"
    )


def plan_json(p, solution, risks: dict[str, str], losses: dict[str, RunLossInputs] | None = None) -> dict | None:
    """One option: its costs, the GPUs it buys and reserves (and their terms' bill), its jobs."""
    if p is None:
        return None
    return {
        "total_cost_usd": float(p.total_cost_usd),
        "total_cost_usd_band": p.total_band(),
        "purchased": p.purchased,  # bought in addition to those owned
        "owned": p.owned,  # already owned ([inventory]): their price sunk
        "owned_cost_usd": float(p.owned_cost_usd),  # their running cost over the horizon, in the total
        "ownership_cost_usd": float(p.ownership_cost_usd),
        "purchase_usd": float(p.purchase_usd),
        "rent_cost_usd": float(p.rent_cost_usd),
        "running_cost_usd": float(p.running_cost_usd),
        "owned_busy_fraction": p.owned_busy_fraction(solution.horizon_days),
        "reserved": p.reserved,
        "reserved_cost_usd": float(p.reserved_cost_usd),
        # the whole terms billed (those its jobs need) and the reserved GPUs' busy share of their days
        "reserved_terms": p.reserved_terms,
        "reserved_billed_days": (billed := billed_days(p, solution)),
        "reserved_busy_fraction": p.busy_fraction(Holding.RESERVED, billed),
        "assignments": [
            fleet_assignment(
                a,
                risks.get(a.job),
                (losses or {}).get(a.job, DEFAULT_RUN_LOSSES),
                solution.prices.get(a.gpu_id),
                solution.release_days.get(a.job),
                solution.after.get(a.job, ()),
            )
            for a in p.assignments
        ],
    }


def fleet_json(
    solution,
    utilisation: float | None,
    risks: dict[str, str],
    losses: dict[str, RunLossInputs] | None = None,
    owned_basis: OwnedBasis | None = None,
) -> dict:
    return {
        "feasible": True,
        **no_infeasibility(),
        "mixed": plan_json(solution.mixed, solution, risks, losses),
        # the option that buys nothing: under a reserved price kind, reserve only
        "rent_only": plan_json(solution.rent_only, solution, risks, losses),
        "buy_only": plan_json(solution.buy_only, solution, risks, losses),
        "horizon_days": solution.horizon_days,
        "num_slots": solution.num_slots,  # the held jobs' start slots (an approximation: slot_words)
        "break_even": break_even_json(solution, utilisation),
        "reserved_term": reserved_term_json(solution),
        "owned_vs_reserved": [owned_vs_reserved_json(c, utilisation) for c in solution.owned_vs_reserved],
        # types to buy with no offer of the jobs' price kind and no rate given: bought or not held
        # (review s44 M5, s45 M1)
        "held_only": sorted(solution.held_only),
        "owned": dict(solution.owned),  # GPUs already owned, in every option (trial s51 H1)
        # why rent_only is null where every job can be rented: the jobs its chains (after) end late
        "rent_only_late": [dataclasses.asdict(w) for w in solution.rent_only_late],
        "warnings": list(solution.warning_words),  # FleetSolution.warning_words
        "purchase": purchase_json(solution),
        "run_losses": jobs_run_losses_json(losses or {}),  # each job's, as portfolio's (trial s48)
        # the types to buy's prices and the ownership settings, portfolio's typed object (trial s51 M3)
        "owned_rate": None if owned_basis is None else owned_basis.json(dict(solution.held_usd_per_gpu_hour)),
    }


def purchase_json(solution) -> dict | None:
    """What the mixed option buys, up front, and saves against the option that buys nothing (null:
    it buys nothing, or nothing else runs the jobs); ``small_saving``: ``PurchaseSaving.small``."""
    p = solution.purchase()
    if p is None:
        return None
    return {
        "purchased": dict(p.purchased),
        "outlay_usd": p.outlay_usd,
        "saving_usd": p.saving_usd,
        "against": p.against.json_key,
        "saving_share": p.saving_share,  # of the outlay
        "small_saving": p.small,
    }


def billed_days(p, solution) -> float:
    """The days an option's reserved terms bill (0: none reserved)."""
    reserved = solution.reserved
    return 0.0 if reserved is None else p.reserved_terms * reserved.term.term_h / HOURS_PER_DAY


def reserved_term_json(solution) -> dict | None:
    """The reserved price kind's terms (null: none): each type's rate per GPU-hour, the GPUs it is
    reserved in (``unit``) and one reserved GPU's bill over the whole terms covering the horizon."""
    reserved = solution.reserved
    if reserved is None:
        return None
    hours = solution.horizon_days * HOURS_PER_DAY
    rates = reserved.usd_per_gpu_hour
    return {
        "kind": reserved.kind,
        "term_years": reserved.term.years,
        "terms": reserved.terms(hours),
        "filled": reserved.term.filled,
        "usd_per_gpu_hour": dict(rates),
        "unit": dict(reserved.unit),
        "usd_per_gpu": {g: reserved.fixed_usd(r, hours) for g, r in rates.items()},
        "price_basis": {g: basis_value(solution.prices.get(g)) for g in rates},  # where each rate comes from
    }
