"""Issue 30's last 中文 gaps: what the planner refuses is worded in the page's language from its
rule code and figures (ui/reasons.py), never the planner's English sentence."""

from __future__ import annotations

import json

import pytest
from support import DATA
from support.app import EN, ZH, english_sentences, run_app

from planner.catalog.hf_config import SUPPORTED_MODEL_TYPES
from ui.reasons import CONFIG_REASONS

MISTRAL = json.loads((DATA / "hf_configs" / "mistral.json").read_text())


def upload(tr, name: str, content: bytes) -> list[str]:
    at = run_app(model_source="upload", lang=tr.lang)
    at.sidebar.file_uploader(key="config_upload").upload(name, content, "application/json")
    at.run()
    assert not at.exception
    assert at.info[0].value == tr("fix_inputs") and not at.metric
    return [e.value for e in at.error]


def test_a_bad_config_upload_is_worded_in_chinese_with_its_figures():
    content = json.dumps({**MISTRAL, "num_hidden_layers": "40"}).encode()
    error = ZH("reason_hf_not_integer", where="my cfg.json", field="num_hidden_layers", value="'40'")
    assert upload(ZH, "my cfg.json", content) == [ZH("bad_config", error=error)]
    assert "'num_hidden_layers'" in error and "'40'" in error and "必须是整数" in error
    assert not english_sentences(error)


def test_the_english_page_keeps_the_readers_sentence():
    content = json.dumps({**MISTRAL, "num_hidden_layers": "40"}).encode()
    sentence = "my cfg.json: 'num_hidden_layers' must be an integer, got '40'"
    assert upload(EN, "my cfg.json", content) == [EN("bad_config", error=sentence)]


@pytest.mark.parametrize(
    ("content", "key", "figures"),
    [
        (b"{not json", "reason_hf_json", {}),
        (
            json.dumps({"model_type": "t5"}).encode(),
            "reason_hf_model_type",
            {"model_type": "'t5'", "supported": ", ".join(SUPPORTED_MODEL_TYPES)},
        ),
    ],
    ids=["json", "model_type"],
)
def test_each_config_refusal_has_its_own_chinese_sentence(content, key, figures):
    (error,) = upload(ZH, "bad.json", content)
    assert key in CONFIG_REASONS.labels.values()
    assert error == ZH("bad_config", error=ZH(key, where="bad.json", **figures))
    assert not english_sentences(error)
