"""The run-loss figures' words (planner/model/run_loss_inputs.py ``said``): the CLI's goodput note
and the app card's line write a percentage by one formatter, ``planner.fmt.percent`` (review s48:
the CLI said 'input stalls 5 %', the card '5%')."""

from support.app import EN, ZH

from planner.api import build_plan
from planner.catalog.models import get_preset
from planner.fmt import percent
from planner.layout import Layout, TrainingConfig
from planner.model.run_loss_inputs import RunLossInputs
from ui.plan_card import run_losses_text
from ui.render_lines import run_losses_note


def test_percent_puts_its_sign_at_the_figure():
    assert percent(5) == "5%" and percent(2.5) == "2.5%" and percent(0) == "0%" and percent(1000) == "1000%"


def test_the_cli_and_the_card_write_a_percentage_alike():
    losses = RunLossInputs(failure_rate_x=2, data_stall_pct=5, eval_pct=2.5, restart_minutes=3)
    plan = build_plan(get_preset("llama3-8b"), "h100-sxm", Layout(), TrainingConfig(seq_len=4096), num_gpus=8)
    plan = plan.model_copy(update={"run_losses": losses})
    cli, card = run_losses_note(plan), run_losses_text(EN, plan)
    assert cli == "; on your figures: failure rate 2x, restart 3 min, input stalls 5%, evaluation 2.5%"
    assert card == "Goodput on your figures: failure rate 2×, restart 3 min, input stalls 5%, evaluation 2.5%."
    zh = run_losses_text(ZH, plan)
    assert zh is not None and "输入停顿 5%" in zh and "评估 2.5%" in zh and "重启 3 分钟" in zh
