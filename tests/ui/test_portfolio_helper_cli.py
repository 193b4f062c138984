"""Session 20, helper "portfolio" (trial s19, finding 9 and section 14): a jobs file's bad model
names its job; fleet's deadline answer names the types and the GPU-count cap it searched."""

from __future__ import annotations

import json
import re

import pytest
from support import REPO
from support.cli import assert_one_line, call


def test_an_unknown_model_in_a_job_names_the_job(tmp_path):
    text = (REPO / "examples" / "portfolio.toml").read_text()
    assert 'model = "mistral-7b"' in text
    portfolio = tmp_path / "portfolio.toml"
    portfolio.write_text(text.replace('model = "mistral-7b"', 'model = "nosuch-7b"'))
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        'horizon_days = 30\nbuy = ["h100-sxm"]\n\n[[jobs]]\nname = "code-7b"\nmodel = "nosuch-7b"\ntokens = 1e9\n'
    )
    for command, jobs in (("portfolio", portfolio), ("fleet", fleet)):
        code, _, err = call(command, str(jobs))
        assert_one_line(code, err, "job 'code-7b': 'nosuch-7b' is neither a model preset nor an existing config path")


def test_fleets_deadline_answer_names_the_types_to_buy_and_the_count_cap(tmp_path):
    """'the fastest plan needs 35.0 days with the allowed inventory (no inventory limit); fix: allow
    35 days' did not say that only the bought types were searched, up to 4096 GPUs each."""
    jobs = tmp_path / "fleet.toml"
    jobs.write_text(
        'horizon_days = 60\nbuy = ["h100-sxm"]\n\n[[jobs]]\nname = "big-70b"\nmodel = "llama3-70b"\n'
        "tokens = 1e13\ndeadline_days = 10\n"
    )
    code, out, _ = call("fleet", str(jobs))
    assert code == 0  # an infeasible answer is an answer
    text = " ".join(out.split())
    assert "deadline: job 'big-70b': the fastest plan needs" in text
    assert "searched only the GPU types to buy, up to the GPU-count cap (h100-sxm<=4096)" in text
    assert "or buy another GPU type" in text


