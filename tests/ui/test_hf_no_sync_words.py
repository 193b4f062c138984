"""HF Trainer's no_sync in the estimate's words (docs/hf-trainer-reading.md): an hf-trainer estimate
that accumulates under FSDP says that each GPU holds the whole model's gradients until the last
micro-batch reduces them, and under zero2 that FSDP2 gathers every micro-batch where FSDP1 gathers
once; on the CLI and on the card, in English and Chinese. One micro-batch, DeepSpeed or another
stack: no word."""

from __future__ import annotations

import json

from support.app import request_for

from planner.api import build_plan
from planner.api.accum_notices import DEFERRED_REDUCTION_WORDS, ZERO2_REGATHER_WORDS
from planner.catalog.models import get_preset
from planner.layout import Implementation, Layout, Sharding, TrainingConfig
from planner.model.stacks import Stack
from ui.card_notices import request_texts
from ui.cli import main
from ui.i18n import Labels

ARGS = ["estimate", "--model", "llama3-8b", "--gpu", "h100-sxm", "--num-gpus", "8", "--micro-batch", "1", "--json"]


def _said(capsys, *extra: str) -> list[str]:
    assert main([*ARGS, *extra]) == 0
    return [w for w in json.loads(capsys.readouterr().out)["warnings"] if "no_sync" in w]


def test_the_cli_says_it_where_the_stack_accumulates_under_no_sync(capsys):
    fsdp = _said(capsys, "--stack", "hf-trainer", "--grad-accum", "4")
    assert fsdp == [DEFERRED_REDUCTION_WORDS.format(stack="hf-trainer", accum=4, zero2="")]
    zero2 = _said(capsys, "--stack", "hf-trainer", "--grad-accum", "4", "--sharding", "zero2")
    assert zero2 == [DEFERRED_REDUCTION_WORDS.format(stack="hf-trainer", accum=4, zero2=ZERO2_REGATHER_WORDS)]
    assert "once a step under FSDP1's SHARD_GRAD_OP" in zero2[0]
    for quiet in (
        ["--stack", "hf-trainer", "--grad-accum", "1"],
        ["--stack", "deepspeed", "--grad-accum", "4"],
        ["--stack", "trainplan", "--grad-accum", "4"],
    ):
        assert _said(capsys, *quiet) == [], quiet


def test_the_card_says_it_in_the_pages_language():
    model = get_preset("llama3-8b")
    training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=4, impl=Implementation.HF)
    layout = Layout(dp_shard=8, sharding=Sharding.ZERO2)
    chosen = build_plan(model, "h100-sxm", layout, training, num_gpus=8, stack=Stack.HF_TRAINER)
    request = request_for(model, stack="hf-trainer", impl="hf")
    for lang in ("en", "zh"):
        tr = Labels(lang)
        texts = [t for t in request_texts(tr, request, chosen) if "no_sync" in t]
        zero2 = tr("deferred_reduction_zero2")
        assert texts == [tr("deferred_reduction", stack="hf-trainer", accum=4, zero2=zero2)]
    assert "每块 GPU" in Labels("zh")("deferred_reduction", stack="hf-trainer", accum=4, zero2="")
