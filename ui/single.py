"""The single-job page: the plan card (with its near tie), or why there is none, and the tabs.

Only the open tab runs: the frontier (every candidate) and why-not (two more solves) cost seconds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import streamlit as st
from streamlit.elements.lib.mutable_tab_container import TabContainer

from planner.api import PlanRequest, chosen_dearer, plan_commitment, trains_too_long
from planner.api.notices import (
    a2a_exposed_under_megatron,
    host_staged,
    selective_under_megatron,
    serial_host,
    tie_rule,
)
from planner.catalog.calibration import cpu_measured_gpus
from planner.catalog.hf_config import encoder_sections
from planner.catalog.prices import PriceBasis
from planner.errors import RuleViolation
from planner.fmt import energy, number_band, one_line
from planner.frontier import knee
from planner.model.attention_kernels import AttentionKernel
from planner.model.profiles import own_model_profile
from planner.model.rates import KERNEL_WORDS
from planner.plan import GoodputEstimate, Plan
from planner.request import left_out_gpus, runnable_gpus
from ui import app_core, figures
from ui.cached import (
    cached_calibration,
    cached_frontier,
    cached_job_zip,
    cached_plan,
    cached_why_not,
    catalog,
    cuda_context_gib,
)
from ui.calibration_upload import CalibrationUpload
from ui.explorer import show_explorer
from ui.i18n import Labels, plain
from ui.messages import (
    ceiling_text,
    commitment_text,
    dearer_text,
    detail_text,
    duration,
    envelope_text,
    estimate_only_text,
    figure_bands,
    idle_text,
    infeasible_text,
    interval,
    larger_batch_text,
    median_text,
    near_tie_text,
    over_budget_text,
    per_second,
    plan_note_texts,
    risk_text,
    short_duration,
    vary_batch_text,
    why_not_text,
)
from ui.render_lines import median_offset, nvlink_domains
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


def show_infeasible(tr: Labels, infeasible: app_core.Infeasible, inputs: Inputs) -> None:
    st.warning(infeasible_text(tr, infeasible, inputs.request))
    detail = detail_text(tr, infeasible)  # the planner's own words (English) or its exact figures
    if detail:
        st.caption(detail)


def goodput_row(tr: Labels, g: GoodputEstimate | None) -> tuple[tuple[int, str, str], ...]:
    """Goodput, job MTTF, expected interruptions and checkpoint interval ("-" where none)."""
    if g is None:
        return ()
    none = "-"
    return (
        (1, "card_goodput", f"{g.goodput_fraction:.1%}"),
        (1, "card_mttf", none if g.mttf_h is None else duration(tr, g.mttf_h)),
        (
            1,
            "card_interruptions",
            none if g.expected_interruptions is None else interruptions(g.expected_interruptions),
        ),
        (
            1,
            "card_ckpt_interval",
            none if g.checkpoint_interval_min is None else interval(tr, g.checkpoint_interval_min),
        ),
    )


def calibration_text(tr: Labels, plan: Plan, calibration: CalibrationUpload | None) -> str | None:
    """Where the plan's GPU rates were measured, when a calibration file is in use."""
    if calibration is None:
        return None
    used = cached_calibration(calibration)
    values = dict(used.machine, gpus=", ".join(used.gpus), name=used.name)
    line = tr("calibration_elsewhere", gpu=plan.gpu, **values) if plan.gpu not in used.gpus else None
    line = line or tr("calibration_line", **values)
    if cpu := cpu_measured_gpus(used.applied.record):  # the CLI's warning (ui/calibration.py)
        line += " " + tr("calibration_cpu", gpu=tr.join(cpu))
    return line


def interruptions(expected: float) -> str:
    """'2.3', and '< 0.1' rather than '0.0' for a short job that may still be interrupted."""
    return "< 0.1" if 0 < expected < 0.05 else f"{expected:,.1f}"


