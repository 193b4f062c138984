"""Portfolio mode: several jobs on one shared GPU inventory (``planner.api.explore.plan_portfolio``).

Inventory means the same as on the single-job page: a type's count is its limit, blank is no
limit (here: up to "Most GPUs to consider", the search's own cap), 0 or unticked is none.
Jobs are added from the sidebar, and updated or removed one at a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from planner.api import PlanRequest
from planner.fmt import money_band_parts
from planner.limits import MAX_DAYS, MAX_SLOTS
from planner.plan_accuracy import Standing
from planner.search.late_band import LateAtBandEnd
from planner.search.space import DEFAULT_MAX_GPUS
from planner.units import HOURS_PER_DAY
from ui import app_core, figures
from ui.app_portfolio import PortfolioOutcome
from ui.cached import cached_portfolio
from ui.held_price_texts import held_price_text
from ui.i18n import Labels, plain
from ui.messages import ac_text, band_text, duration
from ui.number_box import number_box
from ui.plan_card import jobs_run_losses_texts
from ui.sidebar import Inputs
from ui.single import show_infeasible

if TYPE_CHECKING:  # the portfolio's modules load when a portfolio is solved (ui/app_portfolio.py)
    from planner.api.portfolio import HorizonHolding

# The portfolio table's number formats: "days" and the band columns are each job's figures
# (planner/api/portfolio.py job_figures), where app_portfolio.solve_jobs gives them.
PORTFOLIO_FORMATS = {
    "start_days": "%,.1f",
    "end_days": "%,.1f",
    "days": "%,.1f",
    "time_p10_days": "%,.1f",
    "time_p90_days": "%,.1f",
    "cost_usd": app_core.DOLLARS,
    "cost_p10_usd": app_core.DOLLARS,
    "cost_p90_usd": app_core.DOLLARS,
    "usd_per_gpu_h": "$%,.2f",
}


# A text column's width from its longest entry: the browser sizes a table's columns from the rows it
# first draws, so a job's "after" added later was cut ("pretrain-7(", app53 M5). Pixels a character
# of the table's font takes at most (Latin; a CJK name is wider but job names are Latin in practice),
# the cell's padding, and the widest a column gets (a 40-character name) before its tooltip shows the rest.
TABLE_CHAR_PX, TABLE_PAD_PX, TABLE_TEXT_MAX_PX = 8, 20, 200


def text_column_px(texts: list[str], header: str) -> int:
    """The width that shows ``texts`` and ``header`` whole, up to ``TABLE_TEXT_MAX_PX``."""
    longest = max((len(t) for t in [*texts, header]), default=0)
    return min(TABLE_TEXT_MAX_PX, longest * TABLE_CHAR_PX + TABLE_PAD_PX)


def shared_inventory(request: PlanRequest) -> dict[str, int]:
    """The portfolio's inventory: each allowed type's count, or the GPU-count cap where it has none."""
    cap = request.max_gpus or DEFAULT_MAX_GPUS
    return {g: (cap if n is None else n) for g, n in (request.gpus or {}).items()}


def rented_under_pricing(request: PlanRequest, bought: bool) -> frozenset[str]:
    """The types rented by the hour, not held: every allowed type under a rent price (a count in
    the GPU table is then a quota on what runs at once, as on the single-job page: trial s39 found
    a capped rental priced as owned, 3x cheaper); under Buy, the types without a count."""
    return frozenset(g for g, n in (request.gpus or {}).items() if n is None or not bought)


def add_job(tr: Labels, jobs: dict[str, str], name: str, request_json: str) -> None:
    """Add a job under a new name; a taken name is refused (Update replaces a job on purpose). The
    name box then offers the next free "job-N" (trial s44 app M5: a second Add was refused, the box
    still reading the first job's name), and its release day and predecessors start over (app53 M4)."""
    if not name:
        st.error(tr("job_name_needed"))
    elif name in jobs:
        st.error(tr("job_name_taken", name=plain(name)))
    else:
        jobs[name] = request_json
        st.session_state[NEXT_JOB_BOXES] = {"job_name": next_job_name(jobs), **app_core.job_box_defaults()}
        st.rerun()


# The values the job boxes take on the next run: a widget's value may change only before it is drawn.
NEXT_JOB_BOXES = "next_job_boxes"


def next_job_name(jobs: dict[str, str]) -> str:
    """The first "job-N" (N = 1, 2, ...) no job has."""
    return next(f"job-{n}" for n in range(1, len(jobs) + 2) if f"job-{n}" not in jobs)


def job_controls(tr: Labels, jobs: dict[str, str], inputs: Inputs) -> None:
    """Add the sidebar's job (with its release day and predecessors); update or remove one job;
    remove all. Two boxes or buttons a row at most: four in a row cut them to "Add …", "Rem…" and
    "10.0(" at 800 px and the start day at 1,280 px (app53 M5)."""
    releases: dict[str, float] = st.session_state["portfolio_releases"]
    afters: dict[str, tuple[str, ...]] = st.session_state["portfolio_after"]
    st.session_state.update(st.session_state.pop(NEXT_JOB_BOXES, {}))
    after = after_box(tr, jobs)
    left, right = st.columns(2, vertical_alignment="bottom")
    name = left.text_input(tr("job_name"), key="job_name", max_chars=40)
    release = number_box(
        right, tr, "job_start_after", min_value=0.0, max_value=MAX_DAYS, step=1.0, key="job_start_after",
        help=tr("job_start_after_help"),
    )  # fmt: skip
    left, right = st.columns(2)
    if left.button(tr("add_job"), key="add_job", use_container_width=True):
        if name.strip() and name.strip() not in jobs:  # a refused Add leaves the listed job's own (review52)
            keep_release(releases, name.strip(), release)
            keep_after(afters, name.strip(), after)
        add_job(tr, jobs, name.strip(), inputs.key)
    if right.button(tr("clear_jobs"), key="clear_jobs", use_container_width=True):
        jobs.clear()
        releases.clear()
        afters.clear()
    if jobs:
        edit_job(tr, jobs, inputs, release, after)


def edit_job(tr: Labels, jobs: dict[str, str], inputs: Inputs, release: float, after: list[str]) -> None:
    """Pick a listed job, then update it with the sidebar (and the boxes above) or remove it."""
    releases: dict[str, float] = st.session_state["portfolio_releases"]
    afters: dict[str, tuple[str, ...]] = st.session_state["portfolio_after"]
    names = list(jobs)
    if st.session_state.get("job_pick") not in names:
        st.session_state["job_pick"] = names[0]
    picked = st.selectbox(tr("job_pick"), names, key="job_pick")
    left, right = st.columns(2)
    if left.button(tr("update_job"), key="update_job", use_container_width=True, help=tr("update_job_help")):
        jobs[picked] = inputs.key
        keep_release(releases, picked, release)
        keep_after(afters, picked, after)
    if right.button(tr("remove_job"), key="remove_job", use_container_width=True):
        jobs.pop(picked, None)
        releases.pop(picked, None)
        afters.pop(picked, None)
        for other, deps in list(afters.items()):  # a job added later under its name is not waited on (review52)
            keep_after(afters, other, [d for d in deps if d != picked])
        st.rerun()


def keep_release(releases: dict[str, float], name: str, day: float) -> None:
    """The job's start_after_days (none kept for day 0: from the start)."""
    if day > 0:
        releases[name] = float(day)
    else:
        releases.pop(name, None)


def after_box(tr: Labels, jobs: dict[str, str]) -> list[str]:
    """The jobs the sidebar's job is to start after (a jobs file's ``after``; trial s52), chosen
    among the listed ones; a choice whose job was removed is dropped before the box is drawn."""
    if not jobs:
        return []
    st.session_state["job_after"] = [n for n in st.session_state.get("job_after", []) if n in jobs]
    return st.multiselect(tr("job_after"), list(jobs), key="job_after", help=tr("job_after_help"))


def keep_after(afters: dict[str, tuple[str, ...]], name: str, chosen: list[str]) -> None:
    """The jobs ``name`` starts after (itself left out; none kept for none)."""
    if deps := tuple(n for n in chosen if n != name):
        afters[name] = deps
    else:
        afters.pop(name, None)


def job_after(jobs: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """Each listed job's predecessors among the listed jobs, where any (a removed job drops out)."""
    kept = {n: tuple(d for d in deps if d in jobs) for n, deps in st.session_state["portfolio_after"].items()}
    return {n: deps for n, deps in kept.items() if n in jobs and deps}


def job_releases(jobs: dict[str, str]) -> dict[str, float]:
    """Each listed job's start_after_days, where set (a name added then refused keeps none)."""
    return {n: d for n, d in st.session_state["portfolio_releases"].items() if n in jobs}


# The portfolio's two answers (app.py draws the chosen one): the jobs on the inventory, or what to
# buy for them against renting (ui/fleet_view.py, ``trainplan fleet``'s answer).
ON_INVENTORY, FLEET = "on_inventory", "fleet"
# each answer's title and help (app50: "one inventory" stood over the rent-vs-buy answer)
TITLES = {ON_INVENTORY: ("portfolio", "portfolio_help"), FLEET: ("portfolio_fleet", "portfolio_fleet_help")}


def show_jobs(tr: Labels, inputs: Inputs) -> tuple[dict[str, PlanRequest], str] | None:
    """The portfolio's jobs: the controls that add, update and remove them, their table, and the
    answer asked of them (``ON_INVENTORY`` or ``FLEET``); None (with a note) while there is no job."""
    jobs: dict[str, str] = st.session_state["portfolio_jobs"]
    # the answer picked (the radio below; its value is in the state before this run draws it)
    title, help_key = TITLES[st.session_state["portfolio_answer"]]
    st.subheader(tr(title))
    st.caption(tr(help_key))
    job_controls(tr, jobs, inputs)
    if not jobs:
        st.info(tr("no_jobs"))
        return None
    requests = {name: PlanRequest.model_validate_json(text) for name, text in jobs.items()}
    frame = app_core.jobs_frame(requests, job_releases(jobs), job_after(jobs))
    after_px = text_column_px(list(frame["after"]), tr("col_after"))
    st.dataframe(
        frame.rename(columns=lambda c: tr(f"col_{c}")),
        hide_index=True,
        placeholder=app_core.BLANK,
        key=f"portfolio_jobs_table_{after_px}",  # keyed by it: the browser keeps a table's first widths
        column_config={
            tr("col_tokens_b"): st.column_config.NumberColumn(format="%,.1f"),
            tr("col_deadline_days"): st.column_config.NumberColumn(format="%,.1f"),
            tr("col_start_after_days"): st.column_config.NumberColumn(format="%,.1f"),
            tr("col_budget_usd"): st.column_config.NumberColumn(format=app_core.DOLLARS),
            tr("col_after"): st.column_config.TextColumn(width=after_px),
        },
    )
    for line in jobs_run_losses_texts(tr, {name: r.run_losses for name, r in requests.items()}):
        st.caption(line)
    answer = st.radio(
        tr("portfolio_answer"), (ON_INVENTORY, FLEET), key="portfolio_answer", format_func=tr.option, horizontal=True
    )
    return requests, answer


def jobs_risk(requests: dict[str, PlanRequest]) -> str:
    """The quantile (or quantiles) the jobs are judged and scheduled at: each job's search's."""
    return ", ".join(sorted({r.risk.value for r in requests.values()}))


def show_portfolio(tr: Labels, inputs: Inputs, requests: dict[str, PlanRequest]) -> None:
    """The jobs (``show_jobs``'s) on the sidebar's inventory."""
    jobs: dict[str, str] = st.session_state["portfolio_jobs"]
    inventory = shared_inventory(inputs.request)
    st.caption(tr("portfolio_inventory", inventory=tr.join(f"{g} ≤ {n:,}" for g, n in inventory.items())))
    left, right = st.columns(2)
    horizon = number_box(left, tr, "horizon_days", min_value=0.0, max_value=MAX_DAYS, step=5.0, key="horizon_days")
    slots = number_box(right, tr, "num_slots", min_value=1, max_value=MAX_SLOTS, step=1, key="num_slots")
    with st.spinner(tr("working")):
        outcome = cached_portfolio(
            tuple(jobs.items()),
            tuple(sorted(inventory.items())),
            inputs.request.objective.value,
            horizon or None,
            int(slots),
            inputs.headroom,
            inputs.request.stack,
            inputs.calibration,
            inputs.request.network,
            rented_under_pricing(inputs.request, inputs.bought),
            tuple(sorted(inputs.purchases.items())),
            inputs.tco,
            tuple(sorted(job_releases(jobs).items())),
            tuple(sorted(job_after(jobs).items())),
        )
    show_portfolio_outcome(tr, outcome, inputs, jobs_risk(requests))


def show_portfolio_outcome(tr: Labels, outcome: PortfolioOutcome, inputs: Inputs, risk: str) -> None:
    """``risk``: the quantile (or quantiles) the jobs were judged and scheduled at."""
    if outcome.error:
        st.error(tr("bad_request", error=plain(outcome.error)))
        return
    if outcome.infeasible:
        show_infeasible(tr, outcome.infeasible, inputs)  # the warning, and the planner's figures under it
        if outcome.frame is None:
            return
        # the other jobs' schedule without those that cannot run alone (trial s35, round 2)
        st.subheader(tr("portfolio_left_out", jobs=tr.join(outcome.left_out)))
    # solve_jobs sets the frame, cost and makespan whenever it has no error and a schedule: of every
    # job, or of those left once the jobs that cannot run alone are out (``left_out``)
    assert outcome.frame is not None and outcome.total_cost_usd is not None and outcome.makespan_days is not None
    assert outcome.idle_cost_usd is not None
    # A type without a count is rented up to its cap: nothing of it is held, so nothing of it idles
    # (trial s25: "$5.60M" of idle owned GPUs headlined a portfolio of rented ones).
    jobs, idle, done = st.columns(3)
    # trial s35 (app): the total had no band; (round 2) nor had the idle cost
    total = money_and_band(tr, "band_summed", outcome.total_cost_usd, outcome.total_cost_band)
    jobs.metric(tr("jobs_cost"), *total, delta_color="off", delta_arrow="off")
    if outcome.holds_gpus:
        idle_cost = money_and_band(tr, "card_band", outcome.idle_cost_usd, outcome.idle_cost_band)
        idle.metric(tr("idle_cost"), *idle_cost, delta_color="off", delta_arrow="off")
    days = outcome.makespan_band_days  # trial s35 (round 2): it had no band beside its jobs'
    done_band = None if days is None else band_text(tr, days, lambda d: duration(tr, d * HOURS_PER_DAY))
    done.metric(
        tr("makespan"),
        duration(tr, outcome.makespan_days * HOURS_PER_DAY),
        done_band,
        delta_color="off",
        delta_arrow="off",
    )
    if outcome.horizon is not None:  # trial s51 M1: the owned GPUs held to the horizon, as the CLI says
        show_horizon(tr, outcome.horizon)
    for r in outcome.reserved:  # session 44: the terms' bill, which the choices were made on
        values = dict(gpus=r.num_gpus, gpu=r.gpu_id, terms=r.terms, years=r.term_years, rate=r.usd_per_gpu_hour)
        cost, used = app_core.money(r.cost_usd), app_core.money(r.used_usd)
        st.warning(tr("portfolio_reserved", **values, kind=tr.kind(r.kind), cost=cost, used=used))
    for warning in outcome.price_warnings:  # the CLI's warnings of the prices it rents at (app49)
        st.warning(held_price_text(tr, warning, "price_fix_job"))  # a job keeps its prices
    for late in outcome.late:  # trial s51 M5, as the CLI's
        st.warning(late_text(tr, late))
    if outcome.reserved and outcome.billed_usd is not None:
        st.caption(tr("portfolio_billed", total=app_core.money(outcome.billed_usd)))
    if not outcome.holds_gpus:
        # Buy mode prices each type at its amortised rate, not rent (trial s26b: "rented" read wrong).
        st.caption(tr("idle_cost_none_bought" if inputs.bought else "idle_cost_none"))
    # The days and the cost are not the single-job page's median and rent (trial s19, finding 9).
    st.caption(tr("portfolio_basis", risk=risk))
    if len(outcome.frame) > 1:  # the jobs share the inventory: one may not get the plan it gets alone
        st.caption(tr("portfolio_joint"))
    if outcome.stopped_gap is not None:  # not a proven optimum: how close to a bound (review s35, s45)
        gap = tr("portfolio_gap", gap=outcome.stopped_gap)
        st.caption(tr("portfolio_lanes" if outcome.lanes else "portfolio_stopped", gap=gap))
    frame = with_owned_words(with_standing_words(with_training_words(outcome.frame, tr), tr), tr)
    show_job_tables(tr, frame, risk)
    st.plotly_chart(figures.portfolio_figure(frame, tr), key="chart_portfolio")


def show_horizon(tr: Labels, held: HorizonHolding) -> None:
    """Under the idle cost: what holding the owned GPUs idle from the last job's end to the horizon
    costs at their held rate, their busy share of the horizon's GPU-hours, and the bill to the
    horizon (``HorizonHolding``; each with its 80 % band, every job at its band's ends)."""
    holding, busy, billed = st.columns(3)
    day = dict(day=held.horizon_days)
    cost = money_and_band(tr, "card_band", held.holding_usd, held.holding_band_usd)
    holding.metric(tr("holding_to_horizon", **day), *cost, delta_color="off", delta_arrow="off",
                   help=tr("holding_to_horizon_help"))  # fmt: skip
    if held.owned_busy_fraction is not None:
        # a share, as the card writes MFU: the same in both languages, so no label
        share = band_text(tr, held.owned_busy_fraction_band, lambda f: f"{f:.0%}")
        busy.metric(tr("owned_busy_to_horizon", **day), f"{held.owned_busy_fraction:.0%}",
                    share, delta_color="off", delta_arrow="off")  # fmt: skip
    bill = money_and_band(tr, "card_band", held.billed_usd, None)[0]
    billed.metric(tr("billed_to_horizon", **day), bill, help=tr("billed_to_horizon_help"))


# The jobs' figures as two tables, each with its band beside it: as one table of 15 columns they
# ran to 1,851 px in the 973 px a 1500 px window leaves the page, the bands cut off behind a
# scroll bar (trial s44 app L6). Each table's key, title and columns; every column is in one.
JOB_TABLES = (
    ("portfolio_table", "portfolio_schedule", ("job", "gpu", "num_gpus", "layout", "start_days", "end_days", "days")),
    ("portfolio_costs", "portfolio_costs", ("job", "cost_usd", "usd_per_gpu_h", "owned", "validated")),
)
BANDS = {"days": ("time_p10_days", "time_p90_days"), "cost_usd": ("cost_p10_usd", "cost_p90_usd")}
# The layout column's width: the schedule then fits the 753 px a 1,280 px window leaves the page in
# both languages (tests/ui/test_app_portfolio_browser.py); a longer layout is cut, whole in its tooltip.
LAYOUT_COLUMN_PX = 120


def job_table_labels(tr: Labels, frame: pd.DataFrame, risk: str) -> dict[str, str]:
    """Each column's label: the days and cost at ``risk``, each band's ends as short words (the
    figure left of them says whose band it is)."""
    labels = {"days": tr("col_days_at_risk", risk=risk), "cost_usd": tr("col_owned_cost_usd", risk=risk)}
    for low, high in BANDS.values():
        labels |= {low: tr("col_band_from"), high: tr("col_band_to")}
    return {c: labels.get(c) or tr(f"col_{c}") for c in frame.columns}


def show_job_tables(tr: Labels, frame: pd.DataFrame, risk: str) -> None:
    """The schedule (with the days at ``risk`` and their band) and each job's cost (with its band,
    rate, basis and standing against the validated envelope)."""
    labels = job_table_labels(tr, frame, risk)
    for key, title, heads in JOB_TABLES:
        columns = [c for head in heads for c in (head, *BANDS.get(head, ()))]  # each band after its figure
        config = {
            labels[c]: st.column_config.NumberColumn(format=PORTFOLIO_FORMATS[c])
            for c in columns
            if c in PORTFOLIO_FORMATS
        }
        if "layout" in columns:  # a 3D layout with its training ran the table past 1,280 px (app trial s45 M3):
            # held to a width, the rest behind the cell's tooltip
            config[labels["layout"]] = st.column_config.TextColumn(width=LAYOUT_COLUMN_PX, help=tr("col_layout_help"))
        if "cost_usd" in columns:  # the basis its short label leaves out (trial s19: said in the label)
            config[labels["cost_usd"]] = st.column_config.NumberColumn(
                format=PORTFOLIO_FORMATS["cost_usd"], help=tr("col_owned_cost_help")
            )
        st.markdown(f"**{tr(title)}**")
        st.dataframe(
            frame[columns].rename(columns=labels),
            hide_index=True,
            placeholder=app_core.BLANK,
            key=key,
            column_config=config,
        )


STANDING_KEYS = {
    Standing.VALIDATED: "standing_validated",
    Standing.CIRCULAR: "standing_circular",
    Standing.OUTSIDE: "standing_outside",
}


def money_and_band(tr: Labels, key: str, usd: float, band: tuple[float, float] | None) -> tuple[str, str | None]:
    """A metric's money and its band's words (label ``key``), written as the CLI writes a band
    (``planner.fmt.money_band_parts``) at the app's cents rule (trial s35: "$297,343–$1.01M")."""
    figure, ends = money_band_parts(usd, band, cents_below=app_core.CENTS_BELOW_USD)
    return figure, None if ends is None else tr(key, lo=ends[0], hi=ends[1])


def with_standing_words(frame: pd.DataFrame, tr: Labels) -> pd.DataFrame:
    """Each job's standing against the validated envelope in the page's language (blank: no band)."""
    words = [None if pd.isna(s) else tr(STANDING_KEYS[Standing(s)]) for s in frame["validated"]]
    return frame.assign(validated=words)


def with_owned_words(frame: pd.DataFrame, tr: Labels) -> pd.DataFrame:
    """Whether each job's cost is at the owned-GPU rate or at rent, in the page's language."""
    return frame.assign(owned=[tr("basis_owned" if owned else "basis_rent") for owned in frame["owned"]])


def with_training_words(frame: pd.DataFrame, tr: Labels) -> pd.DataFrame:
    """The jobs' layouts with their training in the page's language (``figures.training_words``;
    the planner's label says 'mb 2 x 8 | ac full' in English)."""
    pairs = zip(frame["layout"], frame["training"], strict=True)
    words = [
        f"{layout} · {figures.training_words(tr, t.micro_batch, t.grad_accum, ac_text(tr, t, pp))}"
        for layout, (t, pp) in pairs
    ]
    return frame.drop(columns="training").assign(layout=words)


def late_text(tr: Labels, late: LateAtBandEnd) -> str:
    """``LateAtBandEnd.words`` in the page's language."""
    values = dict(end=late.slow_end_days, start=late.start_days, deadline=late.deadline_days)
    return tr("late_at_band_end", job=plain(late.job), **values)
