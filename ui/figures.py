"""The app's Plotly figures: pure functions of plans and frames (testable without Streamlit).

One style per GPU type and the mark of a point that may not fit (``ui/figure_style.py``), units in
every axis title and hover, decade ticks on log axes and axes clipped to the useful range
(``ui/figure_axes.py``) so a 1,000,000-day point does not squeeze the plans worth reading.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.accuracy import Risk
from planner.api.chart_points import Limits, judged_points, unsure_points
from planner.estimate_parts import MemoryTerms, TimeTerms
from planner.layout import ActivationCheckpointing
from planner.plan import Plan
from planner.units import HOURS_PER_DAY
from ui.app_core import money
from ui.figure_axes import (
    band_whiskers,
    days_label,
    decade_ticks,
    linear_ticks,
    log_axis,
    memory_band_ends,
    money_label,
    tick_money,
    useful_range,
)
from ui.figure_style import fit_hover, fit_legend, fit_marker, fit_words, gpu_style, plan_unsure
from ui.i18n import Labels
from ui.messages import ac_text, duration

INFEASIBLE_GREY = "rgba(150, 150, 150, 0.45)"
HOVER = dict(namelength=-1)  # full term and trace names in hover boxes


# --------------------------------------------------------------------------- plan bars


# A bar label's line holds at most this many characters (~130 px in Plotly's 12 px font: the 17 of
# "zero1 dp_shard=32" drew 100 px wide in Chromium, tests/ui/test_app_bars_browser.py), so a long
# layout ("hsdp dp_replicate=4 dp_shard=8 tp=8 pp=4 ...") wraps instead of outgrowing the margin
# Plotly may take from an 800 px window's chart, which cut it ("32x b..." in issue 30).
LABEL_LINE_CHARS = 22
LABEL_LINE_PX = 16  # a label line's height (12 px font, Plotly's line spacing)


def wrap_words(text: str, width: int = LABEL_LINE_CHARS) -> str:
    """``text`` in lines of at most ``width`` characters joined by Plotly's <br>, broken at spaces
    (a longer word keeps its own line)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def plan_names(plans: Sequence[Plan]) -> list[str]:
    """Unique bar labels that say which plan is which: '#1 8x h100-sxm' over its layout, wrapped; where
    two plans share both, their micro-batch, accumulation and recompute too (trial s44 app M2: #1 and
    #5 both read "32x b200 zero1 dp_shard=32")."""
    shown = [(p.num_gpus, p.gpu, p.layout_words) for p in plans]
    names = []
    for i, (p, key) in enumerate(zip(plans, shown, strict=True), start=1):
        name = wrap_words(f"#{i} {p.num_gpus}x {p.gpu}") + "<br>" + wrap_words(p.layout_words)
        if shown.count(key) > 1:
            t = p.training
            name += "<br>" + wrap_words(f"mb {t.micro_batch} x {t.grad_accum}, ac {t.describe_ac(p.layout.pp)}")
        names.append(name)
    return names


# One colour per breakdown term, and no colour shared between the memory and the step-time charts
# (issue 30: "the same colour means different terms"); a term the API adds later takes Plotly's.
MEMORY_COLOURS = {
    "params": "#1f4e79", "grads": "#2E91E5", "optimizer": "#6baed6", "unsharded_params": "#0D2A63",
    "activations": "#1CA71C", "logits_loss": "#90AD1C", "misc": "#778AAE", "measured_correction": "#A777F1",
    "allocator_reserve": "#bdbdbd", "cuda_context": "#636363",
}  # fmt: skip
TIME_COLOURS = {
    "matmul": "#EB663B", "attention": "#FB0D0D", "memory_bound": "#B68100", "optimizer": "#862A16",
    "shard_copies": "#B2828D", "offload_accum": "#6A76FC", "host_stall": "#FEAF16", "dp_comm": "#DA16FF", "tp_comm": "#E15F99", "pp_comm": "#AF0038", "cp_comm": "#F8A19F",
    "ep_comm": "#750D86", "bubble": "#FBE426", "measured_correction": "#00A08B", "efficiency_ceiling": "#6C7C32",
}  # fmt: skip
BAR_PX, BAR_AXES_PX = 56, 120  # height per plan, and for the axes: long labels never overlap
BAR_LEGEND_PX = 340  # at least this tall: the legend (up to ten terms and two marks) beside the bars


