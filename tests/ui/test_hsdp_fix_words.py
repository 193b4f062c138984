"""s54: a memory fix that runs only with an HSDP layout's replicas folded into the FSDP group says
so, on the CLI (and the fix as said is one it accepts and that fits) and in the app's languages."""

from __future__ import annotations

import json
import re

from support.app import EN, ZH, english_sentences

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.fix_codes import FixCode
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model.estimate import estimate
from planner.plan import FixHint
from ui.cli import main
from ui.reasons import fix_text

BASE = ["estimate", "--model", "llama3-70b", "--gpu", "h100-sxm", "--num-gpus", "64", "--sharding", "fsdp"]
BATCH = ["--seq-len", "8192", "--global-batch-tokens", "4194304", "--micro-batch", "1", "--json"]
FOLDED = "with dp_replicate=(\\d+) \\(now 16\\) and dp_shard=(\\d+) \\(now 4\\)"


def _estimate(capsys, flags: list[str]) -> dict:
    assert main([*BASE, *flags, *BATCH]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_cli_names_the_replicas_of_its_fix_and_accepts_the_fix_as_said(capsys):
    """The s54 repro: "use tp=8 (now 1)" was named for 16 replicas of 4, where tp 8 divides the 64
    GPUs only with the replicas folded; named so, the flags it names run and fit."""
    data = _estimate(capsys, ["--dp-shard", "4", "--dp-replicate", "16"])
    assert not data["feasible"]
    tp = re.search(rf"use tp=(\d+) \(now 1\) {FOLDED}", data["fix"])
    cp = re.search(
        rf"enable full activation checkpointing and split each sequence over cp=(\d+) .*?\) {FOLDED}", data["fix"]
    )
    assert tp and cp, data["fix"]
    # every flag as named, the user's --dp-shard among them (kept at 4, it would be refused)
    assert _estimate(capsys, ["--tp", tp[1], "--dp-replicate", tp[2], "--dp-shard", tp[3]])["feasible"]
    assert _estimate(capsys, ["--ac", "full", "--cp", cp[1], "--dp-replicate", cp[2], "--dp-shard", cp[3]])["feasible"]


def test_the_replicas_words_in_chinese():
    layout = Layout(dp_shard=4, dp_replicate=16, sharding=Sharding.FSDP)
    training = TrainingConfig(seq_len=8192, micro_batch=1, grad_accum=8)
    e = estimate(get_preset("llama3-70b"), "h100-sxm", layout, training, num_gpus=64, catalog=load_catalog())

    def folded(replicas: int, shard: int) -> str:
        return f"，并设副本数 dp_replicate={replicas}（当前 16）、分片组大小 dp_shard={shard}（当前 4）"

    assert fix_text(ZH, e.fix_hints) == (
        f"开启完整的激活重计算，并把每条序列切分到 cp=2 个 rank 上（上下文并行，当前 1）{folded(2, 16)}"
        f"；或者使用 tp=8（当前 1）{folded(1, 8)}"
    )
    assert not english_sentences(fix_text(ZH, e.fix_hints))
    assert fix_text(EN, e.fix_hints) == e.fix
    # no replicas named, no words of them (the labels of layouts without HSDP as they were)
    assert fix_text(ZH, [FixHint(code=FixCode.TP, figures={"tp": 8, "now": 1})]) == "使用 tp=8（当前 1）"


def test_a_fix_that_keeps_the_replicas_names_its_group_on_the_cli_and_in_chinese(capsys):
    """s55: "split each sequence over cp=2 ranks" on dp_shard 32 x 2 replicas kept the replicas with
    dp_shard 16, unsaid; --cp 2 beside the user's --dp-shard 32 was refused. Now the group is named,
    and the flags as named run and fit."""
    flags = ["--dp-shard", "32", "--dp-replicate", "2", "--ac", "full", "--seq-len", "32768", "--json"]
    assert main([*BASE, *flags]) == 0
    data = json.loads(capsys.readouterr().out)
    cp = re.search(
        r"split each sequence over cp=(\d+) ranks \(context parallelism, now 1\) with dp_shard=(\d+) \(now 32\)",
        data["fix"],
    )
    assert cp, data["fix"]
    named = ["--dp-shard", cp[2], "--dp-replicate", "2", "--ac", "full", "--seq-len", "32768", "--cp", cp[1], "--json"]
    assert main([*BASE, *named]) == 0
    assert json.loads(capsys.readouterr().out)["feasible"]
    hint = FixHint(code=FixCode.CP, figures={"cp": 2, "now": 1, "group_dp_shard": 16, "dp_shard_now": 32})
    assert (
        fix_text(ZH, [hint])
        == "把每条序列切分到 cp=2 个 rank 上（上下文并行，当前 1），并设分片组大小 dp_shard=16（当前 32）"
    )


def test_a_shard_fsdp_fix_names_its_fold_in_chinese():
    """review55: the FSDP fix told to ZeRO replicas names the fold it was judged with, in both languages."""
    hint = FixHint(
        code=FixCode.SHARD_FSDP,
        figures={"dp_replicate": 1, "dp_replicate_now": 4, "group_dp_shard": 16, "dp_shard_now": 4},
    )
    assert fix_text(ZH, [hint]).endswith("，并设副本数 dp_replicate=1（当前 4）、分片组大小 dp_shard=16（当前 4）")
    assert not english_sentences(fix_text(ZH, [hint]))
    assert fix_text(EN, [hint]) == hint.text()
