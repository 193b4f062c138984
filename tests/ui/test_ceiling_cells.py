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
    assert e.ceiling is not None and e.ceiling.gpu == "gb200"
    assert f"{e.ceiling.row} on gb200)" in ceiling_line(e)
