"""Trial s51 M1: a portfolio with horizon_days said what its jobs cost and its GPUs idled until the
last job ended, never what holding the owned inventory to the horizon costs nor how busy it is
over it (fleet says both). The holding cost is the owned GPUs' held rate F_g over the days after the
makespan, so the bill to the horizon is fleet's count of an owned GPU: F_g every hour held, v_g more
every busy hour."""

from __future__ import annotations

import json

import pytest
from support.cli import call

HORIZON_DAYS = 60.0
INVENTORY = {"h100-sxm": 16}


@pytest.fixture(scope="module")
def portfolio():
    from planner.api import PlanRequest
    from planner.api.explore import plan_portfolio
    from planner.catalog.models import get_preset

    requests = {
        "one": PlanRequest(model=get_preset("llama3.2-1b"), training_tokens=2e10, gpus=INVENTORY),
        "two": PlanRequest(model=get_preset("gpt3-350m"), training_tokens=1e10, gpus=INVENTORY),
    }
    return plan_portfolio(requests, INVENTORY, horizon_days=HORIZON_DAYS)


def _holding(portfolio):
    from planner.api.portfolio import horizon_holding, job_figures, portfolio_bands

    figures = [job_figures(a) for a in portfolio.assignments]
    return horizon_holding(portfolio, figures, portfolio_bands(portfolio, figures)), figures


def test_the_bill_to_the_horizon_counts_each_owned_gpu_hour_as_fleet_does(portfolio):
    """jobs + idle before M + holding after M = 24 H sum_g F_g inv_g + sum_jobs v_g n T: every owned
    GPU-hour of the horizon at F_g, every busy one v_g more (fleet's F_g b_g + busy power)."""
    from planner.api.explore import owned_rates
    from planner.catalog.hardware import load_catalog
    from planner.model.settings import DEFAULT_SETTINGS
    from planner.search.ownership import TcoAssumptions

    held, _ = _holding(portfolio)
    rate = owned_rates(load_catalog(), INVENTORY, TcoAssumptions(), DEFAULT_SETTINGS)["h100-sxm"]
    makespan_days = portfolio.makespan_s / 86_400
    assert makespan_days < HORIZON_DAYS
    assert held.holding_usd == pytest.approx(rate.held_usd_per_gpu_hour * 24 * 16 * (HORIZON_DAYS - makespan_days))
    busy_hours = sum(a.num_gpus * (a.end_s - a.start_s) / 3600 for a in portfolio.assignments)
    fleet_count = rate.held_usd_per_gpu_hour * 24 * 16 * HORIZON_DAYS + rate.busy_usd_per_gpu_hour * busy_hours
    assert held.billed_usd == pytest.approx(fleet_count, rel=1e-9)
    assert held.billed_usd == pytest.approx(portfolio.billed_usd + held.holding_usd)
    assert held.owned_busy_fraction == pytest.approx(busy_hours / (16 * 24 * HORIZON_DAYS))


def test_the_holding_and_busy_share_carry_the_jobs_bands(portfolio):
    held, figures = _holding(portfolio)
    low, high = held.owned_busy_fraction_band
    assert low < held.owned_busy_fraction <= high
    lo_usd, hi_usd = held.holding_band_usd  # an earlier end holds the GPUs idle longer
    assert lo_usd <= held.holding_usd <= hi_usd and lo_usd < hi_usd
    fast = sum(a.num_gpus * f.days_band[0] for a, f in zip(portfolio.assignments, figures, strict=True))
    assert low == pytest.approx(fast / (16 * HORIZON_DAYS))


def test_no_horizon_no_holding(portfolio):
    from dataclasses import replace

    held, _ = _holding(replace(portfolio, horizon_days=None))
    assert held is None


def test_portfolio_says_and_gives_the_holding_to_the_horizon(tmp_path):
    jobs = tmp_path / "p.toml"
    jobs.write_text(
        'horizon_days = 60\n[inventory]\nh100-sxm = 16\n\n[[jobs]]\nname = "one"\nmodel = "llama3.2-1b"\n'
        'tokens = 2e10\n\n[[jobs]]\nname = "two"\nmodel = "gpt3-350m"\ntokens = 1e10\n'
    )
    code, out, err = call("portfolio", str(jobs), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["horizon_days"] == 60
    assert data["billed_to_horizon_usd"] == pytest.approx(data["billed_usd"] + data["holding_to_horizon_usd"])
    assert data["holding_to_horizon_usd"] > 0 and 0 < data["owned_busy_fraction"] < 1
    code, out, err = call("portfolio", str(jobs))
    text = " ".join(out.split())
    assert "to the horizon (horizon_days 60): the owned GPUs held idle from day" in text
    assert f"billed to day 60 ${data['billed_to_horizon_usd']:,.0f}" in text
    jobs.write_text(jobs.read_text().replace("horizon_days = 60\n", ""))
    code, out, err = call("portfolio", str(jobs), "--json")
    data = json.loads(out)
    assert data["horizon_days"] is None and data["holding_to_horizon_usd"] is None
    assert data["billed_to_horizon_usd"] is None