def _term_name(tr: Labels, prefix: str, term: str) -> str:
    """A breakdown term's label; terms the API adds later show under their own name."""
    return tr.get(f"{prefix}_{term}", term.replace("_", " "))


def _bar(fig: go.Figure, name: str, y: list[str], x: list[float], labels: list[str], unit: str, colour) -> None:
    """One term as horizontal bars, one per plan (plans read top to bottom, labels horizontal)."""
    fig.add_bar(
        name=name,
        y=y,
        x=x,
        orientation="h",
        marker_color=colour,
        customdata=labels,
        hovertemplate=f"{name}: %{{x:,.2f}} {unit}<br>%{{customdata}}<extra></extra>",
    )


def _bar_layout(fig: go.Figure, names: list[str], x_title: str, tr: Labels) -> None:
    """Stacked bars, #1 on top, each plan as tall as its label's lines and the legend beside them."""
    lines = max(name.count("<br>") + 1 for name in names)
    per_plan_px = max(BAR_PX, LABEL_LINE_PX * lines + 8)  # 8 px between one plan's label and the next
    fig.update_layout(
        barmode="stack",
        height=max(BAR_LEGEND_PX, BAR_AXES_PX + per_plan_px * len(names)),
        xaxis=dict(title_text=x_title, automargin=True),
        yaxis=dict(autorange="reversed", automargin=True),  # #1 on top
        legend=dict(title_text=tr("term"), traceorder="normal"),  # the order the terms stack in
        margin=dict(t=30, b=40),
        hoverlabel=HOVER,
    )


def _limit_marks(fig: go.Figure, names: list[str], values: list[float], name: str, colour: str) -> None:
    """A vertical mark across each plan's own bar only (shapes in category units: bar i spans
    i +- 0.4), and a legend entry that hovers with the value."""
    for i, value in enumerate(values):
        fig.add_shape(type="line", x0=value, x1=value, y0=i - 0.45, y1=i + 0.45, line=dict(color=colour, width=3))
    fig.add_scatter(
        name=name,
        y=names,
        x=values,
        mode="markers",
        marker=dict(color=colour, symbol="line-ns", size=10, line=dict(width=3, color=colour)),
        hovertemplate=f"{name}: %{{x:,.1f}} GiB<extra></extra>",
    )


def memory_figure(plans: Sequence[Plan], context_gib: float, tr: Labels, risk: Risk | None = None) -> go.Figure:
    """Per-GPU memory of each plan as stacked terms, with capacity and the usable limit marked; the
    hover of a plan that may not fit at ``risk`` says so."""
    words = fit_words(tr, risk)
    names = plan_names(plans)
    labels = [plan_words(tr, p) + peak_words(tr, p) + (words if plan_unsure(p, risk) else "") for p in plans]
    fig = go.Figure()
    columns = [dict(p.estimate.memory.breakdown_gib) for p in plans]
    reserve = [max(0.0, p.estimate.memory.reserved_gib - p.estimate.memory.peak_gib) for p in plans]
    terms = [(_term_name(tr, "mem", t), t, [column[t] for column in columns]) for t in MemoryTerms.model_fields]
    terms += [(tr("mem_allocator_reserve"), "allocator_reserve", reserve)]
    terms += [(tr("mem_cuda_context"), "cuda_context", [context_gib] * len(plans))]
    for name, term, values in terms:
        if any(v > 0 for v in values):  # no legend entry for a term no plan has
            _bar(fig, name, names, values, labels, "GiB", MEMORY_COLOURS.get(term))
    capacity = [p.estimate.memory.capacity_gib for p in plans]
    usable = [p.estimate.memory.usable_gib for p in plans]
    _limit_marks(fig, names, capacity, tr("capacity"), "crimson")
    _limit_marks(fig, names, usable, tr("usable_limit"), "orange")
    _bar_layout(fig, names, tr("axis_gib_per_gpu"), tr)
    ends, bands = memory_band_ends(plans, context_gib)
    band_whiskers(fig, names, ends, bands, tr("chart_band"), "GiB", marks=capacity)
    return fig


