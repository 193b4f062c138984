"""``trainplan portfolio``'s output: each job's schedule, and its days and cost on the basis the
portfolio uses (the search's risk quantile; the owned-GPU rate, not rent), with their 80 % bands
and the envelope word (planner/api/portfolio.py ``job_figures``; trial s19, finding 9)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.measure import Measurement
from rich.table import Table

from planner.api.portfolio import (
    HorizonHolding,
    JobFigures,
    PortfolioBands,
    horizon_holding,
    job_figures,
    portfolio_bands,
)
from planner.catalog.held_price import HeldPrice, rates_line
from planner.catalog.prices import PriceBasis
from planner.fmt import counted, money, money_band, number_band
from planner.plan_accuracy import Standing
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR
from ui.render import (
    add_columns,
    emit_json,
    no_infeasibility,
    out,
    warn,
    whole_words,
)
from ui.render_calibration import calibration_json, calibration_line
from ui.render_jobs import run_it
from ui.render_lines import after_line, jobs_figures_lines, jobs_run_losses_json, release_line
from ui.render_ownership import OwnedBasis

if TYPE_CHECKING:
    from ui.jobs_overrides import Overrides

# What the cost column is: the portfolio prices its owned inventory at ownership and its rented
# types (the jobs file's ``rented``) at rent, or under a reserved price kind at the reserved rate,
# its share of the terms the portfolio reserves (docs/ilp.md "Many jobs").
OWNED_BASIS, RENT_BASIS, RESERVED_BASIS = "owned-GPU rate", "rent", "reserved"


def day_words(days: float, makespan_s: float, band: tuple[float, float] | None = None) -> str:
    """'day 12.3', with its band where given ('day 8.7 (6.6-9.1)'); in hundredths where everything
    ends within a day (trial s27: a 45-minute job ran from "day 0.0" to "day 0.0")."""
    return f"day {number_band(days, band, day_digits(makespan_s))}"


def day_digits(makespan_s: float) -> int:
    """The decimals of a day in a portfolio whose last job ends at ``makespan_s`` (``day_words``)."""
    return 2 if makespan_s < SECONDS_PER_DAY else 1


def risk_words(figures: list[JobFigures]) -> str:
    """'p80': the quantiles the jobs were scheduled and priced at."""
    return ", ".join(sorted({f.risk.value for f in figures}))


def cost_basis(a, held: tuple[str, ...], reserved: tuple[str, ...] = ()) -> str:
    """The owned-GPU rate, or rent (the reserved rate on a ``reserved`` type), with the price kind
    it was rented at (trial s30: a spot portfolio never said spot)."""
    if a.gpu_id in held:
        return OWNED_BASIS
    kind, basis = a.plan.price_kind, a.plan.price_basis
    word = RESERVED_BASIS if a.gpu_id in reserved else RENT_BASIS
    if basis == PriceBasis.USER:  # review s30b: the file's own quote, as plan says it
        return f"{word} ({basis.words_under(kind)})"
    return word if kind is None else f"{word} ({kind})"


def envelope_word(figures: JobFigures) -> str:
    """'validated' when a measured row of the plan's regime checks it, 'not independent' when those
    rows also set the ceiling it is held at (review s32: the table said 'validated' where the card
    did not), else 'outside' ('-': no band)."""
    return "-" if figures.standing is None else figures.standing.value


def cost_per_gpu_hour(a) -> float | None:
    """The rate behind a job's cost: its cost over its GPU-hours (the owned rate, or rent with any
    whole-node rounding; trial s27d: the table said which basis, not what rate; review s28: not a
    listed price, which plan's $/GPU-h is). None: no time."""
    hours = a.num_gpus * (a.end_s - a.start_s) / SECONDS_PER_HOUR
    return a.cost_usd / hours if hours > 0 else None


