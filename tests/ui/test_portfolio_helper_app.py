"""Session 20, helper "portfolio" (trial s19, finding 9): the app's portfolio table says what its
days and cost are (the search's risk quantile; the owned-GPU rate, not rent), in both languages."""

from __future__ import annotations

import json

import pytest
from support.app import EN, ZH, request_for, run_app, table


@pytest.mark.parametrize(("tr", "risk"), [(EN, "p80"), (ZH, "p90")])
def test_the_portfolio_names_the_basis_of_its_days_and_cost(tr, risk):
    at = run_app(lang=tr.lang, portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8}, risk=risk)
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert not at.exception
    assert tr("portfolio_basis", risk=risk) in [c.value for c in at.caption]
    assert tr("col_days_at_risk", risk=risk) in table(at, tr("col_start_days")).columns
    costs = table(at, tr("col_owned"))
    assert tr("col_owned_cost_usd", risk=risk) in costs.columns and tr("col_cost_usd") not in costs.columns
    # the short label leaves the basis to the column beside it and to its tooltip (trial s44 app L6)
    config = json.loads(next(d for d in at.dataframe if tr("col_owned") in d.value.columns).proto.columns)
    assert config[tr("col_owned_cost_usd", risk=risk)]["help"] == tr("col_owned_cost_help")


def test_the_portfolio_table_shows_each_jobs_band_and_envelope():
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8})
    at.text_input(key="job_name").set_value("small")
    at.button(key="add_job").click().run()
    assert not at.exception
    row = table(at, EN("col_start_days")).iloc[0]  # the schedule: each band's ends after its figure
    assert row[EN("col_band_from")] < row[EN("col_days_at_risk", risk="p80")] <= row[EN("col_band_to")]
    costs = table(at, EN("col_owned"))
    columns = list(costs.columns)
    assert columns.index(EN("col_owned_cost_usd", risk="p80")) + 1 == columns.index(EN("col_band_from"))
    cost = costs.iloc[0]
    assert cost[EN("col_band_from")] < cost[EN("col_owned_cost_usd", risk="p80")] <= cost[EN("col_band_to")]
    metric = next(m for m in at.metric if m.label == EN("jobs_cost"))  # trial s35: the total had no band
    assert metric.delta.startswith("80 % band $") and "the jobs' bands summed" in metric.delta
    done = next(m for m in at.metric if m.label == EN("makespan"))  # nor the last job's end
    assert done.delta.startswith("80 % band ")
    assert cost[EN("col_validated")] in (EN("standing_validated"), EN("standing_circular"), EN("standing_outside"))


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


def test_the_schedule_and_cost_tables_show_every_figure_of_the_jobs():
    """Trial s44 app L6: the jobs' one table of 15 columns ran past its page; as two tables (the
    schedule, each job's cost) no figure is left out, and only the job's name is in both."""
    from planner.model.settings import DEFAULT_SETTINGS
    from ui.app_portfolio import solve_jobs
    from ui.portfolio_view import BANDS, JOB_TABLES

    request = request_for(gpus={"h100-sxm": 8})
    outcome = solve_jobs(
        {"small": request}, {"h100-sxm": 8}, objective="cost", horizon_days=None, num_slots=1, settings=DEFAULT_SETTINGS
    )
    assert outcome.frame is not None
    shown = [c for _, _, heads in JOB_TABLES for head in heads for c in (head, *BANDS.get(head, ()))]
    # "training" is worded into the layout (with_training_words)
    assert sorted(shown) == sorted([*(c for c in outcome.frame.columns if c != "training"), "job"])
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8})
    at.button(key="add_job").click().run()
    assert not at.exception
    assert [len(table(at, EN(c)).columns) for c in ("col_start_days", "col_owned")] == [9, 7]