def card_rows(tr: Labels, plan: Plan, bought: bool) -> tuple:
    """The card's metric rows: (column width, label key, value) per metric."""
    e, t = plan.estimate, plan.training
    assert e.time_to_train_h is not None and e.cost_usd is not None  # plan() always has training tokens
    nodes = f"{plan.num_nodes} × {plan.gpus_per_node}"
    if (domains := nvlink_domains(plan)) is not None:  # review s30: 144 GB200 are two NVL72 racks
        nodes += " · " + tr("card_domain" if domains == 1 else "card_domains", count=domains)
    nodes += f" · {plan.network}" if plan.network else ""
    return (
        (
            (1, "card_gpus", f"{plan.num_gpus} × {plan.gpu}"),
            (1, "card_nodes", nodes),
            (1, "card_time", duration(tr, e.time_to_train_h)),
            (1, "card_cost_bought" if bought else "card_cost", app_core.money(e.cost_usd)),
        ),
        (  # tokens/s with its band, as time and cost have theirs (trial s33: only in the footer)
            (1, "card_tokens", per_second(e.throughput.tokens_per_s)),
            (1, "card_mfu", f"{e.throughput.mfu:.1%}"),
            (1, "card_energy", energy(e.energy_kwh)),
            (1, "card_memory", f"{e.memory.reserved_gib:.1f} GiB"),
        ),
        (
            (2, "card_layout", plan.layout_words),
            (1, "card_batch", f"{t.micro_batch} × {t.grad_accum} × {t.seq_len}"),
            (1, "card_ac", tr.option(t.activation_checkpointing.value)),
        ),
        goodput_row(tr, e.goodput),
    )


def card_deltas(tr: Labels, plan: Plan) -> dict[str, str | None]:
    """What each metric shows below it: the 80 % band of time, cost, energy and tokens/s, memory's share."""
    bands, mem = figure_bands(tr, plan.estimate), plan.estimate.memory
    return {
        "card_time": bands["time_to_train_h"],
        "card_cost": bands["cost_usd"],
        "card_cost_bought": bands["cost_usd"],
        "card_energy": bands["energy_kwh"],
        "card_tokens": bands["tokens_per_s"],
        "card_memory": tr("card_memory_of", fraction=mem.reserved_gib / mem.capacity_gib, capacity=mem.capacity_gib),
    }


def kernel_words(tr: Labels, plan: Plan) -> str:
    """The attention kernel the estimate timed: the CLI's words in English; in Chinese from the typed
    kernel (a plan file from before it: the CLI's words)."""
    e = plan.estimate
    sdpa = tr("kernel_sdpa") if e.sdpa_picks_cudnn else ""
    if tr.lang == "en" or e.attention_kernel_timed is None:
        return (e.attention_kernel or (plan.attention.value if plan.attention else "-")) + sdpa
    name = (
        tr("kernel_eager")
        if e.attention_kernel_timed == AttentionKernel.EAGER
        else KERNEL_WORDS[e.attention_kernel_timed]
    )
    return name + (tr("kernel_cp_fallback") if e.attention_cp_fallback else "") + sdpa


def price_text(tr: Labels, plan: Plan, bought: bool) -> str | None:
    """'Cost at $5.07/GPU-h: an estimate, not a median of listed on-demand offers.' (trial s26: no cost said its
    price or that some prices are estimates); None for an owned GPU's cost or an unpriced plan."""
    if bought or plan.price_per_gpu_hour_usd is None or plan.price_basis is None:
        return None
    text = tr("card_price", price=plan.price_per_gpu_hour_usd, basis=tr(PRICE_BASIS_KEYS[plan.price_basis]))
    if plan.billed_gpus == plan.num_gpus:
        return text
    return text + tr("card_billed", billed=plan.billed_gpus, unit=plan.rent_unit_gpus)


# Each price basis's words (ui/i18n.py), one key per basis.
PRICE_BASIS_KEYS = {
    PriceBasis.CATALOG: "price_basis_catalog",
    PriceBasis.ESTIMATE: "price_basis_estimate",
    PriceBasis.FILE: "price_basis_file",
    PriceBasis.USER: "price_basis_user",
    PriceBasis.ON_DEMAND: "price_basis_on_demand",
    PriceBasis.SPOT: "price_basis_spot",
    PriceBasis.RESERVED_1Y: "price_basis_reserved_1y",
    PriceBasis.RESERVED_3Y: "price_basis_reserved_3y",
}


