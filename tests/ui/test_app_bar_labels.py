"""Issue 30: the memory and step-time bars' plan labels wrap, so no layout outgrows the margin an
800 px window's chart can give them (tests/ui/test_app_bars_browser.py draws them in Chromium)."""

from __future__ import annotations

from support.app import EN, planned, request_for

from planner.layout import Layout
from ui import figures

LONG = Layout(dp_replicate=2, dp_shard=4, tp=2, pp=2, cp=2, sharding="fsdp")


def test_a_long_layout_wraps_at_spaces_within_the_line_width():
    plan = planned(request_for()).plan
    long_plan = plan.model_copy(update={"layout": LONG, "num_gpus": 64})
    assert len(LONG.describe()) > figures.LABEL_LINE_CHARS  # one line would outgrow the margin
    (label,) = figures.plan_names([long_plan])
    lines = label.split("<br>")
    assert lines[0] == f"#1 64x {plan.gpu}" and len(lines) >= 3
    assert all(len(line) <= figures.LABEL_LINE_CHARS for line in lines)
    assert " ".join(lines[1:]) == LONG.describe()  # wrapped, nothing cut or shortened


def test_a_label_of_more_lines_gets_a_taller_row():
    plan = planned(request_for()).plan
    short, long_ = plan, plan.model_copy(update={"layout": LONG, "num_gpus": 64})
    heights = [figures.memory_figure([p] * 4, 0.6, EN).layout.height for p in (short, long_)]
    assert figures.plan_names([short])[0].count("<br>") == 1
    assert heights[1] > heights[0]  # the rows make room for the extra lines: labels never overlap
    rows = figures.plan_names([long_]).pop().count("<br>") + 1
    assert heights[1] >= figures.BAR_AXES_PX + 4 * figures.LABEL_LINE_PX * rows


def test_words_longer_than_a_line_keep_their_own_line():
    assert figures.wrap_words("a b", 3) == "a b"
    assert figures.wrap_words("a bb c", 3) == "a<br>bb<br>c"
    assert figures.wrap_words("averyverylongword x", 5) == "averyverylongword<br>x"


def test_plans_alike_but_for_their_batch_split_or_recompute_say_which_is_which():
    """Trial s44 app M2: #1 and #5 both read "32x b200 zero1 dp_shard=32" (they differed in micro-batch
    and checkpointing); such labels add those, a label no other shares stays two lines."""
    plan = planned(request_for()).plan
    t = plan.training
    other = plan.model_copy(update={"training": t.model_copy(update={"micro_batch": t.micro_batch * 2})})
    labels = figures.plan_names([plan, other, plan.model_copy(update={"num_gpus": plan.num_gpus * 2})])
    assert labels[0].split("<br>")[-1] == f"mb {t.micro_batch} x {t.grad_accum}, ac {t.describe_ac()}"
    assert labels[1].split("<br>")[-1] == f"mb {2 * t.micro_batch} x {t.grad_accum}, ac {t.describe_ac()}"
    assert labels[2].count("<br>") == 1
