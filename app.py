"""trainplan's sizing app: ``trainplan app`` (or ``streamlit run app.py``), bound to localhost.

Thin by design: the sidebar's widgets (``ui.sidebar``) become a ``PlanRequest``;
``planner.api`` and ``planner.search.explore`` answer it; ``ui.charts`` turns the answers
into figures and tables; every label comes from ``ui.i18n`` (English / 中文). Answers
are cached on the request's JSON, so a rerun that does not change the request costs milliseconds.
"""

from __future__ import annotations

import os
import signal

import pandas as pd
import streamlit as st

from planner.api import PlanRequest
from planner.catalog.detect import NoGPUDriver, detect_gpus
from planner.catalog.hardware import Catalog, load_catalog
from planner.explain import explain_plan
from planner.fmt import one_line
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.plan import GoodputEstimate, Plan
from planner.search.explore import best_per_count, pareto_front, scored_search, why_not
from planner.units import GIB, HOURS_PER_DAY
from ui import charts
from ui.i18n import Labels
from ui.sidebar import TRANSLATED_CHOICES, Inputs, init_state, sidebar

__all__ = ("TRANSLATED_CHOICES", "main")  # the tests read which choices survive a language switch from here
CARD_CSS = "<style>[data-testid='stMetricValue'] { font-size: 1.6rem; }</style>"  # long layouts fit


# --------------------------------------------------------------------------- cached API calls


@st.cache_resource(show_spinner=False)
def catalog() -> Catalog:
    return load_catalog()


def settings_for(headroom: float) -> ModelingSettings:
    return DEFAULT_SETTINGS.but(memory_headroom=headroom)


@st.cache_data(max_entries=64, show_spinner=False)
def cached_plan(request_json: str, headroom: float) -> charts.PlanOutcome:
    return charts.solve(PlanRequest.model_validate_json(request_json), settings_for(headroom))


@st.cache_resource(max_entries=8, show_spinner=False)
def cached_search(request_json: str, headroom: float) -> pd.DataFrame:
    """Every valid candidate (read-only: shared between sessions)."""
    return scored_search(PlanRequest.model_validate_json(request_json), settings=settings_for(headroom)).frame


@st.cache_data(max_entries=64, show_spinner=False)
def cached_frontier(request_json: str, headroom: float, objective: str) -> pd.DataFrame:
    points = best_per_count(cached_search(request_json, headroom), "time" if objective == "time" else "cost")
    return points.assign(pareto=pareto_front(points))


@st.cache_data(max_entries=128, show_spinner=False)
def cached_why_not(request_json: str, headroom: float, gpu: str) -> str:
    return why_not(PlanRequest.model_validate_json(request_json), gpu, settings=settings_for(headroom))


@st.cache_data(max_entries=32, show_spinner=False)
def cached_job_zip(plan_json: str, name: str, steps: int) -> bytes:
    return charts.emit_job_zip(Plan.model_validate_json(plan_json), name, steps)


@st.cache_data(max_entries=16, show_spinner=False)
def cached_portfolio(
    jobs: tuple[tuple[str, str], ...],
    inventory: tuple[tuple[str, int], ...],
    objective: str,
    horizon_days: float | None,
    num_slots: int,
    headroom: float,
) -> charts.PortfolioOutcome:
    requests = {name: PlanRequest.model_validate_json(text) for name, text in jobs}
    return charts.solve_jobs(
        requests,
        dict(inventory),
        objective=objective,
        horizon_days=horizon_days,
        num_slots=num_slots,
        settings=settings_for(headroom),
    )


@st.cache_resource(ttl=60, show_spinner=False)
def cached_detect() -> list | str:
    """Local GPUs, or the one-line reason there are none."""
    try:
        found = detect_gpus(catalog())
    except NoGPUDriver as exc:
        return str(exc)
    return found or "NVML found no GPUs"


# --------------------------------------------------------------------------- single job


def show_infeasible(tr: Labels, infeasible: charts.Infeasible) -> None:
    st.warning(
        tr("infeasible", constraint=tr.option(infeasible.constraint), detail=infeasible.detail, fix=infeasible.fix)
    )


def duration(tr: Labels, hours: float) -> str:
    key, value = charts.duration_key(hours)
    return tr(key, value=value)


def goodput_row(tr: Labels, g: GoodputEstimate | None) -> tuple[tuple[int, str, str], ...]:
    """Goodput, job MTTF, expected interruptions and checkpoint interval ("-" where none)."""
    if g is None:
        return ()
    none = "-"
    return (
        (1, "card_goodput", f"{g.goodput_fraction:.1%}"),
        (1, "card_mttf", none if g.mttf_h is None else duration(tr, g.mttf_h)),
        (1, "card_interruptions", none if g.expected_interruptions is None else f"{g.expected_interruptions:,.1f}"),
        (
            1,
            "card_ckpt_interval",
            none if g.checkpoint_interval_min is None else tr("minutes_value", value=g.checkpoint_interval_min),
        ),
    )


