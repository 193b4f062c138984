"""The planner's answers as sentences in the app's language, built from their typed fields.

An infeasible request is rendered from ``InfeasiblePlan``'s constraint and its required/available
figures (planner/errors.py), and the limit that bounds the GPU count is named by its on-screen
label ("Most GPUs to consider = 4096") when a cap, not an inventory, binds. The planner's own
English detail (``Infeasible.detail``/``fix``) is the line under it on the English page; other
languages get its exact figures instead (``detail_text``).
"""

from __future__ import annotations

import math
import re

from planner.accuracy.bands import MIN_ROWS
from planner.accuracy.regime import Feature, said_features
from planner.accuracy.residuals import source_name
from planner.api import PlanRequest, PlanResult
from planner.api.explore import WhyNot
from planner.catalog.prices import Commitment, DearerKind
from planner.explain import Note, NoteKind, plan_notes
from planner.fmt import budget_amounts, duration_parts, energy, number_band
from planner.plan import Estimate, Plan
from planner.plan_accuracy import RegimeWords, Uncertainty
from planner.stack_rules import sequence_split_stacks
from planner.units import HOURS_PER_DAY, SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_MINUTE
from ui.app_core import Infeasible, duration_key, money
from ui.i18n import Labels, plain
from ui.render_lines import MedianOffset

SHORTEST_H = 0.1  # under this a duration reads in minutes: "the deadline is 0.0 h" said nothing (issue 30)


def duration(tr: Labels, hours: float) -> str:
    """'12.5 days', '9.3 h'; under 0.1 h in whole minutes, and '< 1 min' below a minute."""
    if hours < SHORTEST_H:
        minutes = hours * SECONDS_PER_HOUR / SECONDS_PER_MINUTE
        return tr("minutes_value", value=minutes) if minutes >= 1 else tr("under_minute")
    key, value = duration_key(hours)
    return tr(key, value=value)


def interval(tr: Labels, minutes: float) -> str:
    """'42 min' under an hour, else as ``duration`` ('9.3 h', not '559.0 min'; issue 30)."""
    return (
        tr("minutes_value", value=minutes)
        if minutes * SECONDS_PER_MINUTE < SECONDS_PER_HOUR
        else duration(tr, minutes * SECONDS_PER_MINUTE / SECONDS_PER_HOUR)
    )


def estimate_only_text(tr: Labels, plan: Plan) -> str:
    """Why a plan cannot be emitted: another stack's, or one that assumes a named attention kernel."""
    if plan.attention is not None and plan.stack == "trainplan":
        return tr("estimate_attention", kernel=plan.attention.value)
    return tr("estimate_only", stack=plan.stack.value)


def band_text(tr: Labels, band: tuple[float, float] | None, unit) -> str | None:
    """'80 % band 19.1 days–35.5 days' for a pair, each end formatted by ``unit`` (None: no band)."""
    return None if band is None else tr("card_band", lo=unit(band[0]), hi=unit(band[1]))


def seconds(tr: Labels, value: float) -> str:
    """'3.177 s' / '3.177 秒': a step time as the card's footer and the CLI write it (trial s33: the
    中文 explorer said '3.18 s' beside the card's '3.177 秒')."""
    return tr("seconds_value", value=value)


def per_second(tokens: float) -> str:
    """'660,171': tokens per second, whole from 100 on, else three significant figures ('0.00340')."""
    return number_band(tokens, None)


def figure_bands(tr: Labels, e: Estimate) -> dict[str, str | None]:
    """The 80 % band in words of each figure with one (planner/accuracy ``Uncertainty``), by its
    field: what the card and the layout explorer show under the figure (None: no band)."""
    u = e.uncertainty
    units = {
        "time_to_train_h": lambda h: duration(tr, h),
        "cost_usd": money,
        "energy_kwh": energy,
        "tokens_per_s": per_second,
        "step_s": lambda s: seconds(tr, s),
        "mfu": lambda m: f"{m:.1%}",
    }
    return {field: band_text(tr, None if u is None else getattr(u, field), unit) for field, unit in units.items()}


def regime_text(tr: Labels, u: Uncertainty) -> str:
    """The regime in the page's language: '{stack} on {generation}, tp > 1, ...'."""
    return regime_words_text(
        tr, RegimeWords(stack=u.regime_stack, generation=u.regime_generation, features=u.regime_features)
    )


