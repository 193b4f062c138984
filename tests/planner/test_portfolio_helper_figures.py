"""Session 20, helper "portfolio" (trial finding 9 and the fleet deadline message): a portfolio
job's figures name their basis and carry their band; the slotted model's GPU-days cut; fleet's
infeasible answer names what it searched."""

from __future__ import annotations

import numpy as np
import pulp
import pytest

import planner.search.slots as slots_module
from planner.errors import InfeasiblePlan
from planner.search.fleet import size_fleet
from planner.search.ilp import ScoredTable
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import GpuEconomics
from planner.search.portfolio import solve_portfolio

DAY = 86_400.0


def h100_table(num_gpus: list[int], days: list[float], cost_usd: list[float]) -> ScoredTable:
    """One job's rows on h100, each fitting, with these counts, days and costs."""
    rows = len(num_gpus)
    return ScoredTable(
        gpu_id=np.array(["h100"] * rows, dtype=object),
        num_gpus=np.array(num_gpus),
        fits_memory=np.ones(rows, bool),
        memory_need_gib=np.full(rows, 60.0),
        capacity_gib=np.full(rows, 80.0),
        time_to_train_s=np.array(days) * DAY,
        cost_usd=np.array(cost_usd),
        batch_ok=np.ones(rows, bool),
        divisible=np.ones(rows, bool),
        label=np.array([str(n) for n in num_gpus]),
    )


def test_a_portfolio_jobs_figures_are_at_risk_and_owned_rate_with_their_band():
    """The scheduled days are the p80 time and lie in the plan's 80 % band; the owned cost's band
    is the same GPU-hours over the band's ends; the envelope is the plan's own."""
    from planner.api import PlanRequest
    from planner.api.explore import plan_portfolio
    from planner.api.portfolio import job_figures
    from planner.catalog.models import get_preset

    gpus = {"h100-sxm": 16}
    requests = {
        "one": PlanRequest(model=get_preset("llama3.2-1b"), training_tokens=2e10, gpus=gpus),
        "two": PlanRequest(model=get_preset("gpt3-350m"), training_tokens=1e10, gpus=gpus),
    }
    for a in plan_portfolio(requests, gpus).assignments:
        figures = job_figures(a)
        u = a.plan.estimate.uncertainty
        assert figures.risk.value == "p80" and figures.job == a.job
        assert figures.days * 24 == pytest.approx(u.time_to_train_h_at_risk["p80"], rel=1e-9)
        low, high = figures.days_band
        assert (low * 24, high * 24) == pytest.approx(u.time_to_train_h, rel=1e-12)
        assert low < figures.days <= high
        cost_low, cost_high = figures.owned_cost_band
        assert figures.owned_cost_usd == a.cost_usd
        assert cost_low / a.cost_usd == pytest.approx(low / figures.days, rel=1e-9)
        assert cost_high / a.cost_usd == pytest.approx(high / figures.days, rel=1e-9)
        assert figures.validated == u.validated and figures.envelope == u.envelope


