"""A tp, cp or pp fix on an HSDP layout says so where it runs only with the replicas folded into the
FSDP group, and keeps them (in deed and in words) where they fit as they are (s54: "use tp=8 (now 1)"
was named for llama3-70b at dp_shard 4 x 16 replicas on 64 GPUs, where with the 16 kept tp 8 does
not even divide the GPUs; the fix had been judged with every replica in one FSDP group, unsaid)."""

from __future__ import annotations

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.fix_codes import FixCode
from planner.layout import Layout, Sharding, TrainingConfig
from planner.model.estimate import estimate
from planner.plan import FixHint

CATALOG = load_catalog()
FOLDED = " with dp_replicate={r} (now {now}) and dp_shard={shard} (now {shard_now})"
# The degree each widening fix names, and whether it recomputes every layer with it.
NAMED = {
    FixCode.TP: ("tp", False),
    FixCode.TP_MORE_GPUS: ("tp", False),
    FixCode.CP: ("cp", False),
    FixCode.CP_MORE_GPUS: ("cp", False),
    FixCode.FULL_AC_CP: ("cp", True),
    FixCode.FULL_AC_CP_MORE_GPUS: ("cp", True),
    FixCode.PP_MORE_GPUS: ("pp", False),
    FixCode.PP_STAGES: ("pp", False),
}


def _est(model: str, num_gpus: int, layout: Layout, seq_len: int, **training):
    config = TrainingConfig(seq_len=seq_len, micro_batch=1, **training)
    return estimate(get_preset(model), "h100-sxm", layout, config, num_gpus=num_gpus, catalog=CATALOG)


def _as_named(model: str, num_gpus: int, layout: Layout, seq_len: int, hint: FixHint):
    """The estimate of ``layout`` changed as ``hint`` says: its degree, its GPUs, its replicas and its
    FSDP group (the layout's unless it names others: what a user types beside the named flags)."""
    degree, full_ac = NAMED[hint.code]
    value = int(hint.figures["stages" if degree == "pp" else degree])
    replicas = int(hint.figures.get("dp_replicate", layout.dp_replicate))
    # the FSDP group as named, else the user's --dp-shard kept (s55: a cp fix that kept the replicas and
    # changed the group said nothing of it, and the user's flag, typed again, was refused)
    shard = int(hint.figures.get("group_dp_shard", layout.dp_shard))
    named = layout.model_copy(update={degree: value, "dp_replicate": replicas, "dp_shard": shard})
    training = {"activation_checkpointing": "full"} if full_ac else {}
    training |= {"grad_accum": value} if degree == "pp" else {}
    return _est(model, int(hint.figures.get("gpus", num_gpus)), named, seq_len, **training)


def test_the_repros_fixes_name_the_fold_they_need_and_fit_as_said():
    layout = Layout(dp_shard=4, dp_replicate=16, sharding=Sharding.FSDP)
    e = _est("llama3-70b", 64, layout, 8192, grad_accum=8)
    assert not e.feasible
    assert e.fix == (
        "enable full activation checkpointing and split each sequence over cp=2 ranks (context parallelism, now 1)"
        + FOLDED.format(r=2, now=16, shard=16, shard_now=4)
        + "; or use tp=8 (now 1)"
        + FOLDED.format(r=1, now=16, shard=8, shard_now=4)
    )
    for hint in e.fix_hints:
        # as many replicas kept as fit (review54 L3: the cp fix fits with 2 of the 16, tp 8 with none)
        assert hint.figures["dp_replicate"] == {FixCode.FULL_AC_CP: 2, FixCode.TP: 1}[hint.code]
        assert hint.figures["dp_replicate_now"] == 16
        assert _as_named("llama3-70b", 64, layout, 8192, hint).feasible, hint
    # as they were said, with the 16 replicas kept: tp 8 does not divide the GPUs, cp 2 does not fit
    with pytest.raises(ValueError, match="not divisible"):
        _est("llama3-70b", 64, Layout(tp=8, dp_replicate=16, sharding=Sharding.FSDP), 8192)
    cp = Layout(cp=2, dp_replicate=16, sharding=Sharding.FSDP)
    assert not _est("llama3-70b", 64, cp, 8192, activation_checkpointing="full").feasible