def test_the_portfolio_table_names_its_basis_and_shows_bands_and_the_envelope():
    """Trial s19, finding 9: the same job showed $49,679 in portfolio and $158,930 in estimate with
    nothing saying the first is at the owned-GPU rate and p80 days; no band, no envelope, no exact."""
    import json

    from planner.api.explore import plan_portfolio
    from ui.portfolio_file import read_jobs_file

    jobs_file = str(REPO / "examples" / "portfolio.toml")
    code, out, err = call("portfolio", jobs_file, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["exact"] is True  # 3 jobs: the continuous model
    spec = read_jobs_file(REPO / "examples" / "portfolio.toml")
    requests = spec.requests(dict(spec.inventory))
    solution = plan_portfolio(
        requests,
        spec.inventory,
        objective=spec.objective,
        horizon_days=spec.horizon_days,
        num_slots=spec.num_slots or 1,
        tco=spec.ownership.tco(),
    )
    for row, a in zip(data["assignments"], solution.assignments, strict=True):
        u = a.plan.estimate.uncertainty
        assert row["risk"] == "p80" and row["cost_basis"] == "owned-GPU rate"
        assert row["days"] == pytest.approx(u.time_to_train_h_at_risk["p80"] / 24, rel=1e-9)
        low, high = row["days_band"]
        assert low * 24 == pytest.approx(u.time_to_train_h[0]) and high * 24 == pytest.approx(u.time_to_train_h[1])
        cost_low, cost_high = row["cost_usd_band"]
        assert cost_low < row["cost_usd"] <= cost_high
        assert row["validated"] == u.validated and row["envelope"] == u.envelope
        assert row["standing"] == u.standing.value
    code, out, _ = call("portfolio", jobs_file)
    text = " ".join(out.split())
    assert (
        "days and cost at p80, the search's risk quantile; cost at the owned-GPU rate of owned types, at rent of"
        in text
    )
    first = data["assignments"][0]
    assert f"{first['days']:.1f} ({first['days_band'][0]:.1f}-{first['days_band'][1]:.1f})" in text
    assert first["standing"] in text
    assert "(exact model)" in text


def test_a_short_job_shows_its_days_and_nothing_idle_reads_zero_dollars(tmp_path):
    # Trial s21: "0.0 (0.0-0.0)" days for a half-hour job, "$0.00" of idle ownership.
    jobs = tmp_path / "jobs.toml"
    jobs.write_text(
        '[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "a"\nmodel = "gpt3-125m"\ntokens = 1e9\n'
        '[[jobs]]\nname = "b"\nmodel = "llama3-8b"\ntokens = 1e11\n'
    )
    code, out, _ = call("portfolio", str(jobs))
    assert code == 0 and "0.0 (0.0-0.0)" not in out
    assert re.search(r"│ a .*│ 0\.0\d\d \(0\.0\d\d-0\.0\d\d\) │", out), out
    assert "owned GPUs idle until the last job ends $0;" in out
    # trial s27: within a day, starts and ends in hundredths ("day 0.0" to "day 0.0" before)
    one = tmp_path / "one.toml"
    one.write_text('[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "a"\nmodel = "gpt3-125m"\ntokens = 1e9\n')
    code, out, _ = call("portfolio", str(one))
    assert (
        code == 0
        and "│ day 0.00 │ day 0.0" in out
        and "all done by day 0.0" in out
        and "day 0.0 │ day 0.0 │" not in out
    )


def test_no_table_cuts_a_band_off():
    """Trial s33: piped, the portfolio table printed "$51,501 ($39,143-$53,87…": the band, the
    figure's second half, was what the ellipsis dropped. Cells fold instead."""
    code, out, _ = call("portfolio", str(REPO / "examples" / "portfolio.toml"))
    assert code == 0 and "(" in out
    assert "…" not in out


def test_fleet_shows_each_jobs_band_keyed_as_portfolio():
    """Trial s33: fleet gave no band anywhere, and keyed start_day / end_day where portfolio keys
    start_days / end_days."""
    import json

    code, out, _ = call("fleet", str(REPO / "examples" / "fleet.toml"), "--json")
    assert code == 0
    mixed = json.loads(out)["mixed"]
    for a in mixed["assignments"]:
        assert a["end_days"] - a["start_days"] == pytest.approx(a["days"])
        low, high = a["days_band"]
        assert low < a["days"] <= high * (1 + 1e-9)
        assert a["cost_usd_band"][0] < a["cost_usd"] <= a["cost_usd_band"][1] * (1 + 1e-9)
    low, high = mixed["total_cost_usd_band"]
    assert low < mixed["total_cost_usd"] <= high * (1 + 1e-9)
    code, out, _ = call("fleet", str(REPO / "examples" / "fleet.toml"))
    first = mixed["assignments"][0]
    text = " ".join(out.split())
    assert f"{first['days']:.1f} ({first['days_band'][0]:.1f}-{first['days_band'][1]:.1f}) days" in text


def test_a_portfolios_one_failing_job_is_named_in_the_apps_answer_and_the_json(tmp_path):
    """Trial s33 (app): the warning named no job (the Chinese page nowhere); the JSON only in prose."""
    import json

    from planner.api import PlanRequest
    from planner.catalog.models import get_preset
    from ui.app_core import Infeasible
    from ui.i18n import Labels
    from ui.infeasible_words import infeasible_text

    jobs = tmp_path / "jobs.toml"
    jobs.write_text(
        '[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "small"\nmodel = "gpt3-125m"\ntokens = 1e9\n'
        '[[jobs]]\nname = "huge"\nmodel = "llama3.1-405b"\ntokens = 1e13\ndeadline_days = 5\n'
    )
    code, out, _ = call("portfolio", str(jobs), "--json")
    answer = json.loads(out)
    assert code == 0 and answer["feasible"] is False and answer["job"] == "huge"
    fields = ("constraint", "detail", "fix", "required", "available", "more_gpus_help", "job")
    request = PlanRequest(model=get_preset("llama3.1-405b"), training_tokens=1e13, deadline_days=5)
    for lang in ("en", "zh"):
        tr = Labels(lang)
        text = infeasible_text(tr, Infeasible(**{k: answer[k] for k in fields}), request)
        assert tr("job_answer", job="huge", text="")[:6] in text and "huge" in text


def test_fleet_reserves_gpus_for_the_term_under_a_reserved_price_kind(tmp_path):
    """Trial s36 and s44: at price_kind reserved-3y "rent only" read the jobs' hours at the reserved
    rate, where reserving the GPUs costs the whole term, and a warning said so beside a total that
    contradicted it. Now the option that buys nothing reserves: its total is the GPUs it reserves x
    the rate x every hour of the 3-year term, said in the table and in --json, with no warning."""
    import json

    reserved = tmp_path / "fleet.toml"
    reserved.write_text('price_kind = "reserved-3y"\n' + (REPO / "examples" / "fleet.toml").read_text())
    code, out, err = call("fleet", str(reserved), "--json")
    data = json.loads(out)
    assert code == 0 and data["warnings"] == [] and "warning" not in err
    term = data["reserved_term"]
    assert (term["kind"], term["term_years"], term["terms"]) == ("reserved-3y", 3, 1)
    reserve_only = data["rent_only"]
    assert reserve_only["rent_cost_usd"] == 0 and reserve_only["reserved"]
    assert all(a["held"] == "reserved" and a["cost_usd"] == 0 for a in reserve_only["assignments"])
    billed = sum(n * term["usd_per_gpu_hour"][g] * 3 * 365.25 * 24 for g, n in reserve_only["reserved"].items())
    assert reserve_only["reserved_cost_usd"] == pytest.approx(billed)
    assert reserve_only["total_cost_usd"] == pytest.approx(billed)
    for option in ("mixed", "buy_only"):
        assert data[option]["total_cost_usd"] <= reserve_only["total_cost_usd"]
    assert data["break_even"] == [] and {c["gpu"] for c in data["owned_vs_reserved"]} == {"h100-sxm", "a100-80gb-sxm"}
    code, out, err = call("fleet", str(reserved))
    text = " ".join(out.split())
    assert code == 0 and "warning" not in err and "rent only" not in text
    (gpu, count), *_ = reserve_only["reserved"].items()
    assert "reserve only" in text and f"{gpu}={count}" in text and "GPUs reserved" in text
    assert f"reserved terms ${reserve_only['reserved_cost_usd'] / 1e6:.2f}M" in text
    assert "reserved-3y bills whole 3-year terms: a reserved GPU is paid every hour of the whole terms its jobs" in text
    # review s44 M2: the reserved GPUs' busy share is of the days their term bills, not of the horizon
    days = reserve_only["reserved_billed_days"]
    assert days == pytest.approx(3 * 365.25) and reserve_only["reserved_terms"] == 1
    assert f"of the {days:,.0f} days their 1 term bill" in text
    assert "buying pays off above" not in text and "one reserved" in text
    code, out, _ = call("fleet", str(REPO / "examples" / "fleet.toml"), "--json")  # on demand: no term
    on_demand = json.loads(out)
    assert code == 0 and on_demand["warnings"] == [] and on_demand["reserved_term"] is None
    assert on_demand["owned_vs_reserved"] == [] and on_demand["rent_only"]["reserved"] == {}


def test_fleet_says_its_answer_is_the_slotted_approximation():
    """Trial s36: a 12-job fleet bought 76 + 64 GPUs at the default 12 slots and 64 + 64 at 24,
    and nothing said the answer was an approximation that more slots refine."""
    import json

    code, out, _ = call("fleet", str(REPO / "examples" / "fleet.toml"))
    assert code == 0
    assert "approximate: the solver starts jobs on owned GPUs at one of 12 slots of 30.4 days (num_slots" in " ".join(
        out.split()
    )
    code, out, _ = call("fleet", str(REPO / "examples" / "fleet.toml"), "--json")
    assert json.loads(out)["num_slots"] == 12


def test_fleet_says_a_horizon_past_the_gpus_life_counts_their_replacements(tmp_path):
    """Trial s36: over 10 years 4 H100 were charged $384k of depreciation against $192k "bought
    for", and nothing said the straight-line share then counts replacing them."""
    long = tmp_path / "long.toml"
    long.write_text((REPO / "examples" / "fleet.toml").read_text().replace("horizon_days = 365", "horizon_days = 3650"))
    code, out, _ = call("fleet", str(long))
    assert code == 0 and "the horizon is 2.5 lifetimes, so it counts replacing them" in " ".join(out.split())
    code, out, _ = call("fleet", str(REPO / "examples" / "fleet.toml"))
    assert code == 0 and "lifetimes" not in out


def test_fleet_charges_and_says_the_cost_of_capital_the_file_sets(tmp_path):
    """Trial s36: at 8 % the example's $3.07M outlay would add ~$0.2M a year, and neither a setting
    nor the footnote said so."""
    import json

    text = (REPO / "examples" / "fleet.toml").read_text()
    dear = tmp_path / "dear.toml"
    dear.write_text(text.replace("[[jobs]]", "[ownership]\ncost_of_capital_rate = 0.08\n[[jobs]]", 1))
    code, out, _ = call("fleet", str(REPO / "examples" / "fleet.toml"))
    assert code == 0 and "no cost of capital (cost_of_capital_rate in [ownership])" in " ".join(out.split())
    code, out, _ = call("fleet", str(dear))
    assert code == 0 and "8% a year on its average book value (cost of capital)" in " ".join(out.split())
    plain = json.loads(call("fleet", str(REPO / "examples" / "fleet.toml"), "--json")[1])["buy_only"]
    charged = json.loads(call("fleet", str(dear), "--json")[1])["buy_only"]
    if charged["purchased"] == plain["purchased"]:  # the same fleet: its capital charge, by hand
        # the 365 days of a 365.25-day year, at the default resale value
        extra = charged["purchase_usd"] * (1 + 0.2) / 2 * 0.08 * 365 / 365.25
        assert charged["ownership_cost_usd"] - plain["ownership_cost_usd"] == pytest.approx(extra, rel=1e-6)
    assert charged["total_cost_usd"] > plain["total_cost_usd"]


def test_a_folded_cell_breaks_between_words_not_inside_a_figure():
    """Trial s36: a narrow cost column printed "($38,989-$53,6" over "61)"."""
    import io

    from rich.console import Console
    from rich.table import Table

    from ui.render import add_columns, whole_words

    def rendered(table: Table) -> str:
        console = Console(file=io.StringIO(), width=60)
        console.print(table)
        return console.file.getvalue()

    def table() -> Table:
        t = add_columns(Table(), ("job", "layout", "cost p80", "basis"))
        t.add_row("chat-8b", "zero2 dp_shard=256 | mb 2 x 1 | ac none", "$51,501 ($38,989-$53,661)", "owned-GPU rate")
        return t

    assert "($38,989-$53,661)" in rendered(whole_words(table()))
    assert "($38,989-$53,661)" not in rendered(table())  # what the fold did before


def test_a_jobs_file_sets_the_risk_its_jobs_are_judged_and_scheduled_at(tmp_path):
    """Trial s36: fleet and portfolio were fixed at p80, with no --risk and no file key."""
    import json

    for command, example in (("portfolio", "portfolio.toml"), ("fleet", "fleet.toml")):
        p90 = tmp_path / example
        p90.write_text('risk = "p90"\n' + (REPO / "examples" / example).read_text())
        code, out, _ = call(command, str(p90), "--json")
        data = json.loads(out)
        jobs = data["assignments"] if command == "portfolio" else data["mixed"]["assignments"]
        assert code == 0 and {a["risk"] for a in jobs} == {"p90"}
        # at p90 each job's days are its band's slow end
        assert all(a["days"] == pytest.approx(a["days_band"][1]) for a in jobs)
    bad = tmp_path / "bad.toml"
    bad.write_text('risk = "p99"\n' + (REPO / "examples" / "portfolio.toml").read_text())
    code, _, err = call("portfolio", str(bad))
    assert_one_line(code, err, "risk: Input should be 'p50', 'p80' or 'p90'")


def test_a_jobs_files_ignored_inputs_are_said_and_its_objective_error_names_it(tmp_path):
    """Trial s36: a rented type's purchase price and an unbought type's wall power were dropped
    without a word, and a bad objective's error did not name the file."""
    text = (REPO / "examples" / "portfolio.toml").read_text()
    rented = tmp_path / "rented.toml"
    rented.write_text(
        text.replace('objective = "cost"', 'objective = "cost"\nrented = ["a100-80gb-sxm"]', 1).replace(
            "[inventory]", "[purchase_usd]\na100-80gb-sxm = 15000\n[inventory]", 1
        )
    )
    code, _, err = call("portfolio", str(rented))
    said = "a100-80gb-sxm rented: portfolio prices it at rent while busy and ignores its [purchase_usd]"
    assert code == 0 and err.count(said) == 1
    code, out, _ = call("portfolio", str(rented), "--json")  # fleet51 M2: in --json too
    assert code == 0 and said in json.loads(out)["warnings"]
    reserved = tmp_path / "reserved.toml"  # ... and under a reserved kind, whole terms, not rent while busy
    reserved.write_text(
        rented.read_text().replace('objective = "cost"', 'objective = "cost"\nprice_kind = "reserved-1y"', 1)
    )
    code, _, err = call("portfolio", str(reserved))
    assert code == 0 and "a100-80gb-sxm rented: portfolio reserves it for whole reserved-1y terms" in err
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        (REPO / "examples" / "fleet.toml")
        .read_text()
        .replace("[[jobs]]", "[ownership]\nwall_power_w = { b200 = 1000.0 }\n[[jobs]]", 1)
    )
    code, _, err = call("fleet", str(fleet))
    assert code == 0 and "fleet buys none of b200 and ignores its [ownership].wall_power_w" in err
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('objective = "cost"', 'objective = "fastest"'))
    code, _, err = call("portfolio", str(bad))
    assert_one_line(code, err, f"{bad}: objective: Input should be 'cost', 'time' or 'mix'")


