"""Solve times of the planner's ILPs on synthetic candidate tables (prints a table; asserts nothing).

Targets on one core: single job < 2 s up to 10^6 rows, a 10-job portfolio < 10 s.
Run: python bench/bench_ilp.py [--max-rows 1000000] [--solver auto|cbc|highs]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from planner.search.fleet import size_fleet
from planner.search.ilp import ScoredTable, solve_single
from planner.search.job_candidates import JobCandidates
from planner.search.ownership import GpuEconomics
from planner.search.portfolio import solve_portfolio
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

GPUS = np.array(["a100-80g", "h100-sxm", "h200", "b200", "l40s", "mi300x"], dtype=object)
CAPACITY_GIB = np.array([80.0, 80.0, 141.0, 180.0, 48.0, 192.0])
SPEED = np.array([1.0, 3.0, 3.3, 6.0, 1.2, 3.5])  # relative to a100
PRICE_PER_GPU_HOUR = np.array([1.8, 3.0, 3.8, 6.0, 1.0, 3.5])
DAY = SECONDS_PER_DAY


def synthetic_table(rng: np.random.Generator, num_rows: int, gpu_days_a100: float) -> ScoredTable:
    """Random layouts: efficiency falls with scale, a third do not fit, a tenth do not divide."""
    gpu = rng.integers(0, len(GPUS), num_rows)
    n = 2 ** rng.integers(0, 11, num_rows)
    efficiency = rng.uniform(0.3, 0.6, num_rows) / (1 + 0.05 * np.log2(n))
    time_s = gpu_days_a100 * DAY / (n * SPEED[gpu] * efficiency)
    need = rng.uniform(0.3, 1.4, num_rows) * CAPACITY_GIB[gpu]
    return ScoredTable(
        gpu_id=GPUS[gpu],
        num_gpus=n,
        fits_memory=need <= CAPACITY_GIB[gpu] * 0.9,
        memory_need_gib=need,
        capacity_gib=CAPACITY_GIB[gpu],
        time_to_train_s=time_s,
        cost_usd=n * time_s / SECONDS_PER_HOUR * PRICE_PER_GPU_HOUR[gpu],
        batch_ok=rng.random(num_rows) < 0.9,
        divisible=rng.random(num_rows) < 0.9,
        label=np.full(num_rows, "synthetic", dtype=object),
    )


def bench_single(max_rows: int, solver: str) -> None:
    rng = np.random.default_rng(0)
    print(f"{'rows':>9} {'feasible':>9} {'pruned':>6} {'ILP vars':>8} {'solver':>6} {'objective':>9} {'seconds':>8}")
    inventory = {"h100-sxm": 2048, "h200": 1024, "a100-80g": 4096}
    num_rows = 1000
    while num_rows <= max_rows:
        table = synthetic_table(rng, num_rows, gpu_days_a100=20_000)
        runs = [("cost", True), ("mix", True)] + ([("mix", False)] if num_rows <= 10_000 else [])
        for objective, prune in runs:
            start = time.perf_counter()
            solution = solve_single(
                table, objective, deadline_s=120 * DAY, solver=solver, inventory=inventory, prune=prune
            )
            elapsed = time.perf_counter() - start
            print(
                f"{num_rows:>9} {solution.num_feasible:>9} {'yes' if prune else 'no':>6} "
                f"{solution.num_variables:>8} {solution.solver:>6} {objective:>9} {elapsed:>8.3f}"
            )
        num_rows *= 10


def portfolio_jobs(rng: np.random.Generator, num_jobs: int, rows_per_job: int) -> list[JobCandidates]:
    return [
        JobCandidates(
            f"job{j}",
            synthetic_table(rng, rows_per_job, float(rng.uniform(50, 2000))),
            deadline_s=float(rng.uniform(20, 60)) * DAY,
        )
        for j in range(num_jobs)
    ]


def bench_portfolio(solver: str) -> None:
    rng = np.random.default_rng(1)
    jobs = portfolio_jobs(rng, 10, 10_000)
    inventory = {"h100-sxm": 128, "h200": 64, "a100-80g": 256}
    print(f"\n{'model':<34} {'ILP vars':>8} {'solver':>6} {'seconds':>8}")
    for label, horizon_s, num_slots in (
        ("10 jobs, no horizon, 1 slot", None, 1),
        ("10 jobs, 60 days in 12 slots", 60 * DAY, 12),
    ):
        start = time.perf_counter()
        solution = solve_portfolio(jobs, inventory, "mix", horizon_s=horizon_s, num_slots=num_slots, solver=solver)
        print(f"{label:<34} {solution.num_variables:>8} {solution.solver:>6} {time.perf_counter() - start:>8.3f}")
    economics = {
        "h100-sxm": GpuEconomics(purchase_usd=30_000, wall_power_w=1000),
        "h200": GpuEconomics(purchase_usd=38_000, wall_power_w=1000),
    }
    start = time.perf_counter()
    fleet = size_fleet(jobs, economics, horizon_days=60, num_slots=12, solver=solver)
    print(f"{'fleet sizing (3 solves), 12 slots':<34} {'':>8} {fleet.solver:>6} {time.perf_counter() - start:>8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-rows", type=int, default=1_000_000)
    parser.add_argument("--solver", default="auto", choices=["auto", "cbc", "highs"])
    args = parser.parse_args()
    bench_single(args.max_rows, args.solver)
    bench_portfolio(args.solver)


if __name__ == "__main__":
    main()
