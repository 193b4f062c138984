"""The planner's answers as sentences in the app's language, built from their typed fields.

An infeasible answer, the line under it and the why-not answer that quotes one are worded in
ui/infeasible_words.py, from the durations written here."""

from __future__ import annotations

import math

from planner.accuracy.bands import MIN_ROWS
from planner.accuracy.regime import LONG_SEQUENCE_TOKENS, Feature, link_apart_parts, said_features, tuned_recipes
from planner.accuracy.residuals import source_name
from planner.api import PlanResult
from planner.catalog.prices import DearerKind
from planner.catalog.specs import vendor_of
from planner.catalog.terms import Commitment
from planner.explain import HFU_TERM_WORDS, Note, NoteKind, hfu_extra_words, plan_notes
from planner.fmt import duration_parts, energy, money_band_parts, number_band
from planner.layout import ActivationCheckpointing, TrainingConfig
from planner.plan import Estimate, Plan
from planner.plan_accuracy import RegimeWords, Uncertainty
from planner.units import HOURS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_MINUTE
from ui.app_core import CENTS_BELOW_USD, MAX_HEADROOM_PCT, duration_key, money
from ui.i18n import Labels, plain
from ui.render_lines import MedianOffset, band_passing_ceiling

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


def optimizer_text(tr: Labels, plan: Plan) -> str | None:
    """The optimizer formats the estimate assumed beyond its stack's profile (trial s40: the CLI said
    "bf16 gradients, master weights as remainders", the app nothing); None when none."""
    chosen = plan.optimizer_precision
    parts = [tr(key) for key, on in chosen.model_dump().items() if on]  # each field's box label (ui/i18n.py)
    return tr("card_optimizer", formats=tr.join(parts)) if parts else None


# The dash between a band's ends on the page, as "card_band" writes it (app53 L3: the memory and step
# lines wrote "104.3-124.6 GiB" beside the metrics' "15.3 days–24.6 days").
BAND_DASH = "–"


def band_text(tr: Labels, band: tuple[float, float] | None, unit) -> str | None:
    """'80 % band 19.1 days–35.5 days' for a pair, each end formatted by ``unit`` (None: no band, or
    ends that read alike: a reserved term's cost does not move with the job's time, trial s44 app L1
    "$142,160–$142,160"; the CLI drops such a band too)."""
    if band is None or (lo := unit(band[0])) == (hi := unit(band[1])):
        return None
    return tr("card_band", lo=lo, hi=hi)


def seconds(tr: Labels, value: float) -> str:
    """'3.177 s' / '3.177 秒': a step time as the card's footer and the CLI write it (trial s33: the
    中文 explorer said '3.18 s' beside the card's '3.177 秒')."""
    return tr("seconds_value", value=value)


def per_second(tokens: float) -> str:
    """'660,171': tokens per second, whole from 100 on, else three significant figures ('0.00340')."""
    return number_band(tokens, None)


def cost_parts(e: Estimate) -> tuple[str, tuple[str, str] | None]:
    """The cost and its band's ends in one unit, as the CLI writes them (``money_band_parts``; trial
    s35: "$297,343–$1.01M"; app53 L1: the card's "$809,754" stood over "$0.64M–$1.22M")."""
    u = e.uncertainty
    return money_band_parts(e.cost_usd or 0.0, None if u is None else u.cost_usd, cents_below=CENTS_BELOW_USD)


def figure_bands(tr: Labels, e: Estimate) -> dict[str, str | None]:
    """The 80 % band in words of each figure with one (planner/accuracy ``Uncertainty``), by its
    field: what the card and the layout explorer show under the figure (None: no band)."""
    u = e.uncertainty
    ends = cost_parts(e)[1]
    units = {
        "time_to_train_h": lambda h: duration(tr, h),
        "energy_kwh": energy,
        "tokens_per_s": per_second,
        "step_s": lambda s: seconds(tr, s),
        "mfu": lambda m: f"{m:.1%}",
    }
    bands = {field: band_text(tr, None if u is None else getattr(u, field), unit) for field, unit in units.items()}
    memory = None if e.memory_band is None else e.memory_band.reserved_gib  # the reserved peak's (app53 M2)
    return bands | {
        "cost_usd": None if ends is None or ends[0] == ends[1] else tr("card_band", lo=ends[0], hi=ends[1]),
        "reserved_gib": band_text(tr, memory, lambda gib: f"{gib:,.1f} GiB"),
    }