def test_portfolio_says_what_its_owned_gpu_rate_rests_on():
    """Trial s36: the $48k per H100 and the ownership settings behind "owned-GPU rate 1.43" were
    nowhere in the text; now one line under the totals, and in --json."""
    import json

    code, out, _ = call("portfolio", str(REPO / "examples" / "portfolio.toml"))
    text = " ".join(out.split())
    assert code == 0 and "owned-GPU rate: a100-80gb-sxm bought at $28,000 (the catalog estimate)" in text
    assert "straight-line over 4 years to a 20% resale value, no cost of capital" in text
    code, out, _ = call("portfolio", str(REPO / "examples" / "portfolio.toml"), "--json")
    assert json.loads(out)["owned_rate_basis"].startswith("owned-GPU rate: a100-80gb-sxm bought at $28,000")


def test_portfolio_json_gives_each_job_its_own_figures_and_the_owned_rate_typed(tmp_path):
    """Buyer trial s50 L5: "jobs": [] (the infeasible answer's jobs without a plan) beside the
    "assignments" read as no jobs; an assignment had only its p80 days and cost, no model figure,
    tokens/s or MFU; and the owned-GPU rate's basis was prose alone."""
    text = (REPO / "examples" / "portfolio.toml").read_text()
    jobs = tmp_path / "portfolio.toml"
    jobs.write_text(text.replace("[inventory]", "[purchase_usd]\nh100-sxm = 30000\n[inventory]", 1))
    code, out, _ = call("portfolio", str(jobs), "--json")
    data = json.loads(out)
    assert code == 0 and "jobs" not in data and data["infeasible_jobs"] == []
    for a in data["assignments"]:
        assert a["risk"] == "p80" and 0 < a["model_days"] < a["days"]  # the quantile is over the model's figure here
        assert a["model_cost_usd"] / a["model_days"] == pytest.approx(a["cost_usd"] / a["days"])  # at one rate
        assert a["tokens_per_s"] > 0 and 0 < a["mfu"] < 1
        assert a["model_mfu"] is None or a["model_mfu"] > a["mfu"]  # the ceiling holds it below its own
    owned = data["owned_rate"]
    prices = {g["gpu"]: (g["purchase_usd"], g["purchase_usd_given"]) for g in owned["gpus"]}
    assert prices == {"a100-80gb-sxm": (28000.0, False), "h100-sxm": (30000.0, True)}
    assert owned["lifetime_years"] == 4 and owned["residual_fraction"] == 0.2 and owned["cost_of_capital_rate"] == 0
    busy = {a["gpu"]: a["cost_per_gpu_hour_usd"] for a in data["assignments"] if a["cost_basis"] == "owned-GPU rate"}
    held = {g["gpu"]: g["held_usd_per_gpu_hour"] for g in owned["gpus"]}
    assert busy and all(0 < held[gpu] < rate for gpu, rate in busy.items())  # a busy hour adds its power


