"""``trainplan plan``'s output: the chosen plan, what the search weighed beside it (near tie,
knee, the risk's effect, idle GPUs) and the alternatives it ranked, as text or JSON."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.table import Table

from planner.api.judged import judged_cost_usd, judged_hours
from planner.api.notices import tie_rule
from planner.catalog.prices import PriceBasis
from planner.fmt import duration_band, duration_h, money
from planner.plan import Estimate
from planner.search.diagnosis import Unplanned
from planner.search.ilp import Objective
from planner.units import SECONDS_PER_HOUR
from ui.render import (
    add_columns,
    emit_json,
    infeasible,
    listed_json,
    no_infeasibility,
    out,
    plan_facts_json,
    price_cell,
    print_plan,
    warn,
    whole_words,
    written_line,
)
from ui.render_calibration import covers, plan_calibration_json, plan_calibration_line


def risk_line(result) -> str:
    """What judging at the median would have chosen, when the risk setting changed the choice."""
    p, risk = result.median_plan, result.risk.value
    u = p.estimate.uncertainty
    other_batch = "" if result.median_batch is None else f" at {result.median_batch:,} tokens/step"
    which = f"{p.num_gpus} x {p.gpu} ({p.layout_words}){other_batch}"
    if (over := result.median_over_budget) is not None:  # review s30: one plan, named once
        which = ("the plan a little over the budget", "the plan further over the budget")[over] + " above"
    return escape(
        f"risk {risk} changed the choice: judged at the median (p50) the search would take "
        f"{which}, {risk_figures(p.estimate, 'p50')} at p50 and "
        f"{risk_figures(p.estimate, risk)} at {risk} (this plan at p50, its band's median: "  # not its headline (trial s44 L4)
        f"{risk_figures(result.plan.estimate, 'p50')}, and {risk_figures(result.plan.estimate, risk)} at {risk})"
        + ("" if u is None else f"; that plan is {u.envelope_verdict}")
        + (MEDIAN_MAY_NOT_FIT if p.estimate.may_not_fit else "")
    )


# where memory, not time, set the median's plan aside (review s42)
MEDIAN_MAY_NOT_FIT = "; its reserved peak's band passes the GPU's memory: it may not fit, which p50 does not judge"


def plan_result(result, *, as_json: bool, saved_to: Path | None, calibration=None, request=None) -> None:
    """The answer of ``plan``: its warnings on stderr, then JSON or the text below (``request``: the
    limits the plan was judged against, said beside it)."""
    for message in result.warnings:
        warn(message)
    if as_json:
        emit_json(plan_json(result, calibration))
        return
    plan_calibration_line(calibration, result.plan)
    print_plan(result.plan)
    if request is not None and (line := limits_line(result, request)):
        out.print(line)
    for line in beside_lines(result):
        out.print(line)
    if result.alternatives:
        out.print(alternatives_table(result))
        if tie := tie_rule_line(result):
            out.print(tie)
    if result.per_gpu is not None:
        out.print(per_gpu_table(result))
        if none := unplanned_gpus_line(result):
            out.print(none)
    out.print(
        f"{result.num_candidates:,} candidates, {result.solution.num_feasible:,} feasible, "
        f"solved with {result.solution.solver} in {result.seconds:.2f} s"
    )
    if result.count_caps:
        out.print(count_caps_line(result.count_caps, result.count_limits))
    if saved_to:
        out.print(written_line(result.plan, saved_to), markup=False)


# plan --json's keys beside "feasible" and the infeasible ones: null when no plan is found
# (tests/ui/test_cli.py checks them against plan_json's).
PLAN_KEYS = (
    "plan", "alternatives", "solver", "num_candidates", "num_feasible", "seconds", "warnings",
    "gpu_count_limits", "gpu_count_caps", "near_tie", "knee", "over_budget", "larger_batch", "risk", "median_plan", "idle_gpus",
    "per_gpu", "per_gpu_none", "per_gpu_binding", "per_gpu_fastest_h", "stack", "layout_words", "emittable", "price_per_gpu_hour_usd", "price_basis", "price_kind", "price_offers", "billed_gpus",
    "network", "partition_activations", "moe_a2a_overlap", "tp_comm_overlap", "optimizer_precision", "run_losses",
    "calibration",
)  # fmt: skip


def no_plan(exc, request, *, as_json: bool, calibration, said: tuple[str, ...] = ()) -> None:
    """``plan``'s infeasible answer, with what the request's price kind warns of (trial s43: the
    warnings that explain an answer over budget under reserved-1y were dropped); ``said``: the
    command's own warnings first (a stack switched to its fork: review s48)."""
    from planner.api import unplanned_price_warnings
    from planner.catalog.hardware import load_catalog

    warnings = (*said, *unplanned_price_warnings(request, load_catalog()))
    for warning in () if as_json else warnings:
        warn(warning)
    known = {"risk": request.risk.value, "stack": request.stack.value, "warnings": list(warnings)}
    known["run_losses"] = request.run_losses.model_dump(mode="json")  # the answer rests on them too
    infeasible(exc, as_json=as_json, calibration=calibration, answer_keys=PLAN_KEYS, known=known)