def regime_text(tr: Labels, u: Uncertainty) -> str:
    """The regime in the page's language: '{stack} on {generation}, tp > 1, ...'."""
    words = RegimeWords(
        stack=u.regime_stack, generation=u.regime_generation, features=u.regime_features, kernel=u.regime_kernel
    )
    return regime_words_text(tr, words)


def regime_words_text(tr: Labels, regime: RegimeWords) -> str:
    """The regime's words, a feature another implies left unsaid (``said_features``)."""
    words = [tr("regime_words", stack=regime.stack, generation=generation_text(tr, regime.generation))]
    bits = sum(int(Feature[name.upper()]) for name in regime.features)
    return tr.join(words + [_feature_text(tr, f, regime.kernel) for f in said_features(bits)])


def _feature_text(tr: Labels, f: Feature, kernel: str) -> str:
    """A feature's words; the kernel's names it (trial s44 H1)."""
    if f is Feature.KERNEL and kernel:
        return tr("feature_kernel_named", kernel=kernel)
    return tr(f"feature_{str(f.name).lower()}")


def generation_text(tr: Labels, generation: str) -> str:
    """An architecture, or a part judged apart for its link in the page's words (planner/accuracy/
    links.py: "Hopper (h800's link)")."""
    parts = link_apart_parts(generation)
    return generation if parts is None else tr("generation_link", generation=parts[0], gpu=parts[1])


def envelope_text(tr: Labels, u: Uncertainty) -> str:
    """Whether the plan lies inside what was measured, what its band rests on, the measured
    regimes whose band ends it shows (review s27: the card left them out), how far its sequence
    lies past the longest measured (trial s37) and the user's measured job behind its corrections."""
    text = _envelope_sentence(tr, u)
    if u.sequence_doublings and u.sequence_tokens:
        sequence = tr(
            "envelope_sequence" if u.longest_measured_tokens else "envelope_sequence_none",
            seq=u.sequence_tokens,
            longest=u.longest_measured_tokens or LONG_SEQUENCE_TOKENS,
            doublings=u.sequence_doublings,
            widened=u.widened_by,
        )
        text = tr.sentences(text, sequence)
    if (job := u.measured_job) is not None:  # trial s38: the user's own measurement went unsaid
        key = "envelope_measured_job" if job.exact else "envelope_measured_job_other"
        values = dict(name=job.name, shape=job.shape, date=job.date)
        said = tr(key, **values, compute=job.compute_time_factor, memory=job.memory_factor)
        # calib50 M7: the job's own shape leads with its measurement, not with "outside the envelope"
        text = tr.sentences(said, text) if job.exact else tr.sentences(text, said)
    return text


def memory_band_text(tr: Labels, u: Uncertainty) -> str | None:
    """The reserved peak's band, where it is read from, and whether its far end crosses what the
    fit rule allows (trial s38: plans at 94-99 % of a GPU had no memory band); None without one."""
    band = u.memory
    if band is None:
        return None
    modules = tr("memory_kind_hf") if band.hf_modules else ""
    scale = tr("memory_kind_multi" if band.multi_gpu else "memory_kind_one")
    kind = tr("memory_kind", stack=band.stack or band.kind, modules=modules, scale=scale)
    low, high = band.reserved_gib
    values = dict(low=low, high=high, rows=band.rows, kind=kind, error=band.mean_abs_error)
    key = "memory_band_own" if band.from_own_kind else "memory_band_few" if band.own_ratio else "memory_band_all"
    own_low, own_high = (r - 1.0 for r in band.own_ratio) if band.own_ratio else (0.0, 0.0)
    text = tr(
        key,
        **values,
        stacks=tr.join(band.stacks),  # 中文 with 、 (app trial s45 L7)
        configurations=band.own_configurations,
        own_low=own_low,
        own_high=own_high,
    )
    if band.unmeasured_features:  # review55 M3: no peak of a pure-bf16 run was measured
        features = tr.join([_feature_text(tr, Feature[name.upper()], "") for name in band.unmeasured_features])
        text = tr.sentences(text, tr("memory_band_unmeasured", features=features, widened=band.widened_by))
    fit = "memory_may_not_fit" if band.may_not_fit else "memory_may_fit" if band.may_fit else None
    room = band.usable_gib if band.room_gib is None else band.room_gib
    return text if fit is None else tr.sentences(text, tr(fit, usable=band.usable_gib, room=room))


