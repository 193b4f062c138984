"""The prices a fleet and a portfolio rent or reserve at, said with where they come from as plan says
its own, and their warnings (trial s48 H1, M4; ui/render_fleet.py, ui/render_portfolio.py)."""

import json

from planner.catalog.hardware import load_catalog
from planner.catalog.held_price import rate_words
from planner.catalog.prices import PriceBasis
from planner.search.held_warnings import JOBS_FILE_QUOTE
from ui.cli import main

CATALOG = load_catalog()
# one provider's rate (TensorWave), no median of offers behind it: the case trial s48 found
ONE_OFFER = rate_words(CATALOG.gpu("mi325x").price_per_gpu_hour_usd, PriceBasis.ONE_OFFER)
JOB = '[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 1e11\ndeadline_days = 30\n'


def run(capsys, *args: str) -> tuple[str, str]:
    assert main(list(args)) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_a_fleet_that_rents_on_one_providers_rate_says_so_and_warns(tmp_path, capsys):
    """Trial s48 H1: the whole rent-only answer rested on MI325X at TensorWave's one rate; the text
    had no mark and the JSON no basis. Every rate is said as plan says its price, and the chosen
    (mixed) answer's jobs on such a rate are warned of."""
    assert CATALOG.gpu("mi325x").price_basis is PriceBasis.ONE_OFFER  # the case below rests on it
    jobs = tmp_path / "fleet.toml"
    jobs.write_text(f'horizon_days = 365\nbuy = ["h100-sxm", "mi325x"]\n{JOB}')
    data = json.loads(run(capsys, "fleet", str(jobs), "--json")[0])
    bases = {b["gpu"]: b["price_basis"] for b in data["break_even"]}
    assert bases == {"h100-sxm": "catalog", "mi325x": "one-offer"}
    rented = [a for a in data["mixed"]["assignments"] if a["held"] == "rented"]
    assert rented and all(a["price_basis"] == bases[a["gpu"]] for a in rented)
    assert all(a["price_basis"] is None for a in data["mixed"]["assignments"] if a["owned"])
    # the cheapest answer for a short job rents its cheapest rate, the one provider's (the trial's case)
    assert sorted(a["job"] for a in rented if a["gpu"] == "mi325x") == ["a"]
    warned = [w for w in data["warnings"] if ONE_OFFER in w]
    assert warned == [
        f"the mixed answer rents mi325x at {ONE_OFFER} for a: its cost rests on that price; {JOBS_FILE_QUOTE}"
    ]
    out, err = run(capsys, "fleet", str(jobs))
    assert f"mi325x at {ONE_OFFER}" in out.replace("\n", " ") and warned[0] in err.replace("\n", " ")


def test_a_fleets_own_rent_quote_is_its_users_and_not_warned_of(tmp_path, capsys):
    """The file's [rent_usd_per_gpu_hour] is the user's price ('your price'): no warning."""
    jobs = tmp_path / "fleet.toml"
    jobs.write_text(f'horizon_days = 365\nbuy = ["mi325x"]\n[rent_usd_per_gpu_hour]\nmi325x = 2.5\n{JOB}')
    data = json.loads(run(capsys, "fleet", str(jobs), "--json")[0])
    assert [b["price_basis"] for b in data["break_even"]] == ["user"] and data["warnings"] == []


def test_a_reserved_fleet_warns_of_each_type_priced_above_on_demand_once(tmp_path, capsys):
    """Trial s48 M4: "reserve only $7.34M" at H100 reserved-1y $6.55/h, 29 % over on-demand, without
    the warning plan gives; each type the fleet prices is warned of once, with the file's fix."""
    jobs = tmp_path / "fleet.toml"
    jobs.write_text(f'horizon_days = 365\nprice_kind = "reserved-1y"\nbuy = ["h100-sxm"]\n{JOB}')
    data = json.loads(run(capsys, "fleet", str(jobs), "--json")[0])
    (dearer,) = [w for w in data["warnings"] if "above its on-demand median" in w]
    assert dearer.startswith("reserved-1y prices h100-sxm at $") and dearer.endswith(JOBS_FILE_QUOTE)
    assert data["reserved_term"]["price_basis"] == {"h100-sxm": "reserved-1y"}
    out, err = run(capsys, "fleet", str(jobs))
    assert "reserved-1y rate per GPU-hour: h100-sxm at $" in out and dearer in err.replace("\n", " ")


def test_a_portfolio_that_rents_on_one_providers_rate_says_so_and_warns(tmp_path, capsys):
    """Trial s48 H1, portfolio's rented rows: the basis is in --json, the rate under the table, and
    the job priced on it is warned of."""
    jobs = tmp_path / "portfolio.toml"
    jobs.write_text(f'horizon_days = 60\nrented = ["mi325x"]\n[inventory]\nmi325x = 64\n{JOB}')
    data = json.loads(run(capsys, "portfolio", str(jobs), "--json")[0])
    (row,) = data["assignments"]
    assert row["gpu"] == "mi325x" and row["price_basis"] == "one-offer"
    expected = f"the portfolio rents mi325x at {ONE_OFFER} for a: its cost rests on that price; {JOBS_FILE_QUOTE}"
    assert expected in data["warnings"]
    out, err = run(capsys, "portfolio", str(jobs))
    assert f"rent per GPU-hour: mi325x at {ONE_OFFER}" in out.replace("\n", " ")
    assert expected in err.replace("\n", " ")


def test_the_cli_says_the_records_words_as_before_they_were_records(tmp_path, capsys):
    """App49: the warnings became typed records (planner/search/held_warnings.py) the app words in its
    page's language; the CLI's words stay those it printed before, pinned here in full."""
    rate = f"${CATALOG.gpu('mi325x').price_per_gpu_hour_usd:,.2f}/GPU-h"
    jobs = tmp_path / "portfolio.toml"
    jobs.write_text(f'horizon_days = 60\nrented = ["mi325x"]\n[inventory]\nmi325x = 64\n{JOB}')
    _, err = run(capsys, "portfolio", str(jobs))
    assert (
        f"trainplan: warning: the portfolio rents mi325x at {rate} (one provider's listed rate, not a median of"
        " offers) for a: its cost rests on that price; [rent_usd_per_gpu_hour] in the jobs file sets your own quote"
    ) in err.replace("\n", " ")