def test_a_jobs_start_after_days_is_kept_with_it_and_holds_its_start():
    """review51 M2: the CLI's start_after_days (trial s51 H4) had no input on the page."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 8})
    at.text_input(key="job_name").set_value("first")
    at.button(key="add_job").click().run()
    at.text_input(key="job_name").set_value("later")
    at.number_input(key="job_start_after").set_value(30.0)
    at.button(key="add_job").click().run()
    assert not at.exception, [e.value for e in at.exception]
    listed = table(at, EN("col_start_after_days")).set_index(EN("col_job"))
    assert listed.loc["later", EN("col_start_after_days")] == 30.0
    assert listed.loc["first", EN("col_start_after_days")] != listed.loc["first", EN("col_start_after_days")]  # NaN
    schedule = table(at, EN("col_start_days")).set_index(EN("col_job"))
    assert schedule.loc["later", EN("col_start_days")] >= 30.0 > schedule.loc["first", EN("col_start_days")]
    at.selectbox(key="job_pick").set_value("later").run()
    at.button(key="remove_job").click().run()
    assert at.session_state["portfolio_releases"] == {}


def test_a_job_after_another_starts_when_it_ends_and_forgets_a_removed_one():
    """Trial s52 (after52): the jobs file's after = [...] had no input on the page."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 64})
    at.text_input(key="job_name").set_value("first")
    at.button(key="add_job").click().run()
    at.text_input(key="job_name").set_value("later")
    at.multiselect(key="job_after").set_value(["first"])
    at.button(key="add_job").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert table(at, EN("col_after")).set_index(EN("col_job")).loc["later", EN("col_after")] == "first"
    schedule = table(at, EN("col_start_days")).set_index(EN("col_job"))
    # on 64 GPUs both would run at once; after "first", "later" waits for its end
    assert schedule.loc["later", EN("col_start_days")] >= schedule.loc["first", EN("col_end_days")] > 0
    at.selectbox(key="job_pick").set_value("first").run()
    at.button(key="remove_job").click().run()
    assert not at.exception and at.session_state["portfolio_after"] == {}  # review52: none kept for it
    assert table(at, EN("col_after")).set_index(EN("col_job")).loc["later", EN("col_after")] == ""
    assert table(at, EN("col_start_days")).set_index(EN("col_job")).loc["later", EN("col_start_days")] == 0


def test_a_job_added_again_under_a_removed_name_is_not_waited_on():
    """Review52: "later" kept "first" in its after once "first" was removed, so a new job named
    "first" (the name box offers a freed "job-N" again) silently held "later" back."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 64})
    at.text_input(key="job_name").set_value("first")
    at.button(key="add_job").click().run()
    at.text_input(key="job_name").set_value("later")
    at.multiselect(key="job_after").set_value(["first"])
    at.button(key="add_job").click().run()
    at.selectbox(key="job_pick").set_value("first").run()
    at.button(key="remove_job").click().run()
    at.text_input(key="job_name").set_value("first")
    at.multiselect(key="job_after").set_value([])
    at.button(key="add_job").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert table(at, EN("col_after")).set_index(EN("col_job")).loc["later", EN("col_after")] == ""


def test_a_refused_add_leaves_the_listed_jobs_after_and_start_day():
    """Review52: Add under a taken name was refused, yet it set that job's after and start day."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 64})
    for name in ("first", "later"):
        at.text_input(key="job_name").set_value(name)
        at.button(key="add_job").click().run()
    at.text_input(key="job_name").set_value("later")
    at.multiselect(key="job_after").set_value(["first"])
    at.number_input(key="job_start_after").set_value(5.0)
    at.button(key="add_job").click().run()
    assert EN("job_name_taken", name="later") in [e.value for e in at.error]
    assert at.session_state["portfolio_after"] == {} and at.session_state["portfolio_releases"] == {}


def test_add_job_starts_the_next_jobs_predecessors_and_release_day_over():
    """app53 M4: after Add job the name box moved on, but "Starts after these jobs end" and "Start
    after (days)" kept the last job's, so the next job waited for a job nobody asked it to."""
    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 64})
    at.text_input(key="job_name").set_value("first")
    at.button(key="add_job").click().run()
    at.text_input(key="job_name").set_value("later")
    at.multiselect(key="job_after").set_value(["first"])
    at.number_input(key="job_start_after").set_value(10.0)
    at.button(key="add_job").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="job_after").value == [] and at.number_input(key="job_start_after").value == 0.0
    at.text_input(key="job_name").set_value("third")
    at.button(key="add_job").click().run()
    listed = table(at, EN("col_after")).set_index(EN("col_job"))
    assert listed.loc["later", EN("col_after")] == "first" and listed.loc["third", EN("col_after")] == ""
    assert at.session_state["portfolio_releases"] == {"later": 10.0}


def test_the_jobs_tables_after_column_is_as_wide_as_a_predecessors_name():
    """app53 M5: the browser sizes a table's columns when it first draws it, with "after" empty, so
    a predecessor added later read "pretrain-7(": the column is now sized to its longest entry."""
    from ui.portfolio_view import TABLE_CHAR_PX

    at = run_app(portfolio_mode=True, gpus=["h100-sxm"], inventory={"h100-sxm": 64})
    at.text_input(key="job_name").set_value("pretrain-70b")
    at.button(key="add_job").click().run()
    at.multiselect(key="job_after").set_value(["pretrain-70b"])
    at.button(key="add_job").click().run()
    assert not at.exception, [e.value for e in at.exception]
    jobs_table = next(d for d in at.dataframe if EN("col_after") in d.value.columns)
    width_px = json.loads(jobs_table.proto.columns)[EN("col_after")]["width"]
    assert width_px > len("pretrain-70b") * TABLE_CHAR_PX
