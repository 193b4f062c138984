"""A reserved price's term billed whole (trial s42 H2): ``TermBilling`` in planner/catalog/terms.py,
the cost the search ranks by, the band and risk figures, and the multi-job answers that share terms."""

import numpy as np
import pytest

from planner.api import PlanRequest, build_plan, plan, replan, restack
from planner.api.chart_points import Limits
from planner.api.explore import plan_portfolio, scored_search
from planner.catalog.models import get_preset
from planner.catalog.terms import TermBilling, billed_hours, rebilled, term_billing
from planner.layout import Layout, TrainingConfig
from planner.model.stacks import Stack
from planner.units import HOURS_PER_YEAR

YEAR = HOURS_PER_YEAR


def test_a_term_bills_its_unfilled_rest_and_a_longer_job_whole_terms() -> None:
    term = TermBilling(YEAR)
    assert float(term.billed_hours(100.0)) == pytest.approx(YEAR)
    assert float(term.billed_hours(YEAR)) == pytest.approx(YEAR)  # a job that fills its term
    assert float(term.billed_hours(1.5 * YEAR)) == pytest.approx(2 * YEAR) and term.terms(1.5 * YEAR) == 2
    half = TermBilling(YEAR, filled=0.5)
    assert float(half.billed_hours(100.0)) == pytest.approx(100 + 0.5 * (YEAR - 100))
    assert float(TermBilling(YEAR, filled=1.0).billed_hours(100.0)) == pytest.approx(100.0)  # by the hour
    assert float(billed_hours(100.0, None)) == 100.0
    hours = np.array([10.0, np.nan, 2 * YEAR + 1])
    np.testing.assert_allclose(term.billed_hours(hours), [YEAR, np.nan, 3 * YEAR])
    # a cost at another time: the same hourly bill, by the hours billed
    assert rebilled(500.0, 100.0, 200.0, None) == pytest.approx(1000.0)
    assert rebilled(500.0, 100.0, 200.0, term) == pytest.approx(500.0)


def test_only_reserved_kinds_have_a_term_and_a_filled_share_needs_one() -> None:
    assert term_billing("reserved-3y") == TermBilling(3 * YEAR)
    assert term_billing("on-demand") is None and term_billing(None) is None and term_billing("spot") is None
    with pytest.raises(ValueError, match=r"--term-filled 0\.5 applies to a reserved term"):
        term_billing("on-demand", 0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        term_billing("reserved-1y", 1.5)


def request(**changes) -> PlanRequest:
    base = dict(
        model=get_preset("llama3-8b"),
        training_tokens=2e11,
        deadline_days=60,
        gpus={"h100-sxm": 256},
        price_kind="reserved-1y",
    )
    return PlanRequest(**{**base, **changes})


def test_under_a_reserved_term_the_search_takes_the_fewest_gpus_that_meet_the_deadline() -> None:
    """Trial s42 H2: billed by the job's hours, 512 GPUs for 36.5 days tied 256 for 72.8 days,
    where the 1-year term bills the 512 twice the 256's. Billed whole, a row's cost is its billed
    GPUs x the price x the term: the cheapest is the fewest billed GPUs of the rows the search
    may choose (brute force over its own table)."""
    result = plan(request())
    chosen = result.plan
    e = chosen.estimate
    price = chosen.price_per_gpu_hour_usd
    assert e.term == TermBilling(YEAR) and price is not None
    assert e.cost_usd == pytest.approx(chosen.billed_gpus * price * YEAR, rel=1e-6)
    frame = scored_search(request()).frame
    meets = frame[(frame["time_at_risk_days"] <= 60)]
    assert chosen.num_gpus == meets["num_gpus"].min()
    assert meets["cost_at_risk_usd"].min() == pytest.approx(e.cost_usd_at("p80"), rel=0.01)
    # the band and the risk figures bill the same whole term: the time moves, the cost does not
    u = e.uncertainty
    assert u is not None and u.cost_usd == pytest.approx((e.cost_usd, e.cost_usd))
    assert e.cost_usd_at("p90") == pytest.approx(e.cost_usd)
    # every hour filled by other work: billed by the job's own hours again
    hourly = plan(request(term_filled=1.0)).plan
    h, p = hourly.estimate.time_to_train_h, hourly.price_per_gpu_hour_usd
    assert hourly.estimate.term == TermBilling(YEAR, 1.0) and h is not None and p is not None
    assert hourly.estimate.cost_usd == pytest.approx(h * hourly.billed_gpus * p, rel=1e-6)


def test_a_filled_share_bills_the_job_and_the_rest_it_leaves_unused() -> None:
    layout, training = Layout(dp_shard=8), TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=4)
    spec = get_preset("llama3-8b")
    kw = dict(num_gpus=8, training_tokens=1e10, price_kind="reserved-1y")
    whole = build_plan(spec, "h100-sxm", layout, training, **kw)
    part = build_plan(spec, "h100-sxm", layout, training, **kw, term_filled=0.75)
    hours, hourly = whole.estimate.time_to_train_h, 8 * (whole.price_per_gpu_hour_usd or 0)
    assert hours is not None and part.estimate.time_to_train_h == pytest.approx(hours)
    assert whole.estimate.cost_usd == pytest.approx(hourly * YEAR)
    assert part.estimate.cost_usd == pytest.approx(hourly * (hours + 0.25 * (YEAR - hours)))
    # a re-estimate bills as the plan did: restacked, replanned
    assert restack(part, Stack.TORCHTITAN).estimate.term == part.estimate.term
    assert replan(part, 1.1).estimate.term == part.estimate.term
    assert build_plan(spec, "h100-sxm", layout, training, num_gpus=8, training_tokens=1e10).estimate.term is None


