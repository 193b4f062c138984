"""The fleet view's Plotly figures: pure functions of the answer (testable without Streamlit), in
ui/figures.py's conventions: units in the axis titles and hovers, money ticks as the other charts
write them (``tick_money``), full names in hover boxes (``HOVER``), a GPU type's colour its own
(``gpu_style``, through ``portfolio_figure``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from planner.search.fleet_plan import FleetPlan, Holding
from planner.units import SECONDS_PER_DAY
from ui.app_core import money
from ui.figure_axes import linear_ticks, tick_money
from ui.figures import HOVER
from ui.i18n import Labels

# The chosen (mixed) option stands out; the options that rent only or buy only are the references.
MIXED_COLOUR, OTHER_COLOUR = "#1f4e79", "#9ecae1"
BAND_COLOUR = "#444444"


def options_figure(options: list[tuple[str, FleetPlan]], tr: Labels, risk: str) -> go.Figure:
    """One bar per option (``options``: its label and plan, the mixed one first) at its total at
    ``risk``, with its 80 % band as an error bar (``FleetPlan.total_band``; none where a job has no band)."""
    names = [name for name, _ in options]
    totals = [p.total_cost_usd for _, p in options]
    bands = [p.total_band() or (p.total_cost_usd, p.total_cost_usd) for _, p in options]
    hovers = [
        f"{name}: {money(total)}<br>{tr('card_band', lo=money(lo), hi=money(hi))}"
        for name, total, (lo, hi) in zip(names, totals, bands, strict=True)
    ]
    fig = go.Figure()
    fig.add_bar(
        x=names,
        y=totals,
        marker_color=[MIXED_COLOUR if i == 0 else OTHER_COLOUR for i in range(len(names))],
        # inside each bar at its foot: over it, a label and the band's whisker overlapped
        text=[money(t) for t in totals],
        textposition="inside",
        insidetextanchor="start",
        textangle=0,
        textfont_color=["white" if i == 0 else "black" for i in range(len(names))],
        error_y=dict(
            type="data",
            symmetric=False,
            array=[max(hi - t, 0.0) for t, (_, hi) in zip(totals, bands, strict=True)],
            arrayminus=[max(t - lo, 0.0) for t, (lo, _) in zip(totals, bands, strict=True)],
            thickness=1.5,
            width=8,
            color=BAND_COLOUR,
        ),
        customdata=hovers,
        hovertemplate="%{customdata}<extra></extra>",
    )
    top = max(hi for _, hi in bands) * 1.05
    values, labels = linear_ticks(top, tick_money)
    fig.update_layout(
        yaxis=dict(title_text=tr("axis_fleet_total"), tickvals=values, ticktext=labels, range=[0, top]),
        showlegend=False,
        margin=dict(t=30, b=40),
        hoverlabel=HOVER,
        height=380,
    )
    return fig


def owned_jobs_frame(plan: FleetPlan, tr: Labels, risk: str) -> pd.DataFrame:
    """The option's jobs on owned GPUs in ``portfolio_figure``'s columns (its hover's second line:
    their days at ``risk``), in the order they start."""
    rows = [
        {
            "job": a.job,
            "gpu": a.gpu_id,
            "num_gpus": a.num_gpus,
            "start_days": a.start_s / SECONDS_PER_DAY,
            "end_days": a.end_s / SECONDS_PER_DAY,
            "layout": tr(
                "fleet_hover_days", start=a.start_s / SECONDS_PER_DAY, end=a.end_s / SECONDS_PER_DAY, risk=risk
            ),
        }
        for a in sorted(plan.assignments, key=lambda a: a.start_s)
        if a.holding is Holding.OWNED
    ]
    return pd.DataFrame(rows, columns=["job", "gpu", "num_gpus", "start_days", "end_days", "layout"])
