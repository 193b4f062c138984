"""Rows held at one efficiency ceiling tie exactly on time and cost: the search then takes the one
the model itself rates fastest, not the first generated (trial s23: a layout rated 5 % slower
was chosen)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from planner.api import PlanRequest, plan
from planner.catalog.models import get_preset
from planner.search.ties import first_of_tie, tie_order


def test_a_tie_at_the_ceiling_goes_to_the_layout_the_model_rates_fastest():
    request = PlanRequest(
        model=get_preset("llama3-70b"),
        training_tokens=2e12,
        gpus={"h100-sxm": 512, "a100-80gb-sxm": 256},
        deadline_days=60,
        top_k=5,
    )
    result = plan(request)
    plans = [result.plan, *result.alternatives]
    held = [p for p in plans if p.estimate.ceiling is not None and p.estimate.ceiling.binding]
    assert len(held) >= 2, "the case needs layouts held at one ceiling"
    same = [p for p in held if p.estimate.time.step_s == held[0].estimate.time.step_s]  # one ceiling's tie
    uncapped = [p.estimate.ceiling.uncapped_tokens_per_s for p in same]
    assert uncapped[0] == max(uncapped)
    assert uncapped == sorted(uncapped, reverse=True)  # the alternatives in the same order


def test_tie_order_keeps_rows_without_the_column():
    rows = np.array([3, 1, 2])
    assert (tie_order(SimpleNamespace(extra={}), rows) == rows).all()  # type: ignore[arg-type]
    table = SimpleNamespace(extra={"uncapped_time_s": np.array([0.0, 5.0, 1.0, 2.0])})
    assert tie_order(table, rows).tolist() == [2, 3, 1]  # type: ignore[arg-type]


def test_a_tie_of_two_gpu_types_goes_to_the_one_with_a_listed_price():
    """Trial s28c: the H800 (no listed offer, priced as the H100) held at the H100's ceiling ties
    it within 5e-8, and the solver's pick went to the export part nobody lists."""
    request = PlanRequest(
        model=get_preset("llama3-8b"), training_tokens=1e11, gpus={"h800": None, "h100-sxm": None}, max_gpus=16
    )
    result = plan(request)
    assert result.plan.gpu == "h100-sxm"
    assert result.plan.price_basis == "catalog"
    # its H800 twin is the chosen plan too, not a knee or a near tie beside it (review s29)
    for other in (result.knee_plan, result.near_tie_plan):
        assert other is None or other.gpu != "h800" or other.num_gpus != result.plan.num_gpus


def test_first_of_tie_takes_the_first_in_tie_order_of_rows_alike_in_cost_and_time():
    table = SimpleNamespace(
        cost_usd=np.array([100.0, 100.0 + 1e-5, 100.0, 90.0]),
        time_to_train_s=np.array([10.0, 10.0, 10.0 + 1e-3, 10.0]),
        extra={"price_estimated": np.array([True, False, False, False]), "uncapped_time_s": np.zeros(4)},
    )
    rows = tie_order(table, np.arange(4))  # type: ignore[arg-type]
    assert rows.tolist() == [1, 2, 3, 0]  # sourced prices first
    assert first_of_tie(table, rows, 0) == 1  # type: ignore[arg-type]  # 1e-7 apart: a tie
    assert first_of_tie(table, rows, 3) == 3  # type: ignore[arg-type]  # cheaper: no tie
