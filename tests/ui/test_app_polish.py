"""The app's round-3 polish (issue 30): the open tab and the GPU choice survive a mode toggle and
"Send to plan", the sidebar's GPU table, the run view on CPU, formats, narrow metrics, 中文.

Expected values come from the planner's API or the app's own formatters, so a change that breaks
the wiring (not only the wording) fails here.
"""

from __future__ import annotations

import json

import pytest
from support.app import CATALOG, EN, ZH, open_tab, planned, request_for, run_app


def test_the_open_tab_survives_a_portfolio_mode_round_trip():
    at = open_tab(run_app(), "tab_top")
    at.sidebar.toggle(key="portfolio_mode").set_value(True).run()
    at.sidebar.toggle(key="portfolio_mode").set_value(False).run()
    assert not at.exception
    assert at.session_state["main_tab"] == EN("tab_top")


def test_send_to_plan_has_a_way_back_to_every_gpu_type():
    at = open_tab(run_app(), "tab_explorer")
    at.button(key="ex_send").click().run()
    rows = at.session_state["gpu_rows"]
    assert rows["allowed"].sum() == 1 and not at.sidebar.button(key="gpu_allow_all").disabled
    at.sidebar.button(key="gpu_allow_all").click().run()
    rows = at.session_state["gpu_rows"]
    assert rows["allowed"].all() and at.sidebar.button(key="gpu_allow_all").disabled
    assert rows.loc[rows.index[0], "usd_per_gpu_hour"] == CATALOG.gpus[rows.index[0]].price_per_gpu_hour_usd


@pytest.fixture
def cpu_job(tmp_path):
    """A job emitted for the default plan with a CPU run's metrics: no MFU, no peak memory."""
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings

    chosen = planned(request_for()).plan
    directory = tmp_path / "job"
    emit_job(chosen, directory, name="cpu-run", run=RunSettings(steps=3))
    with (directory / "metrics.jsonl").open("w") as out:
        for step in range(1, 4):
            out.write(json.dumps(dict(step=step, loss=9.0, tokens_per_s=1234.0, mfu=None, peak_mem_gib=None)) + "\n")
    (directory / "report.json").write_text("{}")  # finished: no refreshing
    return directory, chosen


@pytest.mark.parametrize("tr", [EN, ZH])
def test_a_cpu_run_says_why_two_panels_are_empty_and_whose_prediction_it_is(cpu_job, tr):
    directory, chosen = cpu_job
    at = open_tab(run_app(run_dir=str(directory), lang=tr.lang), "tab_run", tr)
    captions = [c.value for c in at.caption]
    assert tr("run_no_cuda") in captions
    e = chosen.estimate
    said = tr(
        "run_prediction_elsewhere",
        predicted=e.throughput.tokens_per_s, num_gpus=chosen.num_gpus, gpu=chosen.gpu, measured=1234.0,
    )  # fmt: skip
    assert said in captions
    from ui.run_view import read_job, run_figure

    fig = run_figure(read_job(directory), tr)
    notes = [a.text for a in fig.layout.annotations]
    assert notes.count(tr("run_not_measured")) == 2  # the MFU and the peak-memory panels
    assert len(fig.layout.shapes) == 3  # the predicted tokens/s, MFU and peak memory, empty panels too
