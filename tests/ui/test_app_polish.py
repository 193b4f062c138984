"""The app's round-3 polish (issue 30): the open tab and the GPU choice survive a mode toggle and
"Send to plan", the sidebar's GPU table, the run view on CPU, formats, narrow metrics, 中文.

Expected values come from the planner's API or the app's own formatters, so a change that breaks
the wiring (not only the wording) fails here.
"""

from __future__ import annotations

from support.app import CATALOG, EN, open_tab, run_app


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
