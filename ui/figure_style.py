"""How the app's charts draw a point: one style per GPU type (``gpu_style``: a fixed colour and
symbol by catalog position, the same in every chart), and the mark of a point that may not fit.

At --risk p80 / p90 the search plans among the layouts whose reserved peak fits at its memory
band's high end (``Risk.judges_memory``); a chart point it would set aside (``unsure_points``, the
scored table's ``may_not_fit``) is drawn in its own symbol hollow with a dot, its hover says why,
and a legend entry names the mark. At p50 nothing is marked: the figures are as they were.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass
from functools import cache

import pandas as pd
import plotly.graph_objects as go

from planner.accuracy import Risk
from planner.api.chart_points import judges_memory
from planner.catalog.hardware import load_catalog
from planner.plan import Plan
from ui.i18n import Labels

SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "triangle-down", "pentagon", "star-square")


def _palette_colour(index: int, rounds: int) -> str:
    """Colour ``index`` of a palette of ``rounds`` rounds of the nine symbols: hues around the wheel
    so that the GPUs sharing a symbol (indices nine apart) are a round's share of the wheel apart,
    and neighbours differ in lightness too. All saturated: none near the grey of out-of-limit
    points or the black of the Pareto front (issue 30: mi325x's colour read as grey)."""
    size = rounds * len(SYMBOLS)
    hue = (index % len(SYMBOLS)) / size + (index // len(SYMBOLS)) / rounds  # ``size`` hues evenly apart
    saturation, value = ((0.85, 0.80), (0.70, 0.55), (0.95, 0.95))[index % 3]
    r, g, b = colorsys.hsv_to_rgb(hue % 1.0, saturation, value)
    return f"#{round(r * 255):02X}{round(g * 255):02X}{round(b * 255):02X}"


@cache
def _palette() -> tuple[str, ...]:
    """At least three rounds of the nine symbols, and enough for every catalog GPU type its own
    colour (session 46: the 27th type filled the 27 colours there were)."""
    rounds = max(3, -(-len(_catalog_order()) // len(SYMBOLS)))
    return tuple(_palette_colour(i, rounds) for i in range(rounds * len(SYMBOLS)))


@dataclass(frozen=True)
class GpuStyle:
    color: str
    symbol: str


@cache
def _catalog_order() -> tuple[str, ...]:
    return tuple(sorted(load_catalog().gpus))


def gpu_style(gpu: str) -> GpuStyle:
    """The fixed colour and symbol of a GPU type: by its place in the catalog, so every chart agrees."""
    order = _catalog_order()
    index = order.index(gpu) if gpu in order else len(order) + sum(map(ord, gpu))
    palette = _palette()
    return GpuStyle(palette[index % len(palette)], SYMBOLS[index % len(SYMBOLS)])


# Hollow with a dot: the scaling chart's time points are hollow circles already, and the dot tells
# a point that may not fit from them; drawn larger, its outline thicker, so that it reads at a glance.
UNSURE_SUFFIX = "-open-dot"
UNSURE_LINE_PX = 2.0
UNSURE_GROWTH_PX = 4  # over the trace's own marker size
PLOTLY_MARKER_PX = 6  # Plotly's marker size, where a trace sets none
UNSURE_LEGEND_RANK = 5  # after the chosen plan, the front, the knee and the deadline / budget lines


def fit_marker(marker: dict, unsure: pd.Series) -> dict:
    """``marker`` (a trace's Plotly marker: its symbol, size and outline) with each point that may
    not fit (``unsure``) hollow with a dot, larger and outlined thicker; as given where none may
    not (every trace at p50: its figure is as it was)."""
    if not unsure.any():
        return marker
    symbol, size, line = marker["symbol"], marker.get("size", PLOTLY_MARKER_PX), marker.get("line", {})
    base, width = symbol.removesuffix("-open"), line.get("width", 0)
    return marker | dict(
        symbol=[base + UNSURE_SUFFIX if u else symbol for u in unsure],
        size=[size + UNSURE_GROWTH_PX if u else size for u in unsure],
        line=line | dict(width=[UNSURE_LINE_PX if u else width for u in unsure]),
    )


def fit_words(tr: Labels, risk: Risk | None) -> str:
    """The hover line of a point that may not fit ("" where the risk does not judge memory)."""
    return "<br>" + tr("hover_may_not_fit", risk=risk.value) if risk is not None and judges_memory(risk) else ""


def fit_hover(texts: list[str], unsure: pd.Series, tr: Labels, risk: Risk | None) -> list[str]:
    """Each point's hover text, with ``fit_words`` where it may not fit."""
    words = fit_words(tr, risk)
    return [text + words if u else text for text, u in zip(texts, unsure, strict=True)]


def plan_unsure(p: Plan, risk: Risk | None) -> bool:
    """Whether a plan is one the search sets aside at ``risk`` (its ``Estimate.may_not_fit``, read
    where the risk judges memory), as ``unsure_points`` says of a chart's point."""
    return judges_memory(risk) and p.estimate.may_not_fit


def fit_legend(fig: go.Figure, unsure: pd.Series, tr: Labels, risk: Risk | None) -> None:
    """A legend entry for the mark, where a point has it."""
    if risk is None or not unsure.any():
        return
    fig.add_scatter(
        x=[None],
        y=[None],
        mode="markers",
        name=tr("may_not_fit_mark", risk=risk.value),
        marker=dict(symbol="circle" + UNSURE_SUFFIX, size=12, color="black", line=dict(width=UNSURE_LINE_PX)),
        legendrank=UNSURE_LEGEND_RANK,
    )
