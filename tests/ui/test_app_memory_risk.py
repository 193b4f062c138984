"""Trial s39 (app): a plan whose reserved peak's 80 % band passes what the fit rule leaves was
flagged only in a grey caption; the card warns and names the memory headroom that plans with
that margin."""

from __future__ import annotations

import re

from support.app import EN, ZH, planned, request_for, run_app

from planner.catalog.models import get_preset
from planner.model.settings import DEFAULT_SETTINGS
from ui.messages import memory_risk_text

STATE = dict(preset="llama3-70b", tokens_mode="absolute", tokens_billions=2000.0, seq_len=4096, max_gpus=256)


def test_a_plan_that_may_not_fit_is_warned_on_the_card_with_the_headroom_that_gives_margin():
    at = run_app(gpus=["h100-sxm"], **STATE)
    request = request_for(get_preset("llama3-70b"), training_tokens=2e12, seq_len=4096, gpus={"h100-sxm": None})
    request = request.model_copy(update={"max_gpus": 256})
    chosen = planned(request).plan
    band = chosen.estimate.uncertainty.memory
    assert band.may_not_fit
    text = memory_risk_text(EN, chosen.estimate.memory, chosen.estimate.uncertainty)
    assert text in [w.value for w in at.warning]
    headroom = int(re.search(r"to (\d+)\.$", text).group(1))
    assert 5 < headroom < 50 and str(headroom) in memory_risk_text(
        ZH, chosen.estimate.memory, band and chosen.estimate.uncertainty
    )
    # planned at that headroom, the band's high end stays under the limit the first plan crossed
    from planner.api import plan

    margin = plan(request, settings=DEFAULT_SETTINGS.but(memory_headroom=headroom / 100)).plan
    assert margin.estimate.uncertainty.memory.reserved_gib[1] <= band.usable_gib
