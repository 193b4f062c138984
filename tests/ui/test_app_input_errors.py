"""Issue 30: the reader of user files (planner/limits.py) refuses with a rule code, and where its
refusal reaches the page (the per-user default calibration file, the one file the app reads from
disk) the 中文 page words it from the code and figures, never the reader's English sentence."""

from __future__ import annotations

import string

import pytest
from support import REPO
from support.app import EN, ZH, english_sentences, open_tab, run_app

from planner.errors import RuleCode
from planner.limits import MAX_GPUS, MAX_INPUT_BYTES
from planner.rule_codes import TEMPLATES
from ui.calibration import default_calibration_path
from ui.explorer import KEPT
from ui.i18n import all_labels
from ui.number_box import Bounds
from ui.reasons import CALIBRATION_REASONS

INPUT_CODES = [code for code in RuleCode if code.value.startswith("input_")]


def oversized_default_file():
    """The default calibration file, one byte over the reader's cap (as ``--calibration`` reads it)."""
    path = default_calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"#" * (MAX_INPUT_BYTES + 1))
    return path


@pytest.mark.parametrize("tr", [EN, ZH], ids=["en", "zh"])
def test_an_oversized_default_calibration_file_is_worded_in_the_pages_language(tr):
    path = oversized_default_file()
    at = run_app(lang=tr.lang)
    assert not at.exception
    if tr is EN:  # the reader's own sentence, byte for byte
        error = f"{path}: {MAX_INPUT_BYTES + 1} bytes, over {MAX_INPUT_BYTES} bytes: not a calibration file"
    else:
        figures = {"size_bytes": MAX_INPUT_BYTES + 1, "limit_bytes": MAX_INPUT_BYTES}
        error = ZH("reason_cal_input_too_large", name=path.name, **figures)
        assert "16,000,001 字节" in error and "16,000,000 字节的上限" in error and "校准文件" in error
        assert not english_sentences(error)
    assert [e.value for e in at.error] == [tr("bad_calibration", error=error)]
    assert at.metric  # planned with the plain catalog


def test_every_input_code_has_its_own_chinese_label():
    """Each reader's refusal has a 中文 label of its own (never the generic 'see the English page'),
    citing only its template's figures and the file's name."""
    fields = lambda text: {name for _, name, _, _ in string.Formatter().parse(text) if name}  # noqa: E731
    zh = all_labels("zh")
    keys = [CALIBRATION_REASONS.labels[code] for code in INPUT_CODES]
    assert len(INPUT_CODES) == 10 and len(set(keys)) == len(keys)
    for code, key in zip(INPUT_CODES, keys, strict=True):
        assert fields(zh[key]) <= fields(TEMPLATES[code]) | {"name"}, code
        assert "校准文件" in zh[key] and not english_sentences(zh[key]), code


@pytest.mark.parametrize("tr", [EN, ZH], ids=["en", "zh"])
def test_an_emptied_number_box_keeps_its_value_and_says_so(tr):
    """Trial s39: clearing "Most GPUs to consider" planned on one GPU (its minimum), unsaid."""
    at = run_app(lang=tr.lang, max_gpus=64)
    assert not at.exception
    before = [m.value for m in at.metric]
    at.number_input(key="max_gpus").set_value(None).run()
    assert not at.exception and at.number_input(key="max_gpus").value == 64
    assert tr("number_emptied", label=tr("max_gpus"), value="64") in [w.value for w in at.warning]
    assert [m.value for m in at.metric] == before
    at.number_input(key="max_gpus").set_value(32).run()  # the next number is taken, the warning gone
    assert at.number_input(key="max_gpus").value == 32
    assert not any(w.value.startswith(tr("number_emptied", label=tr("max_gpus"), value="")[:8]) for w in at.warning)


@pytest.mark.parametrize("tr", [EN, ZH], ids=["en", "zh"])
def test_a_number_out_of_range_keeps_its_value_and_says_so(tr):
    """A number past a box's bounds never reached the server (the browser refused it under a red
    outline, the page kept the old value's answer, unsaid): the page now names the range and the
    value the answer is for, and the box shows that value."""
    at = run_app(lang=tr.lang, max_gpus=64)
    before = [m.value for m in at.metric]
    for given, shown in ((MAX_GPUS + 1, "1,048,577"), (0, "0")):
        at.number_input(key="max_gpus").set_value(given).run()
        assert not at.exception and at.number_input(key="max_gpus").value == 64
        words = dict(label=tr("max_gpus"), range=tr("number_range", low="1", high="1,048,576"), value=shown)
        assert [w.value for w in at.warning] == [tr("number_out_of_range", **words, kept="64")]
        assert [m.value for m in at.metric] == before
    if tr is EN:
        assert at.warning[0].value == (
            "“Most GPUs to consider” takes 1 to 1,048,576, not 0: it keeps 64, and the answer shown is for 64."
        )
    at.number_input(key="max_gpus").set_value(32).run()  # an allowed number is taken, the warning gone
    assert at.number_input(key="max_gpus").value == 32 and not at.warning


def test_deadline_and_budget_boxes_keep_their_value():
    """'0 = none' boxes: emptied they kept nothing and planned with no deadline or budget, unsaid."""
    at = run_app(deadline_days=30.0, budget_usd=5000.0)
    for key, kept in (("deadline_days", "30"), ("budget_usd", "5,000")):
        at.number_input(key=key).set_value(None).run()
        assert at.number_input(key=key).value == float(kept.replace(",", ""))
        assert [w.value for w in at.warning] == [EN("number_emptied", label=EN(key), value=kept)]
    at.number_input(key="deadline_days").set_value(-1.0).run()
    low_high = EN("number_range", low="0", high="36,525")
    assert [w.value for w in at.warning] == [
        EN("number_out_of_range", label=EN("deadline_days"), range=low_high, value="-1", kept="30")
    ]


