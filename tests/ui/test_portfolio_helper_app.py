"""Session 20, helper "portfolio" (trial s19, finding 9): the app's portfolio table says what its
days and cost are (the search's risk quantile; the owned-GPU rate, not rent), in both languages."""

from __future__ import annotations

import pytest
from support.app import EN, ZH, run_app, table


@pytest.mark.parametrize(("tr", "risk"), [(EN, "p80"), (ZH, "p90")])
def test_the_portfolio_names_the_basis_of_its_days_and_cost(tr, risk):
    at = run_app(lang=tr.lang, portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8}, risk=risk)
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert not at.exception
    assert tr("portfolio_basis", risk=risk) in [c.value for c in at.caption]
    shown = table(at, tr("col_start_days"))
    assert tr("col_owned_cost_usd", risk=risk) in shown.columns and tr("col_cost_usd") not in shown.columns


def test_the_portfolio_table_shows_each_jobs_band_and_envelope():
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8})
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert not at.exception
    shown = table(at, EN("col_start_days"))
    row = shown.iloc[0]
    days = row[EN("col_days_at_risk", risk="p80")]
    assert row[EN("col_time_p10_days")] < days <= row[EN("col_time_p90_days")]
    assert row[EN("col_cost_p10_usd")] < row[EN("col_owned_cost_usd", risk="p80")] <= row[EN("col_cost_p90_usd")]
    metric = next(m for m in at.metric if m.label == EN("jobs_cost"))  # trial s35: the total had no band
    assert metric.delta.startswith("80 % band $") and "the jobs' bands summed" in metric.delta
    done = next(m for m in at.metric if m.label == EN("makespan"))  # nor the last job's end
    assert done.delta.startswith("80 % band ")
    assert row[EN("col_validated")] in (EN("standing_validated"), EN("standing_circular"), EN("standing_outside"))


def test_the_portfolio_metrics_write_a_figure_and_its_band_in_one_unit():
    """Trial s35 (round 2): the total's band read "$297,343–$1.01M" where the card writes one unit,
    and the idle cost had no band; a band that is the figure alone is not written."""
    from ui.portfolio_view import money_and_band

    figure, words = money_and_band(EN, "band_summed", 297_343.0, (250_000.0, 1.01e6))
    assert figure == "$0.30M" and words == EN("band_summed", lo="$0.25M", hi="$1.01M")
    assert money_and_band(EN, "card_band", 0.0, (0.0, 0.0)) == ("$0", None)
    assert money_and_band(EN, "card_band", 12.0, None) == ("$12.00", None)
    # review s36: one cents choice for all three, the figure's ("$150" beside "$90.00-$160" before)
    assert money_and_band(EN, "card_band", 150.0, (90.0, 160.0)) == ("$150", EN("card_band", lo="$90", hi="$160"))
    assert money_and_band(EN, "card_band", 50.0, (40.0, 160.0)) == (
        "$50.00",
        EN("card_band", lo="$40.00", hi="$160.00"),
    )


def test_the_portfolios_idle_cost_carries_its_band():
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 12}, pricing="bought")
    for name in ("small", "other"):
        at.text_input(key="job_name").set_value(name)
        at.button(key="add_job").click().run()
    assert not at.exception
    idle = next(m for m in at.metric if m.label == EN("idle_cost"))
    assert idle.value != "$0" and idle.delta.startswith("80 % band $"), (idle.value, idle.delta)


def test_a_job_that_cannot_run_alone_leaves_the_others_schedule():
    """Trial s35 (round 2): one job that cannot run on its own blanked every other job's schedule;
    its answer comes first, then the others' schedule without it."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8})
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    at.number_input(key="budget_usd").set_value(1.0).run()  # far below any plan's cost
    at.text_input(key="job_name").set_value("cheap")
    at.button(key="add_job").click().run()
    assert not at.exception
    assert any("Job cheap:" in w.value for w in at.warning), [w.value for w in at.warning]
    assert EN("portfolio_left_out", jobs="cheap") in [h.value for h in at.subheader]
    shown = table(at, EN("col_start_days"))
    assert len(shown) == 1 and "small" in shown.to_string() and "cheap" not in shown.to_string()