def test_fleet_splits_each_bought_options_total_and_says_how_busy_its_gpus_are():
    """Trial s36: the text showed each option's total alone, and the owned price at the file's
    utilisation, not how busy the fleet's own GPUs are (81 % in the trial's year)."""
    import json

    code, out, _ = call("fleet", str(REPO / "examples" / "fleet.toml"), "--json")
    plan = json.loads(out)["buy_only"]
    owned = [a for a in plan["assignments"] if a["owned"]]
    busy = sum(a["num_gpus"] * (a["end_days"] - a["start_days"]) for a in owned) / (64 * 365)
    assert plan["purchased"]["h100-sxm"] == 64 and plan["owned_busy_fraction"] == pytest.approx(busy)
    code, out, _ = call("fleet", str(REPO / "examples" / "fleet.toml"))
    assert code == 0 and f"the 64 owned GPUs busy {busy:.0%} of the 365 days" in " ".join(out.split())
    assert plan["ownership_cost_usd"] + plan["running_cost_usd"] == pytest.approx(plan["total_cost_usd"])


def test_fleet_rents_a_type_it_may_not_buy(tmp_path):
    """Trial s36: a B200 rent quote and rented = ["b200"] were ignored, and the urgent 70B was rented
    on 1,024 H100 for $1.90M; a rented-only type is now one a rented job may run on."""
    import json

    jobs = (
        'horizon_days = 365\nbuy = ["h100-sxm"]\nrented = ["b200"]\n[rent_usd_per_gpu_hour]\nb200 = 4.50\n'
        '[[jobs]]\nname = "urgent-70b"\nmodel = "llama3-70b"\ntokens = 1e12\ndeadline_days = 20\n'
    )
    path = tmp_path / "fleet.toml"
    path.write_text(jobs)
    code, out, err = call("fleet", str(path), "--json")
    assert code == 0 and "ignores" not in err
    data = json.loads(out)
    (job,) = data["rent_only"]["assignments"]
    assert job["gpu"] == "b200" and not job["owned"]
    hours = job["num_gpus"] * (job["end_days"] - job["start_days"]) * 24
    assert job["cost_usd"] >= 4.50 * hours * 0.999  # at the file's quote (whole nodes billed)
    assert "b200" not in data["buy_only"]["purchased"]