def spot_wait_text(tr: Labels, g: GoodputEstimate | None) -> str | None:
    """'1.1 spot preemptions expected, each waiting 80 min for capacity (in the time and cost).'"""
    if g is None or g.spot_preemptions is None:
        return None
    return tr("spot_wait", count=g.spot_preemptions, wait=short_duration(tr, g.capacity_wait_s))


def card_captions(
    tr: Labels, plan: Plan, result, calibration: CalibrationUpload | None, bought: bool = False
) -> list[str]:
    """The lines under the metrics: envelope, price, ceiling, risk, the search, estimate-only,
    calibration."""
    e, u = plan.estimate, plan.estimate.uncertainty
    lines = [] if u is None else [envelope_text(tr, u)]
    if u is not None and u.point_outside is not None:
        lines.append(tr(f"point_outside_{u.point_outside}"))
    if u is not None and u.time_to_train_h_at_risk is not None and u.cost_usd_at_risk is not None:
        risk = result.risk.value  # what the search judged this plan by (trial s25: p50/p80/p90 looked alike)
        time, cost = duration(tr, u.time_to_train_h_at_risk[risk]), app_core.money(u.cost_usd_at_risk[risk])
        lines.append(tr("card_at_risk", risk=risk, time=time, cost=cost))
    # trial s28d: the CLI said the median, the card did not; trial s33: judged at p50, it repeated that line
    if (median := median_offset(e)) is not None and result.risk.value != "p50":
        lines.append(median_text(tr, median))
    lines += [*filter(None, (price_text(tr, plan, bought), spot_wait_text(tr, e.goodput)))]
    lines += [
        *filter(None, (ceiling_text(tr, e), risk_text(tr, result))),
        tr(
            "card_footer",
            # the CLI's formatter and precision (ui/render_lines.py step_line)
            step=number_band(e.time.step_s, None if u is None else u.step_s, 3),
            kernel=kernel_words(tr, plan),
            candidates=result.num_candidates,
            feasible=result.solution.num_feasible,
            solver=result.solution.solver,
            seconds=result.seconds,
        ),
    ]
    if not plan.emittable:
        lines.append(estimate_only_text(tr, plan))
    return lines + list(filter(None, (calibration_text(tr, plan, calibration),)))


def plan_card(
    tr: Labels,
    plan: Plan,
    result,
    bought: bool = False,
    calibration: CalibrationUpload | None = None,
    notes: tuple[str, ...] = (),
) -> None:
    """The chosen plan's figures with their bands, the planner's warnings in the page's language
    (``notes``: the request's, ``request_texts``), and the near tie, idle and batch call-outs."""
    deltas = card_deltas(tr, plan)
    with st.container(border=True):
        st.subheader(tr("plan_card", model=plain(plan.model.name)))
        if trains_too_long(plan):  # the planner's warning (planner.api.long_job_warnings), in the page's language
            st.warning(tr("long_job", time=duration(tr, plan.estimate.time_to_train_h or 0.0)))
        for note in notes:
            st.warning(note)
        for row in filter(None, card_rows(tr, plan, bought)):
            for column, (_, key, value) in zip(st.columns([width for width, _, _ in row]), row, strict=True):
                column.metric(tr(key), value, deltas.get(key), delta_color="off", delta_arrow="off")
        for line in card_captions(tr, plan, result, calibration, bought):
            st.caption(line)
        callouts = (
            (near_tie_text(tr, result), "⚖️"),
            (over_budget_text(tr, result), ":material/trending_up:"),  # a much faster plan a little over the budget
            (idle_text(tr, result), "💤"),  # the inventory left idle by the exact batch (issue 28)
            (vary_batch_text(tr, result), "📏"),  # what the exact-batch rule costs against --vary-batch
            # a batch of one sequence per GPU, where tp/pp/cp split each (trial s28d: 📦 drew as an empty
            # box; review s28b: 📏 is the vary-batch callout's): Streamlit's bundled icon font
            (larger_batch_text(tr, result), ":material/stacks:"),
        )
        for text, icon in callouts:
            if text:
                st.info(text, icon=icon)
        with st.expander(tr("why_this_plan")):
            st.markdown("\n".join(f"- {note}" for note in plan_note_texts(tr, plan)))