def job_row(
    a,
    figures: JobFigures,
    held: tuple[str, ...],
    reserved: tuple[str, ...] = (),
    release: float | None = None,
    after: Sequence[str] = (),
) -> dict:
    """One job's JSON: where and when it runs, its days at its risk and its cost (at the owned rate,
    or rent for a rented type, the reserved rate for a reserved one: ``held``, the owned types;
    ``reserved``, those reserved), with bands, and where a rented (reserved) price comes from;
    ``release``: its start_after_days (None: not set); ``after``: the jobs it starts after."""
    return dict(
        job=a.job,
        gpu=a.gpu_id,
        num_gpus=a.num_gpus,
        layout=a.label,
        # the typed layout and training, as plan --json gives them (trial s25: only the label)
        parallel=a.plan.layout.model_dump(mode="json"),
        training=a.plan.training.model_dump(mode="json"),
        start_days=a.start_s / SECONDS_PER_DAY,
        end_days=a.end_s / SECONDS_PER_DAY,
        start_after_days=release,  # its release, where the jobs file sets one (trial s51 H4)
        after=list(after) or None,  # the jobs it starts after, where the jobs file sets them
        risk=figures.risk.value,
        days=figures.days,
        days_band=figures.days_band,
        # the model's own figures beside the risk's, and the throughput behind them, as plan --json
        # gives them (buyer trial s50 L5: only the risk's days and cost)
        model_days=figures.model_days,
        model_cost_usd=figures.model_cost_usd,
        tokens_per_s=a.plan.estimate.throughput.tokens_per_s,
        mfu=a.plan.estimate.throughput.mfu,
        model_mfu=a.plan.estimate.model_mfu,  # the model's own where the efficiency ceiling holds it, else null
        cost_usd=a.cost_usd,
        cost_basis=cost_basis(a, held, reserved),
        price_kind=None if a.gpu_id in held else a.plan.price_kind,  # owned GPUs are not rented
        # where the rent comes from, as plan's price_basis (trial s48 H1: one provider's rate, unsaid)
        price_basis=None if a.gpu_id in held or a.plan.price_basis is None else a.plan.price_basis.value,
        cost_per_gpu_hour_usd=cost_per_gpu_hour(a),
        cost_usd_band=figures.owned_cost_band,
        validated=figures.validated,
        standing=None if figures.standing is None else figures.standing.value,
        envelope=figures.envelope,
        # the run-loss figures its days rest on, as plan --json gives them (null: the default)
        run_losses=a.plan.run_losses.model_dump(mode="json"),
    )


# portfolio --json's keys beside "feasible" and the infeasible ones: null when no portfolio is
# found ("job_dirs": null without --emit).
PORTFOLIO_KEYS = (
    "warnings", "assignments", "total_cost_usd", "total_cost_band_usd", "idle_cost_usd", "idle_cost_band_usd",
    "makespan_days", "makespan_band_days", "solver", "exact", "stopped_gap", "lower_bound", "lanes", "owned_rate_basis",
    "owned_rate",
    "job_dirs",
    "reserved", "reserved_cost_usd", "billed_usd", "run_losses",
    "horizon_days", "holding_to_horizon_usd", "holding_to_horizon_band_usd", "owned_busy_fraction",
    "owned_busy_fraction_band", "billed_to_horizon_usd",
)  # fmt: skip


def reserved_json(r) -> dict:
    """One reserved type (``ReservedGpus``): its GPUs, rate, terms and their bill, the jobs' share."""
    return dict(
        gpu=r.gpu_id,
        num_gpus=r.num_gpus,
        usd_per_gpu_hour=r.usd_per_gpu_hour,
        kind=r.kind,
        term_years=r.term_years,
        terms=r.terms,
        usd_per_gpu=r.usd_per_gpu,
        cost_usd=r.cost_usd,
        used_usd=r.used_usd,
        idle_usd=r.idle_usd,
    )


# a term's length in words, as a buyer reads it ("1 one-year term")
_YEARS = {1: "one", 2: "two", 3: "three"}


def reserved_words(r) -> str:
    """'reserved: 64 x h100-sxm for 1 one-year term at $2.10 per GPU-hour, $1.18M; the jobs use
    $290,154 of it, and a reserved GPU is paid every hour of its term, busy or idle' (session 44:
    the portfolio priced reserved GPUs by the job-hour and warned that the term cost more)."""
    term = counted(r.terms, f"{_YEARS.get(r.term_years, str(r.term_years))}-year term")
    return (
        f"reserved: {r.num_gpus:,} x {r.gpu_id} for {term} at ${r.usd_per_gpu_hour:,.2f} per GPU-hour"
        f" ({r.kind}), {money(r.cost_usd)}; the jobs use {money(r.used_usd)} of it, and a reserved GPU is paid"
        " every hour of its term, busy or idle"
    )


