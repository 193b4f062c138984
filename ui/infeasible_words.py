"""The app's words for an infeasible answer: the binding constraint, its figures, the limit that bounds
the GPU count and a fix, and the line under it; and the why-not answer that quotes one.

An infeasible request is rendered from ``InfeasiblePlan``'s constraint and its required/available
figures (planner/errors.py), and the limit that bounds the GPU count is named by its on-screen
label ("Most GPUs to consider = 4096") when a cap, not an inventory, binds. The planner's own
English detail (``Infeasible.detail``/``fix``) is the line under it on the English page; other
languages get its exact figures instead (``detail_text``).
"""

from __future__ import annotations

import re

from planner.api import PlanRequest
from planner.api.explore import WhyNot
from planner.errors import CountPastInventory
from planner.fmt import budget_amounts, count_short
from planner.limits import MAX_BUDGET_USD, MAX_DAYS
from planner.plan import Plan
from planner.search.diagnosis import NEAR_CHEAPEST_WORDS, deadline_takes
from planner.search.ties import NEAR_TIE_FRACTION
from planner.stack_rules import sequence_split_stacks
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR
from ui.app_core import Infeasible, money, token_count
from ui.i18n import Labels, plain
from ui.messages import duration, duration_up


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
    elif c == "deadline" and (more := infeasible.more_gpus) is not None:  # trial s48 M7: which count
        key = "why_deadline_more_gpus"
        values.update(
            gpus=more.num_gpus, gpu=more.gpu, time=duration(tr, _hours(more.seconds)), risk=request.risk.value
        )
        values.update(more_gpus_clauses(tr, more, request))
    if c == "budget" and (named := infeasible.named) is not None:  # trial s28d: which plan, and how long
        # the deadline the answer judged by: a portfolio job's own, not the sidebar's (review s35)
        deadline = infeasible.deadline_seconds
        key = "why_budget_named" if deadline is None else "why_budget_named_deadline"
        values.update(gpus=named.num_gpus, gpu=named.gpu, time=duration(tr, _hours(named.seconds)))
        if deadline is not None:
            values.update(deadline=duration(tr, _hours(deadline)))
    if c == "shared_inventory" and have is None:  # the GPU-time fits; the jobs do not pack
        key = "why_shared_pack"
    # no deadline or budget the inputs take fits (buyer trial s48 L1: "allow 1,368,891 days")
    if (c == "deadline" and not deadline_takes(need or 0.0)) or (c == "budget" and (need or 0.0) > MAX_BUDGET_USD):
        key = f"why_{c}_past_limit"
        limit_words = duration(tr, MAX_DAYS * SECONDS_PER_DAY / SECONDS_PER_HOUR) if c == "deadline" else None
        values.update(max=limit_words or money(MAX_BUDGET_USD))
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
    # a portfolio job's budget bounds the cost the page shows (portfolio_rows.py reported_costs; trial
    # s35, round 2: "$509.0k", its rent, beside the page's $232,136 on owned GPUs read as wrong; s51 H2)
    rent = tr("why_budget_rent") if c == "budget" and infeasible.job is not None else ""
    # buyer trial s50 M7: what a fixed budget does train (planner/api/budget_fix.py, the CLI's fix)
    trains = infeasible.tokens_within_budget if c == "budget" else None
    within = "" if trains is None else tr("why_budget_tokens", tokens=count_short(trains))
    return tr.sentences(tr(key, **values), rent, later, within, batch, larger_batch_text(tr, infeasible), no_cp)


def larger_batch_text(tr: Labels, infeasible: Infeasible) -> str:
    """A deadline no count meets at the asked batch: the larger batch, in the sidebar's format, and the
    GPUs past the count cap that meet it there (``InfeasiblePlan.larger_batch``); '' where none.
    app53 M1: only the English grey line, in the CLI's words, said it; the 中文 page dropped it."""
    more = infeasible.larger_batch
    if more is None or more.batch_tokens is None:
        return ""
    return tr(
        "why_deadline_larger_batch",
        factor=1.0 + (more.batch_change or 0.0),
        batch_label=tr("global_batch"),
        batch=token_count(more.batch_tokens),
        cap_label=tr("max_gpus"),
        gpus=more.num_gpus,
        gpu=more.gpu,
        time=duration(tr, _hours(more.seconds)),
        risk=more.risk,
    )


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


def more_gpus_clauses(tr: Labels, more: CountPastInventory, request: PlanRequest) -> dict[str, str]:
    """The count past the inventory's batch where it is not the one asked for, and its cost where it
    breaks the budget (``CountPastInventory``; the CLI's count_probe.deadline_fix words); '' each otherwise."""
    batch = (
        "" if more.batch_tokens is None else tr("more_gpus_batch", batch=more.batch_tokens, change=more.batch_change)
    )
    over = ""
    if more.cost_usd is not None and more.budget_usd is not None:
        cost, budget = money(more.cost_usd), money(more.budget_usd)
        over = tr("more_gpus_over_budget", cost=cost, budget=budget, risk=request.risk.value)
    return {"batch": batch, "over": over}


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
    # ... and trial s44 (app): "probed past the max_gpus cap"
    text = re.sub(r"(?<![-\w])max_gpus\b", f'"{tr("max_gpus")}"', text)
    # app trial s45 L1: the megatron-lm warning's "--stack megatron-core"
    text = re.sub(r"--stack ([a-z0-9-]+)\b", lambda m: f'"{tr("stack")}" = {m[1]}', text)
    return re.sub(r"--risk (p\d\d)\b", lambda m: f'"{tr("risk")}" = {m[1]}', text)


def detail_text(tr: Labels, infeasible: Infeasible) -> str:
    """The line under an infeasible answer: the planner's own words in English (the sidebar's field
    names for its flags), its exact figures otherwise, and for a portfolio's job in English too: its
    words are the jobs file's (trial s34: deadline_days, global_batch_tokens and 25 "<=4096" limits),
    each job's where several cannot run (trial s35, round 2: "set deadline_days to 423.317 or more")."""
    if infeasible.jobs:
        return tr.sentences(*(tr("job_answer", job=name, text=detail_text(tr, job)) for name, job in infeasible.jobs))
    if tr.lang == "en" and infeasible.job is None:
        return plain(app_words(tr, f"{infeasible.detail}; {infeasible.fix}"))
    c, need, have = infeasible.constraint, infeasible.required or 0.0, infeasible.available or 0.0
    if c == "deadline":
        return tr("detail_deadline", need=_hours(need), have=_hours(have))
    if c == "budget" and NEAR_CHEAPEST_WORDS in infeasible.detail:  # the plan named is not the cheapest (s45 L2)
        key = "detail_budget_near" if infeasible.deadline_seconds is None else "detail_budget_deadline_near"
        return tr(key, need=need, have=have, fraction=NEAR_TIE_FRACTION)
    if c == "budget" and infeasible.deadline_seconds is not None:  # its cheapest meets the deadline
        return tr("detail_budget_deadline", need=need, have=have)
    if c in ("budget", "memory", "inventory"):
        return tr(f"detail_{c}", need=need, have=have)
    if c == "shared_inventory":
        return tr("detail_shared_inventory", need=need / SECONDS_PER_DAY, have=have / SECONDS_PER_DAY)
    found = CANDIDATES.search(infeasible.detail)  # divisibility, batch: counts only in the sentence
    return tr("detail_candidates", **found.groupdict()) if found else ""


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
