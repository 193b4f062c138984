"""trainplan's sizing app: ``trainplan app`` (or ``streamlit run app.py``), bound to localhost.

Thin by design: the sidebar's widgets (``ui.sidebar``, ``ui.gpu_table``) become a ``PlanRequest``;
``ui.cached`` asks ``planner.api`` / ``planner.api.explore`` (cached on the request's JSON);
``ui.single`` (``ui.plan_card``, tabs, ``ui.explorer``, ``ui.run_view``), ``ui.portfolio_view`` or ``ui.fleet_view``
render the answers with ``ui.figures``; every label comes from ``ui.i18n`` (English / 中文).
"""

from __future__ import annotations

import streamlit as st

from ui.app_server import one_malloc_arena
from ui.cached import catalog
from ui.fleet_view import show_fleet
from ui.portfolio_view import FLEET, show_jobs, show_portfolio
from ui.sidebar import TRANSLATED_CHOICES, init_state, keep_values, sidebar
from ui.single import METRIC_CSS, show_single

# wide enough for the GPU table's type, tick, inventory and price columns (issue 30: two of them
# showed at Streamlit's default width); the reader can still drag it wider or narrower
SIDEBAR_PX = 365
__all__ = ("TRANSLATED_CHOICES", "main")  # the tests read which choices survive a language switch from here

one_malloc_arena()  # `streamlit run app.py` too (trainplan app sets it before the server starts)


def main() -> None:
    st.set_page_config(page_title="trainplan", layout="wide", initial_sidebar_state=SIDEBAR_PX)
    st.html(METRIC_CSS)  # every page's metrics: the card's, the explorer's, portfolio's
    cat = catalog()
    init_state(cat)
    try:
        tr, inputs = sidebar(cat)
        st.title(tr("title"))
        st.caption(tr("subtitle"))
        if inputs is not None and inputs.stack_note is not None:
            st.info(inputs.stack_note)
        if inputs is None:
            st.info(tr("fix_inputs"))
        elif inputs.portfolio_mode:
            asked = show_jobs(tr, inputs)  # None: no job yet
            if asked is not None:
                requests, answer = asked
                (show_fleet if answer == FLEET else show_portfolio)(tr, inputs, requests)
        else:
            show_single(tr, inputs)
    finally:
        keep_values(cat)


if __name__ == "__main__":
    main()
