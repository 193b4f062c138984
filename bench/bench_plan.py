"""Planner speed: single-job searches, the example portfolio, a 10-job and an 18-job portfolio (and
the 18 jobs in chains, after = [...]).

Targets (issue 28): a whole-catalog plan < 1 s and a 10-job portfolio < 2 s on the 2-core dev
machine; the other single-job cases keep the older targets (issue 2: < 2 s; seq 64K < 4 s;
issue 10's frontier case < 3 s). Prints a table: candidates generated, the least wall and CPU
seconds over the repeats, the target. Asserts nothing (shared machines are noisy: read the CPU
column, and the least of several runs). Run: .venv/bin/python bench/bench_plan.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from planner.api import PlanRequest, plan
from planner.api.explore import plan_portfolio, scored_search
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WHOLE_CATALOG_TARGET_S = 1.0
PORTFOLIO_TARGET_S = 2.0


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    """The least wall and CPU seconds of ``repeat`` calls, and the last result."""
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu, result


def single_job_cases() -> list[tuple[str, PlanRequest, float]]:
    """(label, request, target seconds) of the single-job cases."""
    cases = [
        # Whole catalog, no deadline (issue 28's "~740k candidates in ~8 s").
        ("plan llama3-70b whole catalog", PlanRequest(model=get_preset("llama3-70b"), training_tokens=2e12), 1.0),
        (
            "plan llama2-70b 2048 a100",
            PlanRequest(
                model=get_preset("llama2-70b"),
                training_tokens=2e12,
                gpus={"a100-80gb-sxm": 2048},
                seq_len=4096,
                global_batch_tokens=4194304,
                objective="time",
            ),
            1.0,
        ),
    ]
    for name, tokens, days, seq_len in (
        ("llama3-8b", 1e12, 30, None),
        ("llama3-70b", 2e12, 60, None),
        ("llama3.1-405b", 2e12, 90, None),
        ("mixtral-8x7b", 1e12, 60, None),
        ("gpt3-175b", 3e11, 60, None),
        ("llama3.1-8b", 1e11, 30, 65536),
    ):
        # seq_len None: 4096, or the model's context when shorter (GPT-3: 2048).
        request = PlanRequest(model=get_preset(name), training_tokens=tokens, deadline_days=days, seq_len=seq_len)
        label = f"plan {name} {days}d" + (f" seq {seq_len // 1024}K" if seq_len else "")
        cases.append((label, request, 2.0 if seq_len is None else 4.0))
    # Frontier scale (issue 10): Llama 3.1 405B on an inventory of 16,384 H100s.
    frontier = PlanRequest(
        model=get_preset("llama3.1-405b"),
        training_tokens=15.6e12,
        gpus={"h100-sxm": 16384},
        seq_len=8192,
        global_batch_tokens=2**24,
        objective="time",
    )
    cases.append(("plan 405b on 16384 h100", frontier, 3.0))
    return cases


def ten_jobs() -> tuple[dict[str, PlanRequest], dict[str, int]]:
    models = [
        "llama3-8b",
        "llama3.2-1b",
        "llama3.2-3b",
        "mistral-7b",
        "qwen2.5-7b",
        "gpt3-1.3b",
        "gpt3-2.7b",
        "llama2-7b",
        "llama2-13b",
        "gpt3-6.7b",
    ]
    inventory = {"h100-sxm": 512, "a100-80gb-sxm": 256, "h200-sxm": 128}
    requests = {
        f"job{i}-{m}": PlanRequest(model=get_preset(m), training_tokens=2e11, deadline_days=60, gpus=dict(inventory))
        for i, m in enumerate(models)
    }
    return requests, inventory


# Like the session-19 trial's slow case (its file took 67.9 s): 18 jobs on examples/portfolio.toml's
# inventory over a year, 36 slots; 23-30 s of CPU before the slotted model's GPU-days cut, 11-12 s
# after, stopped at its 30 s limit; 3.4 s of CPU (5.5 s wall) once the lanes' schedule within 1.1 % of
# a bound on every schedule cut the slotted search short (session 45; docs/ilp.md "Many jobs").
EIGHTEEN_JOBS = (
    ("llama3-8b", 1e12),
    ("llama3.2-1b", 2e11),
    ("mistral-7b", 5e11),
    ("llama3.2-3b", 3e11),
    ("qwen2.5-7b", 4e11),
    ("llama3.1-8b", 6e11),
    ("gemma2-9b", 2e11),
    ("olmo2-7b", 5e11),
    ("qwen3-8b", 3e11),
    ("phi3-mini", 2e11),
    ("ministral-8b", 4e11),
    ("llama2-7b", 3e11),
    ("llama2-13b", 2e11),
    ("gpt3-1.3b", 1e11),
    ("gpt3-2.7b", 2e11),
    ("gpt3-6.7b", 3e11),
    ("qwen2.5-7b", 1e11),
    ("llama3-8b", 2e11),
)
EIGHTEEN_JOBS_TARGET_S = 10.0
# The 18 jobs again, 14 of them in 4 chains (a jobs file's after, by index into EIGHTEEN_JOBS): with
# any P the lanes and the slotted model's greedy incumbent stand aside (docs/ilp.md "Precedence"), so
# the slotted search runs to its 30 s limit: 33.5 s wall (28.5 s CPU) against 5.9 s without, 8,579
# variables against 2,217, its answer 5.7 % above LB (a bound that knows no P). The per-slot form of
# S_j >= E_i (one row per start time of j's options) found no schedule in 30 s and proved its
# optimum at 147 s, no better: the aggregated row stays (session 52, chain52).
EIGHTEEN_CHAINS = ((0, 5, 10, 15), (1, 6, 11), (2, 7, 12, 16), (3, 8, 13))


def eighteen_jobs() -> tuple[dict[str, PlanRequest], dict[str, int]]:
    inventory = {"h100-sxm": 256, "a100-80gb-sxm": 64}
    requests = {
        f"job{i:02d}-{m}": PlanRequest(
            model=get_preset(m), training_tokens=tokens, deadline_days=365, gpus=dict(inventory)
        )
        for i, (m, tokens) in enumerate(EIGHTEEN_JOBS)
    }
    return requests, inventory


def candidates_of(requests: dict[str, PlanRequest]) -> int:
    """Candidates generated over a portfolio's jobs (what each job's search scores)."""
    return sum(len(scored_search(r).table) for r in requests.values())


def portfolio_cases() -> list[tuple[str, Callable[[], object], dict[str, PlanRequest], float]]:
    """(label, run, its requests, target seconds) of the portfolio cases."""
    from ui.portfolio_file import read_jobs_file  # the CLI's reader of examples/*.toml

    spec = read_jobs_file(EXAMPLES / "portfolio.toml")
    example = spec.requests(dict(spec.inventory))
    requests, inventory = ten_jobs()
    many, many_inventory = eighteen_jobs()

    def run_example() -> object:
        return plan_portfolio(
            example, spec.inventory, objective=spec.objective, horizon_days=spec.horizon_days, num_slots=spec.num_slots
        )

    def run_eighteen() -> object:
        return plan_portfolio(many, many_inventory, horizon_days=365, num_slots=6)

    names = list(many)
    after = {names[c[k]]: (names[c[k - 1]],) for c in EIGHTEEN_CHAINS for k in range(1, len(c))}

    def run_chained() -> object:
        return plan_portfolio(many, many_inventory, horizon_days=365, num_slots=6, after=after)

    return [
        ("portfolio examples/portfolio.toml", run_example, example, PORTFOLIO_TARGET_S),
        ("portfolio 10 jobs", lambda: plan_portfolio(requests, inventory), requests, PORTFOLIO_TARGET_S),
        ("portfolio 18 jobs, 365 days", run_eighteen, many, EIGHTEEN_JOBS_TARGET_S),
        ("portfolio 18 jobs, 4 chains, 365 days", run_chained, many, EIGHTEEN_JOBS_TARGET_S),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the least time is printed")
    args = parser.parse_args()
    load_catalog()
    rows = []
    for label, request, target in single_job_cases():
        wall, cpu, result = timed(lambda request=request: plan(request), args.repeat)
        rows.append((label, f"{result.num_candidates:,d}", wall, cpu, target))
    for label, run, requests, target in portfolio_cases():
        wall, cpu, _ = timed(run, args.repeat)
        rows.append((label, f"{candidates_of(requests):,d}", wall, cpu, target))
    print(f"{'case':36s} {'candidates':>11s} {'wall s':>7s} {'cpu s':>7s} {'target':>7s}")
    for case, n, wall, cpu, target in rows:
        verdict = "ok" if min(wall, cpu) < target else "SLOW"
        print(f"{case:36s} {n:>11s} {wall:7.2f} {cpu:7.2f} {target:7.1f}  {verdict}")


if __name__ == "__main__":
    main()