def memory_risk_text(tr: Labels, e: Estimate) -> str | None:
    """A warning where the reserved peak's band passes the GPU's own room (capacity less the CUDA
    context: ``MemoryBand.may_not_fit``), with the memory headroom at which the search plans so
    that it does not: a point figure under the room over the band's ratio (trial s39: said only in
    a grey caption; review s39: held against the rule's limit, each replan moved it); None where the
    band stays within the room."""
    band = e.memory_band
    if band is None or not e.may_not_fit or band.room_gib is None:
        return None
    high = band.reserved_gib[1]
    ratio = high / e.memory.reserved_gib
    context = e.memory.capacity_gib - band.room_gib
    headroom = math.ceil(100 * (1 - (band.room_gib / ratio + context) / e.memory.capacity_gib))
    if headroom > MAX_HEADROOM_PCT:
        return tr("memory_risk_past_headroom", high=high, room=band.room_gib, most=MAX_HEADROOM_PCT)
    return tr("memory_risk", high=high, room=band.room_gib, headroom=headroom, slider=tr("headroom"))


def _envelope_sentence(tr: Labels, u: Uncertainty) -> str:
    """``envelope_text`` but the sequence's sentence."""
    if u.validated and u.circular:  # review s32: the ceiling's own rows, not the band's sources and error
        sources = tr.join(map(source_name, u.exact_sources))
        return tr("envelope_circular", regime=regime_text(tr, u), rows=u.exact_rows, sources=sources)
    if u.validated:  # the regime's own rows and sources, then the band's (as the CLI's envelope line)
        few = {1: "envelope_validated_one"}.get(u.exact_rows, "envelope_validated_few")
        text = tr(
            "envelope_validated" if u.exact_rows >= MIN_ROWS else few,
            nearby=u.rows - u.exact_rows,
            regime=regime_text(tr, u),
            rows=u.exact_rows,
            sources=tr.join(map(source_name, u.exact_sources)),
            band_rows=u.rows,
            band_sources=tr.join(map(source_name, u.sources)),
            error=u.mean_abs_error,
        )
        return tr.sentences(text, tr("envelope_tuned_recipes")) if tuned_recipes(u.regime_stack) else text
    text = tr("envelope_outside", regime=regime_text(tr, u), rows=u.rows, error=u.mean_abs_error, widened=u.widened_by)
    if u.nearest is not None:
        text = tr.sentences(text, tr("envelope_nearest", regime=regime_words_text(tr, u.nearest)))
        if vendor_of(u.regime_generation) != vendor_of(u.nearest.generation):  # app trial s45 M1: unsaid on the card
            vendor = vendor_of(u.regime_generation).upper()  # 'AMD', not its architecture 'CDNA3'
            text = tr.sentences(text, tr("envelope_other_vendor", vendor=vendor))
    if u.reaches:
        reaches = tr("envelope_reaches", regimes=tr.clauses(regime_words_text(tr, r) for r in u.reaches))
        text = tr.sentences(text, reaches)
    if (own := u.architecture_rows) is not None:  # trial s48 M3 (planner/accuracy/unbanded.py)
        key = "envelope_architecture_row" if own.rows == 1 else "envelope_architecture_rows"
        sources = tr.join(map(source_name, own.sources))
        text = tr.sentences(
            text,
            tr(key, rows=own.rows, generation=own.generation, sources=sources, low=own.errors[0], high=own.errors[-1],
               mean=own.mean_error),
        )  # fmt: skip
    return text