def regime_words_text(tr: Labels, regime: RegimeWords) -> str:
    """The regime's words, a feature another implies left unsaid (``said_features``)."""
    words = [tr("regime_words", stack=regime.stack, generation=regime.generation)]
    bits = sum(int(Feature[name.upper()]) for name in regime.features)
    return tr.join(words + [tr(f"feature_{str(f.name).lower()}") for f in said_features(bits)])


def envelope_text(tr: Labels, u: Uncertainty) -> str:
    """Whether the plan lies inside what was measured, what its band rests on, and the measured
    regimes whose band ends it shows (review s27: the card left them out)."""
    if u.validated and u.circular:  # review s32: the ceiling's own rows, not the band's sources and error
        sources = tr.join(map(source_name, u.exact_sources))
        return tr("envelope_circular", regime=regime_text(tr, u), rows=u.exact_rows, sources=sources)
    if u.validated:  # the regime's own rows and sources, then the band's (as the CLI's envelope line)
        few = {1: "envelope_validated_one"}.get(u.exact_rows, "envelope_validated_few")
        return tr(
            "envelope_validated" if u.exact_rows >= MIN_ROWS else few,
            nearby=u.rows - u.exact_rows,
            regime=regime_text(tr, u),
            rows=u.exact_rows,
            sources=tr.join(map(source_name, u.exact_sources)),
            band_rows=u.rows,
            band_sources=tr.join(map(source_name, u.sources)),
            error=u.mean_abs_error,
        )
    text = tr("envelope_outside", regime=regime_text(tr, u), rows=u.rows, error=u.mean_abs_error, widened=u.widened_by)
    if u.reaches:
        reaches = tr("envelope_reaches", regimes=tr.clauses(regime_words_text(tr, r) for r in u.reaches))
        text = tr.sentences(text, reaches)
    return text


def ceiling_text(tr: Labels, e: Estimate) -> str | None:
    """Why the estimate is slower than the model alone (None: no ceiling held it)."""
    c = e.ceiling
    if c is None or not c.binding:
        return None
    return tr("ceiling_held", mfu=c.mfu, source=f"{c.measured_by}: {c.row}", tokens=c.uncapped_tokens_per_s)


def risk_text(tr: Labels, result) -> str | None:
    """What judging at the median would have chosen, when the risk setting changed the choice."""
    p = getattr(result, "median_plan", None)
    if p is None:
        return None
    values = dict(gpus=p.num_gpus, gpu=p.gpu, layout=p.layout_words, risk=result.risk.value)
    if (over := result.median_over_budget) is not None:  # review s30: the over-budget callout names it
        return tr(("risk_changed_over", "risk_changed_further")[over], risk=result.risk.value)
    text = (
        tr("risk_changed_batch", batch=result.median_batch, **values)
        if result.median_batch is not None  # trial s28c
        else tr("risk_changed", **values)
    )
    that, this = (
        risk_figures_text(tr, p.estimate, result.risk.value),
        risk_figures_text(tr, result.plan.estimate, result.risk.value),
    )
    if that is None or this is None:
        return text
    # trial s34 (app): the CLI gives both plans' figures at both quantiles, the app gave none
    return tr.sentences(text, tr("risk_changed_figures", that=that, this=this))


def risk_figures_text(tr: Labels, e: Estimate, risk: str) -> str | None:
    """'2.8 days, $14,577 at p50 and 3.1 days, $16,519 at p80' (None without a band)."""
    words = []
    for q in ("p50", risk):
        hours, cost = e.time_h_at(q), e.cost_usd_at(q)
        if hours is None or cost is None:
            return None
        words.append(tr("risk_figures_at", time=duration(tr, hours), cost=money(cost), risk=q))
    return tr("risk_figures_pair", p50=words[0], judged=words[1])


def short_duration(tr: Labels, seconds: float) -> str:
    """A wait in the planner's units, as the CLI's ``duration_words`` picks them (minutes under two
    hours: trial s31, '80 minutes' on the card beside '80.0 minutes' in the CLI, then '1.3 h')."""
    unit, value = duration_parts(seconds / SECONDS_PER_HOUR, smallest="minutes")
    if unit == "minutes" and value < 1:  # review s33: "0 min" for a 20-second wait
        return tr("under_minute")
    return tr(f"{unit}_value", value=value)


def duration_up(tr: Labels, hours: float) -> str:
    """A duration rounded up to whole units, as the planner's fix (``duration_words(round_up=True)``):
    enough time, never a little short, and the same figure in the card and the line under it."""
    unit, value = duration_parts(hours, smallest="minutes")  # the planner's units (review s28: "1 h" for 3 min)
    return tr(f"{unit}_up", value=math.ceil(value - 1e-9))


