"""The larger-batch offer gives the model's own figures beside the risk's (buyer trial s48 M6:
DeepSeek-V3's offer read "77.1 days against 121.9 days" at p80, set against the 90.9-day headline
and DeepSeek's 54 days, where the model's own figure at the offered batch is 57.5 days)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

from planner.fmt import duration_words
from planner.units import SECONDS_PER_HOUR
from ui.cli import main


def test_the_offer_says_both_plans_own_figures():
    args = ["plan", "--model", "llama3-8b", "--tokens", "15e12", "--gpus", "h100-sxm=2048", "--objective", "time"]
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert main([*args, "--top", "0", "--json"]) == 0
    data = json.loads(out.getvalue())
    (offer,) = [w for w in data["warnings"] if w.startswith("the batch, ")]
    theirs, mine = (duration_words(h * SECONDS_PER_HOUR) for h in (data["larger_batch"]["plan"]["time_to_train_h"],
                                                                      data["plan"]["time_to_train_h"]))  # fmt: skip
    assert theirs != mine
    assert f"; {theirs} against {mine} by the model's own figure)" in offer
    # the risk's figures stay first, as the saving is of them
    assert offer.index("less at --risk p80: ") < offer.index("by the model's own figure")
