"""A number box that, given what it cannot take, keeps its last value and says so under it.

Streamlit's ``number_input`` returns its default when the box is cleared, which for these boxes was
their minimum: clearing "Most GPUs to consider" planned on one GPU and clearing the token budget
planned 0.001 B, with no word said (trial s39). And a number outside ``min_value``/``max_value``
never reaches the server: the browser keeps it in the box under a red outline (its words only in a
hover tooltip, in English) while the page goes on showing the answer for the old value.

So the bounds are checked here, not in the browser: the widget gets none, and its ``on_change``
puts the last value back when the box was emptied or given a number out of range, before the run
(and before the caller's own ``on_change``, which sees only values the box took). The run shows
the box at that value and a one-line warning naming the range and the value the answer is for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from ui.i18n import Labels

LAST = "_last_{}"  # the value the box last showed: the one to put back
REFUSED = "_refused_{}"  # the input the box was just refused (None: emptied), for one run's warning


@dataclass(frozen=True)
class Bounds:
    """A box's allowed range (either end open), whether empty is an allowed value, and whether
    ``low`` itself is refused (a bandwidth: more than 0)."""

    low: float | None = None
    high: float | None = None
    empty_ok: bool = False
    low_open: bool = False

    def refuses(self, value: float | None) -> bool:
        if value is None:
            return not self.empty_ok
        below = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        return below or (self.high is not None and value > self.high)

    def text(self, tr: Labels) -> str:
        """The range in words: "1 to 65,536", "1 or more", "more than 0 and at most 10,000"."""
        if self.low_open and self.low is not None and self.high is not None:
            return tr("number_range_above", low=number_text(self.low), high=number_text(self.high))
        if self.low is not None and self.high is not None:
            return tr("number_range", low=number_text(self.low), high=number_text(self.high))
        if self.low is not None:
            return tr("number_range_low", low=number_text(self.low))
        return tr("number_range_high", high=number_text(self.high))


def number_text(value: float | None) -> str:
    """1,000,000, not 1e+06; a whole number in full up to 10^16 (trial s40: "0 to 1e+13")."""
    if value is None:
        return ""
    whole = float(value).is_integer() and abs(value) < 1e16
    return f"{value:,.0f}" if whole else f"{value:,.10g}"


def keep_last(key: str, bounds: Bounds, then: Callable[..., None] | None, args: tuple) -> None:
    """The box's ``on_change``: a refused input gives way to the last value (Streamlit lets a
    callback set its widget's state), then the caller's callback runs."""
    state = st.session_state
    last = LAST.format(key)
    if bounds.refuses(state[key]) and last in state:  # in state once the box has been drawn
        state[REFUSED.format(key)] = state[key]
        state[key] = state[last]
    if then is not None:
        then(*args)


def number_box(
    place: Any,
    tr: Labels,
    label_key: str,
    *,
    key: str,
    min_value: float | None = None,
    max_value: float | None = None,
    empty_ok: bool = False,
    low_open: bool = False,
    warn_in: Any = None,
    on_change: Callable[..., None] | None = None,
    args: tuple = (),
    **options: Any,
) -> Any:
    """``place.number_input`` (``place``: ``st`` or a column) under ``tr(label_key)``, its state
    under ``key``, taking ``min_value`` (above it where ``low_open``) to ``max_value`` (and empty
    where ``empty_ok``: a box whose placeholder says what empty means); the value the box shows,
    its last one where it was just given what it cannot take. The warning goes under the box, or in ``warn_in`` (a container
    under a row of narrow columns, where it would wrap a word a line)."""
    bounds = Bounds(min_value, max_value, empty_ok, low_open)
    value = place.number_input(
        tr(label_key), value=None, key=key, on_change=keep_last, args=(key, bounds, on_change, args), **options
    )
    if value is not None or empty_ok:  # None: a box never seeded (app_core.widget_defaults seeds every one)
        st.session_state[LAST.format(key)] = value
    refused = REFUSED.format(key)
    if refused in st.session_state:
        (place if warn_in is None else warn_in).warning(
            refused_text(tr, label_key, bounds, st.session_state.pop(refused), value, options)
        )
    return value


def refused_text(tr: Labels, label_key: str, bounds: Bounds, given: Any, kept: Any, options: dict) -> str:
    """The warning under a box that put its last value back: emptied, or out of its range."""
    kept_text = options.get("placeholder", "") if kept is None else number_text(kept)  # empty: what it means
    if given is None:
        return tr("number_emptied", label=tr(label_key), value=kept_text)
    range_text = bounds.text(tr)
    return tr("number_out_of_range", label=tr(label_key), range=range_text, value=number_text(given), kept=kept_text)
