"""A deadline no GPU count meets, past the count cap (planner/api/batch_offers.py
``past_the_cap_batch_fix``; buyer trial s45 H2): the fix names the batch it was probed at and
what four times that batch answers."""

from __future__ import annotations

import pytest

from planner.api import PlanRequest, plan
from planner.api.batch_offers import PAST_CAP_BATCH_FACTOR, past_the_cap_batch_fix
from planner.catalog.models import get_preset
from planner.errors import Constraint, InfeasiblePlan
from planner.request import LARGER_BATCH_WORDS, requested_batch_tokens

REQUEST = PlanRequest(model=get_preset("gpt3-125m"), training_tokens=1e10, deadline_days=1, gpus={"h100-sxm": None})
NONE_MEETS = InfeasiblePlan(Constraint.DEADLINE, "the fastest plan needs 3 days", "allow 3 days", more_gpus_help=False)


def test_the_fix_names_the_batch_and_what_a_larger_one_answers() -> None:
    asked = []

    def search(request: PlanRequest, probe: bool = True):
        asked.append(request.global_batch_tokens)
        raise InfeasiblePlan(Constraint.DEADLINE, "x", "raise max_gpus (--max-gpus) to 9000", more_gpus_help=True)

    fixed = past_the_cap_batch_fix(NONE_MEETS, REQUEST, search)
    batch = requested_batch_tokens(REQUEST)
    assert asked == [PAST_CAP_BATCH_FACTOR * batch]
    assert fixed.fix.startswith(f"allow 3 days at a global batch of {batch:,} tokens; at 4x that batch")
    assert "raise max_gpus (--max-gpus) to 9000 (a larger batch changes the training)" in fixed.fix


def test_where_the_larger_batch_does_not_help_it_says_only_the_batch() -> None:
    def search(request: PlanRequest, probe: bool = True):
        raise InfeasiblePlan(Constraint.DEADLINE, "x", "allow 2 days", more_gpus_help=False)

    fixed = past_the_cap_batch_fix(NONE_MEETS, REQUEST, search)
    assert fixed.fix.endswith("tokens" + LARGER_BATCH_WORDS)
    # not for answers that more GPUs would meet, or that name a batch already
    for other in (NONE_MEETS.but(more_gpus_help=True), NONE_MEETS.but(batch_tokens=1 << 22)):
        assert past_the_cap_batch_fix(other, REQUEST, search) is other
    # nor on an inventory, whose probe past it names the batch already (count_probe.deadline_fix)
    on_hand = REQUEST.model_copy(update={"gpus": {"h100-sxm": 64}})
    assert past_the_cap_batch_fix(NONE_MEETS, on_hand, search) is NONE_MEETS


def test_llama_405b_in_60_days_names_the_batch_that_binds() -> None:
    """The trial's case: at the 4M default batch no count meets 60 days; at 16M one does, past the cap."""
    request = PlanRequest(
        model=get_preset("llama3.1-405b"), training_tokens=15.6e12, deadline_days=60, gpus={"h100-sxm": None}
    )
    with pytest.raises(InfeasiblePlan) as caught:
        plan(request)
    fix = caught.value.fix
    assert "meets the deadline at a global batch of 4,194,304 tokens; at 4x that batch" in fix
    assert "raise max_gpus (--max-gpus) to" in fix


def test_a_larger_batch_that_meets_the_deadline_within_the_cap_is_typed() -> None:
    """Review s45 M3: the app's card words a deadline answer from its typed fields; the larger batch's
    answer was in the fix's text only. Where a plan within the cap meets it there, its batch and time
    are the answer's ``batch_tokens`` / ``batch_seconds``."""
    request = REQUEST.model_copy(update={"deadline_days": 30.0})
    result = plan(request)  # a plan that meets 30 days: what the 4x search returns below

    def search(other: PlanRequest, probe: bool = True):
        assert other.global_batch_tokens == PAST_CAP_BATCH_FACTOR * requested_batch_tokens(REQUEST)
        return result

    fixed = past_the_cap_batch_fix(NONE_MEETS, REQUEST, search)
    assert fixed.batch_tokens == PAST_CAP_BATCH_FACTOR * requested_batch_tokens(REQUEST)
    assert fixed.batch_seconds is not None and fixed.batch_seconds > 0
    assert f"{result.plan.num_gpus:,} x {result.plan.gpu} finish in" in fixed.fix
