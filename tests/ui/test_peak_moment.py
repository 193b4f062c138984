"""Which moment of the step a memory breakdown is (trial s41 L6: under full recompute at tp 8 the
table had no activations line and nothing said it was the end of the backward)."""

from __future__ import annotations

import json

import pytest
from support.app import EN, ZH
from support.cli import call

from planner.api import build_plan
from planner.catalog.models import get_preset
from planner.estimate_parts import PeakMoment
from planner.layout import Layout, TrainingConfig
from ui import figures
from ui.render import PEAK_MOMENT_WORDS

CASES = {  # (model, tp, recompute) on 64 H200 at 8K: where each peak falls
    PeakMoment.END_OF_BACKWARD: ("llama3.1-70b", "8", "full"),
    PeakMoment.BACKWARD: ("llama3.1-8b", "1", "none"),
}


@pytest.mark.parametrize("moment", list(PeakMoment))
def test_the_breakdown_says_which_peak_it_is(moment: PeakMoment):
    model, tp, ac = CASES[moment]
    args = ["--model", model, "--gpu", "h200-sxm", "--num-gpus", "64", "--tp", tp, "--ac", ac, "--seq-len", "8192"]
    code, out, err = call("estimate", *args, "--json")
    assert code == 0, err
    memory = json.loads(out)["memory"]
    assert memory["peak_moment"] == moment.value
    terms = memory["breakdown_gib"]
    # the moment is the breakdown's: activations only at the backward's start, and the terms add to the peak
    assert (terms["activations"] > 0) == (moment == PeakMoment.BACKWARD)
    assert sum(terms.values()) == pytest.approx(memory["peak_gib"], rel=1e-6)
    assert f"memory per GPU (GiB){PEAK_MOMENT_WORDS[moment]}" in call("estimate", *args)[1]


def test_the_memory_bars_hover_says_which_peak_in_the_pages_language():
    training = TrainingConfig(seq_len=8192, activation_checkpointing="full")
    plan = build_plan(get_preset("llama3.1-70b"), "h200-sxm", Layout(tp=8), training, num_gpus=64)
    for tr in (EN, ZH):
        bars = [t for t in figures.memory_figure([plan], 0.6, tr).data if t.type == "bar"]
        assert bars and all(tr("peak_end_of_backward") in t.customdata[0] for t in bars)
