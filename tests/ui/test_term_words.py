"""Reserved terms in words (review s43): a job longer than its term, and the cost line by the share
of the rest other work fills (planner/catalog/terms.py ``TermBilling``, ``Commitment``)."""

import pytest

from planner.api import build_plan, plan_commitment
from planner.catalog.models import get_preset
from planner.fmt import money
from planner.layout import Layout, TrainingConfig
from planner.units import HOURS_PER_YEAR
from ui.i18n import Labels
from ui.messages import commitment_text
from ui.render import price_words

YEAR = HOURS_PER_YEAR


def test_a_job_longer_than_its_term_is_billed_and_worded_by_its_whole_terms() -> None:
    """Review s43: a job of 421.6 days on a 1-year term bills 2 terms, whose sum the warning called
    "the term" with the job "58% of it"; and --term-filled 1, billed by the hour, still read "billed
    for whole 1-year terms"."""
    layout, training = Layout(dp_shard=8), TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=4)
    kw = dict(num_gpus=8, training_tokens=2.2e12, price_kind="reserved-1y")
    long = build_plan(get_preset("llama3-8b"), "h100-sxm", layout, training, **kw)
    hours = long.estimate.time_to_train_h
    assert hours is not None and YEAR < hours < 2 * YEAR
    hourly = 8 * (long.price_per_gpu_hour_usd or 0)
    assert long.estimate.cost_usd == pytest.approx(hourly * 2 * YEAR)
    term = plan_commitment("reserved-1y", long)
    assert term is not None and term.terms == 2 and term.term_cost_usd == pytest.approx(hourly * 2 * YEAR)
    share = f"{hours / (2 * YEAR):.0%}"
    assert f"8 h100-sxm for its 2 terms ({money(hourly * YEAR)} a term) cost {money(2 * hourly * YEAR)}" in term.words()
    assert f"({share} of them)" in term.words()
    for lang, words in (("en", "for its 2 terms cost"), ("zh", "的 2 个期限费用为")):
        text = commitment_text(Labels(lang), term)
        assert words in text and money(hourly * YEAR) in text and share in text
    assert ", billed for whole 1-year terms" in price_words(long)
    by_hour = build_plan(get_preset("llama3-8b"), "h100-sxm", layout, training, **kw, term_filled=1.0)
    assert "terms" not in price_words(by_hour) and "$" in price_words(by_hour)
    half = build_plan(get_preset("llama3-8b"), "h100-sxm", layout, training, **kw, term_filled=0.5)
    assert ", billed for its hours and 50% of the rest of its 1-year terms" in price_words(half)
