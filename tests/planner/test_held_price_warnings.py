"""A many-job answer's price warnings as typed records (app49): the planner gives what the warning
is of (the type, how the jobs hold it, its price and basis, the jobs), and the CLI's words come from
the record, so the app can say the same thing in its page's language."""

from __future__ import annotations

from planner.api.explore import plan_portfolio
from planner.api.fleet import plan_fleet
from planner.api.held_prices import held_price_warnings, portfolio_held_prices
from planner.catalog.hardware import load_catalog
from planner.catalog.held_price import HeldPrice
from planner.catalog.models import get_preset
from planner.catalog.prices import PriceBasis
from planner.request import PlanRequest
from planner.search.fleet_plan import Holding
from planner.search.held_warnings import JOBS_FILE_QUOTE, DearerHeldPrice, EstimatedHeldPrice, ManyJobAnswer

CATALOG = load_catalog()


def job(**changes) -> PlanRequest:
    """A small job (gpt3-125m at 20 tokens per parameter): each answer below solves in seconds."""
    model = get_preset("gpt3-125m")
    return PlanRequest(model=model, training_tokens=20 * model.num_params(), seq_len=2048, **changes)


def test_a_portfolio_renting_on_one_providers_rate_gives_its_record():
    """Trial s48 H1's case: MI325X at TensorWave's one rate. The record names the answer, how it
    holds the type, the price with its basis and the jobs; its words are the CLI's warning."""
    requests = {"a": job(gpus={"mi325x": None}), "b": job(gpus={"mi325x": None})}
    solution = plan_portfolio(requests, {"mi325x": 8}, rented=frozenset({"mi325x"}), catalog=CATALOG)
    prices, warnings = portfolio_held_prices(solution, requests, CATALOG)
    (warning,) = warnings
    assert isinstance(warning, EstimatedHeldPrice)
    assert warning.answer is ManyJobAnswer.PORTFOLIO and warning.holding is Holding.RENTED
    assert warning.price == prices["mi325x"] and warning.price.basis is PriceBasis.ONE_OFFER
    assert warning.gpu == "mi325x" and warning.jobs == ("a", "b")
    assert warning.words() == (
        f"the portfolio rents {prices['mi325x'].words()} for a, b: its cost rests on that price; {JOBS_FILE_QUOTE}"
    )


def test_a_fleet_priced_above_on_demand_gives_the_dearer_record_once_per_type():
    """Trial s48 M4: H100 reserved-1y above its on-demand median; one record for the type, with
    the kind's median and the on-demand one, said with the jobs file's fix."""
    requests = {name: job(gpus={"h100-sxm": None}, price_kind="reserved-1y") for name in ("a", "b")}
    solution = plan_fleet(requests, {"h100-sxm": 25_000.0}, 365.0, catalog=CATALOG)
    (warning,) = solution.price_warnings
    assert isinstance(warning, DearerHeldPrice) and warning.gpu == "h100-sxm"
    assert warning.dearer.kind == "reserved-1y"
    assert warning.dearer.usd_per_gpu_hour > warning.dearer.on_demand_usd_per_gpu_hour
    assert warning.words() == warning.dearer.words(JOBS_FILE_QUOTE)


def test_the_record_keeps_how_the_jobs_hold_the_type_and_its_words_the_verb():
    one = HeldPrice("mi325x", 1.95, PriceBasis.ONE_OFFER)
    request = job(gpus={"mi325x": None})
    for holding, verb in ((Holding.RENTED, "rents"), (Holding.RESERVED, "reserves")):
        held = {("mi325x", holding): ["a"]}
        (warning,) = held_price_warnings({"a": request}, CATALOG, {"mi325x": one}, held, ManyJobAnswer.FLEET_MIXED)
        assert warning == EstimatedHeldPrice(ManyJobAnswer.FLEET_MIXED, holding, one, ("a",))
        assert warning.words().startswith(f"the mixed answer {verb} {one.words()} for a:")


def test_a_price_with_a_median_of_offers_behind_it_gives_no_record():
    median = HeldPrice("h100-sxm", 3.0, PriceBasis.CATALOG)
    held = {("h100-sxm", Holding.RENTED): ["a"]}
    request = job(gpus={"h100-sxm": None})
    assert held_price_warnings({"a": request}, CATALOG, {"h100-sxm": median}, held, ManyJobAnswer.PORTFOLIO) == ()
