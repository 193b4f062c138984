"""The portfolio's rent-vs-buy answer (``trainplan fleet`` on the page): for the jobs in the list,
how many GPUs of each type to buy over a horizon against renting (or, under a reserved price kind,
reserving) them, asked once through ``ui.cached.cached_fleet`` (``planner.api.fleet.plan_fleet``).

It shows what the CLI prints: each option's total with its 80 % band (a bar chart with error bars),
the mixed (chosen) option's ownership terms and what it holds, its jobs (owned ones as a timeline
at the jobs' risk quantile), where buying each type pays off, the prices' basis and warnings, and an
infeasible answer as the portfolio words its own (``show_infeasible``).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from planner.api import PlanRequest
from planner.catalog.prices import OffersRange
from planner.limits import MAX_DAYS, MAX_SLOTS, MIN_FLEET_SLOTS
from planner.search.fleet_plan import BreakEvenRent, FleetOption, FleetPlan, FleetSolution, Holding
from planner.search.late_band import LateOnRentRows
from planner.search.ownership import TcoAssumptions
from planner.units import DAYS_PER_YEAR, SECONDS_PER_DAY
from ui import app_core, figures
from ui.app_fleet import FleetAsk, FleetOutcome
from ui.cached import cached_fleet
from ui.fleet_figures import options_figure, owned_jobs_frame
from ui.held_price_texts import held_price_text
from ui.i18n import Labels, plain
from ui.number_box import number_box
from ui.plan_card import PRICE_BASIS_KEYS
from ui.portfolio_view import PORTFOLIO_FORMATS, job_after, job_releases, jobs_risk, late_text, money_and_band
from ui.purchase_texts import purchase_text, small_saving_text
from ui.render_fleet import billed_days
from ui.sidebar import Inputs
from ui.single import show_infeasible

HELD_KEYS = {Holding.OWNED: "held_owned", Holding.RENTED: "held_rented", Holding.RESERVED: "held_reserved"}


def fleet_ask(tr: Labels, inputs: Inputs) -> FleetAsk | None:
    """The fleet's inputs beside the jobs: the types to buy (those the GPU table prices a purchase
    of), the horizon and the start slots; with the sidebar's types, rents, price kind and ownership
    assumptions. None (with a note) while no type is picked."""
    purchases = inputs.purchases
    if not purchases:
        st.info(tr("fleet_no_purchase"))
        return None
    if any(g not in purchases for g in st.session_state["fleet_buy"]):  # a type since unticked or unpriced
        st.session_state["fleet_buy"] = [g for g in st.session_state["fleet_buy"] if g in purchases]
    buy = st.multiselect(  # a row of its own: two types' labels are wider than a column
        tr("fleet_buy"),
        list(purchases),
        key="fleet_buy",
        format_func=lambda g: tr("fleet_buy_option", gpu=g, price=app_core.money(purchases[g])),
        help=tr("fleet_buy_help"),
    )
    left, right = st.columns(2)
    horizon = number_box(
        left, tr, "fleet_horizon_days", min_value=1.0, max_value=float(MAX_DAYS), step=30.0, key="fleet_horizon_days"
    )
    # at least 2, as the CLI takes num_slots (trial s27: 1 slot bought and rented where 12 did not)
    slots = number_box(
        right, tr, "fleet_num_slots", min_value=MIN_FLEET_SLOTS, max_value=MAX_SLOTS, step=1, key="fleet_num_slots"
    )
    if not buy:
        st.info(tr("fleet_pick_buy"))
        return None
    request = inputs.request
    counts = {g: n for g, n in (request.gpus or {}).items() if n}
    owned = bool(counts) and st.checkbox(
        tr("fleet_owned", gpus=tr.join([f"{g} x {n:,}" for g, n in counts.items()])),
        key="fleet_owned",
        help=tr("fleet_owned_help"),
    )
    listed = st.session_state["portfolio_jobs"]
    releases = job_releases(listed)
    return FleetAsk(
        after=tuple(sorted(job_after(listed).items())),
        owned=tuple(sorted(counts.items())) if owned else (),
        release_days=tuple(sorted(releases.items())),
        buy=tuple((g, purchases[g]) for g in buy),
        horizon_days=float(horizon),
        num_slots=int(slots),
        gpus=tuple(request.gpus or {}),
        rents=tuple(sorted(inputs.rents.items())),
        price_kind=request.price_kind,
        term_filled=request.term_filled,
        tco=inputs.tco or TcoAssumptions(),
    )


def show_fleet(tr: Labels, inputs: Inputs, requests: dict[str, PlanRequest]) -> None:
    """Rent or buy for the portfolio's jobs (``requests``: the list's, as ``show_jobs`` read it)."""
    jobs: dict[str, str] = st.session_state["portfolio_jobs"]
    st.subheader(tr("fleet_title"))
    st.caption(tr("fleet_help"))
    ask = fleet_ask(tr, inputs)
    if ask is None:
        return
    fleet_notes(tr, inputs, requests, bool(ask.owned))
    with st.spinner(tr("working")):
        outcome = cached_fleet(
            tuple(jobs.items()), ask, inputs.headroom, inputs.request.stack, inputs.calibration, inputs.request.network
        )
    show_fleet_outcome(tr, outcome, inputs, ask, jobs_risk(requests))


def fleet_notes(tr: Labels, inputs: Inputs, requests: dict[str, PlanRequest], owned: bool) -> None:
    """What the fleet reads otherwise than the inventory answer, as the CLI warns of it (``fleet_ignored``):
    the GPU table's counts (``owned``: held as GPUs owned) and the jobs' budgets; and the ownership
    assumptions it prices at."""
    counted = [f"{g} ≤ {n:,}" for g, n in (inputs.request.gpus or {}).items() if n is not None]
    if counted:
        st.caption(tr("fleet_counts_owned" if owned else "fleet_counts_ignored", gpus=tr.join(counted)))
    budgeted = [plain(name) for name, r in requests.items() if r.budget_usd is not None]
    if budgeted:
        st.caption(tr("fleet_budget_ignored", jobs=tr.join(budgeted)))
    if inputs.tco is None:
        st.caption(tr("fleet_tco_default"))


def show_fleet_outcome(tr: Labels, outcome: FleetOutcome, inputs: Inputs, ask: FleetAsk, risk: str) -> None:
    """``risk``: the quantile (or quantiles) the jobs are timed and priced at."""
    if outcome.error:
        st.error(tr("bad_request", error=plain(outcome.error)))
        return
    if outcome.infeasible:
        show_infeasible(tr, outcome.infeasible, inputs)  # the warning, and the planner's figures under it
        return
    solution = outcome.solution
    assert solution is not None  # solve_fleet sets it whenever it has no error and no infeasible answer
    options = [(tr(option_key(solution, option)), p) for option, p in solution.options()]
    if (purchase := solution.purchase()) is not None:  # the outlay first, where the answer buys (app50)
        st.info(purchase_text(tr, purchase))
        if (notice := small_saving_text(tr, purchase)) is not None:
            st.warning(notice)
    show_totals(tr, options, risk)
    for warning in solution.price_warnings:  # the CLI's warnings of the prices it rents at
        st.warning(held_price_text(tr, warning, "price_fix_table"))  # fleet_requests reads it
    for late in solution.late_at_band_end:  # trial s51 M5, as the CLI's
        st.warning(late_text(tr, late))
    for chained in solution.rent_only_late:  # why the rent-only option is missing (chain52, as the CLI's)
        st.warning(rent_only_late_text(tr, chained))
    show_split(tr, solution, *options[0])
    st.caption(ownership_text(tr, ask.tco, solution.horizon_days))
    if holds_a_job(solution):  # the slots place only jobs on held GPUs (app53 M7: said where none was)
        st.caption(tr("fleet_slots", slots=solution.num_slots, days=solution.horizon_days / solution.num_slots))
    if solution.prices:
        st.caption(rates_text(tr, solution))
    if solution.held_only:
        st.caption(tr("fleet_held_only", gpus=tr.join(sorted(solution.held_only))))
    show_fleet_jobs(tr, solution.mixed, risk)
    show_break_even(tr, solution)


def holds_a_job(solution: FleetSolution) -> bool:
    """Whether a shown option runs a job on held (owned or reserved) GPUs, which the solver starts
    at its time slots; rented jobs start whenever their release and predecessors allow."""
    return any(a.holding is not Holding.RENTED for _, p in solution.options() for a in p.assignments)


def rent_only_late_text(tr: Labels, late: LateOnRentRows) -> str:
    """``LateOnRentRows.words`` in the page's language: why there is no rent-only option."""
    values = dict(end=late.end_days, limit=late.limit_days, limit_key=late.limit_key)
    return tr("fleet_rent_only_late", job=plain(late.job), after=plain(", ".join(late.after)), **values)


