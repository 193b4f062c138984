"""Review s42 (M3): at --risk p80 / p90 the search plans among the layouts whose reserved peak fits
at its memory band's high end, yet the app's charts drew the points it sets aside like sure ones.
Each chart now takes a count's sure layout where it has one, draws a point that may not fit hollow
with a dot (hover and legend say why) and keeps the lines to the points the search would take; at
p50 the figures are as they were."""

from __future__ import annotations

import json

import pytest
from support.app import EN, ZH, open_tab, planned, request_for, run_app

from planner.accuracy import Risk
from planner.api.explore import best_per_count, pareto_front, plan_label, scored_search
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing
from planner.model.settings import DEFAULT_SETTINGS
from ui import figures
from ui.figure_style import UNSURE_SUFFIX, gpu_style

GPUS = ("h100-sxm", "a100-80gb-sxm")
# A 70B model at 8K tokens without checkpointing on at most 48 GPUs: 32 GPUs surely fit, every layout
# on 40 may not, and on 48 the cheapest may not while a dearer one surely does (a seeded case: the
# planner is deterministic).
MAY_NOT_FIT_COUNT, MIXED_COUNT = 40, 48


def _request(risk: Risk):
    request = request_for(get_preset("llama3-70b"), gpus=dict.fromkeys(GPUS), training_tokens=2e12, seq_len=8192)
    return request.model_copy(
        update={
            "max_gpus": 48,
            "activation_checkpointing": (ActivationCheckpointing.NONE,),
            "risk": risk,
            "vary_batch": True,
        }
    )


@pytest.fixture(scope="module")
def frames():
    return {risk: scored_search(_request(risk), settings=DEFAULT_SETTINGS).frame for risk in (Risk.P50, Risk.P80)}


def _points(frame, risk: Risk | None):
    points = best_per_count(frame, "cost", risk)
    return points.assign(pareto=pareto_front(points, risk))


def _unsure_symbols(trace) -> list[bool]:
    """Per point of a trace, whether it is drawn as one that may not fit."""
    symbols = trace.marker.symbol
    symbols = [symbols] * len(trace.x) if isinstance(symbols, str) else list(symbols or ())
    return [s.endswith(UNSURE_SUFFIX) for s in symbols]


def test_a_counts_point_is_its_sure_layout_and_the_front_passes_over_points_that_may_not_fit(frames):
    frame = frames[Risk.P80]
    points = _points(frame, Risk.P80)
    for gpu in GPUS:
        rows = frame[(frame["gpu"] == gpu) & (frame["num_gpus"] == MIXED_COUNT)]
        cheapest = rows.sort_values("cost_at_risk_usd").iloc[0]
        point = points[(points["gpu"] == gpu) & (points["num_gpus"] == MIXED_COUNT)].iloc[0]
        # the cheapest layout may not fit: the point is the cheapest that surely does, as the search takes it
        assert cheapest["may_not_fit"] and not point["may_not_fit"]
        assert point["cost_at_risk_usd"] == rows.loc[~rows["may_not_fit"], "cost_at_risk_usd"].min()
        alone = points[(points["gpu"] == gpu) & (points["num_gpus"] == MAY_NOT_FIT_COUNT)]
        assert alone["may_not_fit"].all()  # no layout on 40 surely fits: its point may not
    assert not points.loc[points["pareto"], "may_not_fit"].any()
    # the search's own choice is a front point: the cheapest, or one within the near-tie rule's 1 %
    # of it and faster (planner/search/ties.py; since session 52 H100 at +0.6 % over A100)
    from planner.search.ties import NEAR_TIE_FRACTION

    chosen = planned(_request(Risk.P80)).plan
    front = points[points["pareto"]]
    same = front[(front["gpu"] == chosen.gpu) & (front["num_gpus"] == chosen.num_gpus)]
    assert not chosen.estimate.may_not_fit and list(same["layout"]) == [plan_label(chosen)]
    assert same["cost_at_risk_usd"].iloc[0] <= front["cost_at_risk_usd"].min() * (1 + NEAR_TIE_FRACTION)
    # at p50 the cheapest layout stands for its count, as before
    median = _points(frames[Risk.P50], Risk.P50)
    assert median.equals(_points(frames[Risk.P50], None))