def plan_json(result, calibration) -> dict:
    """``plan --json``: the chosen plan, its alternatives and what the search weighed beside them;
    the keys of an infeasible answer are null."""
    return {
        "feasible": True,
        **no_infeasibility(),
        "plan": listed_json(result.plan),  # trial s28c: every plan row has its price
        "alternatives": [listed_json(a) for a in result.alternatives],
        "solver": result.solution.solver,
        "num_candidates": result.num_candidates,
        "num_feasible": result.solution.num_feasible,
        "seconds": round(result.seconds, 3),
        "warnings": list(result.warnings),
        "gpu_count_limits": result.count_limits,
        "gpu_count_caps": result.count_caps,
        "near_tie": None if result.near_tie is None else near_tie_json(result),
        "knee": None if result.knee is None else knee_json(result),
        "over_budget": over_budget_json(result) if result.over_budget else None,
        "larger_batch": None if result.larger_batch is None else larger_batch_json(result),
        "risk": result.risk.value,
        "median_plan": None if result.median_plan is None else listed_json(result.median_plan),
        "idle_gpus": None if result.idle is None else idle_json(result),
        "per_gpu": None if result.per_gpu is None else [listed_json(p) for p in result.per_gpu],
        "per_gpu_none": None if result.per_gpu is None else unplanned_gpus(result),
        "per_gpu_binding": None if result.per_gpu is None else unplanned_binding(result),
        "per_gpu_fastest_h": None if result.per_gpu is None else unplanned_fastest_h(result),
        **plan_facts_json(result.plan),
        "calibration": plan_calibration_json(calibration, result.plan),
    }


def limits_line(result, request) -> str | None:
    """'limits judged at p80 (never under the model's own figure): budget $2.30M (this plan $2.30M;
    its own figure $1.84M), deadline 10.0 days (9.5 days; 8.1 days)' where the request has either
    (trial s30: the budget was compared with the p80 cost, which only an infeasible answer said).
    "this plan" is the figure the limit judged (judged_cost_usd / judged_hours: limit_figure, the
    search's rule); where the quantile's is under the own figure, it says so (buyer trial s48 M1: at
    p50 the line printed the median, $161,607, as judged, where the budget judged $165,569)."""
    e, risk = result.plan.estimate, result.risk
    parts = []
    if request.budget_usd is not None:
        judged = judged_figure(judged_cost_usd(result.plan, risk), e.cost_usd_at(risk.value), e.cost_usd, risk, money)
        parts.append(f"budget {money(request.budget_usd)} ({judged})")
    if request.deadline_days is not None:
        judged = judged_figure(
            judged_hours(result.plan, risk), e.time_h_at(risk.value), e.time_to_train_h, risk, duration_h
        )
        parts.append(f"deadline {request.deadline_days:,.1f} days ({judged})")
    return f"limits judged at {risk.value} (never under the model's own figure): " + ", ".join(parts) if parts else None