def option_key(solution: FleetSolution, option: FleetOption) -> str:
    """The label of an option, as ``FleetSolution.option_name`` names it (``names_owned``)."""
    return f"fleet_option_{'owned_' if solution.names_owned(option) else ''}{option.key}"


def show_totals(tr: Labels, options: list[tuple[str, FleetPlan]], risk: str) -> None:
    """Each option's total at ``risk`` with its 80 % band, as metrics and as bars with error bars."""
    for column, (name, p) in zip(st.columns(len(options)), options, strict=True):
        total = money_and_band(tr, "card_band", p.total_cost_usd, p.total_band())
        column.metric(tr("fleet_total", option=name, risk=risk), *total, delta_color="off", delta_arrow="off")
    st.markdown(f"**{tr('fleet_chart', risk=risk)}**")
    st.plotly_chart(options_figure(options, tr, risk), key="chart_fleet_options")


def show_split(tr: Labels, solution: FleetSolution, name: str, p: FleetPlan) -> None:
    """The mixed option's cost terms, what it buys (and reserves) and how busy they are."""
    terms = dict(option=name, ownership=app_core.money(p.ownership_cost_usd), power=app_core.money(p.running_cost_usd))
    terms["total"] = app_core.money(p.total_cost_usd)
    if solution.reserved is None:
        st.markdown(tr("fleet_split_rent", **terms, rent=app_core.money(p.rent_cost_usd)))
    else:
        st.markdown(tr("fleet_split_reserved", **terms, reserved=app_core.money(p.reserved_cost_usd)))
    owned = sum(p.purchased.values())
    if owned:
        busy = p.owned_busy_fraction(solution.horizon_days) or 0.0
        gpus = tr.join(f"{n:,} × {g}" for g, n in p.purchased.items() if n)
        days = solution.horizon_days
        st.markdown(
            tr("fleet_bought", gpus=gpus, outlay=app_core.money(p.purchase_usd), owned=owned, busy=busy, days=days)
        )
    else:
        st.markdown(tr("fleet_bought_none", option=name))
    if p.reserved and solution.reserved is not None:
        billed = billed_days(p, solution)
        busy = p.busy_fraction(Holding.RESERVED, billed) or 0.0
        gpus = tr.join(f"{n:,} × {g}" for g, n in p.reserved.items() if n)
        kind = tr.kind(solution.reserved.kind)
        st.markdown(tr("fleet_reserved_held", gpus=gpus, terms=p.reserved_terms, kind=kind, busy=busy, days=billed))


