"""Where a regime's few measured rows (fewer than MIN_ROWS) set both pessimistic quantiles, p80
and p90 coincide, and the plan says so (buyer trial s48 M2: a Mixtral fp8 plan read 17.1 days at
both, set by two of three Megatron-Core rows at +130 % and +133 %)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.accuracy import Regime, Risk
from planner.accuracy.bands import Evidence
from planner.accuracy.words import few_rows_end
from planner.api import PlanRequest, plan
from planner.catalog.models import get_preset

RISKS = {r.value: r.quantile for r in Risk}


def _evidence(regime: Regime, log_errors: list[float], exact: int, neighbours=()) -> Evidence:
    distances = np.array([0.0] * exact + [1.0] * (len(log_errors) - exact))
    return Evidence(regime, (), np.array(log_errors), distances, 0.0, 0.0, tuple(neighbours))


QUERY = Regime("trainplan", "Hopper", 0)
NEIGHBOUR = Regime("megatron-core", "Hopper", 0)
SPREAD = [0.0, 0.01, 0.02, 0.03, 0.05, 0.08, 0.1, 0.2, 0.3, 0.4]


def test_a_neighbours_few_far_rows_set_p80_and_p90_alike_and_are_named():
    # its three exact rows: two far out (ln 2.3), one near; its other rows a spread
    neighbour = _evidence(NEIGHBOUR, [0.8, 0.83, 0.08, *SPREAD], exact=3)
    query = _evidence(QUERY, SPREAD, exact=0, neighbours=(neighbour,))
    assert query.log_quantile(0.8) == query.log_quantile(0.9) == 0.83
    assert query.few_rows_setting(0.8) is neighbour and query.few_rows_setting(0.9) is neighbour
    assert query.few_rows_setting(0.1) is None and query.few_rows_setting(0.5) is None
    end = few_rows_end(query, RISKS)
    assert end is not None and end.risks == ("p80", "p90") and end.regime == NEIGHBOUR.describe()
    assert end.errors == tuple(sorted(float(np.expm1(x)) for x in (0.8, 0.83, 0.08)))


def test_no_word_where_a_spread_sets_p90_past_the_few_rows():
    # the exact rows reach past p80's spread but not p90's: p80 < p90, nothing to explain
    wide = [*SPREAD, 0.6, 0.7, 0.9, 1.0, 1.2]
    neighbour = _evidence(NEIGHBOUR, [0.9, 0.85, *wide], exact=2)
    query = _evidence(QUERY, wide, exact=0, neighbours=(neighbour,))
    assert query.few_rows_setting(0.8) is neighbour and query.few_rows_setting(0.9) is None
    assert query.log_quantile(0.8) < query.log_quantile(0.9)
    assert few_rows_end(query, RISKS) is None


def test_the_mixtral_fp8_plan_says_its_p80_and_p90_are_three_rows_farthest():
    request = PlanRequest(
        model=get_preset("mixtral-8x7b"),
        training_tokens=1e12,
        deadline_days=30,
        gpus={"h100-sxm": None},
        precision="fp8",
        top_k=0,
    )
    e = plan(request).plan.estimate
    assert e.time_h_at("p80") == e.time_h_at("p90")
    end = e.uncertainty.few_rows_end
    assert end is not None and end.risks == ("p80", "p90") and len(end.errors) < 5
    assert e.time_h_at("p90") / e.time_to_train_h == pytest.approx(1 + end.errors[-1], rel=1e-9)
    from ui.render_lines import few_rows_line

    line = few_rows_line(e)
    assert line is not None and line.startswith("p80 and p90 both read the farthest of the ")
    assert f"measured rows of {end.regime} (" in line


def test_a_dense_plan_whose_p80_and_p90_differ_has_no_such_line():
    request = PlanRequest(model=get_preset("llama3-8b"), training_tokens=2e11, gpus={"h100-sxm": 64}, top_k=0)
    e = plan(request).plan.estimate
    assert e.time_h_at("p80") < e.time_h_at("p90")
    from ui.render_lines import few_rows_line

    assert e.uncertainty.few_rows_end is None and few_rows_line(e) is None