def judged_figure(judged, at_risk, own, risk, words) -> str:
    """'this plan $2.30M; its own figure $1.84M', or where the own figure is the one judged (the
    quantile's is under it) 'this plan $165,569, its own figure; p50 $161,607'."""
    if at_risk is not None and own is not None and at_risk < own:
        return f"this plan {words(judged)}, its own figure; {risk.value} {words(at_risk)}"
    return f"this plan {words(judged)}; its own figure {words(own)}"


def beside_lines(result) -> list[str]:
    """What the search weighed beside the chosen plan: the near tie (and whether it is the knee),
    the knee, the risk's effect on the choice, the idle GPUs."""
    same = result.knee is not None and result.near_tie is not None and result.knee.row == result.near_tie.row
    lines = []
    if result.near_tie is not None:
        lines.append(near_tie_line(result) + ("; it is also the knee of the cost/time front" if same else ""))
    if result.knee is not None and not same:
        lines.append(knee_line(result))
    lines += over_budget_lines(result)
    if result.median_plan is not None:
        lines.append(risk_line(result))
    if result.idle is not None:
        lines.append(idle_line(result))
    return lines


def alternatives_table(result) -> Table:
    """--top N lists N alternatives (as --json's "alternatives"); the chosen plan heads the table,
    marked, so each alternative reads against it; the risk column holds what the search ranked by."""
    count = len(result.alternatives)
    title = f"the chosen plan and {count} alternative{'s' if count > 1 else ''} (--top)"
    return plans_table(title, result.plan, result.alternatives, result.risk.value)


def per_gpu_table(result) -> Table:
    """--per-gpu: the chosen plan, then the best plan of each other GPU type searched, best first."""
    title = "the best plan of each GPU type (--per-gpu)"
    return plans_table(title, result.plan, result.per_gpu or (), result.risk.value)


def unplanned_gpus(result) -> list[str]:
    """The searched GPU types with no plan that meets the request (--per-gpu)."""
    planned = {result.plan.gpu, *(p.gpu for p in result.per_gpu or ())}
    return [g for g in result.searched_gpus if g not in planned]


def unplanned_binding(result) -> dict[str, str]:
    """Each unplanned GPU type's binding constraint (``binding_per_type``; per_gpu_binding in --json)."""
    binding = {u.gpu: u.constraint for u in result.solution.unplanned_gpus}
    return {g: binding[g].value for g in unplanned_gpus(result) if g in binding}


def unplanned_fastest_h(result) -> dict[str, float]:
    """The fastest time, in hours, of each type the deadline rules out (``Unplanned.fastest_s``)."""
    return {u.gpu: u.fastest_s / SECONDS_PER_HOUR for u in result.solution.unplanned_gpus if u.fastest_s is not None}


def _unplanned_words(gpu: str, unplanned: dict[str, Unplanned], risk: str) -> str:
    """'h200-sxm (deadline: fastest 421.6 days at p80)', 'b200 (memory)', or the bare id."""
    u = unplanned.get(gpu)
    if u is None:
        return gpu
    fastest = "" if u.fastest_s is None else f": fastest {duration_h(u.fastest_s / SECONDS_PER_HOUR)} at {risk}"
    return f"{gpu} ({u.constraint.value}{fastest})"


def unplanned_gpus_line(result) -> str | None:
    """``unplanned_gpus`` in words, each with what rules it out (trial s27: the line listed every
    constraint there is, "deadline, budget, inventory, memory or batch")."""
    missing, binding = unplanned_gpus(result), unplanned_binding(result)
    if not missing:
        return None
    unplanned = {u.gpu: u for u in result.solution.unplanned_gpus}
    named = ", ".join(_unplanned_words(g, unplanned, result.risk.value) for g in missing)
    line = f"no plan on {named} meets the request; in brackets the constraint that rules the type out"
    if "batch" in binding.values():
        # trial s29b: 16e6 ruled GB200 out (its nearest batch, 2^24, is +4.9 %) beside a warning that
        # GB200 at 2^24 costs 13 % less
        line += (
            "; (batch): its nearest batch is further from the one asked for than another type's"
            " (--vary-batch lets each type run its own)"
        )
    return line