def test_the_slotted_model_bounds_the_makespan_by_each_types_gpu_days(monkeypatch):
    """(7) of the exact model in the slotted one: inv_g M >= the GPU-days of type g. It removes no
    schedule (the answer is the same) but tightens the relaxation (18 jobs: 23-30 s -> 11-12 s of CPU)."""
    rng = np.random.default_rng(3)
    jobs = []
    for j in range(6):
        gpu = rng.choice(["a100", "h100"], 12)
        n = rng.choice([2, 4, 8], 12)
        days = rng.uniform(1, 10, 12) * 8 / n
        table = ScoredTable(
            gpu_id=np.asarray(gpu, dtype=object),
            num_gpus=n,
            fits_memory=np.ones(12, bool),
            memory_need_gib=np.full(12, 60.0),
            capacity_gib=np.full(12, 80.0),
            time_to_train_s=days * DAY,
            cost_usd=n * days * 24 * np.where(gpu == "h100", 4.0, 2.0),
            batch_ok=np.ones(12, bool),
            divisible=np.ones(12, bool),
            label=np.array([f"{j}/{i}" for i in range(12)]),
        )
        jobs.append(JobCandidates(f"job{j}", table))
    inventory = {"a100": 8, "h100": 8}
    seen: list[pulp.LpProblem] = []
    solve = slots_module.run_solver

    def keep(problem, *args, **kwargs):
        seen.append(problem)
        return solve(problem, *args, **kwargs)

    monkeypatch.setattr(slots_module, "run_solver", keep)  # the slotted model's solve (slots.solve_slotted)
    slotted = solve_portfolio(jobs, inventory, horizon_s=120 * DAY, num_slots=12, exact=False)
    (problem,) = seen
    M = next(v for v in problem.variables() if v.name == "M")
    constraints = problem.constraints()  # PuLP 3.3: callable, a list (the mapping is deprecated)
    bounds = [c for c in constraints if c.get(M, 0) in inventory.values() and len(c) > 2]
    assert len(bounds) == len(inventory)
    exact = solve_portfolio(jobs, inventory, horizon_s=120 * DAY, exact=True)
    assert slotted.objective_value >= exact.objective_value - 1e-9  # still never better than the optimum


def test_fleets_infeasible_answer_names_the_types_and_the_count_cap_it_searched():
    """Trial s19 section 14: 'the fastest plan needs 35.0 days with the allowed inventory (no inventory
    limit); fix: allow 35 days' did not say that fleet searches only the types to buy, up to a cap."""
    table = h100_table([8, 4096], [500.0, 35.0], [1e6, 1.1e6])
    economics = {"h100": GpuEconomics(purchase_usd=25_000, wall_power_w=1000)}
    with pytest.raises(InfeasiblePlan) as caught:
        size_fleet([JobCandidates("big", table, deadline_s=10 * DAY)], economics, 60)
    message = str(caught.value)
    assert message.startswith("deadline: job 'big': the fastest plan needs 35 days")
    assert "searched only the GPU types to buy, up to the GPU-count cap (h100<=4096)" in message
    assert message.endswith("set deadline_days to 35 or more, or buy another GPU type")


def test_a_portfolios_idle_cost_has_a_band_and_its_own_times_give_its_idle_cost():
    """Trial s35 (round 2): the idle cost had no band beside its jobs'. Every job at its band's ends
    on the same GPUs and order gives two schedules; the band spans their idle costs and the
    portfolio's own, which the same rule (held GPU-days no job used, at F_g) gives at its own times."""
    from planner.api import PlanRequest
    from planner.api.explore import plan_portfolio
    from planner.api.portfolio import _idle_cost_usd, job_figures, portfolio_bands
    from planner.catalog.models import get_preset

    gpus = {"h100-sxm": 16}
    requests = {
        "one": PlanRequest(model=get_preset("llama3.2-1b"), training_tokens=2e10, gpus=gpus, max_gpus=8),
        "two": PlanRequest(model=get_preset("gpt3-350m"), training_tokens=3e9, gpus=gpus, max_gpus=4),
    }
    portfolio = plan_portfolio(requests, gpus)
    figures = [job_figures(a) for a in portfolio.assignments]
    own_days = [f.days for f in figures]
    assert portfolio.idle_cost_usd > 0 and portfolio.held_types == ("h100-sxm",)
    assert _idle_cost_usd(portfolio, own_days, portfolio.makespan_s / DAY) == pytest.approx(
        portfolio.idle_cost_usd, rel=1e-9
    )
    bands = portfolio_bands(portfolio, figures)
    low, high = bands.idle_cost_usd
    assert low <= portfolio.idle_cost_usd <= high and low < high
    done_low, done_high = bands.makespan_days
    assert done_low < portfolio.makespan_s / DAY <= done_high
    # nothing held, nothing idles: no band
    rented = plan_portfolio(requests, gpus, rented=frozenset(gpus))
    assert portfolio_bands(rented, [job_figures(a) for a in rented.assignments]).idle_cost_usd is None