def gpu_limit(tr: Labels, request: PlanRequest) -> str:
    """What bounds the GPU count of this request, as the sidebar shows it."""
    caps = request.max_gpus is not None and any(
        n is None or n > request.max_gpus for n in (request.gpus or {"": None}).values()
    )
    inventories = tr.join(f"{g} ≤ {n:,}" for g, n in (request.gpus or {}).items() if n is not None)
    parts = [f"{tr('max_gpus')} = {request.max_gpus:,}"] if caps and request.max_gpus else []
    if inventories:
        parts.append(tr.labelled(tr("gpu_inventory"), inventories))
    return tr.clauses(parts) or tr("no_gpu_limit")


def _hours(seconds: float | None) -> float:
    return (seconds or 0.0) / SECONDS_PER_HOUR


def infeasible_text(tr: Labels, infeasible: Infeasible, request: PlanRequest) -> str:
    """One paragraph: the binding constraint, its figures, the limit on GPUs, and a fix; for several
    jobs that cannot run on their own, each one's (trial s25: only the first was named)."""
    c = infeasible.constraint
    return tr("infeasible", constraint=tr.option(c), body=infeasible_body(tr, infeasible, request))


def infeasible_body(tr: Labels, infeasible: Infeasible, request: PlanRequest) -> str:
    if infeasible.job is not None:  # trial s33 (app): a portfolio's failing job was not named
        return tr("job_answer", job=infeasible.job, text=_constraint_body(tr, infeasible, request))
    return _constraint_body(tr, infeasible, request)


def _constraint_body(tr: Labels, infeasible: Infeasible, request: PlanRequest) -> str:
    c, need, have = infeasible.constraint, infeasible.required, infeasible.available
    if infeasible.jobs:
        return tr.sentences(
            *(tr("job_answer", job=name, text=_constraint_body(tr, job, request)) for name, job in infeasible.jobs)
        )
    values: dict[str, object] = dict(limit=gpu_limit(tr, request))
    if c == "deadline":
        values.update(
            need=duration(tr, _hours(need)), have=duration(tr, _hours(have)), fix=duration_up(tr, _hours(need))
        )
    elif c == "budget":  # one amount in the detail and the fix, as the planner's sentence (review s28)
        cost_words, budget_words, raise_to = budget_amounts(need or 0.0, have or 0.0)
        values.update(need=cost_words, have=budget_words, fix_usd=raise_to, risk=request.risk.value)
    elif c in ("memory", "inventory"):
        values.update(need=need or 0.0, have=have or 0.0)
    elif c == "shared_inventory":  # GPU-seconds, said in GPU-days
        values.update(need=(need or 0.0) / SECONDS_PER_DAY, have=(have or 0.0) / SECONDS_PER_DAY)
    known = ("deadline", "budget", "memory", "inventory", "divisibility", "batch", "shared_inventory")
    key = f"why_{c}" if c in known else None
    if c in ("deadline", "memory") and infeasible.more_gpus_help is False:  # the planner scored or probed more
        key = f"why_{c}_no_gpus"
    elif c == "deadline" and infeasible.batch_tokens is not None:  # trial s33 (app): "or raise the GPU limit"
        key = "why_deadline_batch_caps"
    if c == "budget" and (named := infeasible.named) is not None:  # trial s28d: which plan, and how long
        # the deadline the answer judged by: a portfolio job's own, not the sidebar's (review s35)
        deadline = infeasible.deadline_seconds
        key = "why_budget_named" if deadline is None else "why_budget_named_deadline"
        values.update(gpus=named.num_gpus, gpu=named.gpu, time=duration(tr, _hours(named.seconds)))
        if deadline is not None:
            values.update(deadline=duration(tr, _hours(deadline)))
    if c == "shared_inventory" and have is None:  # the GPU-time fits; the jobs do not pack
        key = "why_shared_pack"
    if key is None:
        return plain(f"{infeasible.detail}; {infeasible.fix}")
    batch = (
        ""
        if infeasible.batch_tokens is None
        else tr(
            "why_deadline_batch",
            batch=infeasible.batch_tokens,
            time=duration(tr, _hours(infeasible.batch_seconds)),  # trial s28d: the offer had no time
            risk=request.risk.value,  # the search's quantile, as the CLI's words say (review s28b)
        )
    )
    stacks = sequence_split_stacks(request.stack, int(request.seq_len or 0)) if key == "why_memory_no_gpus" else ()
    no_cp = tr("why_memory_no_cp", stack=request.stack.value, stacks=tr.join(stacks)) if stacks else ""
    slower = infeasible.within_budget_seconds if c == "budget" else None
    later = "" if slower is None else tr("why_budget_slower", time=duration_up(tr, _hours(slower)))
    return tr.sentences(tr(key, **values), later, batch, no_cp)