def test_the_frontier_draws_points_that_may_not_fit_hollow_and_says_why_in_both_languages(frames):
    points = _points(frames[Risk.P80], Risk.P80)
    for tr in (EN, ZH):
        fig = figures.frontier_figure(points, points["pareto"], None, tr, figures.Limits(risk=Risk.P80))
        words = tr("hover_may_not_fit", risk="p80")
        for gpu in GPUS:
            trace = next(t for t in fig.data if t.name == gpu)
            group = points[points["gpu"] == gpu]
            assert _unsure_symbols(trace) == list(group["may_not_fit"])
            assert any(_unsure_symbols(trace)) and not all(_unsure_symbols(trace))
            assert set(trace.marker.symbol) == {gpu_style(gpu).symbol, gpu_style(gpu).symbol + UNSURE_SUFFIX}
            assert [words in text for text in trace.text] == list(group["may_not_fit"])
        legend = [t for t in fig.data if t.name == tr("may_not_fit_mark", risk="p80")]
        assert len(legend) == 1 and legend[0].marker.symbol == "circle" + UNSURE_SUFFIX


def test_at_p50_the_frontier_and_scaling_charts_are_as_they_were(frames):
    points = _points(frames[Risk.P50], Risk.P50)
    assert points["may_not_fit"].any()  # the band says so, but p50 plans at the model's figure
    for a, b in (
        (
            figures.frontier_figure(points, points["pareto"], None, EN, figures.Limits(risk=Risk.P50)),
            figures.frontier_figure(points, points["pareto"], None, EN),
        ),
        (figures.scaling_figure(points, GPUS[0], EN, Risk.P50), figures.scaling_figure(points, GPUS[0], EN)),
    ):
        assert a.to_plotly_json() == b.to_plotly_json()
        assert not any(any(_unsure_symbols(t)) for t in a.data)
        assert EN("may_not_fit_mark", risk="p50") not in [t.name for t in a.data]


def test_the_scaling_lines_join_the_sure_points_and_a_point_that_may_not_fit_stands_off_them(frames):
    points = _points(frames[Risk.P80], Risk.P80)
    fig = figures.scaling_figure(points, GPUS[0], EN, Risk.P80)
    traces = [t for t in fig.data if t.name in (EN("axis_cost"), EN("axis_days"))]
    lines = [t for t in traces if t.mode == "lines+markers"]
    beside = [t for t in traces if t.mode == "markers"]
    assert [list(t.x) for t in lines] == [[32, MIXED_COUNT]] * 2 and not any(any(_unsure_symbols(t)) for t in lines)
    assert [list(t.x) for t in beside] == [[MAY_NOT_FIT_COUNT]] * 2 and all(all(_unsure_symbols(t)) for t in beside)
    assert [t.marker.symbol[0] for t in beside] == [gpu_style(GPUS[0]).symbol + UNSURE_SUFFIX, "circle-open-dot"]
    assert all(EN("hover_may_not_fit", risk="p80") in t.text[0] for t in beside)
    assert [t.legendgroup for t in beside] == [t.legendgroup for t in lines] and not any(t.showlegend for t in beside)
    legend = EN("may_not_fit_mark", risk="p80")
    assert legend in [t.name for t in fig.data]
    # a type none of whose points surely fits: the search plans it at the model's figure, the lines join them all
    unsure = points.assign(may_not_fit=points["gpu"] == GPUS[0])
    fig = figures.scaling_figure(unsure, GPUS[0], EN, Risk.P80)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [list(t.x) for t in lines] == [[32, MAY_NOT_FIT_COUNT, MIXED_COUNT]] * 2
    assert all(all(_unsure_symbols(t)) for t in lines)
    assert [t.name for t in fig.data if t.mode == "markers"] == [legend]  # none off the lines


def test_the_memory_bars_hover_says_a_plan_may_not_fit_at_p80_only():
    request = request_for(get_preset("llama3-70b"), training_tokens=2e12, seq_len=4096, gpus={"h100-sxm": None})
    chosen = planned(request.model_copy(update={"max_gpus": 24, "risk": Risk.P50})).plan
    assert chosen.estimate.may_not_fit  # tests/ui/test_app_memory_risk.py's plan
    for risk, said in ((Risk.P80, True), (Risk.P90, True), (Risk.P50, False), (None, False)):
        fig = figures.memory_figure([chosen], 1.0, ZH, risk)
        words = ZH("hover_may_not_fit", risk=risk.value if risk else "p80")
        bars = [
            t for t in fig.data if t.customdata is not None and t.name != ZH("chart_band")
        ]  # not the band's whiskers
        hovers = [text for t in bars for text in t.customdata]
        assert hovers and all((words in text) == said for text in hovers)


