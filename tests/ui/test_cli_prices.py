"""``trainplan plan --price-kind reserved-1y|reserved-3y`` end to end (issue 28 item 4): a GPU with
such an offer plans at its median; one without refuses in one line with exit code 2."""

import io
import json
import math
import statistics
from contextlib import redirect_stderr, redirect_stdout

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.prices import offers_of
from ui.cli import main

CATALOG = load_catalog()


def trainplan(*args: str) -> tuple[int, str, str]:
    """``trainplan ARGS`` through ``ui.cli.main`` in this process: exit code, stdout, stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(list(args))
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.mark.parametrize("kind", ["reserved-1y", "reserved-3y"])
def test_plan_rents_at_the_reserved_median_by_whole_nodes(kind: str) -> None:
    code, out, err = trainplan(
        "plan", "--model", "gpt3-125m", "--tokens", "1e9", "--gpus", "h100-sxm=16", "--price-kind", kind, "--json"
    )
    assert code == 0, err
    plan = json.loads(out)["plan"]
    offers = offers_of(CATALOG.gpu("h100-sxm"), kind)
    price = statistics.median(o.usd_per_gpu_hour for o in offers)
    unit = min(o.gpus_per_offer for o in offers)
    billed = math.ceil(plan["num_gpus"] / unit) * unit
    assert plan["gpu"] == "h100-sxm"
    assert plan["cost_usd"] == pytest.approx(plan["time_to_train_h"] * billed * price, rel=1e-4)


def test_plan_rents_the_h200_at_its_three_year_median() -> None:
    """The H200 has 3-year offers now: Google Cloud a3-ultragpu-8g CUD 37.208421 / 8 and Azure
    ND96isr H200 v5 RI 42.221918 / 8; it plans at their median, by whole 8-GPU nodes."""
    args = "plan --model gpt3-125m --tokens 1e9 --gpus h200-sxm=4 --price-kind reserved-3y --json"
    code, out, err = trainplan(*args.split())
    assert code == 0, err
    plan = json.loads(out)["plan"]
    price = (37.208421 / 8 + 42.221918 / 8) / 2
    assert plan["gpu"] == "h200-sxm" and plan["num_gpus"] <= 8
    assert plan["cost_usd"] == pytest.approx(plan["time_to_train_h"] * 8 * price, rel=1e-4)


def test_plan_refuses_a_gpu_without_a_three_year_offer_in_one_line() -> None:
    code, out, err = trainplan(
        "plan", "--model", "gpt3-125m", "--tokens", "1e9", "--gpus", "b200=8", "--price-kind", "reserved-3y"
    )
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("trainplan: error: no reserved-3y price for b200 in hw_catalog/prices (it has ")


def test_estimate_warns_that_a_reserved_term_outlasts_the_job() -> None:
    # A 1e10-token job on 8 H100 runs about two days; the 1-year term bills 365.
    args = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8", "--tokens", "1e10"]
    code, _, err = trainplan(*args, "--price-kind", "reserved-1y")
    assert code == 0
    assert "warning: reserved-1y bills its whole 1-year term: the cost counts the job's " in err
    assert "(0.5% of the term); 8 h100-sxm for the term cost $" in err
    code, _, err = trainplan(*args, "--price-kind", "on-demand")
    assert code == 0 and "term" not in err
