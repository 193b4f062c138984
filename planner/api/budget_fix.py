"""What a budget buys where it buys no plan of the whole run (buyer trial s50 M7: "raise the budget to
$7.48M" was the only fix, and a buyer whose budget is fixed wants what it does buy)."""

from __future__ import annotations

from planner.catalog.terms import RESERVED_TERM_YEARS
from planner.errors import Constraint, InfeasiblePlan
from planner.fmt import count_short
from planner.request import PlanRequest


def tokens_within_budget(answer: InfeasiblePlan, request: PlanRequest) -> float | None:
    """The tokens the budget trains at the cheapest plan's cost per token (``answer.required`` USD
    for ``request.training_tokens``, both at the request's risk): the cost of a run is its GPU-hours,
    which scale with its tokens, so fewer tokens cost that share less (a lower bound under a deadline:
    fewer tokens may also meet it on fewer, cheaper GPUs). None for other answers, and under a
    reserved price, whose term is billed whole however few tokens it trains (review s50 L2)."""
    cheapest, budget, tokens = answer.required, answer.available, request.training_tokens
    if answer.constraint is not Constraint.BUDGET or not cheapest or not budget or not tokens or budget >= cheapest:
        return None
    if request.price_kind in RESERVED_TERM_YEARS:
        return None
    return tokens * budget / cheapest


def with_tokens_fix(answer: InfeasiblePlan, request: PlanRequest) -> InfeasiblePlan:
    """``answer`` whose fix also says the tokens the budget trains, where it is a budget answer."""
    tokens = tokens_within_budget(answer, request)
    if tokens is None:
        return answer
    words = f"; or train about {count_short(tokens)} tokens within it, at the cheapest plan's cost per token"
    return answer.but(fix=answer.fix + words, tokens_within_budget=tokens)
