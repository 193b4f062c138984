"""A job that ends by its deadline at the quantile it is scheduled at, but past it at the slow end
of its 80 % band (trial s51 M5: a cost-optimal fleet pushes big jobs up to their deadlines, and
pretrain-70b's band ended on day 332.3 against a 330-day deadline without a word): the one rule and
its words for the portfolio and the fleet."""

from __future__ import annotations

from dataclasses import dataclass

from planner.units import SECONDS_PER_DAY

__all__ = ["LateAtBandEnd", "LateOnRentRows", "late_at_band_end"]


@dataclass(frozen=True)
class LateAtBandEnd:
    """A job's end at its band's slow end, its start as scheduled, past its deadline (days from day 0)."""

    job: str
    start_days: float
    slow_end_days: float
    deadline_days: float

    def words(self) -> str:
        """'pretrain-70b: at the slow end of its 80 % band it ends on day 332.3 (starting on day 9.3
        as scheduled), past its deadline day 330'."""
        return (
            f"{self.job}: at the slow end of its 80 % band it ends on day {self.slow_end_days:,.1f} (starting on"
            f" day {self.start_days:,.1f} as scheduled), past its deadline day {self.deadline_days:,g}"
        )


def late_at_band_end(
    job: str, start_s: float, slow_days: float | None, deadline_days: float | None
) -> LateAtBandEnd | None:
    """The job's ``LateAtBandEnd`` where its start plus the slow end of its band (``slow_days``; None:
    no band) passes its deadline (None: none), else None. Its own start is kept: a job before it on the
    same GPUs that runs slow too would start it later still (the answer's makespan band says so)."""
    if slow_days is None or deadline_days is None:
        return None
    start_days = start_s / SECONDS_PER_DAY
    end = start_days + slow_days
    return LateAtBandEnd(job, start_days, end, deadline_days) if end > deadline_days * (1 + 1e-9) else None


@dataclass(frozen=True)
class LateOnRentRows:
    """Why a fleet's rent only is none where every job can be rented (review after52 M3: the table
    left the row out without a word): on every job's rent row, each starting when the jobs it is
    after (P) end, this job ends past its D_j: no row of a type it may rent ends it in time after
    them, so its rent row is picked from its head (planner/search/fleet.py ``_rent_rows``)."""

    job: str
    after: tuple[str, ...]  # the jobs it starts after
    end_days: float
    limit_days: float
    limit_key: str  # the jobs-file key of D_j: deadline_days or horizon_days

    def words(self) -> str:
        """'chat-70b (after chat-8b) ends on day 64.6, past its deadline_days of day 60'."""
        return (
            f"{self.job} (after {', '.join(self.after)}) ends on day {self.end_days:,.1f}, past its"
            f" {self.limit_key} of day {self.limit_days:,g}"
        )