def plan_card(tr: Labels, plan: Plan, result) -> None:
    e, t, mem = plan.estimate, plan.training, plan.estimate.memory
    # a plan from plan() always has training tokens, so a time and a cost to train
    assert e.time_to_train_h is not None and e.cost_usd is not None
    rows = (
        (
            (1, "card_gpus", f"{plan.num_gpus} × {plan.gpu}"),
            (1, "card_nodes", f"{plan.num_nodes} × {plan.gpus_per_node}"),
            (1, "card_time", duration(tr, e.time_to_train_h)),
            (1, "card_cost", charts.money(e.cost_usd)),
        ),
        (
            (1, "card_energy", f"{e.energy_kwh:,.0f} kWh"),
            (1, "card_mfu", f"{e.throughput.mfu:.1%}"),
            (1, "card_memory", f"{mem.reserved_gib:.1f} GiB"),
            (1, "card_ac", tr.option(t.activation_checkpointing.value)),
        ),
        (
            (3, "card_layout", plan.layout.describe()),
            (1, "card_batch", f"{t.micro_batch} × {t.grad_accum} × {t.seq_len}"),
        ),
        goodput_row(tr, e.goodput),
    )
    memory_of = tr("card_memory_of", fraction=mem.reserved_gib / mem.capacity_gib, capacity=mem.capacity_gib)
    with st.container(border=True):
        st.html(CARD_CSS)
        st.subheader(tr("plan_card", model=plan.model.name))
        for row in filter(None, rows):
            for column, (_, key, value) in zip(st.columns([width for width, _, _ in row]), row, strict=True):
                delta = memory_of if key == "card_memory" else None
                column.metric(tr(key), value, delta, delta_color="off", delta_arrow="off")
        st.caption(
            tr(
                "card_footer",
                step=e.time.step_s,
                tokens=e.throughput.tokens_per_s,
                candidates=result.num_candidates,
                feasible=result.solution.num_feasible,
                solver=result.solution.solver,
                seconds=result.seconds,
            )
        )
        with st.expander(tr("why_this_plan")):
            st.markdown("\n".join(f"- {note}" for note in explain_plan(plan)))


def show_breakdowns(tr: Labels, plans: list[Plan], headroom: float) -> None:
    context_gib = settings_for(headroom).cuda_context_bytes / GIB
    st.markdown(f"**{tr('chart_memory')}**")
    st.plotly_chart(charts.memory_figure(plans, context_gib, tr), key="chart_memory")
    st.markdown(f"**{tr('chart_step')}**")
    st.plotly_chart(charts.step_time_figure(plans, tr), key="chart_step")


def show_explore(tr: Labels, inputs: Inputs, chosen: Plan | None) -> None:
    points = cached_frontier(inputs.key, inputs.headroom, inputs.request.objective.value)
    if points.empty:
        st.info(tr("no_candidates"))
        return
    st.markdown(f"**{tr('chart_frontier')}**")
    st.plotly_chart(charts.frontier_figure(points, points["pareto"], chosen, tr), key="chart_frontier")
    gpus = sorted(points["gpu"].unique())
    if st.session_state.get("scaling_gpu") not in gpus:
        st.session_state["scaling_gpu"] = chosen.gpu if chosen is not None and chosen.gpu in gpus else gpus[0]
    gpu = st.selectbox(tr("scaling_gpu"), gpus, key="scaling_gpu")
    st.markdown(f"**{tr('chart_scaling')}**")
    st.plotly_chart(charts.scaling_figure(points, gpu, tr), key="chart_scaling")


def show_top_plans(tr: Labels, plans: list[Plan]) -> None:
    frame = charts.top_plans_frame(plans)
    formats = {
        "time_to_train_days": "%.2f",
        "cost_usd": "dollar",
        "energy_kwh": "%.0f",
        "mfu": "percent",
        "tokens_per_s": "%.0f",
        "memory_gib": "%.1f",
        "capacity_gib": "%.1f",
    }
    st.dataframe(
        frame.rename(columns=lambda c: tr(f"col_{c}")),
        hide_index=True,
        key="top_plans",
        column_config={tr(f"col_{c}"): st.column_config.NumberColumn(format=f) for c, f in formats.items()},
    )
    st.caption(tr("top_help"))


