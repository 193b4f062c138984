"""Text for people: money, durations and errors on one line, in one place.

Every user-visible amount, duration and error message goes through these helpers
(ui/render.py, ui/app_core.py, the ILP diagnosis, the file readers), so the same number
always reads the same way.
"""

from __future__ import annotations

import math

from planner.units import HOURS_PER_DAY, SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_MINUTE

__all__ = [
    "duration_clock",
    "duration_h",
    "duration_parts",
    "duration_words",
    "money",
    "money_short",
    "one_line",
    "printable",
]

_VALUE_ERROR = "Value error, "  # pydantic's prefix on a ValueError raised by a validator


# --------------------------------------------------------------------------- errors


def one_line(
    exc: BaseException,
    *,
    where: bool = True,
    default_where: str = "",
    keep_prefix: bool = False,
    verbatim: bool = False,
) -> str:
    """One readable line of an exception; a pydantic ValidationError names its first field.

    For a ValidationError: ``loc: msg`` (``default_where`` stands in for an empty location;
    ``where=False`` gives the message alone; pydantic's "Value error, " prefix is dropped
    unless ``keep_prefix``). Any other exception: its first non-blank line (the class name if
    it has no text). ``verbatim``: pydantic's own text instead, its second and third lines
    joined (``loc: msg [type=..., input_value=...]``), or the first line of a shorter text.
    """
    if verbatim:
        text = str(exc).splitlines()
        return text[1].strip() + ": " + text[2].strip() if len(text) > 2 else text[0]
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        message = str(first.get("msg", ""))
        if not keep_prefix:
            message = message.removeprefix(_VALUE_ERROR)
        loc = ".".join(str(part) for part in first.get("loc", ())) or default_where
        return f"{loc}: {message}" if where and loc else message
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def printable(text: object) -> str:
    """``text`` without its non-printable characters (terminal escapes, newlines, bidi controls):
    what a user's file or flag may put in front of the terminal (a model name, a TOML key)."""
    return "".join(ch for ch in str(text) if ch.isprintable())


# --------------------------------------------------------------------------- money


# Large sums in the unit that keeps them short: $36.80T, not $36,795,068.67M.
_MONEY_SCALES = ((1e12, "T"), (1e9, "B"), (1e6, "M"))
# Large counts (tokens) in the same units, down to thousands: what ``count_short`` writes and the CLI's
# ``--tokens 15T`` reads back (ui.inputs.sized_number), decimal.
COUNT_SCALES = (*_MONEY_SCALES, (1e3, "k"))


def count_short(count: float) -> str:
    """``9.97T``, ``850B``, ``2.5M``: a large count (tokens) in three figures and the unit that keeps
    it short, the suffixes ``--tokens`` reads back (ui.inputs.sized_number)."""
    shown = float(f"{count:.3g}")  # rounded first: 999.6e9 is 1T, not "1e+03B" (review s50 L1)
    for scale, suffix in COUNT_SCALES:
        if abs(shown) >= scale:
            scaled = shown / scale
            return f"{scaled:,.0f}{suffix}" if abs(scaled) >= 1000 else f"{scaled:.3g}{suffix}"
    return f"{shown:g}"


# Bytes on disk in decimal units, as df -H, du --si and disk vendors count them (planner/units.py).
_SIZE_SCALES = ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))