def portfolio(
    solution,
    *,
    as_json: bool,
    emitted: dict[str, Path] | None = None,
    owned_basis: OwnedBasis | None = None,
    calibration=None,
    prices: dict[str, HeldPrice] | None = None,
    overrides: Overrides | None = None,
) -> None:
    """``emitted``: job name -> the job.json written for it (``trainplan portfolio --emit``);
    ``owned_basis``: said under the totals (and in --json, typed too) where GPUs are held;
    ``calibration``: the file the jobs were planned with (said first, and in --json); ``prices``: each
    rented or reserved type's price and its basis, said under the totals; ``overrides``: the jobs
    file keys the command line set (said first, and in --json)."""
    figures = [job_figures(a) for a in solution.assignments]
    reserved = tuple(r.gpu_id for r in solution.reserved)
    release, after = dict(solution.release_days), dict(solution.after)
    rows = [
        job_row(a, f, solution.held_types, reserved, release.get(a.job), after.get(a.job, ()))
        for a, f in zip(solution.assignments, figures, strict=True)
    ]
    bands = portfolio_bands(solution, figures)  # every job at its band's ends
    held = horizon_holding(solution, figures, bands)  # the owned GPUs to the horizon (trial s51 M1)
    for message in solution.warnings:  # on stderr, as plan's
        warn(message)
    if as_json:
        data = portfolio_json(solution, rows, (bands, held), owned_basis, emitted)
        data |= {} if overrides is None else {"overrides": overrides.json()}
        emit_json(data if calibration is None else {**data, "calibration": calibration_json(calibration)})
        return
    if overrides is not None and (line := overrides.line()) is not None:
        out.print(line, markup=False)
    calibration_line(calibration)
    table, notes = portfolio_table(solution, rows, figures)
    out.print(table)
    for note in notes:
        out.print(note, markup=False)
    for line in (release_line(release), after_line(after)):
        if line is not None:
            out.print(line, markup=False)
    for line in jobs_figures_lines({a.job: a.plan.run_losses for a in solution.assignments}):
        out.print(line, markup=False)
    out.print(totals_words(solution, figures, bands))
    if held is not None:
        out.print(horizon_words(held, solution.makespan_s), markup=False)
    for line in under_totals_lines(solution, owned_basis, prices):
        out.print(line, markup=False)
    for line in accuracy_lines(figures):
        out.print(line)
    plans = {a.job: a.plan for a in solution.assignments}
    for job, job_json in (emitted or {}).items():  # emit's words (trial s49: a path with spaces, unquoted)
        out.print(f"{job}: job written to {job_json.parent} ({run_it(plans[job], job_json.parent, 0)})", markup=False)


def portfolio_json(
    solution,
    rows: list[dict],
    totals: tuple[PortfolioBands, HorizonHolding | None],
    owned_basis: OwnedBasis | None,
    emitted: dict[str, Path] | None,
) -> dict:
    """portfolio --json of a found portfolio (``rows``: each job's ``job_row``; ``totals``: the
    totals' bands at every job's band ends, and the owned GPUs held to the horizon), less the calibration."""
    bands, held = totals
    return {
        "feasible": True,
        **no_infeasibility(),
        "warnings": list(solution.warnings),
        "assignments": rows,
        "total_cost_usd": solution.total_cost_usd,
        "total_cost_band_usd": bands.jobs_cost_usd,
        "idle_cost_usd": solution.idle_cost_usd,
        "idle_cost_band_usd": bands.idle_cost_usd,
        "makespan_days": solution.makespan_s / SECONDS_PER_DAY,
        "makespan_band_days": bands.makespan_days,
        "solver": solution.solver,
        "exact": solution.exact,
        # the objective above lower_bound (a bound on every schedule), relative (None: the model's optimum)
        "stopped_gap": solution.stopped_gap,
        "lower_bound": solution.lower_bound,
        "lanes": solution.lanes,  # the lanes' schedule answered (planner/search/lanes.py)
        "owned_rate_basis": None if owned_basis is None else owned_basis.words(),
        "owned_rate": None if owned_basis is None else owned_basis.json(dict(solution.held_usd_per_gpu_hour)),
        # under a reserved price kind the GPUs reserved for whole terms, and what all of it bills
        "reserved": [reserved_json(r) for r in solution.reserved],
        "reserved_cost_usd": sum(r.cost_usd for r in solution.reserved),
        "billed_usd": solution.billed_usd,
        **horizon_json(solution.horizon_days, held),
        "run_losses": jobs_run_losses_json({a.job: a.plan.run_losses for a in solution.assignments}),
        "job_dirs": None if emitted is None else {job: str(j.parent) for job, j in emitted.items()},
    }


