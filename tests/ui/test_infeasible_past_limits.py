"""The app's infeasible answer offers no deadline or budget past what its inputs take (buyer trial
s48 L1: "Fix: allow 1,368,891 days", past the sidebar's century)."""

from __future__ import annotations

import pytest
from support.app import EN, ZH, english_sentences, request_for

from planner.catalog.models import get_preset
from planner.limits import MAX_BUDGET_USD, MAX_DAYS
from ui.app_core import Infeasible
from ui.infeasible_words import infeasible_body

DAY = 86400.0


@pytest.mark.parametrize(
    ("constraint", "past", "within", "within_fix"),
    [
        ("deadline", 2 * MAX_DAYS * DAY, MAX_DAYS * DAY, "Fix: allow 36,525 days"),
        ("budget", 2 * MAX_BUDGET_USD, MAX_BUDGET_USD, "Fix: raise the budget to $10.00T"),
    ],
)
def test_a_fix_past_the_inputs_limit_says_no_value_fits(constraint, past, within, within_fix):
    request = request_for(get_preset("llama3-8b"), gpus={"h100-sxm": 64})
    answer = Infeasible(constraint, "detail", "fix", required=past, available=within / 100)
    english = infeasible_body(EN, answer, request)
    assert f"no {constraint} up to the limit of " in english and english.endswith("Fix: train fewer tokens.")
    chinese = infeasible_body(ZH, answer, request)
    assert "减少训练 token 数" in chinese and not english_sentences(chinese)
    at_limit = Infeasible(constraint, "detail", "fix", required=within, available=within / 100)
    assert within_fix in infeasible_body(EN, at_limit, request)
