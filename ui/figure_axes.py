"""The app's chart axes: decade ticks on log axes (``decade_ticks``), 1-2-5 ticks on linear ones,
their money and day labels, and the useful range of a log axis (``useful_range``) so a 1,000,000-day
point does not squeeze the plans worth reading. Split out of ui/figures.py, which draws with them."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from planner.fmt import money_short
from planner.plan import Plan

CLIP_FACTOR = 30.0  # the x/y axes end this many times past the Pareto front's far end


def decade_ticks(low: float, high: float, label) -> tuple[list[float], list[str]]:
    """Tick values 1, 10, 100, ... spanning [low, high] (one more decade each side) and their
    labels; 1-2-5 steps when fewer than three decades would fall inside (a 0.2-0.9 day axis had
    no label at all; issue 30)."""
    first = math.floor(math.log10(max(low, 1e-12)))
    last = math.ceil(math.log10(max(high, low, 1e-12)))
    values = [10.0**k for k in range(first, last + 1)]
    if sum(low <= v <= high for v in values) < 3:
        values = [m * v for v in values for m in (1, 2, 5) if m * v <= values[-1]]
    return values, [label(v) for v in values]


def linear_ticks(high: float, label, most: int = 6) -> tuple[list[float], list[str]]:
    """Ticks 0, s, 2s, ... up to ``high`` at a 1-2-5 x 10^k step s giving at most ``most`` of them,
    labelled by ``label`` (trial s44 app M3: the scaling chart wrote "$200,000" where the frontier
    above it writes "$200k")."""
    base = 10.0 ** math.floor(math.log10(max(high, 1e-12) / most))
    step = next(m * base for m in (1, 2, 5, 10) if high / (m * base) <= most)
    values = [k * step for k in range(int(high // step) + 2)]
    return values, [label(v) for v in values]


def tick_money(usd: float) -> str:
    """A linear axis's money tick: "$0", "$500k", "$1.5M" (one decimal only where the tick needs it)."""
    if usd == 0:
        return "$0"
    one = money_short(usd, 1)
    return money_short(usd, 0) if one.replace(".0", "") == money_short(usd, 0) else one


def days_label(days: float) -> str:
    return f"{days:,.0f}" if days >= 1 else f"{days:g}"


def money_label(usd: float) -> str:
    """A log axis's tick (1, 2 or 5 x 10^k: "$200k", "$1M"); a figure is written by ``money``, whose
    three significant figures a budget or a plan's cost keeps (trial s35: "budget $1M" for $1.45M)."""
    return money_short(usd, 0) if usd >= 1 else f"${usd:g}"


def useful_range(values: pd.Series, front: pd.Series, *marks: float | None) -> tuple[float, float]:
    """A log axis's range (log10 units): all points from the smallest, up to CLIP_FACTOR x the front's end
    (or a deadline/budget line, whichever is further), down to a line below every point (trial s44 app
    L3: an infeasible deadline's line lay off the axis, never drawn)."""
    low = min([float(values.min()), *(m / 1.5 for m in marks if m)])
    high = max([float(front.max()) * CLIP_FACTOR, *(m * 1.5 for m in marks if m)])
    high = min(high, float(values.max()) * 1.3)
    return math.log10(low / 1.3), math.log10(max(high, low * 2))


def log_axis(fig: go.Figure, axis: str, low_log: float, high_log: float, label, **extra) -> None:
    """A log axis over [low_log, high_log] (log10 units) with ``decade_ticks`` labelled by ``label``."""
    values, text = decade_ticks(10**low_log, 10**high_log, label)
    getattr(fig, f"update_{axis}axes")(type="log", range=[low_log, high_log], tickvals=values, ticktext=text, **extra)


# Past the longest bar or band, so the band's whisker and its cap are not drawn on the axis's edge.
BAR_AXIS_MARGIN = 1.05


def band_whiskers(
    fig: go.Figure,
    names: list[str],
    ends: list[float],
    bands: list[tuple[float, float] | None],
    name: str,
    unit: str,
    marks: Sequence[float] = (),
) -> None:
    """Each stacked bar's 80 % band as a whisker about the bar's end (``ends``; ``bands`` about that
    end, None where a plan has none), one legend entry, and the axis from 0 past the highest band's
    top and ``marks`` (the memory chart's capacity) (app53 M2: the memory and step bars showed no band, the step axis stopped under a 23 s step)."""
    low = [end - band[0] if band else 0.0 for end, band in zip(ends, bands, strict=True)]
    high = [band[1] - end if band else 0.0 for end, band in zip(ends, bands, strict=True)]
    if any(low) or any(high):
        fig.add_scatter(
            name=name,
            y=names,
            x=ends,
            mode="markers",
            marker=dict(color="black", size=1),
            error_x=dict(type="data", symmetric=False, array=high, arrayminus=low, color="black", thickness=1.5),
            customdata=[(end - lo, end + hi) for end, lo, hi in zip(ends, low, high, strict=True)],
            hovertemplate=f"{name}: %{{customdata[0]:,.2f}}–%{{customdata[1]:,.2f}} {unit}<extra></extra>",
        )
    top = max([end + hi for end, hi in zip(ends, high, strict=True)] + list(marks), default=0.0)
    fig.update_xaxes(range=[0.0, top * BAR_AXIS_MARGIN] if top > 0 else None)


def memory_band_ends(plans: Sequence[Plan], context_gib: float) -> tuple[list[float], list[tuple[float, float] | None]]:
    """Each memory bar's end (its reserved peak, or the peak where it passes it, and the context on
    top) and the reserved peak's band moved to that end (None: no band)."""
    ends, bands = [], []
    for p in plans:
        m, band = p.estimate.memory, p.estimate.memory_band
        end = max(m.reserved_gib, m.peak_gib) + context_gib
        ends.append(end)
        bands.append(
            None
            if band is None
            else (band.reserved_gib[0] + end - m.reserved_gib, band.reserved_gib[1] + end - m.reserved_gib)
        )
    return ends, bands