def test_a_pipeline_fix_that_folds_the_replicas_says_so():
    layout = Layout(tp=8, dp_replicate=4, sharding=Sharding.FSDP)
    e = _est("llama3-70b", 32, layout, 4096)
    (pp,) = [h for h in e.fix_hints if h.code == FixCode.PP_MORE_GPUS]
    assert pp.text() == "split the layers over pp=2 pipeline stages (now 1) on 64 GPUs" + FOLDED.format(
        r=1, now=4, shard=4, shard_now=1
    )
    assert _as_named("llama3-70b", 32, layout, 4096, pp).feasible


def test_a_pipeline_fix_that_folds_the_replicas_on_these_gpus_names_its_stages():
    """review54: "split the layers over more pipeline stages (pp > 2) with dp_replicate=1 (now 4) and
    dp_shard=2 (now 1)" held for pp 4 alone: pp 8 with dp_shard 2 needs 128 GPUs, and was refused."""
    layout = Layout(tp=8, pp=2, dp_replicate=4, sharding=Sharding.FSDP)
    e = _est("llama3-70b", 64, layout, 4096, grad_accum=256)
    (pp,) = [h for h in e.fix_hints if h.code == FixCode.PP_STAGES]
    folded = FOLDED.format(r=2, now=4, shard=1, shard_now=1)  # 2 of the 4 replicas kept (review54 L3)
    assert pp.text() == "split the layers over pp=4 pipeline stages (now 2)" + folded
    assert pp.text() in (e.fix or "").split("; or ")
    assert _as_named("llama3-70b", 64, layout, 4096, pp).feasible


@pytest.mark.parametrize(
    "model, num_gpus, shard, replicas, seq_len, code, group",
    [
        ("llama3-8b", 16, 8, 2, 32768, FixCode.CP, 2),  # cp 4 on these GPUs, dp_shard 2 x the 2 replicas
        ("llama3-70b", 16, 8, 2, 4096, FixCode.TP_MORE_GPUS, None),  # tp 4 on 64 GPUs, dp_shard 8 x the 2
        ("mixtral-8x7b", 16, 8, 2, 16384, FixCode.CP_MORE_GPUS, None),  # cp 4 on 64 GPUs
    ],
)
def test_replicas_that_can_stay_are_kept_and_a_changed_group_is_named(
    model, num_gpus, shard, replicas, seq_len, code, group
):
    layout = Layout(dp_shard=shard, dp_replicate=replicas, sharding=Sharding.FSDP)
    e = _est(model, num_gpus, layout, seq_len)
    (hint,) = [h for h in e.fix_hints if h.code == code]
    assert "dp_replicate" not in hint.figures and "dp_replicate" not in hint.text()
    # s55: the group is named where it changes (on these GPUs), and only there
    assert hint.text().endswith(f" with dp_shard={group} (now {shard})") == (group is not None)
    assert hint.text() in (e.fix or "").split("; or ")
    assert _as_named(model, num_gpus, layout, seq_len, hint).feasible


def test_the_repro_cp_fix_that_keeps_the_replicas_names_its_group():
    """s55: on dp_shard 32 x 2 replicas of 64 H100, "split each sequence over cp=2 ranks" kept the 2
    replicas with dp_shard 16, unsaid: --cp 2 beside the user's --dp-shard 32 was refused."""
    layout = Layout(dp_shard=32, dp_replicate=2, sharding=Sharding.FSDP)
    e = _est("llama3-70b", 64, layout, 32768, activation_checkpointing="full")
    (cp,) = [h for h in e.fix_hints if h.code == FixCode.CP]
    assert cp.text() == "split each sequence over cp=2 ranks (context parallelism, now 1) with dp_shard=16 (now 32)"
    named = layout.model_copy(update={"cp": 2, "dp_shard": 16})
    assert _est("llama3-70b", 64, named, 32768, activation_checkpointing="full").feasible
    with pytest.raises(ValueError, match="degrees multiply"):
        _est("llama3-70b", 64, layout.model_copy(update={"cp": 2}), 32768, activation_checkpointing="full")


