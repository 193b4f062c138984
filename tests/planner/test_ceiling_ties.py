"""Rows held at one efficiency ceiling tie exactly on time and cost: the search then takes the one
the model itself rates fastest, not the first generated (trial s23: a layout rated 5 % slower
was chosen)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from planner.accuracy import Risk
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


def test_a_tie_goes_to_the_plan_that_surely_fits_before_the_faster_one():
    """Trial s41: of six torchtitan plans held at one ceiling, the one whose memory band passes the
    GPU ("may not fit") was chosen, by the model's own speed; a sure fit now comes first."""
    table = SimpleNamespace(
        extra={"uncapped_time_s": np.array([1.0, 2.0, 3.0]), "may_not_fit": np.array([True, False, False])}
    )
    assert tie_order(table, np.arange(3)).tolist() == [1, 2, 0]  # type: ignore[arg-type]


def test_a_70b_plan_held_at_the_ceiling_is_one_that_surely_fits():
    """The trial's second case (Llama 3.1 70B on 256 H200): by the model's own speed the tie went
    to FSDP with 2 x blocks at 131 of 140 GiB, whose band passes the GPU; then (session 41) to one
    that fits by the tie key; since session 42 at p80 and p90 no plan that may not fit is listed at
    all (tests/planner/test_risk_memory.py), and at the median the choice still surely fits."""
    request = PlanRequest(
        model=get_preset("llama3.1-70b"), training_tokens=1e12, gpus={"h200-sxm": 256}, deadline_days=60, top_k=4
    )
    judged = plan(request)
    step = judged.plan.estimate.time.step_s
    tied = [p for p in judged.alternatives if p.estimate.time.step_s == step]
    assert tied and not any(p.estimate.may_not_fit for p in (judged.plan, *judged.alternatives))
    assert not plan(request.model_copy(update={"risk": Risk.P50})).plan.estimate.may_not_fit


def test_a_tie_goes_to_the_plan_clear_of_the_headroom_before_the_faster_one():
    """Trial s43 #8: of two B200 twins alike in time and cost (13B, 64 GPUs), zero1 was chosen on its
    uncapped speed with its band's high end at 177.2 of 178.5 GiB, past the fit rule's 5 % headroom,
    where zero2's reached 164.6; a plan clear of the headroom now comes first."""
    table = SimpleNamespace(
        extra={
            "uncapped_time_s": np.array([1.0, 2.0, 3.0]),
            "in_headroom": np.array([True, False, False]),
            "may_not_fit": np.array([False, False, True]),
        }
    )
    assert tie_order(table, np.arange(3)).tolist() == [1, 0, 2]  # type: ignore[arg-type]
    request = PlanRequest(
        model=get_preset("llama2-13b"),
        training_tokens=2e12,
        gpus={"b200": None},
        deadline_days=60,
        budget_usd=3e6,
        top_k=3,
    )
    chosen = plan(request).plan
    band = chosen.estimate.memory_band
    assert band is not None and chosen.gpu == "b200"
    assert band.reserved_gib[1] <= band.usable_gib  # its band's high end within the room the rule leaves