def ownership_text(tr: Labels, tco: TcoAssumptions, horizon_days: float) -> str:
    """How a bought GPU's price is charged in a total (render_ownership.ownership_words in the page's words)."""
    capital = tr("fleet_capital", rate=tco.cost_of_capital_rate) if tco.cost_of_capital_rate else tr("fleet_no_capital")
    text = tr(
        "fleet_ownership",
        years=tco.lifetime_years,
        residual=tco.residual_fraction,
        days=horizon_days,
        capital=capital,
    )
    lives = horizon_days / (tco.lifetime_years * DAYS_PER_YEAR)
    return text + (tr("fleet_lifetimes", lives=lives) if lives > 1 else "")


def rates_text(tr: Labels, solution: FleetSolution) -> str:
    """The price each type is rented (or reserved) at and its basis (render_fleet.rates_words)."""
    reserved = solution.reserved
    what = tr("fleet_rate_rent") if reserved is None else tr("fleet_rate_reserved", kind=tr.kind(reserved.kind))
    rates = [
        tr("fleet_rate", gpu=price.gpu, rate=price.usd_per_gpu_hour, basis=tr(PRICE_BASIS_KEYS[price.basis]))
        for _, price in sorted(solution.prices.items())
    ]
    return tr("fleet_rates", what=what, rates=tr.clauses(rates))


# The option's jobs as two tables, each figure with its band after it, as the portfolio's (trial s44
# app L6: one table of every column ran past the page): each table's title and columns.
JOB_TABLES = (
    (
        "fleet_jobs",
        ("job", "gpu", "num_gpus", "held", "start_days", "end_days", "days", "time_p10_days", "time_p90_days"),
    ),
    ("fleet_job_costs", ("job", "held", "cost_usd", "cost_p10_usd", "cost_p90_usd")),
)
# The timeline's height: a bar per owned job, and room for the axis (Plotly's 450 px drew one job's
# bar 170 px tall).
TIMELINE_AXES_PX, TIMELINE_JOB_PX = 110, 45


def show_fleet_jobs(tr: Labels, plan: FleetPlan, risk: str) -> None:
    """The mixed option's jobs on owned GPUs as a timeline, and every job of it in two tables."""
    st.markdown(f"**{tr('fleet_timeline', risk=risk)}**")
    owned = owned_jobs_frame(plan, tr, risk)
    if owned.empty:
        st.caption(tr("fleet_none_owned"))
    else:
        timeline = figures.portfolio_figure(owned, tr)
        timeline.update_layout(height=TIMELINE_AXES_PX + TIMELINE_JOB_PX * len(owned))
        st.plotly_chart(timeline, key="chart_fleet_owned")
    frame = fleet_jobs_frame(tr, plan)
    labels = {"days": tr("col_days_at_risk", risk=risk), "cost_usd": tr("col_fleet_cost", risk=risk)}
    labels |= {c: tr(f"col_{c}") for c in frame.columns if c not in labels}  # each band's ends with its figure's name
    config = {labels[c]: st.column_config.NumberColumn(format=f) for c, f in PORTFOLIO_FORMATS.items() if c in labels}
    config[labels["cost_usd"]] = st.column_config.NumberColumn(
        format=PORTFOLIO_FORMATS["cost_usd"], help=tr("col_fleet_cost_help")
    )
    for title, columns in JOB_TABLES:
        st.markdown(f"**{tr(title)}**")
        shown = frame[list(columns)].rename(columns=labels)
        st.dataframe(shown, hide_index=True, placeholder=app_core.BLANK, key=title, column_config=config)