def file_size(size_bytes: float) -> str:
    """``846 GB``, ``2.54 TB``: a size on disk in three figures and the unit that keeps it short."""
    shown = float(f"{size_bytes:.3g}")  # rounded first: 999.6e9 is 1 TB, not "1e+03 GB"
    for scale, unit in _SIZE_SCALES:
        if shown >= scale:
            scaled = shown / scale
            return f"{scaled:,.0f} {unit}" if scaled >= 1000 else f"{scaled:.3g} {unit}"
    return f"{shown:g} bytes"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 node``, ``46,560 steps``, ``2 processes``: a whole count and its noun, plural unless one
    (``plural``: where it is not the noun and an s)."""
    return f"{count:,} " + (noun if count == 1 else plural or f"{noun}s")


def energy(kwh: float | None) -> str:
    """``4,693 kWh``; two significant figures below 10 kWh (a short job is not "0 kWh"); ``-``
    without a figure."""
    if kwh is None:
        return "-"
    return f"{kwh:,.0f} kWh" if kwh >= 10 else f"{kwh:.2g} kWh"


# Below this many dollars an amount is shown to the cent wherever it is shown.
SMALL_MONEY_USD = 10.0


def expected_events(expected: float) -> str:
    """An expected count of events (interruptions, spot preemptions, maintenance restarts) as the CLI
    and the card print it: two significant figures under 10 ('0.15', '2.3'), whole above ('419'),
    and '< 0.01' rather than '0' for a short job that may still see one (trial s47 L7: the text said
    0.2 where --json said 0.151; the card '< 0.1', the CLI '0.0', for one figure; review s48: the
    preemptions and maintenance restarts beside it read '1.1' and '0.0' by their own rule)."""
    if 0 < expected < 0.005:
        return "< 0.01"
    return f"{expected:,.0f}" if expected >= 10 else f"{expected:.2g}"


def percent(value_pct: float) -> str:
    """A figure given in percent ('5' for 5 %) as the CLI and the app write it: '5%', the sign at the
    figure as Python's '{:.1%}' puts it (review s48: the CLI's run-loss words said 'input stalls 5 %'
    beside its own 'input stalls +5.0%', where the card said '5%')."""
    return f"{value_pct:g}%"


def money(usd: float | None, *, cents_below: float = -math.inf, column_max: float = 0.0) -> str:
    """``$1.23M`` / ``$4.56B`` / ``$7.89T`` from a million on, else whole dollars (``$12,345``);
    cents below ``cents_below`` and below a dollar (a job of a few GPU-minutes is not "$0").
    ``column_max``: the largest sum of the column it stands in, whose unit it takes while that keeps
    two significant figures (trial s33: a fleet column read "$783,875" over "$2.01M"; now "$0.78M";
    review s34: "$0.00M" for a small job beside a large one, which keeps its own "$1,234").

    None (no price) reads ``-``.
    """
    if usd is None:
        return "-"
    if usd == 0:
        return "$0"  # nothing to pay, not "$0.00" of cents
    for scale, suffix in _MONEY_SCALES:
        if usd >= scale or (column_max >= scale and usd >= scale / 10):
            return f"${usd / scale:,.2f}{suffix}"
    return f"${usd:,.0f}" if usd >= max(cents_below, 1.0) else f"${usd:,.2f}"


def money_short(usd: float, decimals: int = 1, round_up: bool = False) -> str:
    """``$1.2T``, ``$1.2B``, ``$3.4M``, ``$5.6k`` or ``$78.9`` with ``decimals`` decimals (rounded up if
    asked), at least cents under SMALL_MONEY_USD (``$7.80``), none for whole dollars (``$100``)."""
    for scale, suffix in (*COUNT_SCALES, (1.0, "")):
        if abs(usd) >= scale or scale == 1.0:
            scaled = usd / scale
            if scale == 1.0 and abs(usd) < SMALL_MONEY_USD:
                decimals = max(decimals, 2)  # cents: a $0.63 budget is not "$0.6"
            scaled = math.ceil(scaled * 10**decimals - 1e-9) / 10**decimals if round_up else round(scaled, decimals)
            if scale == 1.0 and abs(usd) >= SMALL_MONEY_USD and float(scaled).is_integer():
                decimals = 0  # whole dollars, as shown: a $100 budget is not "$100.0" (trial s25)
            return f"${scaled:,.{decimals}f}{suffix}"
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- durations


def duration_parts(hours: float, smallest: str = "hours") -> tuple[str, float]:
    """The unit a duration reads best in, and its value: days from two days on, hours from
    two hours on (or below, when ``smallest`` is "hours"), else minutes."""
    if hours >= 2 * HOURS_PER_DAY:
        return "days", hours / HOURS_PER_DAY
    if smallest == "hours" or hours >= 2:
        return "hours", hours
    return "minutes", hours * 60


def duration_h(hours: float | None) -> str:
    """Table style: ``12.5 days`` or ``30.0 h``; None reads ``-``."""
    if hours is None:
        return "-"
    unit, value = duration_parts(hours)
    return f"{value:,.1f} {'days' if unit == 'days' else 'h'}"


def duration_band(hours: float | None, band: tuple[float, float] | None) -> str:
    """``84.0 days (76.1-97.3)``: a duration and its band, in the point's unit (``-`` for None)."""
    if hours is None:
        return "-"
    if band is None:
        return duration_h(hours)
    scale = duration_parts(hours)[1] / hours
    return f"{duration_h(hours)} ({band[0] * scale:,.1f}-{band[1] * scale:,.1f})"


def money_band(usd: float | None, band: tuple[float, float] | None, column_max: float = 0.0) -> str:
    """``$3.64M ($3.33M-$4.52M)``: a cost and its band (``-`` without a price), as
    ``money_band_parts`` writes them."""
    if usd is None:
        return "-"
    figure, ends = money_band_parts(usd, band, column_max)
    return figure if ends is None else f"{figure} ({ends[0]}-{ends[1]})"


def money_band_parts(
    usd: float, band: tuple[float, float] | None, column_max: float = 0.0, cents_below: float = SMALL_MONEY_USD
) -> tuple[str, tuple[str, str] | None]:
    """A cost and its band's ends, written alike: under ``cents_below`` all three keep their cents
    (``$0.91 ($0.78-$1.05)``, not ``($0.78-$1)``), all three in the unit of the band's top or of
    ``column_max`` (``money``), whichever is larger (not ``$993,000 ($0.90M-$1.10M)``); no ends
    where the band is the figure alone (not ``$0 ($0-$0)``). The CLI's ``money_band`` and the
    app's metrics (review s36: the app wrote "$150" beside "$90.00-$160")."""
    cents = math.inf if usd < cents_below else -math.inf
    top = max(column_max, usd, *(band or ()))
    shown = lambda v: money(v, cents_below=cents, column_max=top)  # noqa: E731
    if band is None or band[0] == band[1] == usd:
        return shown(usd), None
    return shown(usd), (shown(band[0]), shown(band[1]))