CANDIDATES = re.compile(r"none of the (?P<count>\d+) (?:candidates|valid layouts).*?\((?P<gpus>[\d-]+) GPUs\)")


# The request fields the planner's fixes name with their CLI flag ("raise max_gpus (--max-gpus) to
# 512"), and the sidebar label the app's English line names instead (None: the app has no such
# field, the clause is dropped); the flag forms are planner/search/diagnosis.py's, count_probe's
# and batch_offers.batch_fix's.
FLAG_LABELS = {"--max-gpus": "max_gpus", "--global-batch-tokens": "global_batch", "--batch-tolerance": None}
FLAG_FORMS = (
    re.compile(r"[a-z_]+ \((?P<flag>--[a-z-]+)\)"),  # max_gpus (--max-gpus)
    re.compile(r" ?\([a-z_]+, (?P<flag>--[a-z-]+)\)"),  # (global_batch_tokens, --global-batch-tokens)
    re.compile(r"[a-z_]+ or (?P<flag>--[a-z-]+)"),  # global_batch_tokens or --global-batch-tokens
    re.compile(r"(?P<flag>--[a-z-]+) (?P<value>\d+)\b"),  # --global-batch-tokens 8388608
)


def app_words(tr: Labels, text: str) -> str:
    """The planner's English with its request fields named as the sidebar names them (the app has no
    flags: the English detail line quoted "--max-gpus" to people who cannot type it)."""
    for form in FLAG_FORMS:

        def label(found: re.Match[str], form: re.Pattern[str] = form) -> str:
            key = FLAG_LABELS.get(found["flag"], "")
            if key is None:
                return ""
            if not key:
                return found[0]
            words = f'"{tr(key)}"'
            if found.groupdict().get("value"):
                return f"{words} = {int(found['value']):,}"
            lead = found[0][: len(found[0]) - len(found[0].lstrip())]  # the space before "(", kept
            return f"{lead}({words})" if found[0].lstrip().startswith("(") else words

        text = form.sub(label, text)
    # trial s33 (app): "capped at 4096 per type by max_gpus", "--risk p50 judges the median"
    text = re.sub(r"\bby max_gpus\b", f'by "{tr("max_gpus")}"', text)
    return re.sub(r"--risk (p\d\d)\b", lambda m: f'"{tr("risk")}" = {m[1]}', text)


def detail_text(tr: Labels, infeasible: Infeasible) -> str:
    """The line under an infeasible answer: the planner's own words in English (the sidebar's field
    names for its flags), its exact figures otherwise, and for a portfolio's job in English too: its
    words are the jobs file's (trial s34: deadline_days, global_batch_tokens and 25 "<=4096" limits)."""
    if tr.lang == "en" and infeasible.job is None:
        return plain(app_words(tr, f"{infeasible.detail}; {infeasible.fix}"))
    c, need, have = infeasible.constraint, infeasible.required or 0.0, infeasible.available or 0.0
    if c == "deadline":
        return tr("detail_deadline", need=_hours(need), have=_hours(have))
    if c == "budget" and infeasible.deadline_seconds is not None:  # its cheapest meets the deadline
        return tr("detail_budget_deadline", need=need, have=have)
    if c in ("budget", "memory", "inventory"):
        return tr(f"detail_{c}", need=need, have=have)
    if c == "shared_inventory":
        return tr("detail_shared_inventory", need=need / SECONDS_PER_DAY, have=have / SECONDS_PER_DAY)
    found = CANDIDATES.search(infeasible.detail)  # divisibility, batch: counts only in the sentence
    return tr("detail_candidates", **found.groupdict()) if found else ""


def near_tie_text(tr: Labels, result: PlanResult) -> str | None:
    """'For +0.2 % cost, 2.0 x faster: 8 x b200 in 9.8 days for $12,746' (or the cheaper twin of the fastest)."""
    tie, other = result.near_tie, result.near_tie_plan
    if tie is None or other is None:
        return None
    values = dict(extra=tie.extra_fraction * 100, gain=tie.gain, **judged_values(tr, other, result.risk.value))
    return tr("near_tie_cost" if tie.objective == "cost" else "near_tie_time", **values)