def fleet_jobs_frame(tr: Labels, plan: FleetPlan) -> pd.DataFrame:
    """One row per job of the option: where it runs and when, its days and cost with their 80 % bands
    (blank: no band), as ``trainplan fleet --json``'s assignments."""
    rows = []
    for a in plan.assignments:
        days = (a.end_s - a.start_s) / SECONDS_PER_DAY
        days_band, cost_band = a.banded(days) or (None, None), a.banded(a.cost_usd) or (None, None)
        rows.append(
            {
                "job": a.job,
                "gpu": a.gpu_id,
                "num_gpus": a.num_gpus,
                "held": tr(HELD_KEYS[a.holding]),
                "start_days": a.start_s / SECONDS_PER_DAY,
                "end_days": a.end_s / SECONDS_PER_DAY,
                "days": days,
                "time_p10_days": days_band[0],
                "time_p90_days": days_band[1],
                "cost_usd": float(a.cost_usd),
                "cost_p10_usd": cost_band[0],
                "cost_p90_usd": cost_band[1],
            }
        )
    return pd.DataFrame(rows)


def show_break_even(tr: Labels, solution: FleetSolution) -> None:
    """Where buying each type pays off against its rent, with the rent below which renting beats
    buying and the rent's listed offers (trial s51 M4, as the CLI's), or (under a reserved kind)
    against reserving."""
    rents = {r.gpu_id: r for r in solution.break_even_rents()}
    lines = [
        tr.sentences(
            break_even_text(tr, b),
            break_even_rent_text(tr, solution, rents.get(b.gpu_id)),
            offers_text(tr, solution.rent_offers.get(b.gpu_id)),
        )
        for b in solution.break_even
    ]
    lines += [vs_reserved_text(tr, c.gpu_id, c.buying_cheaper_below) for c in solution.owned_vs_reserved]
    if not lines:
        return
    st.markdown(f"**{tr('fleet_break_even_title')}**")
    for line in lines:
        st.markdown(f"- {line}")


def break_even_text(tr: Labels, b) -> str:
    """'h100-sxm: buying pays off above 27% utilisation (...)' (``GpuBreakEven``), or that it never does."""
    if b.pays_off:
        return tr("fleet_break_even", gpu=b.gpu_id, share=b.break_even_utilisation, rent=b.rent_usd_per_gpu_hour)
    return tr("fleet_never_pays", gpu=b.gpu_id, rent=b.rent_usd_per_gpu_hour)


def break_even_rent_text(tr: Labels, solution: FleetSolution, rent: BreakEvenRent | None) -> str:
    """'Renting beats buying below $1.96 per GPU-hour, at the mixed option's 71% busy.'
    (``BreakEvenRent``: r* at the busy share of the option that buys the type), or that no option buys it."""
    if rent is None:
        return tr("fleet_no_option_buys")
    option = tr(option_key(solution, rent.option))
    return tr("fleet_break_even_rent", rent=rent.usd_per_gpu_hour, option=option, busy=rent.busy_fraction)


def offers_text(tr: Labels, span: OffersRange | None) -> str:
    """'The catalog's 6 on-demand offers run $3.49–$12.29.' (``OffersRange``; empty: none listed)."""
    if span is None:
        return ""
    values = dict(kind=tr.kind(span.kind), low=span.low_usd_per_gpu_hour)
    if span.count == 1:
        return tr("fleet_offer_one", **values)
    return tr("fleet_offers", **values, count=span.count, high=span.high_usd_per_gpu_hour)


def vs_reserved_text(tr: Labels, gpu: str, below: float) -> str:
    """Buying against reserving one type (``OwnedVsReserved.buying_cheaper_below``: 1 at any, 0 at none)."""
    if below >= 1.0:
        return tr("fleet_vs_reserved_buy", gpu=gpu)
    if below <= 0.0:
        return tr("fleet_vs_reserved_reserve", gpu=gpu)
    return tr("fleet_vs_reserved_below", gpu=gpu, share=below)