def test_the_apps_explore_tab_marks_the_points_that_may_not_fit():
    state = dict(preset="llama3-70b", tokens_mode="absolute", tokens_billions=2000.0, seq_len=8192, max_gpus=48)
    at = run_app(gpus=list(GPUS), ac=["none"], risk="p80", scaling_gpu=GPUS[0], **state)
    open_tab(at, "tab_explore")
    charts = {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    assert len(charts) == 2  # the frontier and the scaling chart
    for spec in charts.values():
        names = [t.get("name") for t in spec["data"]]
        assert EN("may_not_fit_mark", risk="p80") in names
        hollow = [t for t in spec["data"] if any(str(s).endswith(UNSURE_SUFFIX) for s in _symbols(t))]
        assert hollow and all(
            EN("hover_may_not_fit", risk="p80") in " ".join(t["text"]) for t in hollow if t.get("text")
        )


def _symbols(trace: dict) -> list:
    symbol = trace.get("marker", {}).get("symbol", [])
    return [symbol] if isinstance(symbol, str) else symbol


def test_where_only_a_layout_that_may_not_fit_meets_the_deadline_the_chart_follows_the_search(frames):
    """Review s43: the search plans at the model's figure where no sure layout meets the request's
    limits (solve_at_risk), yet the chart kept each count's sure layout, drew the slower one at the
    chosen plan's count, and its star stood on no point."""
    from planner.api import plan
    from ui.cached import frontier_points

    frame = frames[Risk.P80]
    sure, unsure = frame[~frame["may_not_fit"]], frame[frame["may_not_fit"]]
    deadline = (sure["time_at_risk_days"].min() + unsure["time_at_risk_days"].min()) / 2
    assert unsure["time_at_risk_days"].min() < deadline < sure["time_at_risk_days"].min()
    request = _request(Risk.P80).model_copy(update={"deadline_days": deadline})
    chosen = plan(request, settings=DEFAULT_SETTINGS).plan
    assert chosen.estimate.may_not_fit  # the search fell back
    points = frontier_points(frame, request, "cost")
    assert not points["sure_first"].any()
    at = points[(points["gpu"] == chosen.gpu) & (points["num_gpus"] == chosen.num_gpus)]
    assert at["layout"].tolist() == [plan_label(chosen)]  # the star's point is the chosen layout
    loose = frontier_points(frame, _request(Risk.P80), "cost")  # no deadline: a sure layout does the job
    assert loose["sure_first"].all() and loose.equals(_points(frame, Risk.P80).assign(sure_first=True))
    line = figures.scaling_figure(points, chosen.gpu, EN, Risk.P80, sure_first=False).data[0]
    assert len(line.x) == len(points[points["gpu"] == chosen.gpu])  # the line joins every count


def test_a_deadline_below_every_point_stays_on_the_axis():
    """Trial s44 app L3: an infeasible request's deadline (1 day against points from 50) lay off the
    time axis, its line never drawn; the range reaches down to it."""
    import math

    import pandas as pd

    from ui.figures import useful_range

    days = pd.Series([50.0, 80.0, 400.0])
    low, high = useful_range(days, days, 1.0)
    assert low <= math.log10(1.0) < high
    low_without, _ = useful_range(days, days, None)
    assert low_without > math.log10(1.0)  # without a line below, the axis starts at the points


def test_the_scaling_time_axis_holds_every_point_and_its_band(frames):
    """Trial s44 app M3: the time axis was ranged on the points alone, and an 8-GPU point past it (its
    band's slow end further still) was cut off; it spans every plotted day, the bands' ends too."""
    import math

    points = _points(frames[Risk.P80], Risk.P80)
    fig = figures.scaling_figure(points, "h100-sxm", EN, Risk.P80)
    low, high = fig.layout.yaxis2.range
    rows = points[points["gpu"] == "h100-sxm"]
    for column in ("time_to_train_days", "time_lo_days", "time_hi_days"):
        assert low <= math.log10(rows[column].min()) and math.log10(rows[column].max()) <= high


def test_the_scaling_cost_axis_writes_money_as_the_frontier_does(frames):
    """Trial s44 app M3: the scaling chart's cost axis wrote "$200,000" where the frontier above it
    writes "$200k"; its ticks are 1-2-5 steps from $0, as short as they can be and no shorter."""
    from ui.figures import linear_ticks, tick_money

    assert linear_ticks(230_000, tick_money)[1] == ["$0", "$50k", "$100k", "$150k", "$200k", "$250k"]
    assert linear_ticks(1_400_000, tick_money)[1] == ["$0", "$500k", "$1M", "$1.5M"]
    points = _points(frames[Risk.P80], Risk.P80)
    axis = figures.scaling_figure(points, "h100-sxm", EN, Risk.P80).layout.yaxis
    assert axis.ticktext[0] == "$0" and all("," not in t for t in axis.ticktext)
    rows = points[points["gpu"] == "h100-sxm"]
    assert axis.tickvals[-1] >= rows["cost_hi_usd"].max()  # the top tick passes every band's end