def estimated_price_note(plans) -> str | None:
    """'* $/GPU-h: one provider's listed rate, not a median of offers (trainplan catalog --json)': the
    starred prices' bases, only those the table shows (trial s48 M4: a spot table read "an estimate,
    ... or one provider's rate" beside one provider's rate only); None where no price is starred."""
    bases = dict.fromkeys(b for p in plans if (b := PriceBasis(p.price_basis)).estimated)
    return None if not bases else f"* $/GPU-h: {', or '.join(b.words for b in bases)} (trainplan catalog --json)"


def plans_table(title: str, chosen, others, risk: str) -> Table:
    """The chosen plan (marked) and ``others``, one row each, with the columns the search weighs;
    a price the catalog estimates is starred, the note under the table."""
    plans = (chosen, *others)
    tight = any(p.estimate.may_not_fit for p in plans)
    held = any(p.estimate.model_mfu is not None for p in plans)
    priced = [n for n in (estimated_price_note(plans),) if n]
    timed = [covers(p.calibration, p.gpu) for p in plans]
    notes = priced + [MAY_NOT_FIT_NOTE] * tight + [CEILING_NOTE] * held + [CALIBRATED_NOTE] * any(timed)
    table = Table(title=title, title_justify="left", caption="\n".join(notes) or None)
    columns = (
        "#", "GPU", "n", "layout", "mb x acc", "AC", "time (80 % band)", f"{risk} time, cost", "cost", "$/GPU-h", "MFU",
    )  # fmt: skip
    # trial s38 finding 12: "mem GiB" was the reserved peak, unsaid
    add_columns(table, (*columns, "reserved / capacity GiB"))
    for rank, a in enumerate((chosen, *others)):
        e = a.estimate
        table.add_row(
            str(rank) if rank else "chosen",
            a.gpu + CALIBRATED_MARK * timed[rank],
            str(a.num_gpus),
            a.layout_words,
            f"{a.training.micro_batch} x {a.training.grad_accum}",
            a.training.describe_ac(a.layout.pp),
            duration_band(e.time_to_train_h, e.uncertainty and e.uncertainty.time_to_train_h),
            risk_figures(e, risk),
            money(e.cost_usd),
            price_cell(a.price_per_gpu_hour_usd, a.price_basis),
            mfu_cell(e),
            f"{e.memory.reserved_gib:.0f}/{e.memory.capacity_gib:.0f}" + (" !" if e.may_not_fit else ""),
        )
    return whole_words(table)  # s47: --per-gpu folded "a100-80gb-sx" over "m"


# calib50 M8: a --per-gpu table mixed GPUs timed at a calibration file's rates with the catalog's,
# and only the chosen type's line said which
CALIBRATED_MARK = " (cal)"
CALIBRATED_NOTE = "(cal): timed with the calibration file's entry for that GPU; the other rows at the catalog's rates"

CEILING_NOTE = (
    "MFU in brackets: the model's own, where the efficiency ceiling (the best measured in the regime) holds"
    " the plan; plans held at one ceiling still differ there"
)


def mfu_cell(e: Estimate) -> str:
    """'43.9%', or '43.9% (47.3)' where the ceiling holds the plan: the model's own MFU beside it
    (trial s41: six plans held at one ceiling showed identical figures, and the trade-offs between
    them, recompute and pp, were nowhere)."""
    held, own = f"{e.throughput.mfu:.1%}", e.model_mfu
    return held if own is None else f"{held} ({own:.1%})".replace("%)", ")")