def test_a_portfolios_rented_type_is_reserved_for_the_term_and_its_jobs_billed_by_the_hour() -> None:
    """Session 44: the GPUs a portfolio's rented type holds at once are reserved for the term and
    billed with it (trial s43 had them warned of beside a total of the jobs' hours); each job's own
    cost stays its hours at the rate, its share of the term."""
    jobs = {
        "a": request(deadline_days=None, training_tokens=5e10),
        "b": request(deadline_days=None, training_tokens=5e10),
    }
    answer = plan_portfolio(jobs, {"h100-sxm": 64}, rented=frozenset({"h100-sxm"}))
    peak = max(
        sum(b.num_gpus for b in answer.assignments if b.start_s <= a.start_s < b.end_s) for a in answer.assignments
    )
    price = answer.assignments[0].plan.price_per_gpu_hour_usd
    assert price is not None
    (r,) = answer.reserved
    assert r.gpu_id == "h100-sxm" and peak <= r.num_gpus <= 64 and r.terms == 1
    assert r.cost_usd == pytest.approx(r.num_gpus * price * YEAR)
    assert answer.billed_usd == pytest.approx(r.cost_usd)  # nothing held, nothing rented: the term is the bill
    assert not [w for w in answer.warnings if "term" in w]  # billed, not warned of
    on_demand = {k: r.model_copy(update={"price_kind": "on-demand"}) for k, r in jobs.items()}
    rented = plan_portfolio(on_demand, {"h100-sxm": 64}, rented=frozenset({"h100-sxm"}))
    assert rented.reserved == () and not [w for w in rented.warnings if "term" in w]
    for job in answer.assignments:
        e = job.plan.estimate
        assert e.term is None and e.time_to_train_h is not None and e.cost_usd is not None
        assert e.cost_usd == pytest.approx(e.time_to_train_h * job.plan.billed_gpus * job.plan.price_per_gpu_hour_usd)


def test_a_budget_under_a_reserved_term_holds_the_gpus_it_can_reserve_for_the_term() -> None:
    """A budget of 16 GPUs' term: the fastest plan within it holds at most 16 billed GPUs, where
    billed by the hour (every hour filled) the same budget buys a much larger, shorter job."""
    price = plan(request()).plan.price_per_gpu_hour_usd
    assert price is not None
    budget = 16 * price * YEAR * 1.05
    fast = dict(objective="time", deadline_days=None, budget_usd=budget)
    reserved = plan(request(**fast)).plan
    assert reserved.billed_gpus <= 16 and (reserved.estimate.cost_usd_at("p80") or 0) <= budget
    assert plan(request(**fast, term_filled=1.0)).plan.num_gpus > 64


@pytest.mark.parametrize("price_kind", ["reserved-1y", "on-demand"])
def test_the_chart_frame_judges_the_numbers_the_search_judged(price_kind: str) -> None:
    """Review s46 L11: the chart's frame re-derived the model's own cost from the risk's, so its
    deadline and budget greyed points by a copy; it now reads the table's, and each point's limit
    figures are the search's own (``ScoredTable.limit_figures``), bit for bit."""
    search = scored_search(request(price_kind=price_kind, risk="p50"))
    frame, table = search.frame, search.table
    rows = frame["row"].to_numpy()
    limit_s, limit_usd = (figure[rows] for figure in table.limit_figures())
    np.testing.assert_array_equal(frame["cost_usd"].to_numpy(), table.extra["model_cost_usd"][rows])
    judged_usd = np.maximum(frame["cost_at_risk_usd"].to_numpy(), frame["cost_usd"].to_numpy())
    np.testing.assert_array_equal(judged_usd, limit_usd)
    judged_days = np.maximum(frame["time_at_risk_days"].to_numpy(), frame["time_to_train_days"].to_numpy())
    np.testing.assert_allclose(judged_days * 86400.0, limit_s, rtol=1e-12)
    # so a budget at one point's own figure passes it on the chart as in the search
    budget = float(limit_usd[0])
    on_chart = Limits(budget_usd=budget).feasible(frame).to_numpy()
    np.testing.assert_array_equal(on_chart, limit_usd <= budget)
