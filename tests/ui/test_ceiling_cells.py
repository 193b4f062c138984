"""Plans held at one efficiency ceiling still show how they differ (trial s41 H2: six torchtitan
plans at an identical 43.9 % MFU, the trade-offs between them nowhere)."""

from __future__ import annotations

import io

from rich.console import Console

from planner.api import PlanRequest, plan
from planner.catalog.models import get_preset
from planner.model.stacks import Stack
from ui.render_plan import CEILING_NOTE, mfu_cell, plans_table


def _text(table) -> str:
    console = Console(file=io.StringIO(), width=250)
    console.print(table)
    return console.file.getvalue()


def test_held_plans_show_the_models_own_mfu_beside_the_ceiling():
    request = PlanRequest(
        model=get_preset("llama3.1-8b"),
        training_tokens=1e12,
        deadline_days=30,
        stack=Stack.TORCHTITAN,
        gpus={"h100-sxm": 64},
        top_k=5,
    )
    result = plan(request)
    plans = [result.plan, *result.alternatives]
    held = [p.estimate for p in plans if p.estimate.ceiling is not None and p.estimate.ceiling.binding]
    assert len(held) >= 2 and len({e.throughput.mfu for e in held}) == 1  # one ceiling holds them
    cells = [mfu_cell(e) for e in held]
    own = [e.throughput.mfu * e.ceiling.uncapped_tokens_per_s / e.throughput.tokens_per_s for e in held]
    assert all(f"({o:.1%})".replace("%)", ")") in c for c, o in zip(cells, own, strict=True))
    assert len(set(cells)) > 1 and all(o > e.throughput.mfu for o, e in zip(own, held, strict=True))
    text = _text(plans_table("plans", result.plan, result.alternatives, "p80"))
    assert CEILING_NOTE.split(";")[0] in text and cells[0] in text


def test_a_plan_under_its_ceiling_shows_one_figure():
    result = plan(PlanRequest(model=get_preset("gpt3-125m"), training_tokens=2.5e9, gpus={"h100-sxm": 8}, top_k=0))
    e = result.plan.estimate
    assert e.ceiling is None or not e.ceiling.binding
    assert mfu_cell(e) == f"{e.throughput.mfu:.1%}"
    assert CEILING_NOTE.split(";")[0] not in _text(plans_table("plans", result.plan, (), "p80"))


def test_the_ceiling_names_the_gpu_its_row_ran_on():
    """Trial s42 M1: every B200 plan was held at a GB200 NVL72 row's MFU, and the line read as the
    B200's own ("the best measured on this GPU architecture")."""
    from planner.api import build_plan
    from planner.layout import Layout, TrainingConfig
    from ui.render_lines import ceiling_line

    e = build_plan(
        get_preset("llama3-70b"),
        "b200",
        Layout(tp=4, pp=2),
        TrainingConfig(seq_len=4096, grad_accum=8),
        num_gpus=512,
        stack=Stack.MEGATRON_CORE,
    ).estimate
    assert e.ceiling is not None and e.ceiling.gpu == "gb200" and e.ceiling.num_gpus
    assert f"{e.ceiling.row} on {e.ceiling.num_gpus:,} x gb200)" in ceiling_line(e)


def test_the_ceiling_says_what_it_is_the_best_of_not_the_plans_scale():
    """Buyer trial s50 L8: a 4,096-GPU Llama 3 70B plan on H200 was held at "the best measured on
    this GPU architecture, precision and scale (llm-foundry: 37 mpt-7b on h100-sxm)", a 7B run on 128
    GPUs: the regime's one scale is one node or more, and its best row is of any model and count.
    The choice is unchanged (bench/validate_bands.py prints the same); the words say what it is."""
    from planner.api import build_plan
    from planner.layout import Layout, TrainingConfig
    from ui.i18n import Labels
    from ui.messages import ceiling_text
    from ui.render_lines import ceiling_line

    def held(layout: Layout, num_gpus: int, accum: int):
        training = TrainingConfig(seq_len=4096, grad_accum=accum)
        return build_plan(get_preset("llama3-70b"), "h200-sxm", layout, training, num_gpus=num_gpus).estimate

    # the plan's own layout (plan --tokens 15e12 --deadline-days 90 --gpus h200-sxm), and one node's
    big = held(Layout(dp_shard=256, tp=4, pp=4, vpp=8, sharding="zero1"), 4096, 4)
    node = held(Layout(dp_shard=8), 8, 1)
    c = big.ceiling
    # since session 52 (DTensor's TP traffic exposed) the plan runs just under it: its band's fast end
    # passes it, and the line names it the same way
    assert c is not None and c.multi_node and c.num_gpus is not None and c.num_gpus < 4096
    line = " ".join(ceiling_line(big).split())
    assert "and scale" not in line and f"on {c.num_gpus:,} x {c.gpu})" in line
    assert "the best measured on this GPU architecture and precision over more than one node, any model size" in line
    assert node.ceiling is not None and node.ceiling.binding and not node.ceiling.multi_node
    assert "over more than one node" not in ceiling_line(node) and "any model size" in ceiling_line(node)
    for e in (big, node):  # the app's English words are the CLI's
        assert e.ceiling is not None and e.ceiling.scope_words in (ceiling_text(Labels("en"), e) or "")
        assert "规模与 GPU 数量" in (ceiling_text(Labels("zh"), e) or "")
