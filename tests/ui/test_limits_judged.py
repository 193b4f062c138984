"""The limits line and the over-a-year warning print the figure a limit judged a plan by
(``limit_figure``: its figure at the risk, never under the model's own), buyer trial s48 M1:
at p50 both printed the median, under the headline the search had judged."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout

from planner.accuracy import Risk
from planner.api import judged_cost_usd, judged_hours, plan
from planner.catalog.models import get_preset
from planner.request import PlanRequest
from ui.cli import main

P50_PLAN = ("plan", "--model", "llama2-13b", "--tokens", "2e12", "--gpus", "mi325x=128", "--risk", "p50", "--top", "0")


def trainplan(*args: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(list(args))
    return code, stdout.getvalue(), stderr.getvalue()


def test_at_p50_the_limits_line_prints_the_own_figure_the_limits_judged() -> None:
    limits = ("--deadline-days", "45", "--budget-usd", "1.5e6")
    request = PlanRequest(
        model=get_preset("llama2-13b"),
        training_tokens=2e12,
        gpus={"mi325x": 128},
        risk=Risk.P50,
        top_k=0,
        deadline_days=45,
        budget_usd=1.5e6,
    )
    p = plan(request).plan
    e = p.estimate
    assert e.cost_usd_at("p50") < e.cost_usd and e.time_h_at("p50") < e.time_to_train_h  # the case the trial hit
    assert judged_cost_usd(p, Risk.P50) == e.cost_usd and judged_hours(p, Risk.P50) == e.time_to_train_h
    code, out, err = trainplan(*P50_PLAN, *limits)
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if x.startswith("limits judged at p50")]
    own_cost = f"${e.cost_usd:,.0f}"
    own_days = f"{e.time_to_train_h / 24:.1f} days"
    assert f"budget $1.50M (this plan {own_cost}, its own figure; p50 ${e.cost_usd_at('p50'):,.0f})" in line
    assert f"(this plan {own_days}, its own figure; p50 {e.time_h_at('p50') / 24:.1f} days)" in line


def test_at_p80_the_limits_line_prints_the_quantile_over_the_own_figure() -> None:
    code, out, err = trainplan(*P50_PLAN[:-4], "--top", "0", "--budget-usd", "1.5e6")
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if x.startswith("limits judged at p80")]
    (figures,) = re.findall(r"\(this plan \$([\d,]+); its own figure \$([\d,]+)\)", line)
    this, own = (float(v.replace(",", "")) for v in figures)
    assert this > own


def test_the_over_a_year_warning_at_p50_says_the_headline_the_search_judged() -> None:
    code, out, err = trainplan(*P50_PLAN, "--budget-usd", "164000", "--json")
    assert code == 0, err
    data = json.loads(out)
    days = data["plan"]["time_to_train_h"] / 24
    assert data["plan"]["uncertainty"]["time_to_train_h_at_risk"]["p50"] / 24 < days - 1
    code, _, err = trainplan(*P50_PLAN, "--budget-usd", "164000")
    assert code == 0, err
    assert f"the plan trains for {days:,.1f} days, over a year" in err