def test_portfolio_reserves_its_rented_types_for_the_term_under_a_reserved_price_kind(tmp_path):
    """Session 44: at price_kind reserved-1y a portfolio's rented types were billed by the jobs'
    hours at the reserved rate, while a warning said the term costs far more; the GPUs reserved and
    their term's bill are now the answer's, in the text and in --json, with no such warning. The
    file's own portfolio, on demand, says nothing of reservations."""
    reserved = tmp_path / "reserved.toml"
    example = (REPO / "examples" / "portfolio.toml").read_text()
    # the H100s alone, rented: by the job-hour the jobs ran side by side on 44 of them
    reserved.write_text(
        'price_kind = "reserved-1y"\nrented = ["h100-sxm"]\n' + example.replace("a100-80gb-sxm = 64\n", "")
    )
    code, out, err = call("portfolio", str(reserved), "--json")
    assert code == 0, err
    data = json.loads(out)
    (r,) = data["reserved"]
    assert (r["kind"], r["term_years"], r["terms"]) == ("reserved-1y", 1, 1)
    assert r["cost_usd"] == pytest.approx(r["num_gpus"] * r["usd_per_gpu_hour"] * 365.25 * 24)
    on_it = [a for a in data["assignments"] if a["gpu"] == r["gpu"]]
    assert r["num_gpus"] >= max(a["num_gpus"] for a in on_it)
    assert r["used_usd"] == pytest.approx(sum(a["cost_usd"] for a in on_it))
    assert {a["cost_basis"] for a in on_it} == {"reserved (reserved-1y)"}
    assert data["billed_usd"] == pytest.approx(data["total_cost_usd"] + data["idle_cost_usd"] + r["idle_usd"])
    assert not [w for w in data["warnings"] if "term" in w]
    low, high = data["makespan_band_days"]  # the bands' schedules hold the GPUs reserved, not the cap
    assert low <= data["makespan_days"] <= high
    code, out, err = call("portfolio", str(reserved))
    assert code == 0 and "term" not in err
    text = " ".join(out.split())
    assert f"reserved: {r['num_gpus']} x {r['gpu']} for 1 one-year term at ${r['usd_per_gpu_hour']:,.2f}" in text
    assert "a reserved GPU is paid every hour of its term, busy or idle" in text
    assert f"billed in all ${data['billed_usd'] / 1e6:.2f}M" in text
    code, out, _ = call("portfolio", str(REPO / "examples" / "portfolio.toml"), "--json")
    on_demand = json.loads(out)
    assert code == 0 and on_demand["reserved"] == [] and on_demand["reserved_cost_usd"] == 0
    assert on_demand["billed_usd"] == pytest.approx(on_demand["total_cost_usd"] + on_demand["idle_cost_usd"])
    assert "reserved" not in call("portfolio", str(REPO / "examples" / "portfolio.toml"))[1]