def show_breakdowns(tr: Labels, plans: list[Plan], inputs: Inputs) -> None:
    context_gib = cuda_context_gib(inputs.headroom, inputs.request.stack)
    st.markdown(f"**{tr('chart_memory')}**")
    st.plotly_chart(figures.memory_figure(plans, context_gib, tr), key="chart_memory")
    st.markdown(f"**{tr('chart_step')}**")
    st.plotly_chart(figures.step_time_figure(plans, tr), key="chart_step")


def show_explore(tr: Labels, inputs: Inputs, chosen: Plan | None) -> None:
    points = cached_frontier(inputs.key, inputs.headroom, inputs.request.objective.value, inputs.calibration)
    if points.empty:
        st.info(tr("no_candidates"))
        return
    st.markdown(f"**{tr('chart_frontier')}**")
    request = inputs.request
    limits = figures.Limits(
        deadline_days=request.deadline_days,
        budget_usd=request.budget_usd,
        inventory={g: n for g, n in (request.gpus or {}).items() if n is not None},
    )
    usable = points[limits.feasible(points)]
    # the knee as the search reads it (planner/frontier.py): at the request's risk quantile
    at = knee(usable["cost_at_risk_usd"].to_numpy(), usable["time_at_risk_days"].to_numpy()) if len(usable) else None
    bend = None if at is None else usable.iloc[at]
    fig = figures.frontier_figure(points, points["pareto"], chosen, tr, limits, bend)
    st.plotly_chart(fig, key="chart_frontier")
    gpus = sorted(points["gpu"].unique())
    if st.session_state.get("scaling_gpu") not in gpus:
        st.session_state["scaling_gpu"] = chosen.gpu if chosen is not None and chosen.gpu in gpus else gpus[0]
    gpu = st.selectbox(tr("scaling_gpu"), gpus, key="scaling_gpu")
    st.markdown(f"**{tr('chart_scaling')}**")
    st.plotly_chart(figures.scaling_figure(points, gpu, tr), key="chart_scaling")


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
    "tokens_per_s": "%,.0f",
    "tokens_p10_per_s": "%,.0f",
    "tokens_p90_per_s": "%,.0f",
    "memory_gib": "%.1f",
    "capacity_gib": "%.1f",
}
TOP_ORDER = (  # memory next to the headline figures, so it is visible without scrolling
    # the figures the search ranked by (its risk quantile) beside the model's (trial s28d: row 2 looked cheaper)
    "rank", "gpu", "num_gpus", "time_to_train_days", "cost_usd", "memory_gib", "capacity_gib",
    "time_at_risk_days", "cost_at_risk_usd", "time_p10_days", "time_p90_days", "cost_p10_usd", "cost_p90_usd",
    "price_usd_per_gpu_hour", "price_estimated", "mfu", "tokens_per_s", "tokens_p10_per_s", "tokens_p90_per_s",
    "layout", "num_nodes", "micro_batch", "grad_accum", "ac", "energy_kwh",
)  # fmt: skip


BOUGHT_COLUMNS = ("cost_usd", "cost_at_risk_usd", "cost_p10_usd", "cost_p90_usd", "price_usd_per_gpu_hour")


def tie_rule_text(tr: Labels, result) -> str | None:
    """The CLI's tie-rule line in the page's language (planner/api/notices.py tie_rule)."""
    rule = None if result is None else tie_rule(result)
    if rule is None:
        return None
    best = app_core.money(rule.best) if rule.objective == "cost" else duration(tr, rule.best)
    key = "tie_rule_cost" if rule.objective == "cost" else "tie_rule_time"
    # the app's table ranks the chosen plan 1, the CLI's marks it apart (trial s34: "#1" named the chosen row)
    return tr(key, fraction=rule.fraction, risk=rule.risk, best=best, rank=rule.rank + 1)