def step_time_figure(plans: Sequence[Plan], tr: Labels) -> go.Figure:
    """Seconds per optimizer step of each plan, split into compute, memory, communication, bubble."""
    names, labels = plan_names(plans), [plan_words(tr, p) for p in plans]
    columns = [dict(p.estimate.time.breakdown_s) for p in plans]
    fig = go.Figure()
    for term in TimeTerms.model_fields:
        values = [column[term] for column in columns]
        if any(v > 0 for v in values):
            _bar(fig, _term_name(tr, "time", term), names, values, labels, "s", TIME_COLOURS.get(term))
    _bar_layout(fig, names, tr("axis_step_s"), tr)
    bands = [None if p.estimate.uncertainty is None else p.estimate.uncertainty.step_s for p in plans]
    band_whiskers(fig, names, [p.estimate.time.step_s for p in plans], bands, tr("chart_band"), "s")
    return fig


# --------------------------------------------------------------------------- frontier and scaling


def training_words(tr: Labels, micro_batch: int, grad_accum: int, ac_words: str) -> str:
    """'micro-batch 2 × 21 · checkpointing none' in the page's language (the planner's label says
    'mb 2 x 21 | ac none' in English; issue 30); ``ac_words``: the recompute in words (``ac_text``)."""
    return tr("hover_training", micro=micro_batch, accum=grad_accum, ac=ac_words)


def mode_words(tr: Labels, mode: str) -> str:
    """A recompute mode in words where no block count is known (a chart point's frame holds none;
    app trial s45 M4: the option's "first N per stage" reached the hovers)."""
    return tr("ac_blocks_unsized") if mode == ActivationCheckpointing.BLOCKS.value else tr.option(mode)


def plan_words(tr: Labels, p: Plan) -> str:
    """A plan in a bar's hover: its GPUs, layout and training, in the page's language."""
    t = p.training
    return f"{p.num_gpus}x {p.gpu}: {p.layout_words} · " + training_words(
        tr, t.micro_batch, t.grad_accum, ac_text(tr, t, p.layout.pp)
    )


def peak_words(tr: Labels, p: Plan) -> str:
    """'<br>peak: at the end of the backward ...': when the plan's memory bars are taken (trial s41)."""
    moment = p.estimate.memory.peak_moment
    return "" if moment is None else "<br>" + tr(f"peak_{moment.value}")


def _hover(frame: pd.DataFrame, tr: Labels) -> list[str]:
    """A point's GPUs, layout, training, cost and time; the time written as the card writes it."""
    columns = ("gpu", "num_gpus", "layout", "micro_batch", "grad_accum", "ac", "cost_usd", "time_to_train_days")
    return [
        f"{n}x {g}<br>{layout.split(' | ')[0]}<br>{training_words(tr, mb, ga, mode_words(tr, ac))}<br>"  # its layout
        + figures_words(tr, cost, days * HOURS_PER_DAY)
        for g, n, layout, mb, ga, ac, cost, days in zip(*(frame[c] for c in columns), strict=True)
    ]


def figures_words(tr: Labels, cost_usd: float, hours: float) -> str:
    """'$14,882 · 2.8 days': a point's cost and time in its hover, both as the card writes them
    (trial s35: a $1.68M plan hovered as "$2M")."""
    return f"{money(cost_usd)} · {duration(tr, hours)}"


def _frontier_points(fig: go.Figure, points: pd.DataFrame, ok: pd.Series, tr: Labels, risk: Risk | None) -> None:
    unsure = unsure_points(points, risk)
    for gpu, group in points.groupby("gpu", sort=True):
        style = gpu_style(str(gpu))
        colours = [style.color if good else INFEASIBLE_GREY for good in ok[group.index]]
        marks = unsure[group.index]
        fig.add_scatter(
            name=str(gpu),
            legendgroup=str(gpu),
            x=group["time_to_train_days"],
            y=group["cost_usd"],
            mode="markers",
            text=fit_hover(_hover(group, tr), marks, tr, risk),
            hovertemplate="%{text}<extra></extra>",
            marker=fit_marker(
                dict(size=8, symbol=style.symbol, color=colours, line=dict(width=0.5, color=style.color)), marks
            ),
        )
    fit_legend(fig, unsure, tr, risk)


