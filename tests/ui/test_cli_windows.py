"""Trial s52 (M4): a model with sliding-window layers says so once, and on transformers' SDPA path
that the masked square is counted; explain's HFU words name what HFU counts beyond model FLOPs
(Gemma 3 on impl hf, checkpointing off: it was all called "recompute")."""

from __future__ import annotations

import json

import pytest
from support import DATA

from planner.explain import NoteKind, plan_notes
from planner.plan import Plan
from ui.cli import main
from ui.i18n import Labels
from ui.messages import note_text

GEMMA3_TEXT = str(DATA / "hf_configs" / "gemma3_text.json")  # 26 layers, window 512, 5 local : 1 global
ARGS = ["--gpu", "h100-sxm", "--num-gpus", "8", "--micro-batch", "1", "--seq-len", "4096"]


def _estimate(capsys, tmp_path, *extra: str) -> tuple[str, Plan]:
    out = tmp_path / "plan.json"
    assert main(["estimate", "--model", GEMMA3_TEXT, *ARGS, *extra, "--out", str(out)]) == 0
    return capsys.readouterr().out, Plan.model_validate_json(out.read_text())


def test_windowed_layers_and_the_masked_square_are_said_once(capsys, tmp_path):
    text, plan = _estimate(capsys, tmp_path)
    assert plan.training.impl.value == "hf"
    windowed = "22 of 26 layers windowed (512 tokens): SDPA computes their whole masked square (+"
    assert text.count(windowed) == 1 and text.count("layers windowed") == 1
    masked = plan.estimate.throughput.masked_window_flops_per_token
    assert masked > 0 and f"+{masked / 1e9:.2f} GFLOP/token, in HFU)" in text
    # the window in numbers for a script: the spec's layers and the HFU term
    assert main(["estimate", "--model", GEMMA3_TEXT, *ARGS, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["throughput"]["masked_window_flops_per_token"] == pytest.approx(masked)


def test_a_model_without_windows_says_nothing_of_them(capsys, tmp_path):
    assert main(["estimate", "--model", "llama3-8b", *ARGS]) == 0
    assert "windowed" not in capsys.readouterr().out


def test_hfu_words_name_their_terms(capsys, tmp_path):
    """Checkpointing off: no recompute; the masked square and the chunked loss's head instead,
    which with the model FLOPs sum to the HFU numerator."""
    _, plan = _estimate(capsys, tmp_path)
    th = plan.estimate.throughput
    assert th.recompute_flops_per_token == 0 and th.head_recompute_flops_per_token > 0
    terms = th.model_flops_per_token + th.masked_window_flops_per_token + th.head_recompute_flops_per_token
    assert terms == pytest.approx(th.hardware_flops_per_token)
    (mfu,) = [note for note in plan_notes(plan) if note.kind is NoteKind.MFU]
    words = mfu.text()
    assert " + recompute " not in words and "SDPA's masked window square" in words
    assert "the chunked loss's head recompute" in words
    zh = note_text(Labels("zh"), mfu)
    assert "窗口掩码方阵" in zh and "SDPA's" not in zh
    _, full = _estimate(capsys, tmp_path, "--ac", "full")
    (mfu,) = [note for note in plan_notes(full) if note.kind is NoteKind.MFU]
    assert " + recompute " in mfu.text()


def test_an_older_plan_file_does_not_call_its_extra_work_nothing(capsys, tmp_path):
    _, plan = _estimate(capsys, tmp_path)
    data = json.loads(plan.model_dump_json())
    for key in ("recompute", "masked_window", "unrouted_expert", "head_recompute"):
        del data["estimate"]["throughput"][f"{key}_flops_per_token"]
    (mfu,) = [note for note in plan_notes(Plan.model_validate(data)) if note.kind is NoteKind.MFU]
    assert mfu.text().endswith("model FLOPs + terms this plan file does not name")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_card_says_the_windows_as_the_cli_does(capsys, tmp_path, lang):
    """families52 left the windows to the CLI: the app's card says them too, in its language."""
    from support.app import english_sentences

    from ui.plan_card import window_text

    _, plan = _estimate(capsys, tmp_path)
    text = window_text(Labels(lang), plan) or ""
    masked = plan.estimate.throughput.masked_window_flops_per_token / 1e9
    assert "22" in text and "26" in text and "512" in text and f"{masked:.2f}" in text
    assert lang == "en" or not english_sentences(text.replace("SDPA", "").replace("HFU", "").replace("GFLOP", ""))
    llama = plan.model_copy(update={"model": plan.model.model_copy(update={"sliding_layers": 0})})
    assert window_text(Labels(lang), llama) is None
