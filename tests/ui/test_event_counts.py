"""Expected event counts (interruptions, spot preemptions, maintenance restarts) printed by one rule,
``planner.fmt.expected_events``, on the CLI's goodput line and the app card (review s48: the
preemptions and maintenance restarts read '1.1' and '0.0' by ``{:,.1f}`` beside the interruptions'
two significant figures)."""

from support.app import EN, ZH

from planner.api import build_plan
from planner.catalog.models import get_preset
from planner.fmt import expected_events
from planner.layout import Layout, TrainingConfig
from ui.plan_card import spot_wait_text
from ui.render_lines import goodput_line


def spot_goodput():
    """Llama 3 8B on 64 H100 rented at spot for 1e11 tokens: preemptions and maintenance restarts."""
    return build_plan(
        get_preset("llama3-8b"),
        "h100-sxm",
        Layout(),
        TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=1),
        num_gpus=64,
        training_tokens=1e11,
        price_kind="spot",
    ).estimate.goodput


def test_preemptions_and_maintenance_restarts_read_as_the_interruptions_do():
    g = spot_goodput()
    assert g is not None and g.spot_preemptions is not None and g.planned_restarts is not None
    # figures the old rule printed differently: 1.234 -> '1.2' (was '1.2'), 0.151 -> '0.15' (was
    # '0.2'), 0.004 -> '< 0.01' (was '0.0'), 12.6 -> '13' (was '12.6')
    for preemptions, restarts in ((0.151, 0.004), (12.6, 1.234)):
        line = goodput_line(g.model_copy(update={"spot_preemptions": preemptions, "planned_restarts": restarts}))
        assert f"{expected_events(preemptions)} spot preemptions, each waiting" in line
        assert f", {expected_events(restarts)} maintenance restarts," in line
    line = goodput_line(g.model_copy(update={"spot_preemptions": 0.151, "planned_restarts": 0.004}))
    assert "0.15 spot preemptions" in line and "< 0.01 maintenance restarts" in line
    assert "0.2 spot preemptions" not in line and "0.0 maintenance restarts" not in line


def test_the_card_writes_the_preemptions_as_the_cli_does():
    g = spot_goodput()
    assert g is not None
    g = g.model_copy(update={"spot_preemptions": 0.151})
    for tr in (EN, ZH):
        text = spot_wait_text(tr, g)
        assert text is not None and "0.15" in text and "0.2" not in text
    assert "0.15 spot preemptions" in goodput_line(g)