def plan_band(p: Plan) -> pd.DataFrame:
    """A plan's time to train and cost with their 80 % bands, in the frontier frame's columns (no
    band columns where the plan has none)."""
    e = p.estimate
    hours, u = e.time_to_train_h, e.uncertainty
    columns = {
        "time_to_train_days": [math.nan if hours is None else hours / HOURS_PER_DAY],
        "cost_usd": [math.nan if e.cost_usd is None else e.cost_usd],
    }
    if u is not None and u.time_to_train_h is not None:
        columns |= {"time_lo_days": [u.time_to_train_h[0] / HOURS_PER_DAY]}
        columns |= {"time_hi_days": [u.time_to_train_h[1] / HOURS_PER_DAY]}
    if u is not None and u.cost_usd is not None:  # trial s33: the star had the time bar only
        columns |= {"cost_lo_usd": [u.cost_usd[0]], "cost_hi_usd": [u.cost_usd[1]]}
    return pd.DataFrame(columns)


def _band(frame: pd.DataFrame, value: str, lo: str, hi: str, colour: str) -> dict:
    """Plotly error bars for a column's 80 % band (planner/accuracy), thin and translucent so
    the points stay readable; none where the frame has no band."""
    if lo not in frame:
        return dict(visible=False)
    return dict(
        type="data",
        symmetric=False,
        array=(frame[hi] - frame[value]).clip(lower=0),
        arrayminus=(frame[value] - frame[lo]).clip(lower=0),
        thickness=0.8,
        width=0,
        color=colour,
    )


def _limit_lines(fig: go.Figure, limits: Limits, tr: Labels) -> None:
    if limits.deadline_days:
        fig.add_vline(limits.deadline_days, line=dict(color="crimson", dash="dash"))
        # the card's duration words: "deadline 0.1 days" labelled a 1.2 h deadline (trial s33 app)
        name = tr("deadline_line", deadline=duration(tr, limits.deadline_days * HOURS_PER_DAY))
        fig.add_scatter(x=[None], y=[None], mode="lines", name=name,
                        line=dict(color="crimson", dash="dash"), legendrank=3)  # fmt: skip
    if limits.budget_usd:
        fig.add_hline(limits.budget_usd, line=dict(color="darkorange", dash="dash"))
        fig.add_scatter(x=[None], y=[None], mode="lines", name=tr("budget_line", usd=money(limits.budget_usd)),
                        line=dict(color="darkorange", dash="dash"), legendrank=4)  # fmt: skip


def _knee_mark(fig: go.Figure, knee: pd.Series | None, tr: Labels, risk: Risk | None) -> None:
    if knee is None:
        return
    at = knee.to_frame().T  # the point as a one-row frame, as _hover and unsure_points read points
    fig.add_scatter(
        name=tr("knee"),
        x=[knee["time_to_train_days"]],
        y=[knee["cost_usd"]],
        mode="markers",
        marker=dict(size=16, symbol="diamond-open", color="black", line=dict(width=2)),
        text=fit_hover(_hover(at, tr), unsure_points(at, risk), tr, risk),
        hovertemplate=f"{tr('knee')}<br>%{{text}}<extra></extra>",
        legendrank=2,
    )


def _chosen_mark(fig: go.Figure, chosen: Plan | None, tr: Labels, risk: Risk | None) -> None:
    """The chosen plan's star with its 80 % band."""
    if chosen is None or chosen.estimate.cost_usd is None or chosen.estimate.time_to_train_h is None:
        return
    band = plan_band(chosen)
    fig.add_scatter(
        name=tr("chosen_plan"),
        x=[chosen.estimate.time_to_train_h / HOURS_PER_DAY],
        y=[chosen.estimate.cost_usd],
        mode="markers",
        error_x=_band(band, "time_to_train_days", "time_lo_days", "time_hi_days", "goldenrod"),
        error_y=_band(band, "cost_usd", "cost_lo_usd", "cost_hi_usd", "goldenrod"),
        marker=dict(size=18, symbol="star", color="gold", line=dict(width=1)),
        # trial s34: the star's hover had no figures where the knee's had them
        text=[
            f"{chosen.num_gpus}x {chosen.gpu}<br>{chosen.layout_words}<br>"
            + figures_words(tr, chosen.estimate.cost_usd, chosen.estimate.time_to_train_h)
            + (fit_words(tr, risk) if plan_unsure(chosen, risk) else "")
        ],
        hovertemplate="%{text}<extra></extra>",
        legendrank=0,
    )


