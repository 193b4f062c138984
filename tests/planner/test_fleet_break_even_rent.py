"""Trial s51 M4: fleet's rent-vs-buy answer rested on one median rent, and said only a break-even
utilisation. The break-even rent r* = F_g / (u H) + v_g, u the busy share of the type's GPUs in the
answer's schedule, is where the answer flips: above it buying is cheaper, below it renting."""

from __future__ import annotations

import numpy as np
import pytest

from planner.search.fleet import size_fleet
from planner.search.fleet_plan import FleetOption
from planner.search.ilp import ScoredTable
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import GpuEconomics, TcoAssumptions, break_even

DAY = 86_400.0
NUM_GPUS, DAYS, HORIZON_DAYS = 8, 10.0, 30.0


def one_job(rent_usd_per_gpu_hour: float) -> JobCandidates:
    """One job of one row, 8 h100 for 10 days, rented at ``rent_usd_per_gpu_hour``."""
    table = ScoredTable(
        gpu_id=np.array(["h100"], dtype=object),
        num_gpus=np.array([NUM_GPUS]),
        fits_memory=np.ones(1, bool),
        memory_need_gib=np.full(1, 60.0),
        capacity_gib=np.full(1, 80.0),
        time_to_train_s=np.array([DAYS * DAY]),
        cost_usd=np.array([rent_usd_per_gpu_hour * NUM_GPUS * DAYS * 24]),
        batch_ok=np.ones(1, bool),
        divisible=np.ones(1, bool),
        label=np.array(["8"]),
    )
    return JobCandidates("job", table)


def solve(rent_usd_per_gpu_hour: float):
    economics = {"h100": GpuEconomics(30_000, 1000, rent_usd_per_gpu_hour=rent_usd_per_gpu_hour)}
    return size_fleet([one_job(rent_usd_per_gpu_hour)], economics, HORIZON_DAYS, TcoAssumptions(), num_slots=6)


def test_the_break_even_rent_is_where_the_answer_flips_from_renting_to_buying():
    (rent,) = solve(5.0).break_even_rents()
    assert rent.gpu_id == "h100" and rent.option is FleetOption.MIXED
    assert rent.busy_fraction == pytest.approx(DAYS / HORIZON_DAYS)
    b = break_even("h100", GpuEconomics(30_000, 1000), TcoAssumptions(), HORIZON_DAYS * 24, 5.0)
    assert rent.usd_per_gpu_hour == pytest.approx(b.owned_fixed_usd / (DAYS * 24) + b.owned_usd_per_busy_hour)
    above, below = solve(rent.usd_per_gpu_hour * 1.02), solve(rent.usd_per_gpu_hour * 0.98)
    assert above.mixed.purchased == {"h100": NUM_GPUS}
    assert below.mixed.purchased == {}
    # where the chosen option rents, the rent is read at buy only's busy hours: the same here
    (again,) = below.break_even_rents()
    assert again.option is FleetOption.BUY_ONLY
    assert again.usd_per_gpu_hour == pytest.approx(rent.usd_per_gpu_hour)


def test_the_offers_range_is_the_catalogs_listed_offers_of_the_kind():
    from planner.catalog.hardware import load_catalog
    from planner.catalog.prices import offers_of, offers_range

    gpu = load_catalog().gpu("h100-sxm")
    span = offers_range(gpu, None)
    rates = [o.usd_per_gpu_hour for o in offers_of(gpu, "on-demand")]
    assert span is not None and span.count == len(rates) > 1 and span.kind == "on-demand"
    assert (span.low_usd_per_gpu_hour, span.high_usd_per_gpu_hour) == (min(rates), max(rates))
    assert span.low_usd_per_gpu_hour < span.high_usd_per_gpu_hour