def over_budget_text(tr: Labels, result: PlanResult) -> str | None:
    """'A little over the budget (at p80): 22.9 × faster than the fastest plan within it, for 0.7 % over
    the budget — 512 × b200 in 24.8 days for $2.07M.', then the fastest such plan where there is one."""
    if not result.over_budget:
        return None
    texts = [
        tr(
            "over_budget" if i == 0 else "over_budget_further",
            over=over.over_fraction * 100,
            speedup=over.speedup,
            **judged_values(tr, other, result.risk.value),
        )
        for i, (over, other) in enumerate(zip(result.over_budget, result.over_budget_plans, strict=True))
    ]
    return " ".join(texts)


def judged_values(tr: Labels, other: Plan, risk: str) -> dict[str, str]:
    """A side answer's GPUs, time and cost at the quantile the search compared the plans at, as its
    percentages are (trial s25: a p50 cost beside a p80 percentage showed the tie cheaper than the
    chosen plan's card), and that quantile's name."""
    e = other.estimate
    assert e.time_to_train_h is not None and e.cost_usd is not None
    hours, cost, judged = e.time_to_train_h, e.cost_usd, tr("point_estimate")
    u = e.uncertainty
    if u is not None and u.time_to_train_h_at_risk is not None and u.cost_usd_at_risk is not None:
        hours, cost, judged = u.time_to_train_h_at_risk[risk], u.cost_usd_at_risk[risk], risk
    return dict(gpus=f"{other.num_gpus} × {other.gpu}", time=duration(tr, hours), cost=money(cost), risk=judged)


def vary_batch_text(tr: Labels, result: PlanResult) -> str | None:
    """The exact batch costs the objective over 5 % against --vary-batch's choice (planner/api/notices.py)."""
    hint, other = result.vary_batch, result.vary_batch_plan
    if hint is None or other is None:
        return None
    key = "vary_batch_cost" if hint.objective == "cost" else "vary_batch_time"
    return tr(
        key,
        batch=hint.batch_tokens,
        change=hint.change,
        saving=hint.saving,
        risk=hint.risk.value,
        gpus=other.num_gpus,
        gpu=other.gpu,
    )


def median_text(tr: Labels, m: MedianOffset) -> str:
    """The band's median where it is off the headline (ui/render_lines.py ``median_offset``)."""
    figures = tr.join([duration(tr, m.hours), *([] if m.cost_usd is None else [money(m.cost_usd)])])
    key = "card_median_above" if m.fraction > 0 else "card_median_below"
    return tr(key, figures=figures, fraction=abs(m.fraction))


def larger_batch_text(tr: Labels, result: PlanResult) -> str | None:
    """One sequence per GPU would save over 5 %: the batch asked for leaves tp / pp / cp to split
    each sequence (planner/api/batch_offers.py ``LargerBatch``)."""
    offer, other = result.larger_batch, result.larger_batch_plan
    if offer is None or other is None:
        return None
    cost = offer.objective == "cost"

    def shown(value: float) -> str:  # USD, or hours of training
        return money(value) if cost else duration(tr, value)

    text = tr(
        "larger_batch_cost" if cost else "larger_batch_time",
        figure=shown(offer.figure),
        chosen=shown(offer.chosen_figure),
        sequences=offer.sequences,
        split=offer.split,
        num_gpus=result.plan.num_gpus,
        batch=offer.batch_tokens,
        saving=offer.saving,
        risk=offer.risk.value,
        gpus=other.num_gpus,
        gpu=other.gpu,
    )
    if offer.nearer is None:
        return text
    return text + " " + tr("larger_batch_nearer", batch=offer.nearer.batch_tokens, saving=offer.nearer.saving)


def idle_text(tr: Labels, result: PlanResult) -> str | None:
    """The chosen plan leaves part of its inventory idle (planner/idle.py): the plan that uses it."""
    idle, other = result.idle, result.idle_plan
    if idle is None or other is None:
        return None
    e = other.estimate
    assert e.time_to_train_h is not None and e.cost_usd is not None
    return tr(
        "idle_gpus",
        used=idle.used,
        inventory=idle.inventory,
        gpu=idle.gpu,
        idle=idle.idle,
        batch=idle.batch_tokens,
        other_batch=e.global_batch_tokens,
        change=e.global_batch_tokens / idle.batch_tokens - 1,
        gpus=other.num_gpus,
        layout=plain(other.layout_words),
        time=duration(tr, e.time_to_train_h),
        cost=money(e.cost_usd),
    )