def frontier_figure(
    points: pd.DataFrame,
    front: pd.Series,
    chosen: Plan | None,
    tr: Labels,
    limits: Limits | None = None,
    knee: pd.Series | None = None,
) -> go.Figure:
    """Cost against time-to-train of the best layout per (GPU type, count); the Pareto front joined
    with its 80 % bands as error bars, points outside the deadline/budget/inventory grey, points that
    may not fit at the request's risk hollow with a dot, the knee and the chosen plan (with its band)
    marked (``limits`` None: none)."""
    limits = limits or Limits()
    fig = go.Figure()
    ok = limits.feasible(points)
    _frontier_points(fig, points, ok, tr, limits.risk)
    best = points[front].sort_values("time_to_train_days")
    # the front's points carry their 80 % band (on every point the cloud would be unreadable)
    fig.add_scatter(
        name=tr("pareto_front"),
        x=best["time_to_train_days"],
        y=best["cost_usd"],
        mode="lines",
        hoverinfo="skip",
        line=dict(color="black", dash="dot"),
        error_x=_band(best, "time_to_train_days", "time_lo_days", "time_hi_days", "rgba(0,0,0,0.45)"),
        error_y=_band(best, "cost_usd", "cost_lo_usd", "cost_hi_usd", "rgba(0,0,0,0.45)"),
        legendrank=1,
    )
    _knee_mark(fig, knee, tr, limits.risk)
    _chosen_mark(fig, chosen, tr, limits.risk)
    _limit_lines(fig, limits, tr)
    x_range = useful_range(points["time_to_train_days"], best["time_to_train_days"], limits.deadline_days)
    y_range = useful_range(points["cost_usd"], best["cost_usd"], limits.budget_usd)
    log_axis(fig, "x", *x_range, days_label, title_text=tr("axis_days"))
    log_axis(fig, "y", *y_range, money_label, title_text=tr("axis_cost"))
    # a horizontal legend below the plot wraps instead of scrolling: every entry stays visible
    fig.update_layout(
        legend=dict(orientation="h", yanchor="top", y=-0.18, title_text=tr("gpu_type")),
        margin=dict(t=30, b=10),
        height=620,
        hoverlabel=HOVER,
    )
    return fig


TIME_AXIS_COLOUR = "#444444"  # the time line and its axis: never the GPU's colour, which the cost line has
# The scaling chart's two lines: (axis title key, column, its band's columns, dash, on the right axis).
SCALING_LINES = (
    ("axis_cost", "cost_usd", "cost_lo_usd", "cost_hi_usd", None, False),
    ("axis_days", "time_to_train_days", "time_lo_days", "time_hi_days", "dot", True),
)


