"""Buyer trial s50 M7: a budget answer's only fix was "raise the budget"; it now also says what the
budget trains at the cheapest plan's cost per token."""

import pytest

from planner.api.budget_fix import tokens_within_budget, with_tokens_fix
from planner.catalog.models import get_preset
from planner.errors import Constraint, InfeasiblePlan
from planner.fmt import count_short
from planner.request import PlanRequest

REQUEST = PlanRequest(model=get_preset("llama3-8b"), training_tokens=15e12, gpus={"h100-sxm": 64})


def budget_answer(cheapest: float, budget: float) -> InfeasiblePlan:
    return InfeasiblePlan(Constraint.BUDGET, "x", "raise the budget", required=cheapest, available=budget)


def test_the_budget_trains_its_share_of_the_tokens():
    assert tokens_within_budget(budget_answer(7.5e6, 5e6), REQUEST) == pytest.approx(10e12)
    fixed = with_tokens_fix(budget_answer(7.5e6, 5e6), REQUEST)
    assert fixed.fix == "raise the budget; or train about 10T tokens within it, at the cheapest plan's cost per token"
    assert (fixed.required, fixed.available, fixed.constraint) == (7.5e6, 5e6, Constraint.BUDGET)


def test_other_answers_keep_their_fix():
    deadline = InfeasiblePlan(Constraint.DEADLINE, "x", "allow 3 days", required=3.0, available=1.0)
    assert with_tokens_fix(deadline, REQUEST) is deadline
    assert tokens_within_budget(budget_answer(5e6, 5e6), REQUEST) is None  # not a budget that falls short
    reserved = REQUEST.model_copy(update={"price_kind": "reserved-1y"})  # its term is billed whole
    assert tokens_within_budget(budget_answer(7.5e6, 5e6), reserved) is None


@pytest.mark.parametrize(
    ("count", "words"),
    [
        (9.97e12, "9.97T"),
        (8.5e11, "850B"),
        (2.5e6, "2.5M"),
        (1200, "1.2k"),
        (7, "7"),
        (999.6e9, "1T"),
        (1.2e15, "1,200T"),
    ],
)
def test_count_short(count, words):
    assert count_short(count) == words
