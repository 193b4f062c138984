"""The app's chart axes: decade ticks on log axes (``decade_ticks``), 1-2-5 ticks on linear ones,
their money and day labels, and the useful range of a log axis (``useful_range``) so a 1,000,000-day
point does not squeeze the plans worth reading. Split out of ui/figures.py, which draws with them."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from planner.fmt import money_short

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
