"""How well the error bands cover what was measured, scored on rows they were not read from.

``coverage``: each validation row's band is read from the other sources' rows only
(leave-one-source-out: a source's rows share a software release, a cluster and an author's way of
measuring, so a row of the same source would flatter the band; the new-source spread ``sigma``
is computed without it too), and the row counts as covered when its held-out error lies inside
its 80 % band. Nothing of the band is fitted on this coverage (planner/accuracy/bands.py), so the
figure is held out; ``BandCheck.inside`` takes kappa to show how little that choice matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from planner.accuracy.bands import (
    BAND_QUANTILES,
    EXTRAPOLATION_KAPPA,
    Evidence,
    EvidenceBase,
    query_regime,
    row_ceiling_regime,
)
from planner.accuracy.ceiling import Ceilings, ceiling_regime
from planner.accuracy.residuals import HeldOutRow, load_residuals


@dataclass(frozen=True)
class BandCheck:
    """One row and the evidence its band is read from, without its source."""

    row: HeldOutRow
    log_error: float  # the row's own ln(1 + e), held at its ceiling
    evidence: Evidence

    @property
    def validated(self) -> bool:
        return self.evidence.validated

    def bounds(self, kappa: float = EXTRAPOLATION_KAPPA) -> tuple[float, float]:
        ev = replace(
            self.evidence, kappa=kappa, neighbours=tuple(replace(n, kappa=kappa) for n in self.evidence.neighbours)
        )
        return ev.log_quantile(BAND_QUANTILES[0]), ev.log_quantile(BAND_QUANTILES[1])

    def inside(self, kappa: float = EXTRAPOLATION_KAPPA) -> bool:
        lo, hi = self.bounds(kappa)
        return lo <= self.log_error <= hi


def checks_without(rows: Sequence[HeldOutRow], scored: str) -> list[BandCheck]:
    """The band of every row of source ``scored``, read from the rows of the other sources."""
    base = EvidenceBase(rows, exclude=frozenset({scored}))
    own = EvidenceBase(rows)
    return [
        BandCheck(row, float(own.log_errors[i]), base.evidence(query_regime(row)))
        for i, row in enumerate(own.rows)
        if row.source == scored
    ]


def coverage(rows: Sequence[HeldOutRow] | None = None) -> list[BandCheck]:
    """Every row's band read leaving its source out."""
    rows = tuple(load_residuals() if rows is None else rows)
    return [c for source in dict.fromkeys(r.source for r in rows) for c in checks_without(rows, source)]


def covered(checks: Sequence[BandCheck], kappa: float = EXTRAPOLATION_KAPPA) -> float:
    """The share of ``checks`` inside their band (NaN for none)."""
    return float(np.mean([c.inside(kappa) for c in checks])) if checks else float("nan")


@dataclass(frozen=True)
class HeadlineErrors:
    """Two candidate point figures scored on the same held-out rows: the model's own and the model
    moved to its band's median (the band read leaving the row's source out)."""

    rows: int
    model_abs: float  # mean |error| of the model's own figure
    median_abs: float  # mean |error| of the band's median
    model_signed: float
    median_signed: float


def moved_log_error(check: BandCheck) -> float:
    """The row's ln(1 + e) once the model's figure is moved to its held-out band's median."""
    return check.log_error - check.evidence.log_quantile(0.5)


def with_median_errors(rows: Sequence[HeldOutRow]) -> tuple[HeldOutRow, ...]:
    """``rows`` with each ``median_error`` set (``moved_log_error``, as a fraction), the band read
    leaving the row's source out: residuals.csv stores it, so a plan can say which figure erred less
    on the rows its band is read from without re-reading every band (trial s48 H2)."""
    moved = {(c.row.dataset, c.row.source, c.row.name): float(np.expm1(moved_log_error(c))) for c in coverage(rows)}
    return tuple(replace(r, median_error=moved[(r.dataset, r.source, r.name)]) for r in rows)


def headline_errors(checks: Sequence[BandCheck]) -> HeadlineErrors:
    """Which figure a plan's headline should be (trial s29b asked for the median): each row's
    error against the model's figure and against its held-out band's median."""
    own = np.array([c.log_error for c in checks])
    moved = np.array([moved_log_error(c) for c in checks])
    return HeadlineErrors(
        rows=len(checks),
        model_abs=float(np.mean(np.abs(np.expm1(own)))),
        median_abs=float(np.mean(np.abs(np.expm1(moved)))),
        model_signed=float(np.mean(np.expm1(own))),
        median_signed=float(np.mean(np.expm1(moved))),
    )


def ceiling_beaters(checks: Sequence[BandCheck]) -> tuple[int, int]:
    """(rows that measured a higher MFU than their regime's ceiling read without their source,
    covered rows that a band cut at that ceiling would leave outside): why the band's fast end is
    not cut there (planner/accuracy/ceiling.py)."""
    ceilings = Ceilings(load_residuals())
    beaten = newly_outside = 0
    for c in checks:
        ceiling = ceilings.ceiling(
            ceiling_regime(row_ceiling_regime(c.row), c.row.coarse_experts), exclude_source=c.row.source
        )
        if ceiling is None:
            continue
        beaten += c.row.measured_mfu > ceiling.mfu
        # the prediction held at the ceiling; measured faster than the ceiling is below this log error
        floor = float(np.log(min(c.row.predicted_mfu, ceiling.mfu) / ceiling.mfu))
        newly_outside += c.inside() and c.log_error < max(c.bounds()[0], floor)
    return beaten, newly_outside