def horizon_json(horizon_days: float | None, held: HorizonHolding | None) -> dict:
    """The owned GPUs held to the horizon (trial s51 M1), null without a horizon or a GPU held: what
    holding them idle from the last job's end to the horizon costs at their held rate, their busy
    share of the horizon, and the bill to it (``billed_usd`` plus that holding)."""
    return {
        "horizon_days": horizon_days,
        "holding_to_horizon_usd": None if held is None else held.holding_usd,
        "holding_to_horizon_band_usd": None if held is None else held.holding_band_usd,
        "owned_busy_fraction": None if held is None else held.owned_busy_fraction,
        "owned_busy_fraction_band": None if held is None else held.owned_busy_fraction_band,
        "billed_to_horizon_usd": None if held is None else held.billed_usd,
    }


def horizon_words(held: HorizonHolding, makespan_s: float) -> str:
    """'to the horizon (horizon_days 365): the owned GPUs held idle from day 262.0 cost $0.40M
    ($0.38M-$0.51M) more at their held rate, busy 71% (54%-73%) of their GPU-hours; billed to day 365
    $1.57M' (trial s51 M1: the year's bill and the inventory's use were fleet's alone)."""
    busy = held.owned_busy_fraction
    band = held.owned_busy_fraction_band
    share = "" if busy is None else f", busy {busy:.0%}" + ("" if band is None else f" ({band[0]:.0%}-{band[1]:.0%})")
    return (
        f"to the horizon (horizon_days {held.horizon_days:,.0f}): the owned GPUs held idle from"
        f" {day_words(makespan_s / SECONDS_PER_DAY, makespan_s)} cost"
        f" {money_band(held.holding_usd, held.holding_band_usd)} more at their held rate{share} of their"
        f" GPU-hours; billed to day {held.horizon_days:,.0f} {money(held.billed_usd)}"
    )


def totals_words(solution, figures: list[JobFigures], bands: PortfolioBands) -> str:
    """The line under the table: the jobs' cost at their risk, the owned GPUs' idle cost, when all
    are done, and which model answered."""
    days = solution.makespan_s / SECONDS_PER_DAY
    return (
        f"jobs {money_band(solution.total_cost_usd, bands.jobs_cost_usd)} at {risk_words(figures)}"
        f"{'' if bands.jobs_cost_usd is None else ' (80 % bands summed)'}, owned GPUs idle until the last job ends"
        f" {money_band(solution.idle_cost_usd, bands.idle_cost_usd)};"
        f" all done by {day_words(days, solution.makespan_s, bands.makespan_days)}"
        f" ({model_words(solution)})"
    )


def under_totals_lines(solution, owned_basis: OwnedBasis | None, prices: dict[str, HeldPrice] | None) -> list[str]:
    """What the totals rest on: each reserved type's terms and the whole bill, the owned-GPU rate's
    basis (``owned_basis_words``), the rented (reserved) types' prices."""
    lines = [reserved_words(r) for r in solution.reserved]
    if solution.reserved:  # the terms' unused hours are paid too: the total says so
        lines.append(
            f"billed in all {money(solution.billed_usd)}: the jobs, owned GPUs idle and the reserved terms whole"
        )
    if owned_basis is not None:
        lines.append(owned_basis.words())
    if prices:
        lines.append(held_rates_words(prices, bool(solution.reserved)))
    return lines


def held_rates_words(prices: dict[str, HeldPrice], reserving: bool) -> str:
    """'rent per GPU-hour: mi325x at $1.95/GPU-h (one provider's listed rate, not a median of offers)':
    the rented (reserved) types' prices as plan says its own (trial s48 H1)."""
    what = "rent or reserved rate" if reserving else "rent"
    return rates_line(what, prices)