def test_the_replicas_words_follow_the_fix_and_only_where_named():
    tp = FixHint(code=FixCode.TP, figures={"tp": 8, "now": 1})
    assert tp.text() == "use tp=8 (now 1)"
    folded = FixHint(
        code=FixCode.TP,
        figures={"tp": 8, "now": 1, "dp_replicate": 1, "dp_replicate_now": 16, "group_dp_shard": 8, "dp_shard_now": 4},
    )
    assert folded.text() == "use tp=8 (now 1)" + FOLDED.format(r=1, now=16, shard=8, shard_now=4)
    grouped = FixHint(code=FixCode.CP, figures={"cp": 2, "now": 1, "group_dp_shard": 16, "dp_shard_now": 32})
    assert (
        grouped.text() == "split each sequence over cp=2 ranks (context parallelism, now 1) with dp_shard=16 (now 32)"
    )


def test_an_fsdp_group_fix_names_the_replicas_it_leaves_and_fits_as_said():
    """review54 M4: "shard with FSDP over a group of at least 32 (dp_shard now 4)" was told to 4 x 8
    replicas on 32 GPUs, and typed with the 8 replicas kept it was refused (the degrees multiply to 256)."""
    layout = Layout(dp_shard=4, dp_replicate=8, sharding=Sharding.FSDP)
    e = _est("llama3-70b", 32, layout, 4096, activation_checkpointing="full")
    (group,) = [h for h in e.fix_hints if h.code == FixCode.FSDP_GROUP]
    shard, replicas = int(group.figures["group"]), int(group.figures["dp_replicate"])
    assert (shard * replicas, group.figures["group_dp_shard"], group.figures["dp_replicate_now"]) == (32, shard, 8)
    assert group.text().endswith(f" with dp_replicate={replicas} (now 8) and dp_shard={shard} (now 4)")
    named = Layout(dp_shard=shard, dp_replicate=replicas, sharding=Sharding.FSDP)
    assert _est("llama3-70b", 32, named, 4096, activation_checkpointing="full").feasible


def test_a_shard_fsdp_fix_on_zero_replicas_names_the_fold_it_was_judged_with():
    """review55: "shard parameters, gradients and optimizer states with FSDP (sharding fsdp)" was told
    to zero2 dp_shard 4 x 4 replicas on 16 GPUs, judged with every replica in the FSDP group; typed
    beside the user's --dp-shard 4 --dp-replicate 4 it still needed 84.4 GiB of 75.4."""
    layout = Layout(dp_shard=4, dp_replicate=4, sharding=Sharding.ZERO2)
    e = _est("llama3-8b", 16, layout, 8192, grad_accum=8)
    (fsdp,) = [h for h in e.fix_hints if h.code == FixCode.SHARD_FSDP]
    assert fsdp.text() == "shard parameters, gradients and optimizer states with FSDP (sharding fsdp)" + FOLDED.format(
        r=1, now=4, shard=16, shard_now=4
    )
    named = Layout(dp_shard=16, dp_replicate=1, sharding=Sharding.FSDP)
    assert _est("llama3-8b", 16, named, 8192, grad_accum=8).feasible
    assert not _est("llama3-8b", 16, layout.model_copy(update={"sharding": Sharding.FSDP}), 8192, grad_accum=8).feasible
    # no replicas to fold (DDP's are every rank; zero1 without them): the words as they were
    for plain in (Layout(sharding=Sharding.NONE), Layout(sharding=Sharding.ZERO1)):
        hints = _est("llama3-8b", 8, plain, 4096, grad_accum=4).fix_hints
        assert [h.figures for h in hints if h.code == FixCode.SHARD_FSDP] == [{}]
