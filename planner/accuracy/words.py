"""The plan's parts for what the evidence says: a regime as its parts (``RegimeWords``, each
interface words them), and the pessimistic risks the farthest of a regime's few rows sets
(``FewRowsEnd``); split out of planner/accuracy/__init__.py."""

from __future__ import annotations

import numpy as np

from planner.accuracy.bands import Evidence
from planner.accuracy.regime import Feature, Regime
from planner.plan_accuracy import FewRowsEnd, RegimeWords


def feature_names(bits: int) -> tuple[str, ...]:
    """The ``Feature`` names of a regime's bits, lower case (the app's ``feature_*`` labels)."""
    return tuple(str(f.name).lower() for f in Feature if bits & f)


def regime_words(regime: Regime) -> RegimeWords:
    """A regime as the plan records it (its words are the interfaces')."""
    return RegimeWords(
        stack=regime.stack,
        generation=regime.generation,
        features=feature_names(regime.features),
        kernel=regime.kernel,
    )


def few_rows_end(ev: Evidence, risks: dict[str, float]) -> FewRowsEnd | None:
    """The pessimistic ``risks`` (name: quantile) that the farthest of one regime's few rows sets
    (``Evidence.few_rows_setting``), where it sets more than one, so they coincide (buyer trial
    s48 M2); None where at most one is so set: p80 set by two rows below a p90 read from a spread
    differs from it, as most plans' do, and a line there said nothing a buyer could act on."""
    settings = [(name, ev.few_rows_setting(q)) for name, q in risks.items() if q > 0.5]
    first = next((e for _, e in settings if e is not None), None)
    same = tuple(name for name, e in settings if e is not None and e is first)
    if first is None or len(same) < 2:
        return None
    return FewRowsEnd(
        risks=same,
        regime=first.regime.describe(),
        regime_parts=regime_words(first.regime),
        errors=tuple(sorted(float(np.expm1(e)) for e in first.few_exact_errors)),
    )
