"""A fleet's purchase said where it is recommended, the outlay first, by one formatter for the CLI
and the app, and a notice where the saving is small for the money tied up (app50: a 30-day horizon
"bought" 8 MI325X, $320,000 up front, to save $1,321, said only in a column and a caption)."""

from __future__ import annotations

import json

import pytest
from support.app import EN, ZH, english_sentences, run_app
from support.cli import call

from planner.search.fleet_plan import SMALL_SAVING_SHARE, FleetOption, PurchaseSaving
from ui.purchase_texts import CLI_TIMES, purchase_text, small_saving_text

# one 8B job that keeps 8 MI325X busy most of a 30-day horizon: buying beats renting, barely
SHORT = """horizon_days = 30
buy = ["mi325x"]
[[jobs]]
name = "a"
model = "llama3-8b"
tokens = 1.5e11
seq_len = 2048
deadline_days = 30
"""


def test_the_small_saving_rule_is_the_savings_share_of_the_outlay():
    # the brief's case: $1,321 saved on $320,000 over 30 days
    small = PurchaseSaving({"mi325x": 8}, 320_000.0, 1_321.0, 30.0, FleetOption.RENT_ONLY)
    assert small.saving_share == pytest.approx(1_321 / 320_000) and small.small
    enough = 320_000.0 * SMALL_SAVING_SHARE * 1.01
    assert not PurchaseSaving({"mi325x": 8}, 320_000.0, enough, 30.0, FleetOption.RENT_ONLY).small
    # examples/fleet.toml's year: 64 H100 for $3.07M save $1.23M, no notice
    assert small_saving_text(EN, PurchaseSaving({"h100-sxm": 64}, 3.07e6, 1.23e6, 365.0, FleetOption.RENT_ONLY)) is None
    assert "0.4%" in small_saving_text(EN, small) and small_saving_text(EN, small).endswith("renting is cheaper.")
    # review s50 L4: under a reserved price the purchase is weighed against reserving, as its line says
    reserved = PurchaseSaving({"mi325x": 8}, 320_000.0, 1_321.0, 30.0, FleetOption.RESERVE_ONLY)
    assert small_saving_text(EN, reserved).endswith("reserving is cheaper.")


def test_the_cli_says_the_outlay_and_the_small_saving_in_the_apps_words(tmp_path):
    jobs = tmp_path / "short.toml"
    jobs.write_text(SHORT)
    code, out, err = call("fleet", str(jobs), "--json")
    assert code == 0, err
    data = json.loads(out)
    bought = data["purchase"]
    assert bought["purchased"] == {"mi325x": 8} and bought["outlay_usd"] == 320_000.0 and bought["small_saving"]
    saving = data["rent_only"]["total_cost_usd"] - data["mixed"]["total_cost_usd"]
    assert bought["saving_usd"] == pytest.approx(saving) and 0 < saving < 2_000  # the case
    p = PurchaseSaving({"mi325x": 8}, 320_000.0, saving, 30.0, FleetOption.RENT_ONLY)
    code, out, err = call("fleet", str(jobs))
    assert code == 0, err
    line = purchase_text(EN, p, CLI_TIMES)  # the CLI's "x", as its other lines (app50 left "8 × mi325x")
    assert line in out and line.startswith("Buy 8 x mi325x: $320,000 up front, saves $") and "8 × mi325x" not in out
    notice = small_saving_text(EN, p)
    assert notice is not None and notice in " ".join(err.split())


@pytest.mark.parametrize("tr", [EN, ZH])
def test_the_fleet_view_puts_the_outlay_first_and_flags_the_small_saving(tr):
    at = run_app(lang=tr.lang, portfolio_mode=True, gpus=["mi325x"], preset="llama3-8b", tokens_mode="absolute",
                 tokens_billions=150.0, deadline_days=30.0, fleet_horizon_days=30.0)  # fmt: skip
    at.text_input(key="job_name").set_value("a").run()
    at.button(key="add_job").click().run()
    at.radio(key="portfolio_answer").set_value("fleet").run()
    at.multiselect(key="fleet_buy").set_value(["mi325x"]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (info,) = [i.value for i in at.info if tr("fleet_purchase").split("{")[0] in i.value]
    assert "$320,000" in info and "8 × mi325x" in info
    notices = [w.value for w in at.warning if "$320,000" in w.value]
    assert len(notices) == 1 and tr("fleet_small_saving").split("{")[0] in notices[0]
    if tr is ZH:
        assert not english_sentences(info) and not english_sentences(notices[0])