def energy_band(kwh: float | None, band: tuple[float, float] | None) -> str:
    """``3,955 kWh (3,240-6,090)``: energy and its band; the figure as ``energy`` writes it, the ends
    with its decimals (trial s33: ``0.086 kWh (0.074-0.1)`` lost a digit; now ``(0.074-0.100)``)."""
    if kwh is None or band is None:
        return energy(kwh)
    figure = energy(kwh).removesuffix(" kWh")
    decimals = len(figure.partition(".")[2])
    return f"{figure} kWh ({band[0]:,.{decimals}f}-{band[1]:,.{decimals}f})"


def rate_decimals(value: float) -> int:
    """Decimals that show a rate (tokens/s) whole from 100 on and to three significant figures below
    (trial s34: a CPU-calibrated plan printed "0 (0-0) tokens/s")."""
    if not math.isfinite(value) or abs(value) >= 100 or value == 0:
        return 0
    decimals = min(9, math.ceil(2 - math.log10(abs(value))))
    return 0 if abs(round(value, decimals)) >= 100 else decimals  # 99.96 reads "100", not "100.0"


def number_band(value: float, band: tuple[float, float] | None, digits: int | None = None, dash: str = "-") -> str:
    """``884,987 (721,030-952,431)``: a figure and its band, ``digits`` decimals (None: the
    figure's ``rate_decimals``); ``dash`` between the ends (the app's is an en dash, as its bands)."""
    digits = rate_decimals(value) if digits is None else digits
    text = f"{value:,.{digits}f}"
    return text if band is None else f"{text} ({band[0]:,.{digits}f}{dash}{band[1]:,.{digits}f})"


def duration_words(seconds: float, round_up: bool = False) -> str:
    """Sentence style: ``12.5 days``, ``3.0 hours``, ``45.0 minutes``, ``4,975.3 days``, under a
    minute ``0.5 seconds`` (whole units, rounded up, if asked)."""
    if seconds < SECONDS_PER_MINUTE:
        return f"{math.ceil(seconds - 1e-9)} seconds" if round_up else f"{seconds:.1f} seconds"
    unit, _ = duration_parts(seconds / SECONDS_PER_HOUR, smallest="minutes")
    value = seconds / {"days": SECONDS_PER_DAY, "hours": SECONDS_PER_HOUR, "minutes": SECONDS_PER_MINUTE}[unit]
    return f"{math.ceil(value - 1e-9):,} {unit}" if round_up else f"{value:,.1f} {unit}"


def duration_clock(seconds: float) -> str:
    """Clock style for an ETA: ``1:02:03`` from an hour on, else ``02:03`` (whole seconds, never negative)."""
    seconds = int(max(0, seconds))
    hours, rest = divmod(seconds, int(SECONDS_PER_HOUR))
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


def budget_amounts(cheapest: float, budget: float) -> tuple[str, str, str]:
    """(cost, budget, raise-to) as a budget answer prints them: the larger figure's short unit, two
    decimals from a million on (as money() prints them there), one in thousands, the cost rounded up
    in both places (``$3.30M > $0.50M``, raise to ``$3.30M``; a budget under a tenth of the unit in
    its own: ``$10.3k > $1``), where the gap is at least one step of that unit; else whole dollars,
    or cents below SMALL_MONEY_USD or where whole dollars tie (trial s28b: "costs $3.2M" beside
    "raise the budget to $3.3M"; trial s30: "$3.4413M"; trial s35: one decimal or two by the
    figures; review s35: "$100.00k" beside "$1.20M", half the answers from a million on in whole
    dollars)."""
    top = max(cheapest, budget)
    scale, suffix, decimals = next(((s, x, 2) for s, x in _MONEY_SCALES if top >= s), (1e3, "k", 1))
    step = scale * 10.0**-decimals
    if top >= scale and cheapest - budget >= step:  # a smaller gap would read as a step's
        cost = f"${math.ceil(cheapest / step - 1e-9) * step / scale:,.{decimals}f}{suffix}"
        own = budget < scale / 10  # "$0.0k" says nothing of a $1 budget
        shown = money_short(budget, 1) if own else f"${round(budget / step) * step / scale:,.{decimals}f}{suffix}"
        return cost, shown, cost
    # whole dollars from SMALL_MONEY_USD on, else cents; cents too where whole dollars would print
    # the two alike (review s31: "$165,450 > $165,450", "$2 > $0" for $1.0045 against $0.01): the
    # cost rounded up, the budget down, so the cost always reads above it
    for decimals in (0, 2) if cheapest >= SMALL_MONEY_USD else (2,):
        unit = 10.0**-decimals
        up, down = math.ceil(cheapest / unit - 1e-9) * unit, math.floor(budget / unit + 1e-9) * unit
        if up > down or decimals == 2:
            return f"${up:,.{decimals}f}", f"${down:,.{decimals}f}", f"${up:,.{decimals}f}"
    raise AssertionError("unreachable")