def test_the_explorers_boxes_keep_their_value_across_runs():
    """The explorer puts back what the reader set last (explorer.KEPT, written by each box's
    on_change) on every run: a refused input must not be what it keeps, or the box would be
    emptied again, and warn, on every later run."""
    at = open_tab(run_app(), "tab_explorer")
    micro = at.number_input(key="ex_micro_batch").value
    at.number_input(key="ex_micro_batch").set_value(None).run()
    assert at.number_input(key="ex_micro_batch").value == micro
    assert [w.value for w in at.warning] == [EN("number_emptied", label=EN("ex_micro_batch"), value=str(micro))]
    assert at.session_state[KEPT]["ex_micro_batch"] == micro
    at.number_input(key="ex_tp").set_value(0).run()
    words = dict(label=EN("ex_tp"), range=EN("number_range", low="1", high="1,048,576"), value="0")
    assert [w.value for w in at.warning] == [EN("number_out_of_range", **words, kept="1")]
    at.number_input(key="ex_grad_accum").set_value(2).run()  # a later run: no warning, the values kept
    assert not at.warning and at.number_input(key="ex_micro_batch").value == micro
    assert at.session_state[KEPT]["ex_tp"] == at.number_input(key="ex_tp").value == 1


def test_an_empty_job_steps_box_is_the_plans_budget_and_zero_is_refused():
    """The job's steps box may be empty (its placeholder: the plan's token budget); 0 is refused."""
    at = open_tab(run_app(), "tab_downloads")
    box = at.number_input(key="emit_steps")
    assert box.value is None
    box.set_value(0).run()
    assert at.number_input(key="emit_steps").value is None
    (warning,) = [w.value for w in at.warning if w.value.startswith("“" + EN("emit_steps"))]
    assert warning.startswith(f"“{EN('emit_steps')}” takes 1 or more, not 0: it keeps the plan's tokens: ")
    at.number_input(key="emit_steps").set_value(40).run()
    assert at.number_input(key="emit_steps").value == 40 and not any("not 0" in w.value for w in at.warning)


def test_every_number_box_is_a_number_box():
    """A plain st.number_input takes its minimum when emptied and leaves an out-of-range number
    to the browser's red outline: every box in the app is ``ui.number_box.number_box``."""
    sources = [p for p in (REPO / "ui").glob("*.py") if p.name != "number_box.py"] + [REPO / "app.py"]
    assert not [p.name for p in sources if "number_input(" in p.read_text()]


def test_bounds():
    assert Bounds(1, 10).refuses(None) and not Bounds(1, 10, empty_ok=True).refuses(None)
    assert [Bounds(1, 10).refuses(v) for v in (0, 1, 10, 11)] == [True, False, False, True]
    assert not Bounds(0.0).refuses(1e300) and Bounds(0.0).refuses(-0.001)
    assert Bounds(1, 1e6).text(EN) == "1 to 1,000,000" and Bounds(0.5).text(ZH) == "不小于 0.5 的数"


def test_ownership_and_horizon_boxes_take_the_files_bounds():
    """Trial s40: a PUE of 1e6, a horizon of 1e300 days and 49-64 slots were taken (or refused) unlike a
    jobs file: the boxes now hold the same limits (planner/limits.py)."""
    from planner.limits import MAX_DAYS, MAX_PUE, MAX_SLOTS

    at = run_app(pricing="bought")
    at.number_input(key="tco_pue").set_value(MAX_PUE * 10).run()
    assert not at.exception and at.number_input(key="tco_pue").value <= MAX_PUE
    assert any(EN("tco_pue") in w.value for w in at.warning)
    assert Bounds(0.0, MAX_DAYS).refuses(MAX_DAYS + 1) and not Bounds(1, MAX_SLOTS).refuses(MAX_SLOTS)


def test_a_range_is_written_in_full():
    """Trial s40: the budget's range read "0 to 1e+13"."""
    from ui.number_box import number_text

    assert number_text(1e13) == "10,000,000,000,000" and number_text(0.001) == "0.001" and number_text(2.5) == "2.5"


def test_a_new_chosen_plan_says_which_layout_of_the_readers_it_replaced():
    """Trial s40: the reader set a layout in the explorer, ticked a sidebar box, and the explorer
    reloaded the new chosen plan unsaid (and read "Fits" for another layout). A reload over the
    reader's own values now names them; a reload over untouched values says nothing."""
    from ui.explorer import LOADED_VALUES, layout_words

    opening = EN("ex_replaced", layout="|").split("|")[0]
    notices = lambda at: [i.value for i in at.info if i.value.startswith(opening)]  # noqa: E731
    at = open_tab(run_app(), "tab_explorer")
    at.session_state["seq_len"] = 1024
    at.run()  # a new chosen plan over values the reader never touched: no notice
    assert not notices(at) and at.session_state[KEPT] == at.session_state[LOADED_VALUES]
    accum = at.number_input(key="ex_grad_accum").value + 1
    at.number_input(key="ex_grad_accum").set_value(accum).run()
    mine = layout_words(at.session_state[KEPT])
    assert f"× {accum}" in mine and not notices(at)
    at.session_state["seq_len"] = 512  # a new chosen plan (another sequence)
    at.run()
    assert notices(at) == [EN("ex_replaced", layout=mine)]
    at.run()  # one run only
    assert not notices(at)