MAY_NOT_FIT_NOTE = "! the reserved peak's 80 % band passes the GPU's memory beside the CUDA context: it may not fit"


def at_risk_words(e: Estimate, risk: str) -> str:
    """'p80: 27.7 h, $4,004': time and cost at a risk quantile (the point figures without a band)."""
    u = e.uncertainty
    if u is None or u.time_to_train_h_at_risk is None or u.cost_usd_at_risk is None:
        return f"{duration_h(e.time_to_train_h)}, {money(e.cost_usd)}"
    return f"{risk}: {risk_figures(e, risk)}"


def risk_figures(e: Estimate, risk: str) -> str:
    """'27.7 h, $4,004': the time and cost the search judged the plan by (``-`` without a band)."""
    u = e.uncertainty
    if u is None or u.time_to_train_h_at_risk is None or u.cost_usd_at_risk is None:
        return "-"
    return f"{duration_h(u.time_to_train_h_at_risk[risk])}, {money(u.cost_usd_at_risk[risk])}"


def tie_rule_line(result) -> str | None:
    """Why a listed plan beats the chosen one on the objective (planner/api/notices.py tie_rule)."""
    rule = tie_rule(result)
    if rule is None:
        return None
    cost = rule.objective == "cost"
    first, then = ("cost", "faster") if cost else ("time", "cheaper")
    # to the dollar / tenth of an hour: the table's $2.05M matches every row (review s30b)
    shown = f"${rule.best:,.0f}" if cost else f"{rule.best:,.1f} h"
    # trial s30: read against the chosen plan, a near tie 0.3 % dearer and 2x faster looked like it
    # should have won; the window is the best plan's
    return (
        f"objective {rule.objective}: plans within {rule.fraction:.0%} of the best {rule.risk} {first} ({shown},"
        f" #{rule.rank}) count as tied, and the {then} of them is chosen (NEAR_TIE_FRACTION)"
    )


def near_tie_json(result) -> dict:
    tie = result.near_tie
    return {
        "objective": tie.objective,
        "extra_fraction": tie.extra_fraction,
        "gain": tie.gain,
        "plan": listed_json(result.near_tie_plan),  # review s30: every side answer with its price
    }


def near_tie_line(result) -> str:
    """'near tie: 8 x b200 (fsdp dp_shard=8) for +0.1 % cost, 4.0x faster (p80: 27.7 h, $4,004)':
    compared as the search compared them, at the request's risk quantile."""
    tie, p = result.near_tie, result.near_tie_plan
    worse, better = ("cost", "faster") if tie.objective == "cost" else ("time", "cheaper")
    return (
        f"near tie: {p.num_gpus} x {p.gpu} ({p.layout_words}) for {tie.extra_fraction:+.1%} {worse}, "
        f"{tie.gain:.1f}x {better} ({at_risk_words(p.estimate, result.risk.value)})"
    )


def idle_json(result) -> dict:
    idle = result.idle
    return {
        "gpu": idle.gpu,
        "used": idle.used,
        "inventory": idle.inventory,
        "idle": idle.idle,
        "batch_tokens": idle.batch_tokens,
        "plan": listed_json(result.idle_plan),
    }


def idle_line(result) -> str:
    """'uses 768 of 992 a100-80gb-sxm GPUs (224 idle) at batch 4,194,304 tokens; with batch 4,190,208
    tokens (-0.1%): 992 GPUs (zero2 pp=8 dp_shard=31 tp=4), 11.8 days (p80: 13.9 days, $922,008)'."""
    idle, p = result.idle, result.idle_plan
    batch = p.estimate.global_batch_tokens
    return (
        f"uses {idle.used} of {idle.inventory} {idle.gpu} GPUs ({idle.idle} idle) at batch {idle.batch_tokens:,} "
        f"tokens; with batch {batch:,} tokens ({batch / idle.batch_tokens - 1:+.1%}): {p.num_gpus} GPUs "
        f"({p.layout_words}), {duration_h(p.estimate.time_to_train_h)} "
        f"({at_risk_words(p.estimate, result.risk.value)})"
    )