def show_top_plans(
    tr: Labels, plans: list[Plan], bought: bool = False, risk: str = "p80", tie: str | None = None
) -> None:
    frame = app_core.top_plans_frame(plans, risk)[list(TOP_ORDER)]
    frame["ac"] = frame["ac"].map(tr.option)
    frame["mfu"] = frame["mfu"] * 100  # in percent points, for TOP_FORMATS' one-decimal percentage
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
    given = right.number_input(
        tr("emit_steps"), min_value=1, step=10, key="emit_steps", placeholder=tr("emit_steps_budget", steps=budget)
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


def request_texts(tr: Labels, request: PlanRequest, plan: Plan) -> tuple[str, ...]:
    """The planner's warnings of the request in the page's language: a MoE family on Hugging
    Face's modules (PlanRequest.hf_experts_missing), a price kind above on-demand for the chosen
    GPU, a reserved term longer than the job (planner.api.price_warnings), the chosen GPU types the
    attention kernel or precision leaves out."""
    missing = request.hf_experts_missing
    dearer, term = chosen_dearer(request, catalog(), plan), plan_commitment(request.price_kind, plan)
    gpu, encoders = catalog().gpu(plan.gpu), encoder_sections(request.hf_config_path)
    return (
        *left_out_texts(tr, request),
        *(() if missing is None else (tr("hf_experts", model=plain(plan.model.name), missing=plain(missing)),)),
        *(() if dearer is None else (dearer_text(tr, dearer),)),
        *(() if term is None else (commitment_text(tr, term),)),
        # trial s28b: the CLI's warnings of this session, in the page's language
        *((tr("encoders_not_planned", sections=tr.join(list(encoders))),) if encoders else ()),
        *((tr("selective_under_megatron"),) if selective_under_megatron(plan) else ()),
        *((tr("a2a_exposed"),) if a2a_exposed_under_megatron(plan) else ()),
        *((serial_host_text(tr, plan),) if serial_host(plan) else ()),
        *(
            (tr("own_model_profile", model=plain(plan.model.name)),)
            if own_model_profile(plan.model, plan.stack)
            else ()
        ),
        *(
            (tr("host_staged", gpu=gpu.id, gbps=gpu.scaleup_bandwidth_bytes_per_s / 1e9),)
            if host_staged(plan, gpu)
            else ()
        ),
    )


def serial_host_text(tr: Labels, plan: Plan) -> str:
    """The card's words of ``serial_host`` (the CLI's: ``serial_host_warnings``)."""
    t = plan.estimate.time
    return tr("serial_host", host_s=t.breakdown_s.host_stall, step_s=t.step_s)


def left_out_texts(tr: Labels, request: PlanRequest) -> list[str]:
    """The GPU types the request's kernel or precision leaves out: one line per cause, not one box
    per GPU (trial s25: flash3 filled the card with 18 boxes)."""
    left_out = left_out_gpus(request, catalog())
    by_precision = [g for g, problem in left_out.items() if isinstance(problem, RuleViolation)]
    by_kernel = [g for g in left_out if g not in by_precision]
    texts = []
    if by_kernel:
        kernel = request.attention.value if request.attention is not None else ""
        texts.append(tr("gpus_left_out_kernel", kernel=kernel, gpus=tr.join(by_kernel)))
    if by_precision:
        texts.append(tr("gpus_left_out_precision", precision=request.precision.value, gpus=tr.join(by_precision)))
    return texts


def show_single(tr: Labels, inputs: Inputs) -> None:
    with st.spinner(tr("working")):
        outcome = cached_plan(inputs.key, inputs.headroom, inputs.calibration)
    if outcome.error:
        st.error(tr("bad_request", error=plain(outcome.error)))
        return
    result = outcome.result
    plans = [] if result is None else [result.plan, *result.alternatives]
    if outcome.infeasible:
        show_infeasible(tr, outcome.infeasible, inputs)
    else:
        assert result is not None  # a PlanOutcome with neither error nor infeasible has a result
        notes = request_texts(tr, inputs.request, result.plan)
        plan_card(tr, result.plan, result, inputs.bought, inputs.calibration, notes)
    panels = {
        "tab_breakdowns": lambda: show_breakdowns(tr, plans, inputs),
        "tab_explore": lambda: show_explore(tr, inputs, result.plan if result else None),
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