def show_why_not(tr: Labels, inputs: Inputs) -> None:
    options = ["", *(inputs.request.gpus or catalog().gpus)]
    if st.session_state.get("why_not_gpu") not in options:
        st.session_state["why_not_gpu"] = ""
    gpu = st.selectbox(tr("why_not_gpu"), options, key="why_not_gpu", format_func=lambda g: g or tr("pick_gpu"))
    if gpu:
        with st.spinner(tr("working")):
            st.info(cached_why_not(inputs.key, inputs.headroom, gpu))


def show_downloads(tr: Labels, plan: Plan) -> None:
    st.download_button(
        tr("download_plan"), plan.to_json() + "\n", file_name="plan.json", mime="application/json", key="download_plan"
    )
    left, right = st.columns(2)
    name = left.text_input(tr("emit_name"), key="emit_name", max_chars=64)
    steps = right.number_input(tr("emit_steps"), min_value=1, step=10, key="emit_steps")
    try:
        data = cached_job_zip(plan.to_json(), name, int(steps))
    except ValueError as exc:
        st.error(one_line(exc))
        return
    st.download_button(tr("download_job"), data, file_name=f"{name}.zip", mime="application/zip", key="download_job")
    st.caption(tr("job_help"))


def show_single(tr: Labels, inputs: Inputs) -> None:
    with st.spinner(tr("working")):
        outcome = cached_plan(inputs.key, inputs.headroom)
    if outcome.error:
        st.error(tr("bad_request", error=outcome.error))
        return
    result = outcome.result
    plans = [] if result is None else [result.plan, *result.alternatives]
    if outcome.infeasible:
        show_infeasible(tr, outcome.infeasible)
    else:
        assert result is not None  # a PlanOutcome with neither error nor infeasible has a result
        plan_card(tr, result.plan, result)
    panels = {
        "tab_breakdowns": lambda: show_breakdowns(tr, plans, inputs.headroom),
        "tab_explore": lambda: show_explore(tr, inputs, result.plan if result else None),
        "tab_top": lambda: show_top_plans(tr, plans),
        "tab_why_not": lambda: show_why_not(tr, inputs),
        "tab_downloads": lambda: show_downloads(tr, plans[0]),  # result.plan: the tab is dropped without plans
        "tab_local": lambda: show_local(tr, inputs),
    }
    if not plans:  # infeasible: what is left to explore is why
        panels = {name: panel for name, panel in panels.items() if name in ("tab_explore", "tab_why_not", "tab_local")}
    # Only the open tab runs: the frontier (every candidate) and why-not (two more solves) cost seconds.
    tabs = st.tabs([tr(name) for name in panels], key="main_tab", on_change="rerun")
    for tab, panel in zip(tabs, panels.values(), strict=True):
        if tab.open:
            with tab, st.spinner(tr("working")):
                panel()


# --------------------------------------------------------------------------- local GPUs


def show_local(tr: Labels, inputs: Inputs) -> None:
    found = cached_detect()
    if isinstance(found, str):
        st.caption(tr("no_local_gpus", reason=found))
        return
    st.dataframe(
        charts.local_gpus_frame(found).rename(columns=lambda c: tr(f"col_{c}")), hide_index=True, key="local_gpus"
    )
    matched = [g.spec.id for g in found if g.spec is not None]
    if not matched:
        st.caption(tr("local_unmatched"))
        return
    gpu = max(set(matched), key=matched.count)
    count = matched.count(gpu)
    steps = st.number_input(tr("run_steps"), min_value=1, step=10, key="run_steps")
    run = st.session_state.get("local_run")
    running = run is not None and run.process.poll() is None
    if st.button(tr("run_local", count=count, gpu=gpu), key="run_local", disabled=running):
        start_local_run(tr, inputs, gpu, count, int(steps))
    run = st.session_state.get("local_run")
    if run is not None:
        live = st.fragment(run_every=2.0)(show_run) if run.process.poll() is None else show_run
        live(tr)


def start_local_run(tr: Labels, inputs: Inputs, gpu: str, count: int, steps: int) -> None:
    """Plan for the local GPUs (no deadline or budget) and start training it."""
    local = inputs.request.model_copy(
        update={"gpus": {gpu: count}, "deadline_days": None, "budget_usd": None, "max_gpus": count, "top_k": 0}
    )
    outcome = cached_plan(local.model_dump_json(), inputs.headroom)
    if outcome.result is None:
        if outcome.error:
            st.warning(outcome.error)
        else:
            infeasible = outcome.infeasible
            assert infeasible is not None  # a PlanOutcome with neither result nor error is infeasible
            st.warning(
                tr(
                    "infeasible",
                    constraint=tr.option(infeasible.constraint),
                    detail=infeasible.detail,
                    fix=infeasible.fix,
                )
            )
        return
    st.session_state["local_run"] = charts.start_training(outcome.result.plan, steps)


