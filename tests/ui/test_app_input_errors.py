"""Issue 30: the reader of user files (planner/limits.py) refuses with a rule code, and where its
refusal reaches the page (the per-user default calibration file, the one file the app reads from
disk) the 中文 page words it from the code and figures, never the reader's English sentence."""

from __future__ import annotations

import string

import pytest
from support.app import EN, ZH, english_sentences, run_app

from planner.errors import RuleCode
from planner.limits import MAX_INPUT_BYTES
from planner.rule_codes import TEMPLATES
from ui.calibration import default_calibration_path
from ui.i18n import all_labels
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
