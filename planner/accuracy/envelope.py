"""What an estimate's band rests on, in words: the envelope (validated, or outside and why), a
neighbouring regime's error, a sequence past the longest measured, a measured regime the band
reaches, and the user's measured job; split out of planner/accuracy/__init__.py."""

from __future__ import annotations

from planner.accuracy.bands import BAND_QUANTILES, MIN_ROWS, Evidence
from planner.accuracy.regime import LONG_SEQUENCE_TOKENS, TUNED_RECIPE_WORDS, Regime, tuned_recipes
from planner.accuracy.residuals import source_name
from planner.plan_accuracy import MeasuredJobUse


def envelope_words(ev: Evidence, circular: bool = False, seq_len: int | None = None) -> str:
    """'validated: ...' or 'outside the validated envelope: ...' with its rows and error;
    ``circular``: the regime's rows are the source of the efficiency ceiling the estimate is held
    at, so the figure repeats them (trial s31: DeepSeek-V3's one row, "held out")."""
    # the band's own ends beside the rows' mean error (trial s38: "mean |error| 12.7%" stood beside a
    # band of -31 % / +134 %, and a buyer read the 12.7 % as the uncertainty)
    low, high = (ev.time_factor(q) - 1.0 for q in BAND_QUANTILES)
    error = f"mean |error| {ev.mean_abs_error:.1%}; the 80 % time band {low:+.0%} to {high:+.0%}"
    if ev.validated:
        names = ", ".join(source_name(source) for source in ev.exact_sources)
        rows = f"{ev.exact_rows} held-out row{'s' if ev.exact_rows > 1 else ''} ({names})"
        rows += f", {TUNED_RECIPE_WORDS}" if tuned_recipes(ev.regime.stack) else ""  # heldout51 H1
        if circular:  # review s31: "validated" and "not an independent check" in one sentence
            sets = "sets" if ev.exact_rows == 1 else "set"
            return (
                f"not independently validated: {ev.regime.describe()}, whose {rows} also {sets} the efficiency"
                f" ceiling held here, so the figure repeats {'it' if ev.exact_rows == 1 else 'them'};"
                f" band from {len(ev.rows)} rows, {error}"
            )
        if ev.exact_rows < MIN_ROWS:  # trial s34: one row read as the band's whole evidence
            return (
                f"validated: {ev.regime.describe()}, only {rows}; band from {len(ev.rows)} rows"
                f" ({len(ev.rows) - ev.exact_rows} of nearby regimes), {error}, each end at least as far out as"
                f" {'that row' if ev.exact_rows == 1 else 'those rows'} erred"
            )
        return f"validated: {ev.regime.describe()}, {rows}; band from {len(ev.rows)} rows, {error}" + sequence_words(
            ev, seq_len
        )
    return (
        f"outside the validated envelope: no measured row of {ev.regime.describe()}; nearest {ev.nearest_description()}"
        f"; band from the {len(ev.rows)} nearest rows of {len(ev.sources)} source{'s' if len(ev.sources) > 1 else ''},"
        f" {error}; band widened by"
        f" {ev.widened_by:.0%}"
        + sequence_words(ev, seq_len, widened=False)
        + "".join(
            f"; it reaches the band of the measured {reached(ev.regime, r, r in ev.pooled_regimes)}"
            + neighbour_error(ev, r)
            for r in ev.setting_neighbours
        )
    )


def neighbour_error(ev: Evidence, regime: Regime) -> str:
    """', 41 rows, mean |error| 24.8%': the rows of a neighbour whose band sets this one's end (trial
    s43: a MoE plan's line quoted 4.2 % from its nearest dense rows beside a -31 % / +45 % band set by
    the MoE rows, whose error went unsaid)."""
    n = next(n for n in ev.neighbours if n.regime == regime)
    return f", {len(n.rows)} row{'s' if len(n.rows) > 1 else ''}, mean |error| {n.mean_abs_error:.1%}"


def sequence_words(ev: Evidence, seq_len: int | None = None, widened: bool = True) -> str:
    """'; sequence 200,000 tokens, 2 doublings past the longest measured (65,536; counted up to
    262,144): band widened by 8%' where a long query lies past its rows' longest sequence (trial
    s37), else ''. ``seq_len``: the sequence asked for (the regime keeps it rounded up)."""
    if not ev.sequence_doublings:
        return ""
    d, rounded = ev.sequence_doublings, ev.regime.seq_len
    asked = rounded if seq_len is None else seq_len
    counted = "" if asked == rounded else f"; counted up to {rounded:,}"
    past = (
        f"the longest measured ({ev.longest_measured:,}{counted})"
        if ev.longest_measured
        else f"{LONG_SEQUENCE_TOKENS:,} (no row of its band ran a long sequence{counted})"
    )
    by = f": band widened by {ev.widened_by:.0%}" if widened else ", counted in that widening"
    return f"; sequence {asked:,} tokens, {d:g} doubling{'s' if d != 1 else ''} past {past}{by}"


def reached(query: Regime, measured: Regime, pooled: bool = False) -> str:
    """A measured regime whose band an estimate's reaches, and how it differs from the estimate's
    (trial s29b: "no measured row of ... > 1,000 GPUs" then "the measured ... > 1,000 GPUs, cp > 1"
    read as a contradiction: only cp differed). A ``pooled`` one is every row of a feature on the
    architecture, whatever their other features: it is named, not diffed (review s29b)."""
    if pooled:
        return f"{measured.describe()} (every such row, pooled)"
    diff = query.differences(measured)
    return measured.describe() + (f" (differs: {', '.join(diff)})" if diff else "")


def with_measured_job(envelope: str, job: MeasuredJobUse | None) -> str:
    """The envelope with the user's measured job said (trial s38: the envelope said nothing of the
    user's own measurement): led by it where this is the job's own shape ('calibrated on your job
    j124 (...), 2026-12-05: this shape's figures are its measurement; the band is the published
    rows': outside the validated envelope ...'; calib50 M7: it opened with "outside" and ended
    with the measurement), else followed by '; corrections of your job ... extrapolated to this
    shape (compute x1.27, memory x1.13)'."""
    if job is None:
        return envelope
    said = f"your job {job.name} ({job.shape}), {job.date}"
    if job.exact:
        return f"calibrated on {said}: this shape's figures are its measurement; the band is the published rows': {envelope}"
    return (
        f"{envelope}; corrections of {said} extrapolated to this shape"
        f" (compute x{job.compute_time_factor:.3g}, memory x{job.memory_factor:.3g})"
    )
