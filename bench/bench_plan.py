"""Planner speed: single-job search over the whole catalog and a 10-job portfolio.

Targets (issue #2): single job < 2 s, 10-job portfolio < 10 s on one core. Prints a table;
asserts nothing (shared machines are noisy).  Run: .venv/bin/python bench/bench_plan.py
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

from planner.api import PlanRequest, plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.search.explore import plan_portfolio


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    load_catalog()
    rows = []
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
        seconds, result = timed(lambda request=request: plan(request))
        label = f"plan {name}" + (f" seq {seq_len // 1024}K" if seq_len else "")
        rows.append((label, result.num_candidates, seconds, 2.0 if seq_len is None else 4.0))
    # Frontier scale (issue #10): Llama 3.1 405B on an inventory of 16,384 H100s, target < 3 s.
    frontier = PlanRequest(
        model=get_preset("llama3.1-405b"),
        training_tokens=15.6e12,
        gpus={"h100-sxm": 16384},
        seq_len=8192,
        global_batch_tokens=2**24,
        objective="time",
    )
    seconds, result = timed(lambda: plan(frontier))
    rows.append(("plan 405b on 16384 h100", result.num_candidates, seconds, 3.0))
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
    seconds, _ = timed(lambda: plan_portfolio(requests, inventory), repeat=1)
    rows.append(("portfolio 10 jobs", sum(1 for _ in requests), seconds, 10.0))
    print(f"{'case':28s} {'candidates':>11s} {'seconds':>8s} {'target':>7s}")
    for case, n, s, target in rows:
        print(f"{case:28s} {n:>11,d} {s:8.2f} {target:7.1f}  {'ok' if s < target else 'SLOW'}")


if __name__ == "__main__":
    main()