def scaling_figure(
    points: pd.DataFrame, gpu: str, tr: Labels, risk: Risk | None = None, sure_first: bool = True
) -> go.Figure:
    """Cost (left axis, in the GPU's colour) and time-to-train (right axis, dark grey, log with
    decade ticks) against GPU count: each line's colour is its axis's (issue 30). At p80 / p90 the
    lines join the points the search would take (``judged_points``: the sure ones, where the type has
    any; all of them where the search plans at the model's figure, ``sure_first`` False); a point
    that may not fit is drawn hollow with a dot, off the lines beside sure ones."""
    rows = points[points["gpu"] == gpu].sort_values("num_gpus")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    unsure = unsure_points(rows, risk)
    hover = pd.Series(fit_hover(_hover(rows, tr), unsure, tr, risk), index=rows.index)
    on_line = judged_points(rows, risk if sure_first else None)
    style = gpu_style(gpu)
    for key, column, lo, hi, dash, secondary in SCALING_LINES:
        colour = TIME_AXIS_COLOUR if secondary else style.color
        symbol = "circle-open" if secondary else style.symbol
        for joined, part in ((True, on_line), (False, ~on_line)):
            if not part.any():
                continue
            some = rows[part]
            fig.add_scatter(
                name=tr(key),
                # a line and the points beside it show and hide together
                legendgroup=None if on_line.all() else key,
                showlegend=None if joined else False,
                x=some["num_gpus"],
                y=some[column],
                # the 80 % band of each point (trial s28d: this chart had none, the frontier's had)
                error_y=_band(some, column, lo, hi, colour),
                mode="lines+markers" if joined else "markers",
                text=list(hover[part]),
                hovertemplate="%{text}<extra></extra>",
                line=dict(color=colour, dash=dash),
                # a point off the line takes no colour from it
                marker=fit_marker(dict(symbol=symbol, color=None if joined else colour), unsure[part]),
                secondary_y=secondary,
            )
    fit_legend(fig, unsure, tr, risk)
    counts = rows["num_gpus"]
    values, text = decade_ticks(float(counts.min()), float(counts.max()), lambda v: f"{v:,.0f}")
    fig.update_xaxes(title_text=tr("axis_num_gpus"), type="log", tickvals=values, ticktext=text)
    costs = pd.concat([rows[c] for c in ("cost_usd", "cost_hi_usd") if c in rows]).replace(math.inf, math.nan)
    values, text = linear_ticks(float(costs.max()), tick_money)
    fig.update_yaxes(
        title_text=tr("axis_cost"), rangemode="tozero", tickvals=values, ticktext=text, secondary_y=False,
        title_font_color=style.color, tickfont_color=style.color,
    )  # fmt: skip
    # every plotted day, the band's ends with them (trial s44 app M3: a point past the range was cut off)
    days = pd.concat([rows[c] for c in ("time_to_train_days", "time_lo_days", "time_hi_days") if c in rows])
    days = days.replace([math.inf, -math.inf], math.nan).dropna()
    days = days[days > 0]
    low, high = math.log10(float(days.min()) / 1.3), math.log10(float(days.max()) * 1.3)
    values, text = decade_ticks(10**low, 10**high, days_label)
    fig.update_yaxes(
        title_text=tr("axis_days"), type="log", range=[low, high], tickvals=values, ticktext=text,
        showgrid=False, secondary_y=True, title_font_color=TIME_AXIS_COLOUR, tickfont_color=TIME_AXIS_COLOUR,
    )  # fmt: skip
    fig.update_layout(title_text=gpu, margin=dict(t=40, b=10), hoverlabel=HOVER, legend=dict(orientation="h", y=-0.2))
    return fig


# --------------------------------------------------------------------------- portfolio and runs


# A Gantt bar's label stays horizontal (app trial s45 L5: "4x mi325x" stood rotated in a 1.5-day
# sliver): inside a bar that holds it, else just past the bar's end, the axis stretched to show it.
# A bar is judged on a plot this wide (px: the app's main column at 1280 px, less the axis labels),
# the label at this many px a character (12 px text) plus padding.
GANTT_PLOT_PX = 600
GANTT_CHAR_PX = 7.5
GANTT_PAD_PX = 12


def portfolio_figure(assignments: pd.DataFrame, tr: Labels) -> go.Figure:
    """One bar per job from its start to its end (days), coloured by its GPU type and labelled with
    its GPUs, horizontally: inside the bar where it fits, else after it."""
    fig = go.Figure()
    span = max(float(assignments["end_days"].max()), 1e-9)
    right = span
    for row in assignments.itertuples(index=False):
        text = f"{row.num_gpus}x {row.gpu}"
        need = (len(text) * GANTT_CHAR_PX + GANTT_PAD_PX) * span / GANTT_PLOT_PX  # days the label takes
        inside = row.end_days - row.start_days >= need
        right = max(right, row.end_days + (0.0 if inside else need))
        fig.add_bar(
            name=row.job,
            y=[row.job],
            x=[row.end_days - row.start_days],
            base=[row.start_days],
            orientation="h",
            marker_color=gpu_style(row.gpu).color,
            text=[text],
            textposition="inside" if inside else "outside",
            textangle=0,
            constraintext="inside",
            cliponaxis=False,
            hovertemplate=(
                f"{row.job}: {row.num_gpus}x {row.gpu}<br>{row.layout}<br>"
                f"{tr('axis_schedule_days')}: {row.start_days:,.1f}–{row.end_days:,.1f}<extra></extra>"
            ),
        )
    fig.update_layout(
        xaxis_title=tr("axis_schedule_days"), showlegend=False, barmode="overlay", margin=dict(t=30, b=10)
    )
    fig.update_xaxes(range=[0.0, right * 1.02])
    return fig