def show_run(tr: Labels) -> None:
    run: charts.LocalRun = st.session_state["local_run"]
    code = run.process.poll()
    status = tr("run_running", pid=run.process.pid) if code is None else tr("run_finished", code=code)
    st.markdown(f"**{status}** `{run.job_dir}`")
    metrics = charts.read_metrics(run.job_dir / "metrics.jsonl")
    if len(metrics):
        last = metrics.iloc[-1]
        left, right = st.columns(2)
        left.metric(tr("loss"), f"{last['loss']:.4f}")
        right.metric(tr("tokens_per_s"), f"{last['tokens_per_s']:,.0f}")
    st.plotly_chart(charts.run_figure(metrics, tr), key="chart_run")
    st.code(charts.log_tail(run.job_dir / "run.log") or " ")
    if code is None and st.button(tr("stop_run"), key="stop_run"):
        os.killpg(run.process.pid, signal.SIGTERM)  # our own child's process group (start_new_session)


# --------------------------------------------------------------------------- portfolio


def show_portfolio(tr: Labels, inputs: Inputs) -> None:
    jobs: dict[str, str] = st.session_state["portfolio_jobs"]
    st.subheader(tr("portfolio"))
    st.caption(tr("portfolio_help"))
    left, mid, right = st.columns([2, 1, 1])
    name = left.text_input(tr("job_name"), key="job_name", max_chars=40)
    if mid.button(tr("add_job"), key="add_job"):
        if name.strip():
            jobs[name.strip()] = inputs.key
        else:
            st.error(tr("job_name_needed"))
    if right.button(tr("clear_jobs"), key="clear_jobs"):
        jobs.clear()
    if not jobs:
        st.info(tr("no_jobs"))
        return
    requests = {name: PlanRequest.model_validate_json(text) for name, text in jobs.items()}
    st.dataframe(
        charts.jobs_frame(requests).rename(columns=lambda c: tr(f"col_{c}")),
        hide_index=True,
        key="portfolio_jobs_table",
        column_config={tr("col_tokens_b"): st.column_config.NumberColumn(format="%.1f")},
    )
    inventory = {g: n for g, n in (inputs.request.gpus or {}).items() if n}
    if not inventory:
        st.warning(tr("portfolio_inventory"))
        return
    left, right = st.columns(2)
    horizon = left.number_input(tr("horizon_days"), min_value=0.0, step=5.0, key="horizon_days")
    slots = right.number_input(tr("num_slots"), min_value=1, max_value=48, step=1, key="num_slots")
    with st.spinner(tr("working")):
        outcome = cached_portfolio(
            tuple(jobs.items()),
            tuple(sorted(inventory.items())),
            inputs.request.objective.value,
            horizon or None,
            int(slots),
            inputs.headroom,
        )
    show_portfolio_outcome(tr, outcome)


def show_portfolio_outcome(tr: Labels, outcome: charts.PortfolioOutcome) -> None:
    if outcome.error:
        st.error(tr("bad_request", error=outcome.error))
        return
    if outcome.infeasible:
        show_infeasible(tr, outcome.infeasible)
        return
    # solve_jobs sets the frame, cost and makespan whenever it has neither error nor infeasible
    assert outcome.frame is not None and outcome.total_cost_usd is not None and outcome.makespan_days is not None
    left, right = st.columns(2)
    left.metric(tr("total_cost"), charts.money(outcome.total_cost_usd))
    right.metric(tr("makespan"), duration(tr, outcome.makespan_days * HOURS_PER_DAY))
    formats = {"start_days": "%.1f", "end_days": "%.1f", "cost_usd": "dollar"}
    st.dataframe(
        outcome.frame.rename(columns=lambda c: tr(f"col_{c}")),
        hide_index=True,
        key="portfolio_table",
        column_config={tr(f"col_{c}"): st.column_config.NumberColumn(format=f) for c, f in formats.items()},
    )
    st.plotly_chart(charts.portfolio_figure(outcome.frame, tr), key="chart_portfolio")


# --------------------------------------------------------------------------- page


def main() -> None:
    st.set_page_config(page_title="trainplan", layout="wide")
    cat = catalog()
    init_state(cat)
    tr, inputs = sidebar(cat)
    st.title(tr("title"))
    st.caption(tr("subtitle"))
    if inputs is None:
        st.info(tr("fix_inputs"))
        return
    if inputs.portfolio_mode:
        show_portfolio(tr, inputs)
    else:
        show_single(tr, inputs)


if __name__ == "__main__":
    main()