def ceiling_text(tr: Labels, e: Estimate) -> str | None:
    """Why the estimate is slower than the model alone, or that its MFU band's fast end passes the
    best measured (trial s39: a 71 % end on H100 read as a possible outcome); None: neither."""
    c = e.ceiling
    if c is None:
        return None
    on = (
        ""
        if c.gpu is None
        else tr("ceiling_on_gpu", gpu=c.gpu)
        if c.num_gpus is None
        else tr("ceiling_on_gpus", n=c.num_gpus, gpu=c.gpu)
    )
    source = f"{c.measured_by}: {c.row}{on}" + (tr("ceiling_split") if c.split else "")
    scope = tr("ceiling_scope_nodes" if c.multi_node else "ceiling_scope")
    if c.binding:
        return tr("ceiling_held", mfu=c.mfu, source=source, tokens=c.uncapped_tokens_per_s, scope=scope)
    if (held := c.held_tokens_per_s(e.throughput.mfu, e.throughput.tokens_per_s)) is not None:
        return tr("ceiling_lifted", mfu=e.throughput.mfu, ceiling=c.mfu, source=source, tokens=held, scope=scope)
    if (high := band_passing_ceiling(e)) is not None:
        return tr("ceiling_passed", high=high, mfu=c.mfu, source=source, scope=scope)
    return None


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
    if p.estimate.may_not_fit:  # review s42: memory, not time, set it aside
        text = tr.sentences(text, tr("risk_changed_memory"))
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


def median_text(tr: Labels, m: MedianOffset) -> str:
    """The band's median where it is off the headline (ui/render_lines.py ``median_offset``)."""
    figures = tr.join([duration(tr, m.hours), *([] if m.cost_usd is None else [money(m.cost_usd)])])
    key = "card_median_above" if m.fraction > 0 else "card_median_below"
    if m.median_abs is None:
        why = tr("card_headline_all")
    else:
        why_key = "card_headline_median_less" if m.median_erred_less else "card_headline_model_less"
        why = tr(why_key, rows=m.rows, model=m.model_abs, median=m.median_abs)
    return tr.sentences(tr(key, figures=figures, fraction=abs(m.fraction)), why)


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
    if note.kind is NoteKind.MFU:
        words = {key: tr(f"hfu_{key}") for key in HFU_TERM_WORDS}
        return tr("note_mfu", **figures, extra=hfu_extra_words(figures, words, tr("hfu_unknown")))
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
    """``Commitment.words`` in the page's language: what the cost counts of the terms, whole or with
    the sidebar's share filled by other work (trial s44 app H1: it said "the whole term" at 50 %)."""
    if c.filled:
        rest = tr("commitment_rest_filled", unfilled=1 - c.filled, filled=c.filled)
    else:
        rest = tr("commitment_rest_whole" if c.terms == 1 else "commitment_rest_whole_terms")
    return tr(
        "price_commitment" if c.terms == 1 else "price_commitment_terms",
        kind=tr.kind(c.kind),
        years=c.term_years,
        days=duration(tr, c.job_days * HOURS_PER_DAY),
        share=c.used_share,
        gpus=f"{c.num_gpus:,}",
        gpu=c.gpu,
        cost=money(c.term_cost_usd),
        terms=c.terms,
        per_term=money(c.term_cost_usd / c.terms),
        rest=rest,
    )


def dearer_text(tr: Labels, d: DearerKind, fix: str = "price_fix_table") -> str:
    """``DearerKind.words`` in the page's language; ``fix``: the label of what to do (``price_fix_*``)."""
    return tr(
        "price_dearer_one" if d.offers == 1 else "price_dearer",
        kind=tr.kind(d.kind),
        gpu=d.gpu,
        price=d.usd_per_gpu_hour,
        offers=d.offers,
        providers=tr.join(map(tr.provider, d.providers)),
        base=d.on_demand_usd_per_gpu_hour,
        fix=tr(fix, button=tr("update_job")),
    )


def ac_text(tr: Labels, t: TrainingConfig, pp: int) -> str:
    """The recompute as ``TrainingConfig.describe_ac`` says it, in the page's language: the mode, or
    for ``blocks`` the blocks checkpointed (trial s44 app M1: the card showed the option's "first N";
    app trial s45 M4: the portfolio and the bars' hovers did too)."""
    if t.activation_checkpointing != ActivationCheckpointing.BLOCKS:
        return tr.option(t.activation_checkpointing.value)
    return tr("card_ac_blocks_per_rank" if pp > 1 else "card_ac_blocks", blocks=t.ac_blocks)
