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
