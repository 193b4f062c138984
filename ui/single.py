"""The single-job page: the plan card (ui/plan_card.py, with its near tie), or why there is none,
and the tabs.

Only the open tab runs: the frontier (every candidate) and why-not (two more solves) cost seconds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import pandas as pd
import streamlit as st
from streamlit.elements.lib.mutable_tab_container import TabContainer

from planner.api.chart_points import judged_points
from planner.errors import NamedPlan
from planner.fmt import one_line
from planner.frontier import knee
from planner.plan import Plan
from planner.request import runnable_gpus
from ui import app_core, figures
from ui.cached import (
    cached_frontier,
    cached_job_zip,
    cached_plan,
    cached_why_not,
    catalog,
    cuda_context_gib,
)
from ui.card_notices import request_texts
from ui.explorer import show_explorer
from ui.i18n import Labels, plain
from ui.infeasible_words import detail_text, infeasible_text, why_not_text
from ui.messages import estimate_only_text
from ui.number_box import number_box
from ui.plan_card import plan_card, tie_rule_text
from ui.run_view import show_local, show_run_view
from ui.sidebar import Inputs

# Metrics never cut a figure off ("16 x b...", "105.7 ..." at 800 px; issue 30): the value's font
# shrinks with the window (1.6rem from 1280 px down to 1.1rem at 880 px) and a value, a delta or a
# label that still does not fit wraps at a space onto a second line instead of ending in an ellipsis.
METRIC_CSS = """<style>
[data-testid='stMetricValue'] { font-size: clamp(1.1rem, 2vw, 1.6rem); }
[data-testid='stMetricValue'], [data-testid='stMetricValue'] *,
[data-testid='stMetricDelta'], [data-testid='stMetricDelta'] *,
[data-testid='stMetricLabel'], [data-testid='stMetricLabel'] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  height: auto !important;
}
</style>"""


# A rerun that waited under this share of the answer's own solve time was served from the cache.
KEPT_FRACTION = 0.5


def show_infeasible(tr: Labels, infeasible: app_core.Infeasible, inputs: Inputs) -> None:
    st.warning(infeasible_text(tr, infeasible, inputs.request))
    detail = detail_text(tr, infeasible)  # the planner's own words (English) or its exact figures
    if detail:
        st.caption(detail)


def show_breakdowns(tr: Labels, plans: list[Plan], inputs: Inputs) -> None:
    context_gib = cuda_context_gib(inputs.headroom, inputs.request.stack)
    st.markdown(f"**{tr('chart_memory')}**")
    st.plotly_chart(figures.memory_figure(plans, context_gib, tr, inputs.request.risk), key="chart_memory")
    st.markdown(f"**{tr('chart_step')}**")
    st.plotly_chart(figures.step_time_figure(plans, tr), key="chart_step")


def scaling_default(points: pd.DataFrame, chosen: Plan | None, named: NamedPlan | None) -> str:
    """The scaling chart's GPU type until one is picked: the chosen plan's; with none, the type the
    infeasible answer names, else the type of the cheapest point at the search's risk (app trial s45
    L3: an infeasible budget showed the a10, the first type in the alphabet)."""
    gpus = set(points["gpu"])
    for plan in (chosen, named):
        if plan is not None and plan.gpu in gpus:
            return plan.gpu
    return str(points["gpu"][points["cost_at_risk_usd"].idxmin()])


def show_explore(tr: Labels, inputs: Inputs, chosen: Plan | None, named: NamedPlan | None = None) -> None:
    points = cached_frontier(inputs.key, inputs.headroom, inputs.request.objective.value, inputs.calibration)
    if points.empty:
        st.info(tr("no_candidates"))
        return
    st.markdown(f"**{tr('chart_frontier')}**")
    request = inputs.request
    limits = figures.Limits.of(request)
    usable = points[limits.feasible(points)]
    # the knee as the search reads it (planner/frontier.py): at the request's risk quantile, among
    # the plans that surely fit memory where any does the job (solve_at_risk; cached.frontier_points)
    sure_first = bool(points["sure_first"].all())
    usable = usable[judged_points(usable, request.risk if sure_first else None)]
    at = knee(usable["cost_at_risk_usd"].to_numpy(), usable["time_at_risk_days"].to_numpy()) if len(usable) else None
    bend = None if at is None else usable.iloc[at]
    fig = figures.frontier_figure(points, points["pareto"], chosen, tr, limits, bend)
    st.plotly_chart(fig, key="chart_frontier")
    gpus = sorted(points["gpu"].unique())
    if st.session_state.get("scaling_gpu") not in gpus:
        st.session_state["scaling_gpu"] = scaling_default(points, chosen, named)
    gpu = st.selectbox(tr("scaling_gpu"), gpus, key="scaling_gpu")
    st.markdown(f"**{tr('chart_scaling')}**")
    st.plotly_chart(figures.scaling_figure(points, gpu, tr, request.risk, sure_first), key="chart_scaling")


JOB_NAME = re.compile(r"[A-Za-z0-9._-]+")  # a folder and file name on every system the zip lands on


TOP_FORMATS = {
    "num_gpus": "%,d",
    "num_nodes": "%,d",
    "time_to_train_days": "%,.2f",
    "time_p10_days": "%,.2f",
    "time_p90_days": "%,.2f",
    "cost_usd": app_core.DOLLARS,
    "cost_p10_usd": app_core.DOLLARS,  # the cost band as the portfolio table writes it
    "cost_p90_usd": app_core.DOLLARS,
    "time_at_risk_days": "%,.2f",
    "cost_at_risk_usd": app_core.DOLLARS,
    "price_usd_per_gpu_hour": "$%.2f",
    "energy_kwh": "%,.0f",
    "mfu": "%.1f%%",  # one decimal, like the card (percent points: Streamlit's "percent" shows two)
    "mfu_model": "%.1f%%",
    "tokens_per_s": "%,.0f",
    "tokens_p10_per_s": "%,.0f",
    "tokens_p90_per_s": "%,.0f",
    "memory_gib": "%.1f",
    "memory_p90_gib": "%.1f",
    "capacity_gib": "%.1f",
}
TOP_ORDER = (  # memory next to the headline figures, so it is visible without scrolling
    # the figures the search ranked by (its risk quantile) beside the model's (trial s28d: row 2 looked cheaper)
    "rank", "gpu", "num_gpus", "time_to_train_days", "cost_usd", "memory_gib", "memory_p90_gib", "capacity_gib",
    "time_at_risk_days", "cost_at_risk_usd", "time_p10_days", "time_p90_days", "cost_p10_usd", "cost_p90_usd",
    "price_usd_per_gpu_hour", "price_estimated", "mfu", "mfu_model", "tokens_per_s", "tokens_p10_per_s", "tokens_p90_per_s",
    "layout", "num_nodes", "micro_batch", "grad_accum", "ac", "energy_kwh",
)  # fmt: skip


BOUGHT_COLUMNS = ("cost_usd", "cost_at_risk_usd", "cost_p10_usd", "cost_p90_usd", "price_usd_per_gpu_hour")


def show_top_plans(
    tr: Labels, plans: list[Plan], bought: bool = False, risk: str = "p80", tie: str | None = None
) -> None:
    frame = app_core.top_plans_frame(plans, risk)[list(TOP_ORDER)]
    frame["ac"] = frame["ac"].map(tr.option)
    for column in ("mfu", "mfu_model"):  # in percent points, for TOP_FORMATS' one-decimal percentage
        frame[column] = frame[column] * 100
    names = {c: tr(f"col_{c}", risk=risk) for c in frame.columns}
    if bought:  # every price-derived column says it is amortised (review s28b: the at-risk cost did not)
        names |= {c: tr(f"col_{c}_bought", risk=risk) for c in BOUGHT_COLUMNS}
    st.dataframe(
        frame.rename(columns=names),
        hide_index=True,
        placeholder=app_core.BLANK,
        key="top_plans",
        height=app_core.table_height(len(frame)),
        column_config={names[c]: st.column_config.NumberColumn(format=f) for c, f in TOP_FORMATS.items()},
    )
    st.caption(tr("top_help"))
    if tie:  # trial s33 (app): 'Cheapest' chose a plan its own table shows dearer, unsaid
        st.caption(tie)


def show_why_not(tr: Labels, inputs: Inputs) -> None:
    # A type the request cannot run on at all (fp8 on an A100) is no candidate: plan leaves it out.
    options = ["", *runnable_gpus(inputs.request, catalog(), inputs.request.gpus or catalog().gpus)]
    if st.session_state.get("why_not_gpu") not in options:
        st.session_state["why_not_gpu"] = ""
    gpu = st.selectbox(tr("why_not_gpu"), options, key="why_not_gpu", format_func=lambda g: g or tr("pick_gpu"))
    if gpu:
        with st.spinner(tr("working")):
            st.info(
                why_not_text(tr, cached_why_not(inputs.key, inputs.headroom, gpu, inputs.calibration), inputs.request)
            )


def show_downloads(tr: Labels, plan: Plan) -> None:
    st.download_button(
        tr("download_plan"), plan.to_json() + "\n", file_name="plan.json", mime="application/json", key="download_plan"
    )
    if not plan.emittable:  # emit's rule: another stack's plan is an estimate, not a job
        st.info(estimate_only_text(tr, plan))
        return
    left, right = st.columns(2)
    name = left.text_input(tr("emit_name"), key="emit_name", max_chars=64)
    from trainer.job import default_steps  # as app_core's emit: the trainer is imported when used

    budget = default_steps(plan)  # emit's own default: the plan's token budget
    given = number_box(  # empty: the plan's token budget, as the placeholder says
        right,
        tr,
        "emit_steps",
        min_value=1,
        empty_ok=True,
        step=10,
        key="emit_steps",
        placeholder=tr("emit_steps_budget", steps=budget),
    )
    if not JOB_NAME.fullmatch(name) or name in (".", ".."):  # the zip's folder and file name
        st.error(tr("emit_name_bad", name=plain(name)))
        return
    try:
        data = cached_job_zip(plan.to_json(), name, budget if given is None else int(given))
    except ValueError as exc:  # the trainer's refusal, in its words
        st.error(tr("emit_failed", error=plain(one_line(exc))))
        return
    st.download_button(tr("download_job"), data, file_name=f"{name}.zip", mime="application/zip", key="download_job")
    st.caption(tr("job_help"))


def show_single(tr: Labels, inputs: Inputs) -> None:
    started = time.perf_counter()
    with st.spinner(tr("working")):
        outcome = cached_plan(inputs.key, inputs.headroom, inputs.calibration)
    waited_s = time.perf_counter() - started
    if outcome.error:
        st.error(tr("bad_request", error=plain(outcome.error)))
        return
    result = outcome.result
    plans = [] if result is None else [result.plan, *result.alternatives]
    if outcome.infeasible:
        show_infeasible(tr, outcome.infeasible, inputs)
    else:
        assert result is not None  # a PlanOutcome with neither error nor infeasible has a result
        notes = request_texts(tr, inputs.request, result.plan, result.priced_plans)
        if inputs.left_out and inputs.request.price_kind is not None:  # trial s39 (app): said in the sidebar only
            kind = tr.kind(inputs.request.price_kind)
            notes = (*notes, tr("card_kind_left_out", kind=kind, gpus=tr.join(inputs.left_out)))
        # trial s39 (app): a cached answer kept its first solve's "23.7 s" as if every rerun took it
        cached = waited_s < KEPT_FRACTION * result.seconds
        plan_card(tr, result.plan, result, inputs.bought, inputs.calibration, notes, cached)
    panels = {
        "tab_breakdowns": lambda: show_breakdowns(tr, plans, inputs),
        "tab_explore": lambda: show_explore(
            tr, inputs, result.plan if result else None, outcome.infeasible.named if outcome.infeasible else None
        ),
        "tab_top": lambda: show_top_plans(
            tr, plans, inputs.bought, result.risk.value if result else "p80", tie_rule_text(tr, result)
        ),
        "tab_why_not": lambda: show_why_not(tr, inputs),
        "tab_downloads": lambda: show_downloads(tr, plans[0]),  # result.plan: the tab is dropped without plans
        "tab_explorer": lambda: show_explorer(tr, inputs, plans[0] if plans else None),
        "tab_run": lambda: show_run_view(tr, inputs),
        "tab_local": lambda: show_local(tr, inputs),
    }
    if not plans:  # infeasible: what is left to explore is why
        kept = ("tab_explore", "tab_why_not", "tab_explorer", "tab_run", "tab_local")
        panels = {name: panel for name, panel in panels.items() if name in kept}
    for tab, panel in zip(main_tabs(tr, list(panels)), panels.values(), strict=True):
        if tab.open:
            with tab, st.spinner(tr("working")):
                panel()


OPEN_TAB = "_open_tab"  # the open tab's name: not a widget key, so Streamlit keeps it while no tabs are drawn


def main_tabs(tr: Labels, names: list[str]) -> Sequence[TabContainer]:
    """The page's tabs, opened where the reader left them: Streamlit drops the tabs' value on a run
    that does not draw them (portfolio mode), so the open tab's name is kept beside it."""
    kept = st.session_state.get(OPEN_TAB)
    if "main_tab" not in st.session_state and kept in names:
        st.session_state["main_tab"] = tr(kept)
    tabs = st.tabs([tr(name) for name in names], key="main_tab", on_change="rerun")
    st.session_state[OPEN_TAB] = next((name for name, tab in zip(names, tabs, strict=True) if tab.open), kept)
    return tabs
