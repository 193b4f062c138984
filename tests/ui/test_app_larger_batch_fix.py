"""app53 M1: a deadline no GPU count meets at the asked batch, where only a larger batch past the
count cap does. The fix was only in the English grey line, in the CLI's words ("--global-batch-
tokens 16777216 ... raise max_gpus (--max-gpus) to 12288"); the 中文 page dropped it. It is typed
(``InfeasiblePlan.larger_batch``) and worded in the warning in both languages, the batch as the
sidebar writes it."""

from __future__ import annotations

import re

import pytest
from support.app import EN, ZH, english_sentences, request_for, run_app

from planner.api import plan
from planner.catalog.models import get_preset
from planner.errors import InfeasiblePlan
from ui import app_core

# llama3-8b in under 5 hours on at most 512 H100: no count up to the probe's meets it at 2M tokens a
# step; at 4x that batch, 2,048 H100 do (planner/api/batch_offers.py past_the_cap_batch_fix).
DEADLINE_DAYS = 0.2
STATE = dict(
    preset="llama3-8b", tokens_mode="absolute", tokens_billions=160.6, seq_len=8192, max_gpus=512,
    deadline_days=DEADLINE_DAYS,
)  # fmt: skip


def _answer() -> InfeasiblePlan:
    request = request_for(get_preset("llama3-8b"), training_tokens=160.6e9, seq_len=8192, gpus={"h100-sxm": None})
    with pytest.raises(InfeasiblePlan) as caught:
        plan(request.model_copy(update={"max_gpus": 512, "deadline_days": DEADLINE_DAYS}))
    return caught.value


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_larger_batch_fix_is_said_in_both_languages_with_the_sidebars_batch(tr):
    more = _answer().larger_batch
    assert more is not None and more.gpu == "h100-sxm" and more.num_gpus > 512
    assert more.batch_tokens == 4 * 2**21 and more.seconds < DEADLINE_DAYS * 86400
    at = run_app(gpus=["h100-sxm"], lang=tr.lang, **STATE)
    assert not at.exception, [e.value for e in at.exception]
    (warning,) = [w.value for w in at.warning if tr("global_batch") in w.value]
    assert app_core.token_count(more.batch_tokens) == "8M"
    assert f"“{tr('global_batch')}” = 8M" in warning
    assert f"{more.num_gpus:,} × h100-sxm" in warning and tr("max_gpus") in warning
    assert "--" not in warning and (tr is EN or not english_sentences(warning))


def test_a_deadline_answer_under_a_count_cap_types_the_count_its_fix_names():
    """The count past the cap was read back from the fix's English words (a regex in
    batch_offers.py); the diagnosis now types it (``InfeasiblePlan.raised_cap``)."""
    request = request_for(get_preset("llama3-8b"), training_tokens=160.6e9, seq_len=8192, gpus={"h100-sxm": None})
    larger = request.model_copy(
        update={"max_gpus": 512, "deadline_days": DEADLINE_DAYS, "global_batch_tokens": 4 * 2**21}
    )
    with pytest.raises(InfeasiblePlan) as caught:
        plan(larger)
    answer = caught.value
    said = re.search(r"raise max_gpus \(--max-gpus\) to (\d+) \((\d+) ([\w.-]+) finish in", answer.fix)
    assert said and answer.raised_cap is not None, answer.fix
    assert (answer.raised_cap.num_gpus, answer.raised_cap.gpu) == (int(said[1]), said[3])