def knee_json(result) -> dict:
    bend = result.knee
    return {
        "extra_cost_fraction": bend.extra_cost_fraction,
        "speedup": bend.speedup,
        "plan": listed_json(result.knee_plan),
    }


def knee_line(result) -> str:
    """'knee of the cost/time front: 64 x h100-sxm (fsdp dp_shard=64) for +4.1 % cost, 7.6x faster (41 d, $1.2M)'."""
    bend, p = result.knee, result.knee_plan
    change = (
        f"{bend.extra_cost_fraction:+.1%} cost, {bend.speedup:.1f}x faster"
        if bend.speedup >= 1
        else f"{bend.extra_cost_fraction:+.1%} cost, {1 / bend.speedup:.1f}x slower"
    )
    return (
        f"knee of the cost/time front: {p.num_gpus} x {p.gpu} ({p.layout_words}) for {change} "
        f"({at_risk_words(p.estimate, result.risk.value)})"
    )


def larger_batch_json(result) -> dict:
    """The larger-batch offer (planner/api/batch_offers.py), which the text gives as a warning
    (trial s30: JSON had only that sentence)."""
    offer = result.larger_batch
    nearer = offer.nearer
    unit = "usd" if offer.objective == Objective.COST else "hours"  # the figures' unit (review s30b)
    return {
        "batch_tokens": offer.batch_tokens,
        "requested_sequences": offer.sequences,
        "split": offer.split,
        "objective": offer.objective.value,
        "saving": offer.saving,
        f"figure_{unit}": offer.figure,
        f"chosen_figure_{unit}": offer.chosen_figure,
        "nearer": None
        if nearer is None
        else {
            "batch_tokens": nearer.batch_tokens,
            "saving": nearer.saving,
            "plan": None if nearer.plan is None else listed_json(nearer.plan),
        },
        "plan": listed_json(result.larger_batch_plan),
    }


def over_budget_json(result) -> list[dict]:
    """The plans a little over the budget, the knee of their front first."""
    return [
        {
            "over_fraction": over.over_fraction,
            "extra_cost_fraction": over.extra_cost_fraction,
            "speedup": over.speedup,
            "plan": listed_json(p),
        }
        for over, p in zip(result.over_budget, result.over_budget_plans, strict=True)
    ]


def over_budget_lines(result) -> list[str]:
    """'a little over the budget: 512 x b200 (...), 22.9x faster than the fastest plan within it,
    for 0.7% over the budget (+0.8% on this plan's cost; p80: 24.8 days, $2.07M)', then 'or ...'
    for the fastest where it is faster still."""
    lines = []
    batch = result.plan.estimate.global_batch_tokens
    for i, (over, p) in enumerate(zip(result.over_budget, result.over_budget_plans, strict=True)):
        # review s30b: an offer at the batch asked for, where the chosen plan runs a fallback, says so
        theirs = p.estimate.global_batch_tokens
        at = "" if theirs == batch else f" at {theirs:,} tokens/step"
        lines.append(
            ("a little over the budget: " if i == 0 else "or, further over it: ")
            + f"{p.num_gpus} x {p.gpu} ({p.layout_words}){at}, {over.speedup:.1f}x faster than the fastest plan"
            f" within it, for {over.over_fraction:.1%} over the budget ({over.extra_cost_fraction:+.1%} on this"
            f" plan's cost; {at_risk_words(p.estimate, result.risk.value)})"
        )
    return lines


def count_caps_line(caps: dict[str, int], limits: dict[str, int]) -> str:
    """Name the GPU-count cap the search ran under (types without an inventory, or max_gpus)."""
    values = sorted(set(caps.values()))
    scope = "per GPU type" if set(caps) == set(limits) else "for " + ", ".join(caps)
    counts = " or ".join(f"{v:,}" for v in values)
    return f"GPU counts searched up to {counts} {scope} (max_gpus cap; raise it with --max-gpus)"
