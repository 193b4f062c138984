"""Trial s51 M3, M4: fleet --json gave none of the ownership assumptions its text states, its jobs'
``cost_usd`` meant busy power where portfolio's meant GPU-hours at the full owned rate, and its
rent-vs-buy answer named one median rent with no range and no rent where it flips."""

from __future__ import annotations

import json

import pytest
from support.cli import call

OWNERSHIP = (
    "[purchase_usd]\nh100-sxm = 38000\n\n[ownership]\nhosting_usd_per_gpu_month = 220\nlifetime_years = 5\n"
    "residual_fraction = 0.1\ncost_of_capital_rate = 0.08\nelectricity_usd_per_kwh = 0.13\n\n"
)
JOBS = '[[jobs]]\nname = "one"\nmodel = "llama3.2-1b"\ntokens = 2e10\n'


def run_json(tmp_path, command: str, head: str) -> dict:
    jobs = tmp_path / f"{command}.toml"
    jobs.write_text(head + OWNERSHIP + JOBS)
    code, out, err = call(command, str(jobs), "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return run_json(tmp_path_factory.mktemp("fleet"), "fleet", "horizon_days = 30\nnum_slots = 3\n")


def test_fleet_gives_portfolios_typed_owned_rate(fleet, tmp_path):
    """The same object from the same function: the same purchase price, held rate and settings."""
    portfolio = run_json(tmp_path, "portfolio", "horizon_days = 30\n[inventory]\nh100-sxm = 8\n\n")
    assert fleet["owned_rate"] == portfolio["owned_rate"]
    (gpu,) = fleet["owned_rate"]["gpus"]
    assert gpu["gpu"] == "h100-sxm" and gpu["purchase_usd"] == 38000 and gpu["purchase_usd_given"] is True
    assert fleet["owned_rate"]["lifetime_years"] == 5 and fleet["owned_rate"]["cost_of_capital_rate"] == 0.08
    # F_g per hour is what an option's ownership cost charges each GPU bought, every hour of the horizon
    buy = fleet["buy_only"]
    bought = buy["purchased"]["h100-sxm"]
    assert buy["ownership_cost_usd"] == pytest.approx(gpu["held_usd_per_gpu_hour"] * bought * 30 * 24, rel=1e-9)


def test_fleet_jobs_say_whether_their_cost_is_busy_power_or_rent(fleet):
    rows = [a for key in ("buy_only", "rent_only") for a in fleet[key]["assignments"]]
    assert {a["held"] for a in rows} == {"owned", "rented"}
    for a in rows:
        owned = a["held"] == "owned"
        assert a["busy_power_usd"] == (a["cost_usd"] if owned else None)
        assert a["rent_usd"] == (None if owned else a["cost_usd"])


def test_fleet_gives_the_break_even_rent_and_the_offers_range(fleet, tmp_path):
    (b,) = fleet["break_even"]
    rent = b["break_even_rent_usd_per_gpu_hour"]
    option = fleet[b["break_even_rent_option"]]
    hours = 30 * 24
    u = b["break_even_rent_busy_fraction"]
    assert rent == pytest.approx(b["owned_fixed_usd"] / (u * hours) + b["busy_power_usd_per_gpu_hour"])
    busy = sum(a["num_gpus"] * a["days"] for a in option["assignments"] if a["held"] == "owned")
    assert u == pytest.approx(busy / (option["purchased"]["h100-sxm"] * 30))
    offers = b["rent_offers"]
    assert offers["kind"] == "on-demand" and offers["count"] > 1
    assert offers["low_usd_per_gpu_hour"] <= b["rent_usd_per_gpu_hour"] <= offers["high_usd_per_gpu_hour"]
    jobs = tmp_path / "fleet.toml"
    jobs.write_text("horizon_days = 30\nnum_slots = 3\n" + OWNERSHIP + JOBS)
    code, out, err = call("fleet", str(jobs))
    assert code == 0, err
    text = " ".join(out.split())
    assert f"renting beats buying below ${rent:,.2f} per GPU-hour" in text
    low, high = offers["low_usd_per_gpu_hour"], offers["high_usd_per_gpu_hour"]
    assert f"the catalog's {offers['count']} on-demand offers run ${low:,.2f}-${high:,.2f}" in text
