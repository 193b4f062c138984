"""The fleet file's rent price and ownership inputs (ui/portfolio_file.py, issue 28)."""

from pathlib import Path

import pytest

from planner.api.fleet import plan_fleet
from planner.catalog.hardware import load_catalog
from planner.model.energy import energy_usd
from planner.search.fleet import Holding
from planner.search.ownership import TcoAssumptions
from planner.units import HOURS_PER_YEAR, MONTHS_PER_YEAR
from ui.fleet_inputs import fleet_options, purchase_prices
from ui.portfolio_file import read_jobs_file

BASE = """
horizon_days = 30
num_slots = 2
buy = ["h100-sxm"]
{tables}
[[jobs]]
name = "small"
model = "gpt3-125m"
tokens = 1e10
"""
FILE = BASE.format(
    tables="""
[rent_usd_per_gpu_hour]
h100-sxm = 2.4
[ownership]
lifetime_years = 5.0
electricity_usd_per_kwh = 0.08
staff_usd_per_gpu_month = 40.0
utilisation = 0.7
wall_power_w = { h100-sxm = 1100.0 }
"""
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return path


def test_the_fleet_file_takes_rent_and_ownership(tmp_path: Path) -> None:
    spec = read_jobs_file(write(tmp_path, FILE))
    catalog = load_catalog()
    options = fleet_options(spec, catalog)
    tco = options["tco"]
    assert tco == TcoAssumptions(lifetime_years=5.0, electricity_usd_per_kwh=0.08, staff_usd_per_gpu_month=40.0)
    assert options["rent_usd_per_gpu_hour"] == {"h100-sxm": 2.4}
    assert options["wall_power_w"] == {"h100-sxm": 1100.0}
    # the jobs rent at the file's price too
    assert spec.requests({"h100-sxm": None})["small"].price_overrides == {"h100-sxm": 2.4}
    prices = purchase_prices(spec, catalog)
    solution = plan_fleet(spec.requests({g: None for g in prices}), prices, 30, num_slots=2, **options)
    (b,) = solution.break_even
    assert b.rent_usd_per_gpu_hour == 2.4
    assert b.owned_usd_per_busy_hour == pytest.approx(
        (1 - tco.idle_power_fraction) * energy_usd(1, 1100, tco.pue, 0.08)
    )
    hours = 30 * 24
    monthly = (150.0 + 40.0) * hours / (HOURS_PER_YEAR / MONTHS_PER_YEAR)
    depreciation = 48_000 * 0.8 * hours / (5 * HOURS_PER_YEAR)
    idle = tco.idle_power_fraction * energy_usd(hours, 1100, tco.pue, 0.08)
    assert b.owned_fixed_usd == pytest.approx(depreciation + monthly + idle)
    rented = [a for a in solution.rent_only.assignments if a.holding is Holding.RENTED]
    assert rented and all(a.cost_usd > 0 for a in rented)


def test_without_ownership_inputs_the_defaults_hold(tmp_path: Path) -> None:
    spec = read_jobs_file(write(tmp_path, BASE.format(tables="")))
    options = fleet_options(spec, load_catalog())
    assert options["tco"] == TcoAssumptions()
    assert options["rent_usd_per_gpu_hour"] == {"h100-sxm": load_catalog().gpu("h100-sxm").price_per_gpu_hour_usd}


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("staff_usd_per_gpu_month = -1.0", "staff_usd_per_gpu_month"),
        ("utilisation = 0.0", "utilisation"),
        ("lifetime_years = 0.0", "lifetime_years"),
        ("pue = 0.5", "pue"),
        ("capex = 1.0", "capex"),
    ],
)
def test_ownership_inputs_are_bounded(tmp_path: Path, line: str, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        read_jobs_file(write(tmp_path, BASE.format(tables=f"[ownership]\n{line}\n")))


def test_a_rent_price_is_bounded(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="rent_usd_per_gpu_hour"):
        read_jobs_file(write(tmp_path, BASE.format(tables="[rent_usd_per_gpu_hour]\nh100-sxm = -2.4\n")))


@pytest.mark.parametrize(
    ("tables", "job_line", "allowed"),
    [
        (
            "",
            "tokenz = 1e9",
            "(the 1st [[jobs]]): tokenz: Extra inputs are not permitted; allowed: name, model, tokens,",
        ),
        ("[ownership]\nlifetime = 5.0\n", "", "ownership.lifetime: Extra inputs are not permitted; allowed: "),
        ("", "", "horizon: Extra inputs are not permitted; allowed: horizon_days, num_slots,"),
    ],
)
def test_an_unknown_key_names_the_keys_its_table_takes(tmp_path: Path, tables: str, job_line: str, allowed: str):
    # Trial s21: "Extra inputs are not permitted", and nothing on what is.
    text = BASE.format(tables=tables) + job_line + "\n"
    if not tables and not job_line:
        text = "horizon = 3\n" + text
    with pytest.raises(ValueError) as caught:
        read_jobs_file(write(tmp_path, text))
    assert allowed in str(caught.value)


def test_the_fleet_table_says_the_quantile_its_totals_are_at(tmp_path, capsys):
    """Trial s38: the 'total' column was the p80 cost, where plan's headline for the job is its own figure."""
    from ui.cli import main

    jobs = tmp_path / "f.toml"
    jobs.write_text('horizon_days = 365\nbuy = ["h100-sxm"]\n[[jobs]]\nname="a"\nmodel="llama3-8b"\ntokens=1e11\n')
    assert main(["fleet", str(jobs)]) == 0
    assert "total at p80" in capsys.readouterr().out


def test_jobs_run_the_files_stack_and_precision_unless_they_name_their_own(tmp_path, capsys):
    """Trial s42 M4: `fleet` and `portfolio` refused a `stack` key, so a team on Megatron-Core or
    DeepSpeed was sized for trainplan's FSDP2. The file's stack and precision hold for every job,
    a job's own override it; each job is searched under its stack's profile; and --emit, which
    writes trainplan jobs, refuses another stack's plans up front."""
    from planner.api.explore import plan_portfolio
    from planner.layout import Precision
    from planner.model.stacks import Stack
    from ui.cli import main

    text = (
        'stack = "megatron-core"\nprecision = "fp8"\n[inventory]\nh100-sxm = 64\n'
        '[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 1e10\n'
        '[[jobs]]\nname = "b"\nmodel = "llama3-8b"\ntokens = 1e10\nstack = "deepspeed"\nprecision = "bf16"\n'
    )
    path = write(tmp_path, text)
    requests = read_jobs_file(path).requests(None)
    assert (requests["a"].stack, requests["a"].precision) == (Stack.MEGATRON_CORE, Precision.FP8)
    assert (requests["b"].stack, requests["b"].precision) == (Stack.DEEPSPEED, Precision.BF16)
    solution = plan_portfolio(requests, {"h100-sxm": 64})
    stacks = {a.job: a.plan.stack for a in solution.assignments}
    assert stacks == {"a": Stack.MEGATRON_CORE, "b": Stack.DEEPSPEED}
    # each under its own profile (not trainplan's, whose loss is chunked): Megatron's vocab-parallel
    # cross-entropy holds 6 B a logit, Hugging Face's unchunked loss under DeepSpeed 12
    loss = {a.job: a.plan.estimate.memory for a in solution.assignments}
    assert (loss["a"].loss_bytes_per_logit, loss["b"].loss_bytes_per_logit) == (6.0, 12.0)
    assert loss["a"].loss_chunk_tokens == loss["b"].loss_chunk_tokens == 0
    assert main(["portfolio", str(path), "--emit", str(tmp_path / "jobs")]) == 2
    assert "--emit writes trainplan jobs; stack deepspeed, megatron-core is estimate-only" in capsys.readouterr().err


def test_owned_against_reserved_words_in_between_the_ends():
    """Review s44 M4: the verdict and the per-busy-hour line between the ends, from one record."""
    from planner.search.reserved import OwnedVsReserved
    from planner.units import HOURS_PER_YEAR
    from ui.render_fleet import owned_vs_reserved_json, owned_vs_reserved_words

    c = OwnedVsReserved("a100", 5000.0, 1.0, 9000.0, 9000.0 / HOURS_PER_YEAR, HOURS_PER_YEAR, 1)
    data = owned_vs_reserved_json(c, 0.7)
    words = owned_vs_reserved_words(
        data, {"kind": "reserved-1y", "terms": 1, "term_years": 1, "filled": 0.0}, 365.25, 0.7
    )
    assert "buying is cheaper below 46% busy (its power is extra), reserving above" in words
    owned, reserved = c.per_busy_hour(0.7)
    assert f"at 70% busy: owned ${owned:,.2f} per busy GPU-hour, reserved ${reserved:,.2f}" in words
    assert "past the horizon" not in words  # one 1-year term over 365.25 days: like for like
    longer = owned_vs_reserved_words(
        data, {"kind": "reserved-3y", "terms": 1, "term_years": 3, "filled": 0.0}, 365.25, None
    )
    assert "terms run 730 days past the horizon and are charged here" in longer  # review s44 M1


def test_a_fleet_file_says_what_share_of_a_reserved_term_other_work_fills(tmp_path: Path) -> None:
    """Review s44 M1: a fleet's jobs file could not say term_filled, so a 3-year term against a
    30-day horizon was billed whole; it takes plan's --term-filled, and refuses it without a
    reserved kind in the file's words."""
    reserved = 'price_kind = "reserved-3y"\n'
    bills = {}
    for filled in (0.0, 0.5):
        spec = read_jobs_file(write(tmp_path, f"term_filled = {filled}\n{reserved}" + BASE.format(tables="")))
        catalog = load_catalog()
        prices = purchase_prices(spec, catalog)
        solution = plan_fleet(
            spec.requests({g: None for g in prices}), prices, 30, num_slots=2, **fleet_options(spec, catalog)
        )
        assert solution.reserved is not None and solution.reserved.term.filled == filled
        bills[filled] = solution.rent_only.total_cost_usd
    assert bills[0.5] < bills[0.0]
    with pytest.raises(ValueError, match='term_filled applies to a reserved term: set price_kind = "reserved-1y"'):
        read_jobs_file(write(tmp_path, "term_filled = 0.5\n" + BASE.format(tables="")))


def test_a_type_to_buy_with_no_offer_of_the_reserved_kind_is_bought_only(tmp_path: Path) -> None:
    """Review s44 M5: `buy` naming a type that no offer of the file's reserved kind rents refused the
    whole fleet ("no reserved-1y price for b200"), though buying it needs no rent. It is bought or not
    held, and the answer says so, in text and JSON."""
    from planner.catalog.prices import offers_of
    from ui.render_fleet import fleet_json, held_only_words

    catalog = load_catalog()
    unlisted = next(g.id for g in catalog.gpus.values() if g.purchase_price_usd and not offers_of(g, "reserved-1y"))
    text = BASE.format(tables="").replace('buy = ["h100-sxm"]', f'buy = ["h100-sxm", "{unlisted}"]')
    spec = read_jobs_file(write(tmp_path, 'price_kind = "reserved-1y"\n' + text))
    prices = purchase_prices(spec, catalog)
    solution = plan_fleet(
        spec.requests({g: None for g in prices}), prices, 30, num_slots=2, **fleet_options(spec, catalog)
    )
    assert solution.reserved is not None and solution.held_only == frozenset({unlisted})
    assert set(solution.reserved.usd_per_gpu_hour) == {"h100-sxm"}
    assert solution.rent_only is not None and unlisted not in solution.rent_only.reserved
    data = fleet_json(solution, utilisation=None, risks={})
    assert data["held_only"] == [unlisted]
    assert held_only_words(data["held_only"]).startswith(f"{unlisted}: no offer of the jobs' price kind")
    # a given rate reserves it
    quoted = text.replace("{tables}", "") + f"\n[rent_usd_per_gpu_hour]\n{unlisted} = 3.0\n"
    spec = read_jobs_file(write(tmp_path, 'price_kind = "reserved-1y"\n' + quoted))
    solution = plan_fleet(
        spec.requests({g: None for g in prices}), prices, 30, num_slots=2, **fleet_options(spec, catalog)
    )
    assert solution.reserved is not None and solution.held_only == frozenset()
    assert solution.reserved.usd_per_gpu_hour[unlisted] == 3.0


def test_a_held_type_with_no_offer_of_the_kind_is_held_under_spot_and_in_a_portfolio(tmp_path: Path) -> None:
    """Review s45 M1: the reserved-kind fix left two refusals of the same kind. A spot fleet buying a type
    with no spot offer ("no spot price for ..."), and a portfolio holding one in its inventory at a
    reserved or spot kind: both now hold it at its ownership, never rent it, and say so (fleet)."""
    from planner.api.explore import plan_portfolio
    from planner.catalog.prices import offers_of
    from ui.render_fleet import fleet_json

    catalog = load_catalog()
    unlisted = next(
        g.id
        for g in catalog.gpus.values()
        if g.purchase_price_usd and not offers_of(g, "spot") and g.memory_bytes > 40e9
    )
    text = BASE.format(tables="").replace('buy = ["h100-sxm"]', f'buy = ["h100-sxm", "{unlisted}"]')
    spec = read_jobs_file(write(tmp_path, 'price_kind = "spot"\n' + text))
    prices = purchase_prices(spec, catalog)
    solution = plan_fleet(
        spec.requests({g: None for g in prices}), prices, 30, num_slots=2, **fleet_options(spec, catalog)
    )
    assert solution.held_only == frozenset({unlisted}) and [b.gpu_id for b in solution.break_even] == ["h100-sxm"]
    for option in (solution.mixed, solution.rent_only, solution.buy_only):
        assert option is None or all(a.gpu_id != unlisted or a.holding is Holding.OWNED for a in option.assignments)
    assert fleet_json(solution, utilisation=None, risks={})["held_only"] == [unlisted]
    for kind in ("spot", "reserved-1y"):
        spec = read_jobs_file(write(tmp_path, f'price_kind = "{kind}"\n' + text))
        requests = spec.requests({"h100-sxm": 8, unlisted: 8})
        held = plan_portfolio(requests, {"h100-sxm": 8, unlisted: 8}, purchase_usd={unlisted: 30_000.0})
        assert held.assignments  # was: "no spot price for ..."


def test_fleet_json_carries_the_files_own_warnings(tmp_path, capsys):
    """fleet51 M2: a deadline past the horizon and a budget fleet ignores were said on stderr, and
    --json's warnings were []; portfolio's JSON has carried its file's warnings since trial s28c."""
    import json

    from ui.cli import main

    path = write(
        tmp_path,
        'horizon_days = 90\nbuy = ["h100-sxm"]\n\n[[jobs]]\nname = "chat-8b"\nmodel = "llama3-8b"\n'
        "tokens = 2e11\ndeadline_days = 120\nbudget_usd = 1e6\n",
    )
    assert main(["fleet", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    warnings = json.loads(captured.out)["warnings"]
    assert any("past horizon_days" in w for w in warnings), warnings
    assert any("ignores" in w and "budget_usd" in w for w in warnings), warnings
    assert main(["fleet", str(path)]) == 0
    err = capsys.readouterr().err
    assert err.count("past horizon_days") == 1  # said once, not once before the solve and again after


def test_an_owned_types_wall_power_is_read_not_warned_of_as_ignored(tmp_path):
    """review51: with [inventory] (GPUs owned, trial s51 H1) fleet powers those GPUs, so their
    [ownership].wall_power_w is read; the warning that it is ignored stays for a type neither
    bought nor owned."""
    from ui.cli_portfolio import fleet_ignored

    spec = read_jobs_file(
        write(
            tmp_path,
            'horizon_days = 90\nbuy = ["h100-sxm"]\n[inventory]\na100-80gb-sxm = 8\n[ownership]\n'
            'wall_power_w = { a100-80gb-sxm = 500.0, b200 = 1200.0 }\n\n[[jobs]]\nname = "a"\nmodel = "llama3-8b"\n'
            "tokens = 1e10\n",
        )
    )
    (said,) = [w for w in fleet_ignored(spec, {"h100-sxm": 25000.0}) if "wall_power_w" in w]
    assert said == "fleet buys none of b200 and ignores its [ownership].wall_power_w"


def test_fleet_says_what_it_assumes_beyond_its_figures(capsys):
    """Trial s51 L3: no lead time, capacity always there and a job on one kind of GPU were said only
    in docs/ilp.md."""
    from ui.cli import main

    assert main(["fleet", str(Path(__file__).resolve().parents[2] / "examples" / "fleet.toml")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no lead time" in out and "capacity is there whenever a job starts" in out


def test_fleet_says_when_it_raises_one_slot_to_two(capsys):
    """overrides51: fleet --num-slots 1 (or num_slots = 1) ran at 2 slots, said only by --json's num_slots."""
    import json

    from ui.cli import main

    fleet = str(Path(__file__).resolve().parents[2] / "examples" / "fleet.toml")
    assert main(["fleet", fleet, "--num-slots", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (
        data["num_slots"] == 2 and "num_slots 1 raised to 2: fleet needs at least two start slots" in data["warnings"]
    )
