"""A global batch larger than any published pre-training used is warned of, on plan and estimate
(buyer trial s45: --global-batch-tokens 1e9 planned 61,035 accumulation steps and a 3.6-hour step
without a word)."""

from __future__ import annotations

import csv
from pathlib import Path

from planner.api import plan
from planner.api.batch_notices import LARGEST_PUBLISHED_BATCH_TOKENS
from planner.api.notices import estimate_warnings
from planner.catalog.models import get_preset
from planner.request import PlanRequest

WHOLE_RUNS = Path(__file__).resolve().parents[2] / "data" / "validation" / "whole_runs.csv"
WORDS = "the largest a published pre-training used (134,217,728: Arcee Trinity Large"


def test_the_largest_published_batch_is_the_whole_runs_largest():
    with WHOLE_RUNS.open() as f:
        batches = [int(float(r["global_batch_tokens"])) for r in csv.DictReader(f) if r["global_batch_tokens"]]
    assert max(batches) == LARGEST_PUBLISHED_BATCH_TOKENS


def _request(batch: float) -> PlanRequest:
    return PlanRequest(
        model=get_preset("llama3-8b"),
        training_tokens=1e12,
        gpus={"h100-sxm": 64},
        global_batch_tokens=int(batch),
        top_k=0,
    )


def test_plan_warns_of_a_batch_past_any_published_one_and_not_of_a_common_one():
    huge = plan(_request(1e9))
    assert any(WORDS in w for w in huge.warnings)
    assert any(WORDS in w for w in estimate_warnings(huge.plan, None))  # estimate's own list
    assert not any("published pre-training" in w for w in plan(_request(4_194_304)).warnings)


def test_the_card_says_it_in_both_languages():
    """The app's card words the same warning with the same figures (ui/plan_card.request_texts)."""
    from support.app import request_for

    from ui.card_notices import request_texts
    from ui.i18n import Labels

    huge = plan(_request(1e9)).plan
    request = request_for(get_preset("llama3-8b"))
    for lang, words in (("en", "the largest a published pre-training used"), ("zh", "已公开预训练所用最大值")):
        texts = [t for t in request_texts(Labels(lang), request, huge) if words in t]
        assert len(texts) == 1 and "134,217,728" in texts[0] and "Arcee Trinity Large" in texts[0], texts
    assert not any(
        "published pre-training" in t for t in request_texts(Labels("en"), request, plan(_request(4_194_304)).plan)
    )