def model_words(solution) -> str:
    """Which model answered, and how close to a lower bound on every schedule it stopped (review s35:
    the 18-job bench case took 51-135 s proving an optimum 0.6 % below its 30 s incumbent)."""
    if solution.exact:
        return "exact model"
    gap = solution.stopped_gap
    if gap is None:
        return "slotted approximation: many jobs"
    bound = f", within {gap:.1%} of a lower bound on every schedule"
    if getattr(solution, "lanes", False):
        return f"many jobs: one after another in fixed lanes of GPUs{bound}"
    return f"slotted approximation: many jobs; the solver stopped at its time limit{bound}"


def accuracy_lines(figures: list[JobFigures]) -> list[str]:
    """How many plans lie outside the validated envelope, and how many repeat the rows that hold
    them at their ceiling (review s32: both read as 'validated' in the table before)."""
    counts = {s: sum(f.standing is s for f in figures) for s in (Standing.OUTSIDE, Standing.CIRCULAR)}
    what = {
        Standing.OUTSIDE: "outside the validated envelope (bands widened)",
        Standing.CIRCULAR: "not independently validated (their regime's measured rows also set the ceiling"
        " they are held at)",
    }
    return [
        f"accuracy: {n} of {len(figures)} plans are {what[s]}; trainplan estimate explains each"
        for s, n in counts.items()
        if n
    ]


def portfolio_table(solution, rows: list[dict], figures: list[JobFigures]) -> tuple[Table, list[str]]:
    """One row per job: where, when, its days and cost at its risk quantile, with bands (trial s35:
    "cost" beside "days p80" read as the model's figure that `plan` leads with), and the lines under
    it: none where it fits the terminal, else (trial s51 M6: 127 columns at 80, headers broken
    mid-word) the narrow table, each job's GPUs under its name and its start and end in one cell,
    with its layout, basis and envelope in a line per job under it."""
    wide = whole_words(_table(solution, rows, figures, narrow=False))
    unbounded = out.options.update_width(sys.maxsize)  # Measurement.get clamps to the width it is given
    if Measurement.get(out, unbounded, wide).minimum <= out.width:
        return wide, []
    notes = [
        f"{r['job']}: {r['layout']}; {r['cost_basis']}; {envelope_word(f)}" for r, f in zip(rows, figures, strict=True)
    ]
    narrow = whole_words(_table(solution, rows, figures, narrow=True))
    for column in narrow.columns[2:]:  # the figures at their longest word, the header's too: rich's collapse
        # shrinks the widest columns alike, and regrowing each to its least left the table past 80 columns
        column.width = max(column.min_width or 0, *(len(word) for word in str(column.header).split()))
    return narrow, ["each job's layout; cost basis; envelope:", *notes]


def _table(solution, rows: list[dict], figures: list[JobFigures], narrow: bool) -> Table:
    risks = risk_words(figures)
    rented = "the reserved rate of reserved ones" if solution.reserved else "rent of rented ones"
    table = Table(
        title=f"portfolio on the shared inventory (days and cost at {risks}, the search's risk quantile;"
        f" cost at the {OWNED_BASIS} of owned types, at {rented}; 80 % bands)",
        title_justify="left",
    )
    where = ("job / GPUs", "days") if narrow else ("job", "GPU", "n", "layout", "start", "end")
    figures_names = (f"days {risks}", f"cost {risks}", "cost / GPU-h")
    add_columns(table, (*where, *figures_names, *(() if narrow else ("basis", "envelope"))))
    top = max((max(f.owned_cost_band or (f.owned_cost_usd,)) for f in figures), default=0.0)  # one unit down "cost"
    digits = day_digits(solution.makespan_s)
    for r, f in zip(rows, figures, strict=True):
        cells = (
            number_band(f.days, f.days_band, 1 if f.days >= 0.1 else 3),  # a half-hour job is not "0.0 days"
            money_band(f.owned_cost_usd, f.owned_cost_band, column_max=top),
            "-" if r["cost_per_gpu_hour_usd"] is None else f"{r['cost_per_gpu_hour_usd']:.2f}",
        )
        if narrow:
            span = f"day {r['start_days']:.{digits}f}-{r['end_days']:.{digits}f}"
            table.add_row(f"{r['job']}\n{r['num_gpus']} x {r['gpu']}", span, *cells)
            continue
        table.add_row(
            r["job"],
            r["gpu"],
            str(r["num_gpus"]),
            r["layout"],
            day_words(r["start_days"], solution.makespan_s),
            day_words(r["end_days"], solution.makespan_s),
            *cells,
            r["cost_basis"],
            envelope_word(f),
        )
    return table
