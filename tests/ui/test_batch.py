"""Honest batch: the requested global batch is met exactly when a layout divides it, else the
nearest achievable batch is used, shared by the plan and its alternatives, and printed beside
the requested one (docs/ilp.md, "Batch")."""

import json

import numpy as np
import pytest

from planner.api import PlanRequest, plan
from planner.api.explore import scored_search
from planner.catalog.models import get_preset
from planner.errors import InfeasiblePlan
from planner.layout import TrainingConfig
from planner.search.ilp import NEAR_TIE_FRACTION
from ui.cli import main


def batches(result):
    return {p.estimate.global_batch_tokens for p in (result.plan, *result.alternatives)}


def test_an_achievable_batch_is_met_exactly_by_the_plan_and_its_alternatives():
    request = PlanRequest(
        model=get_preset("llama3-8b"), training_tokens=1e12, deadline_days=30, global_batch_tokens=2**22
    )
    result = plan(request)
    assert batches(result) == {2**22}
    assert result.plan.estimate.requested_global_batch_tokens == 2**22


def test_an_unachievable_batch_becomes_the_nearest_achievable_one():
    """3,000,000 tokens is no whole number of 4096-token sequences: every plan gets the batch
    nearest it among the feasible candidates, within the default 5 % tolerance."""
    request = PlanRequest(
        model=get_preset("llama3-8b"),
        training_tokens=1e11,
        gpus={"h100-sxm": 64},
        seq_len=4096,
        global_batch_tokens=3_000_000,
    )
    result = plan(request)
    (batch,) = batches(result)
    assert batch != 3_000_000 and abs(batch / 3_000_000 - 1) <= 0.05
    assert result.plan.estimate.requested_global_batch_tokens == 3_000_000
    table = scored_search(request).table
    feasible = table.valid() & (table.num_gpus <= 64)
    distances = np.abs(table.extra["batch_tokens"][feasible] - 3_000_000)
    assert abs(batch - 3_000_000) == distances.min()


def test_vary_batch_lets_alternatives_differ_and_is_never_worse():
    base = dict(
        model=get_preset("llama3-8b"), training_tokens=1e11, gpus={"h100-sxm": 64}, global_batch_tokens=3_000_000
    )
    shared = plan(PlanRequest(**base, top_k=10))
    free = plan(PlanRequest(**base, top_k=10, vary_batch=True))
    assert len(batches(shared)) == 1 and len(batches(free)) > 1
    # Never worse, up to the solver's near-tie band: within it the faster plan wins.
    assert free.plan.estimate.cost_usd <= shared.plan.estimate.cost_usd * (1 + NEAR_TIE_FRACTION)


def test_zero_tolerance_on_an_unachievable_batch_names_the_batch():
    with pytest.raises(InfeasiblePlan) as info:
        plan(
            PlanRequest(
                model=get_preset("tiny"),
                training_tokens=1e9,
                gpus={"h100-sxm": 8},
                seq_len=512,
                global_batch_tokens=1000 * 512 + 1,
                batch_tolerance=0,
            )
        )
    assert info.value.constraint.value == "batch" and "tolerance" in info.value.fix


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [(18000, 9), (17000, 9), (16400, 8), (2000, 1), (500, 1)],  # exact, a tie (to the larger), nearest, floor 1
)
def test_accumulation_is_the_nearest_not_rounded_up(tokens, expected):
    assert TrainingConfig.grad_accum_for(tokens, micro_batch=1, seq_len=1000, dp=2) == expected


ESTIMATE = ["estimate", "--model", "tiny", "--gpu", "h100-sxm", "--num-gpus", "4", "--micro-batch", "2"]
ESTIMATE += ["--seq-len", "256"]


def test_estimate_prints_the_requested_batch_beside_the_achieved_one(capsys):
    # 2 x 256 x 4 = 2048 tokens per pass: 9000 tokens -> accumulation 4 (8192), not 5 (10240).
    assert main([*ESTIMATE, "--global-batch-tokens", "9000", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["global_batch_tokens"], data["requested_global_batch_tokens"]) == (8192, 9000)
    assert main([*ESTIMATE, "--global-batch-tokens", "9000"]) == 0
    assert "8,192 tokens/step (requested 9,000: nearest achievable, -9.0%)" in capsys.readouterr().out
    assert main([*ESTIMATE, "--global-batch-tokens", "8192"]) == 0  # exact: nothing beside it
    assert "requested" not in capsys.readouterr().out


def test_plan_cli_takes_a_batch_tolerance_and_reports_the_requested_batch(capsys):
    argv = ["plan", "--model", "llama3-8b", "--tokens", "1e11", "--gpus", "h100-sxm=64", "--top", "2"]
    assert main([*argv, "--global-batch-tokens", "3000000", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plan"]["requested_global_batch_tokens"] == 3_000_000
    assert {a["global_batch_tokens"] for a in data["alternatives"]} == {data["plan"]["global_batch_tokens"]}
    assert main([*argv, "--global-batch-tokens", "3000000", "--batch-tolerance", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["constraint"] == "batch"