def why_not_text(tr: Labels, answer: WhyNot, request: PlanRequest) -> str:
    """``WhyNot`` in the page's language: what rules a type out in the page's terms (its fields'
    on-screen names, not the CLI's flags; issue 30); a comparison in English is the planner's own."""
    if answer.mine is None or answer.winner is None:
        assert answer.infeasible is not None  # set whenever a plan is missing
        scope = request if answer.mine is not None else request.model_copy(update={"gpus": {answer.gpu: None}})
        key = "why_not_gpu_infeasible" if answer.mine is None else "why_not_none_feasible"
        return tr(key, gpu=answer.gpu, why=infeasible_text(tr, Infeasible.of(answer.infeasible), scope))
    if tr.lang == "en":
        return plain(answer.text())
    if answer.chosen:
        return tr("why_not_chosen", gpu=answer.gpu)
    return tr(
        "why_not_compare", gpu=answer.gpu, mine=plan_phrase(tr, answer.mine), winner=plan_phrase(tr, answer.winner)
    )


def plan_phrase(tr: Labels, p: Plan) -> str:
    e = p.estimate
    assert e.time_to_train_h is not None and e.cost_usd is not None  # planned with training tokens
    return tr(
        "plan_phrase",
        gpus=f"{p.num_gpus} × {p.gpu}",
        layout=plain(p.layout_words),
        cost=money(e.cost_usd),
        time=duration(tr, e.time_to_train_h),
        mfu=e.throughput.mfu,
    )


def note_text(tr: Labels, note: Note) -> str:
    """A plan note in the page's language, from its typed figures: term names as the charts name
    them ("gradients", not "grads"), durations by ``duration``/``interval`` (issue 30)."""
    figures = note.figures()
    if "term" in figures:
        prefix = "mem" if note.kind is NoteKind.MEMORY else "time"
        term = str(figures["term"])
        figures["term"] = tr.get(f"{prefix}_{term}", term.replace("_", " "))
    if note.kind is NoteKind.FAILURES:
        return tr("note_failures", **figures, **failure_durations(tr, figures))
    if note.kind is NoteKind.GOODPUT:
        loss, lost = tr(f"loss_{figures['loss']}"), duration(tr, float(figures["lost_h"] or 0.0))
        return tr("note_goodput", **(figures | {"loss": loss}), lost=lost)
    return tr(f"note_{note.kind.value}", **figures)


def failure_durations(tr: Labels, figures: dict) -> dict[str, str]:
    """The failures note's durations as the card writes them ('-' where the planner has none); a
    Young/Daly interval longer than the run says so (``GoodputEstimate.interval_cut_to_run``)."""
    mttf, young, every, restart = (figures.get(k) for k in ("mttf_h", "young_min", "interval_min", "restart_min"))
    said = "-" if young is None else interval(tr, float(young))
    if figures.get("cut") and every is not None:  # Young/Daly's interval is longer than the run
        said = tr("note_interval_cut", young=said, every=interval(tr, float(every)))
    return dict(
        mttf="-" if mttf is None else duration(tr, float(mttf)),
        interval=said,
        restart="-" if restart is None else interval(tr, float(restart)),
    )


def plan_note_texts(tr: Labels, p: Plan) -> list[str]:
    return [note_text(tr, note) for note in plan_notes(p)]


def commitment_text(tr: Labels, c: Commitment) -> str:
    """``Commitment.words`` in the page's language."""
    return tr(
        "price_commitment",
        kind=tr.kind(c.kind),
        years=c.term_years,
        days=duration(tr, c.job_days * HOURS_PER_DAY),
        share=c.used_share,
        gpus=f"{c.num_gpus:,}",
        gpu=c.gpu,
        cost=money(c.term_cost_usd),
    )


def dearer_text(tr: Labels, d: DearerKind) -> str:
    """``DearerKind.words`` in the page's language."""
    return tr(
        "price_dearer",
        kind=tr.kind(d.kind),
        gpu=d.gpu,
        price=d.usd_per_gpu_hour,
        offers=d.offers,
        providers=tr.join(d.providers),
        base=d.on_demand_usd_per_gpu_hour,
    )