def test_a_slotted_search_that_finds_no_schedule_stops_and_says_so(monkeypatch):
    """Trial s36: a 25-job file found no schedule by the 30 s limit and the search went on without
    one, 21 minutes until its user killed it. Where the lanes have no schedule either, it searches on up
    to SLOTTED_SEARCH_LIMIT_S, then gives up in one line (a ValueError: exit 2 in the CLI, the app's
    error); where they have one, it answers with that at once."""
    import planner.search.portfolio as portfolio_module
    from planner.errors import PortfolioSearchStopped

    table = h100_table([4, 8], [4.0, 2.0], [100.0, 100.0])
    jobs = [JobCandidates(f"job{j}", table) for j in range(5)]  # over EXACT_MAX_JOBS: the slotted model
    limits = []

    def no_schedule(problem, solver, time_limit_s, warm_start=False, accept_incumbent=False):
        limits.append(time_limit_s)
        raise RuntimeError("highs stopped without an optimal solution (time limit)")

    monkeypatch.setattr(slots_module, "run_solver", no_schedule)
    answer = solve_portfolio(jobs, {"h100": 8}, horizon_s=60 * DAY)
    assert answer.lanes and len(limits) == 1  # no search on
    assert answer.stopped_gap is not None and answer.objective_value >= answer.lower_bound
    limits.clear()
    monkeypatch.setattr(portfolio_module, "lane_schedule", lambda *args, **kwargs: None)
    with pytest.raises(PortfolioSearchStopped, match=r"found no schedule of the jobs in 300 s"):
        solve_portfolio(jobs, {"h100": 8}, horizon_s=60 * DAY)
    assert limits == [slots_module.SLOTTED_TIME_LIMIT_S, slots_module.SLOTTED_SEARCH_LIMIT_S]
    assert isinstance(PortfolioSearchStopped("x"), ValueError)


def test_a_fleet_buys_whole_servers():
    """Trial s36: fleet bought 4, 76 or 172 H100, where each GPU's price holds 1/8 of an 8-GPU
    server (docs/hardware.md). A job on 4 GPUs buys one server; the catalog's unit is the server,
    or the NVLink rack where its domain spans several (GB200 NVL72)."""
    from planner.catalog.hardware import load_catalog
    from planner.search.ownership import economics_for

    table = h100_table([4], [200.0], [4 * 200 * 24 * 4.0])
    jobs = [JobCandidates("long", table)]
    one = {"h100": GpuEconomics(purchase_usd=25_000, wall_power_w=1000)}
    server = {"h100": GpuEconomics(purchase_usd=25_000, wall_power_w=1000, purchase_unit=8)}
    assert size_fleet(jobs, one, 365).buy_only.purchased == {"h100": 4}
    whole = size_fleet(jobs, server, 365).buy_only
    assert whole.purchased == {"h100": 8} and whole.purchase_usd == 8 * 25_000
    units = economics_for(load_catalog(), {"h100-sxm": 48_000, "gb200": 60_000})
    assert (units["h100-sxm"].purchase_unit, units["gb200"].purchase_unit) == (8, 72)


def test_the_cost_of_capital_is_a_year_of_its_rate_on_the_average_book_value():
    """Trial s36: no cost of capital was modelled or said. At 8 % a year on the average of the price
    and the resale value, a $40,000 GPU with a 20 % resale value costs $1,920 more a year; 0, the
    default, charges nothing."""
    from planner.search.ownership import TcoAssumptions, ownership_usd
    from planner.units import HOURS_PER_YEAR

    base, dear = TcoAssumptions(), TcoAssumptions(cost_of_capital_rate=0.08)
    year = HOURS_PER_YEAR
    assert ownership_usd(40_000, dear, year) - ownership_usd(40_000, base, year) == pytest.approx(1_920.0)
    assert ownership_usd(40_000, base, year) == pytest.approx(40_000 * 0.8 / 4 + 150 * 12)
    with pytest.raises(ValueError, match="cost_of_capital_rate"):
        TcoAssumptions(cost_of_capital_rate=1.5)
