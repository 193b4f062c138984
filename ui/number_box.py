"""A sidebar number box that, emptied, keeps its value rather than taking its minimum.

Streamlit's ``number_input`` returns its default when the box is cleared, which for these boxes is
their minimum: clearing "Most GPUs to consider" planned on one GPU and clearing the token budget
planned 0.001 B, with no word said (trial s39). Here an emptied box gets its last value back and
a warning under it says so.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui.i18n import Labels


def number_box(place: Any, tr: Labels, label_key: str, *, key: str, **limits: Any) -> Any:
    """``place.number_input`` (``place``: ``st`` or a column) under ``tr(label_key)``, its state
    under ``key``; the value the box shows, its last one where it was just emptied."""
    last = f"_last_{key}"
    emptied = st.session_state.get(key) is None and last in st.session_state
    if emptied:  # before the widget is drawn in this run: Streamlit allows setting its state here
        st.session_state[key] = st.session_state[last]
    value = place.number_input(tr(label_key), value=None, key=key, **limits)
    if value is None:  # a box never seeded (app_core.widget_defaults seeds every one)
        return None
    st.session_state[last] = value
    if emptied:
        place.warning(tr("number_emptied", label=tr(label_key), value=f"{value:,.10g}"))  # 1,000,000, not 1e+06
    return value
