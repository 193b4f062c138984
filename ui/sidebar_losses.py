"""The sidebar's run-loss figures, the CLI's ``--failure-rate-x`` .. ``--startup-minutes``: a user's
own failure rate, checkpoint bandwidth, restart, input stalls, evaluation and start-up for the
goodput (planner/model/run_loss_inputs.py). Each box starts empty, its placeholder the planner's
default (read from the settings, ui/i18n_run_losses.py), and takes the CLI's range; an empty box
keeps the default, so the request is the one without figures. A module of its own so that
``ui/sidebar.py`` stays under the project's ~500 lines a module.
"""

from __future__ import annotations

import streamlit as st

from planner.model.run_loss_inputs import RUN_LOSS_MAX, RunLossInputs, refuses_zero
from ui.i18n import Labels
from ui.i18n_run_losses import LOSS_KEYS
from ui.number_box import number_box

# The arrows' step of each box, in its own unit (a tenth of a percent of evaluation: its default is 0.5).
STEPS = {
    "failure_rate_x": 0.5,
    "checkpoint_write_gb_per_s": 10.0,
    "restart_minutes": 1.0,
    "data_stall_pct": 1.0,
    "eval_pct": 0.1,
    "startup_minutes": 1.0,
}


def sidebar_run_losses(tr: Labels) -> RunLossInputs:
    """The figures given in the (collapsed) expander; each empty box: the planner's default."""
    given: dict[str, float | None] = {}
    with st.expander(tr("run_losses")):
        st.caption(tr("run_losses_caption"))
        for name, key in LOSS_KEYS.items():
            given[name] = number_box(
                st,
                tr,
                key,
                key=key,
                min_value=0.0,
                max_value=RUN_LOSS_MAX[name],
                low_open=refuses_zero(name),
                empty_ok=True,
                step=STEPS[name],
                format="%g",
                placeholder=tr(f"loss_default_{name}"),
                help=tr(f"loss_help_{name}"),
            )
    return RunLossInputs(**given)
