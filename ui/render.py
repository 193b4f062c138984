"""Terminal and JSON rendering for the CLI (rich tables; JSON keys are a public contract)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from planner.accuracy.memory_band import memory_words
from planner.catalog.calibration import cpu_measured_gpus
from planner.catalog.held_price import rate_words
from planner.catalog.prices import PriceBasis
from planner.estimate_parts import MemoryTerms, PeakMoment, TimeTerms, term_words
from planner.fmt import counted, duration_band, energy_band, money, money_band
from planner.layout import Precision
from planner.model.energy import power_basis_words
from planner.model.rates import SDPA_CUDNN_NOTE, SDPA_SKIPS_CUDNN_NOTE
from planner.plan import Estimate, Plan
from planner.units import GIB, SECONDS_PER_HOUR, TOKENS_PER_BILLION
from ui.render_calibration import (
    calibration_json,
    calibration_line,
    covers,
    plan_calibration_json,
    plan_calibration_line,
    recalibrated_words,
)
from ui.render_lines import (
    batch_note,
    ceiling_lifted_line,
    ceiling_line,
    ceiling_passed_line,
    few_rows_line,
    goodput_line,
    host_note,
    loss_note,
    median_line,
    network_words,
    node_fill_words,
    point_outside_line,
    risk_figures_line,
    run_losses_note,
    step_line,
    window_words,
    written_line,
)
from ui.terminal import err, out


def add_columns(table: Table, names) -> Table:
    """``table``'s columns, a long cell folded onto more lines, never cut: a band is the figure's
    second half, and the default ellipsis dropped it first (trial s33: "$51,501 ($39,143-$53,87…")."""
    for name in names:
        table.add_column(name, overflow="fold")
    return table


def whole_words(table: Table) -> Table:
    """Each column at least as wide as its longest word, so that a folded cell breaks between words,
    not inside a figure (trial s36: "($38,989-$53,6" over "61)" in a cost column)."""
    for column in table.columns:
        words = [word for cell in column.cells for word in str(cell).split()]
        longest = max((len(word) for word in words), default=0)
        column.min_width = max(column.min_width or 0, longest) or None
    return table


def emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")


@contextlib.contextmanager
def working(message: str, quiet: bool = False):
    """A spinner on stderr for work that can take more than a moment."""
    if quiet or not err.is_terminal:
        yield
        return
    with err.status(message):
        yield


def warn(message: str) -> None:
    """One warning line on stderr (the answer itself stays on stdout)."""
    err.print(f"trainplan: warning: {message}", markup=False, soft_wrap=True)


def estimate_json(e: Estimate) -> dict:
    return e.model_dump(mode="json")


# When the memory breakdown's peak falls (trial s41: under full recompute the table had no
# activations line and nothing said it was the end of the backward).
PEAK_MOMENT_WORDS = {
    PeakMoment.BACKWARD: ", at the start of the last micro-batch's backward",
    PeakMoment.END_OF_BACKWARD: ", at the end of the backward (activations freed, every gradient held)",
}


def breakdown_table(title: str, terms: MemoryTerms | TimeTerms, unit: str, total_label: str, total: float) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    for name, value in terms:
        if value:
            table.add_row(f"  {term_words(name)}", f"{value:,.3f} {unit}")
    table.add_row(f"  [bold]{total_label}[/bold]", f"[bold]{total:,.3f} {unit}[/bold]")
    return table


def attention_words(p: Plan) -> str:
    """', attention cuDNN': the kernel timed (an older plan file: the one named, if any)."""
    kernel = p.estimate.attention_kernel or (None if p.attention is None else p.attention.value)
    note = (
        SDPA_CUDNN_NOTE if p.estimate.sdpa_picks_cudnn else SDPA_SKIPS_CUDNN_NOTE if p.estimate.sdpa_skips_cudnn else ""
    )
    return "" if kernel is None else f", attention {kernel}{note}"


def price_cell(usd_per_gpu_hour: float | None, basis: PriceBasis | None) -> str:
    """'5.07', or '1.32*' for a price the catalog estimates (the catalog's and the plan tables')."""
    if usd_per_gpu_hour is None:
        return "-"
    return f"{usd_per_gpu_hour:.2f}" + ("*" if basis is not None and PriceBasis(basis).estimated else "")


def cost_rate_line(p: Plan) -> str | None:
    """Without --tokens, the cost by the hour and by the billion tokens at the step's throughput
    (buyer trial s50 L7: estimate's help promised a cost its answer did not print without tokens)."""
    if p.price_per_gpu_hour_usd is None or p.estimate.throughput.tokens_per_s <= 0:
        return None
    hourly = p.billed_gpus * p.price_per_gpu_hour_usd
    if p.estimate.term is not None:  # a reserved term is billed whole, not by the token (review s50 L5)
        return f"cost {money(hourly)} an hour{price_words(p)} (--tokens gives a run's time and cost)"

    def per_billion(tokens_per_s: float) -> float:
        return hourly * TOKENS_PER_BILLION / (tokens_per_s * SECONDS_PER_HOUR)

    u = p.estimate.uncertainty  # the slow end of tokens/s is the dear end of the cost
    band = None if u is None else (per_billion(u.tokens_per_s[1]), per_billion(u.tokens_per_s[0]))
    return (
        f"cost {money(hourly)} an hour{price_words(p)}; {money_band(per_billion(p.estimate.throughput.tokens_per_s), band)}"
        " per billion tokens at the step's throughput, before goodput's losses (--tokens gives a run's time and cost)"
    )


def price_words(p: Plan) -> str:
    """' at $5.07/GPU-h (an estimate, not a median of listed on-demand offers)': the price behind the cost and where
    it comes from (trial s26: no cost said either)."""
    if p.price_per_gpu_hour_usd is None:
        return ""
    # review s26: a 4-GPU plan on 8-GPU-node offers is billed for 8, which the line did not say
    billed = (
        "" if p.billed_gpus == p.num_gpus else f", billed for {p.billed_gpus} GPUs (whole {p.rent_unit_gpus}-GPU nodes)"
    )
    term = p.estimate.term  # trial s42 H2: the cost bills a reserved term whole
    whole = "" if term is None or not term.words() else f", {term.words()}"
    return f" at {rate_words(p.price_per_gpu_hour_usd, p.price_basis, p.price_kind, p.price_offers)}{billed}{whole}"


def listed_json(p: Plan) -> dict:
    """A listed plan (an alternative, another GPU type's best): its estimate and the price behind
    its cost (trial s28b: the rows had no price, so an estimated one ranked like a listed one)."""
    # whether the calibration file timed its GPU (calib50 M8: per_gpu and alternatives mixed rows at
    # a file's rates and the catalog's, unmarked); false without a file
    return {**estimate_json(p.estimate), **price_json(p), "calibrated": covers(p.calibration, p.gpu)}


def price_json(p: Plan) -> dict:
    """The price behind a plan's cost and where it comes from (``PriceBasis``)."""
    return {
        "price_per_gpu_hour_usd": p.price_per_gpu_hour_usd,
        "price_basis": None if p.price_basis is None else p.price_basis.value,
        "price_kind": p.price_kind,  # the --price-kind it was priced under (a user's price keeps it)
        # the listed offers behind the price: provider, rate, date, source (buyer trial s50 M8)
        "price_offers": [o.model_dump(mode="json") for o in p.price_offers],
    }


def plan_facts_json(p: Plan) -> dict:
    """What a plan adds to its estimate's JSON: the stack it describes, whether emit runs it, the
    price behind its cost and where that comes from, the network, DeepSpeed's partitioned
    activations, Megatron-Core's overlapped all-to-alls and the optimizer's formats (trial s26: a script comparing stacks
    read the ceiling's source stack instead)."""
    return {
        "stack": p.stack.value,
        # the layout as its stack names it: DeepSpeed's "zero3" where layout.sharding keeps the
        # enum the plan file round-trips, "fsdp" (trial s36, finding 8)
        "layout_words": p.layout_words,
        "emittable": p.emittable,
        **price_json(p),
        "billed_gpus": p.billed_gpus,
        "network": p.network,
        "partition_activations": p.partition_activations,
        "moe_a2a_overlap": p.moe_a2a_overlap,
        # Megatron-Core's --tp-comm-overlap: false where the plan turned it off; null for the other
        # stacks, which have no such flag (review52 L3: "true" under trainplan read as TP traffic hidden,
        # where its DTensor TP hides none: the breakdown's tp_comm is what each profile exposes)
        "tp_comm_overlap": p.tp_comm_overlap if p.stack.overlaps_tp_comm else None,
        "optimizer_precision": p.optimizer_precision.model_dump(mode="json"),
        # the user's run-loss figures its goodput rests on (null: the named default)
        "run_losses": p.run_losses.model_dump(mode="json"),
    }


def summary_lines(p: Plan) -> list[str]:
    e = p.estimate
    t = p.training
    lines = [
        f"[bold]{p.model.name}[/bold] on [bold]{p.num_gpus} x {p.gpu}[/bold] ({counted(p.num_nodes, 'node')}"
        + network_words(p)
        + node_fill_words(p)
        + ")",
        f"layout {p.layout_words}  micro-batch {t.micro_batch} x accum {t.grad_accum} x seq {t.seq_len}"
        f"  = {e.global_batch_tokens:,} tokens/step" + batch_note(e),
        f"activation checkpointing {t.describe_ac(p.layout.pp)}"
        + (" (per op)" if e.memory.selective_per_op else "")
        + f", {t.precision.value}, impl {t.impl.value}"
        + (", compile" if t.compile else "")
        + (", offload" if t.offload else "")
        + ("" if p.stack == "trainplan" else f", stack {p.stack.value} (estimate only)")
        + attention_words(p)
        + window_words(p)
        + (", partitioned activations" if p.partition_activations else "")
        + (", expert all-to-all overlapped" if p.moe_a2a_overlap else "")
        # review51 L2: at tp 1 there is no TP traffic, so the switch changes nothing: said so
        + (
            (", no TP comm overlap" if p.layout.tp > 1 else ", no TP comm overlap (no TP traffic at tp 1)")
            if p.tp_overlap_off
            else ""
        )
        + p.optimizer_precision.words(),
        f"memory: peak {e.memory.peak_gib:.1f} GiB allocated, {e.memory.reserved_gib:.1f} GiB reserved"
        f" of {e.memory.capacity_gib:.1f} GiB" + host_note(e) + loss_note(e),
        step_line(e) + (" (MFU and HFU of the bf16 peak)" if t.precision == Precision.FP8 else ""),
    ]
    u = e.uncertainty
    # Trial s38: an infeasible layout's time and cost read as a usable plan's; they are what it would
    # give with the memory (or the rule) it lacks.
    # memory (the device's or the host's): the estimate's typed fixes, or a plan file's reason
    memory = bool(e.fix_hints) or "memory" in (e.reason or "")
    would = "" if e.feasible else "if it fit: " if memory else "if it could run: "
    if e.time_to_train_h is not None:
        lines.append(
            f"{would}time-to-train {duration_band(e.time_to_train_h, None if u is None else u.time_to_train_h)}, "
            f"cost {money_band(e.cost_usd, None if u is None else u.cost_usd)}{price_words(p)}, "
            f"energy {energy_band(e.energy_kwh, None if u is None else u.energy_kwh)}: {power_basis_words()}"
        )
    elif (rate := cost_rate_line(p)) is not None:
        lines.append(would + rate)
    if (median := median_line(e)) is not None:
        lines.append(would + median)
    if (at_risk := risk_figures_line(e)) is not None:
        lines.append(would + at_risk)
    if (few := few_rows_line(e)) is not None:
        lines.append(escape(few))
    if u is not None:
        lines.append(escape(f"accuracy: {u.envelope}"))
        if u.point_outside is not None:
            lines.append(escape(point_outside_line(u.point_outside)))
        if u.memory is not None:  # trial s38: plans at 94-99 % of a GPU had no memory band
            lines.append(escape(f"memory accuracy: {memory_words(u.memory)}"))
    elif p.calibration is not None and p.gpu in cpu_measured_gpus(p.calibration):  # calib50 M4
        lines.append(escape(f"accuracy: none: {p.gpu}'s rates were measured on a CPU (a format check)"))
    if e.ceiling is not None and e.ceiling.binding:
        lines.append(escape(ceiling_line(e)))
    elif (lifted := ceiling_lifted_line(e)) is not None:
        lines.append(escape(lifted))
    elif (passed := ceiling_passed_line(e)) is not None:
        lines.append(escape(passed))
    if e.goodput is not None:
        lines.append(goodput_line(e.goodput) + run_losses_note(p))
    if not e.feasible:  # the verdict first, under the header: the figures below describe a job that cannot run
        lines[1:1] = [f"[red]infeasible[/red] - {escape(e.reason or '')}", f"fix: {escape(e.fix or '')}"]
    return lines


def print_plan(p: Plan) -> None:
    for line in summary_lines(p):
        out.print(line)
    e = p.estimate
    moment = e.memory.peak_moment
    title = "memory per GPU (GiB)" + ("" if moment is None else PEAK_MOMENT_WORDS[moment])
    out.print(breakdown_table(title, e.memory.breakdown_gib, "GiB", "allocated peak", e.memory.peak_gib))
    out.print(breakdown_table("step time (s)", e.time.breakdown_s, "s", "step", e.time.step_s))


def estimate(p: Plan, *, as_json: bool, saved_to: Path | None, calibration=None, warnings=()) -> None:
    if as_json:
        emit_json(
            {
                **estimate_json(p.estimate),
                "warnings": list(warnings),
                **plan_facts_json(p),
                "calibration": plan_calibration_json(calibration, p),
            }
        )
        return
    plan_calibration_line(calibration, p)
    print_plan(p)
    if saved_to:
        out.print(written_line(p, saved_to), markup=False)


# The keys an infeasible answer adds; a feasible answer carries them as null, so a script reads
# one shape either way (trial s26: plan --json had different top-level keys when infeasible).
INFEASIBLE_KEYS = (
    "reason", "constraint", "detail", "fix", "required", "available", "unit", "more_gpus_help", "batch_tokens",
    "batch_seconds", "named_plan", "within_budget_seconds", "deadline_seconds", "more_gpus_plan", "job",
    "infeasible_jobs", "tokens_within_budget",
)  # fmt: skip


def no_infeasibility() -> dict:
    """A feasible answer's INFEASIBLE_KEYS: null, and no job without an answer (named apart from a
    portfolio's jobs: "jobs": [] beside its "assignments" read as no jobs, buyer trial s50 L5)."""
    return {**dict.fromkeys(INFEASIBLE_KEYS), "infeasible_jobs": []}


def infeasible_json(exc) -> dict:
    """An InfeasiblePlan's typed fields. ``required`` / ``available`` are in the constraint's unit
    (``Constraint.unit``, given as ``unit``) for scripts (trial s25: the numbers were only in the
    prose); ``infeasible_jobs``: each job's own answer, where several cannot run alone."""
    return {
        "constraint": exc.constraint.value,
        "detail": exc.detail,
        "fix": exc.fix,
        "required": exc.required,
        "available": exc.available,
        "unit": exc.constraint.unit,  # of required / available
        "more_gpus_help": exc.more_gpus_help,
        # a deadline answer's batch at which the inventory meets it, and the time there (review s28)
        "batch_tokens": exc.batch_tokens,
        "batch_seconds": exc.batch_seconds,
        # the plan the figures are of (a budget answer's cheapest): {gpu, num_gpus, seconds}
        "named_plan": None if exc.named is None else dataclasses.asdict(exc.named),
        # a budget answer: the deadline its cheapest plan meets, and the time the budget meets (review s35)
        "within_budget_seconds": exc.within_budget_seconds,
        # ... and the tokens the budget trains at the cheapest plan's cost per token (buyer trial s50 M7)
        "tokens_within_budget": exc.tokens_within_budget,
        "deadline_seconds": exc.deadline_seconds,
        # a deadline answer: the fewest GPUs past the inventory that meet it, {gpu, num_gpus, seconds,
        # batch_tokens, batch_change, cost_usd, budget_usd} (CountPastInventory; null where the fix words none)
        # (trial s48 M7: only the fix's prose named the count)
        "more_gpus_plan": None if exc.more_gpus is None else dataclasses.asdict(exc.more_gpus),
        "job": exc.job,  # the one job of several the answer is of
        "infeasible_jobs": [{"job": name, **infeasible_json(job)} for name, job in exc.jobs],
    }


def infeasible(
    exc, *, as_json: bool, calibration=None, answer_keys: tuple[str, ...] = (), known: dict | None = None
) -> None:
    """No answer, in words or JSON; ``answer_keys``: the feasible answer's other keys, null here but
    those ``known`` without a plan (trial s38: ``risk`` was null beside "each plan judged at p80")."""
    if as_json:
        answer = {**dict.fromkeys(answer_keys), **(known or {})}
        data = {"feasible": False, **answer, "reason": str(exc), **infeasible_json(exc)}
        emit_json(data if calibration is None else {**data, "calibration": calibration_json(calibration)})
        return
    calibration_line(calibration)
    out.print(f"[red]no feasible plan[/red] - {exc.constraint.value}: {exc.detail}")
    out.print(f"fix: {exc.fix}")


def explain(
    p: Plan, *, as_json: bool, calibration=None, warnings: tuple[str, ...] = (), plan_step_s: float | None = None
) -> None:
    """``plan_step_s``: the saved plan's step where another calibration file estimated it again."""
    from planner.explain import explain_plan

    notes = explain_plan(p)
    for message in warnings:  # on stderr, as estimate's
        warn(message)
    if as_json:
        emit_json(
            {
                "plan": listed_json(p),  # as plan --json's rows
                **plan_facts_json(p),
                "warnings": list(warnings),
                "notes": notes,
                "calibration": plan_calibration_json(calibration, p),
                "recalibrated_from_step_s": plan_step_s,
            }
        )
        return
    plan_calibration_line(calibration, p)
    if plan_step_s is not None and p.calibration is not None:
        out.print(recalibrated_words(p.calibration.file, plan_step_s, p.estimate.time.step_s), markup=False)
    print_plan(p)
    out.print("[bold]why[/bold]")
    for note in notes:
        out.print(f"  - {note}")


def detected(found, *, as_json: bool) -> None:
    rows = [
        {
            "index": d.index,
            "name": d.name,
            "memory_gib": d.memory_bytes / GIB,
            "driver": d.driver_version,
            "catalog_id": d.spec.id if d.spec else None,
        }
        for d in found
    ]
    if as_json:
        emit_json({"gpus": rows})
        return
    for r in rows:
        out.print(
            f"GPU {r['index']}: {r['name']} ({r['memory_gib']:.1f} GiB, driver {r['driver']}) -> "
            f"{r['catalog_id'] or 'no catalog match'}"
        )


def portfolio(
    solution,
    *,
    as_json: bool,
    emitted: dict[str, Path] | None = None,
    owned_basis=None,
    calibration=None,
    prices: dict | None = None,
    overrides=None,
) -> None:
    """``emitted``: job name -> the job.json written for it (``trainplan portfolio --emit``);
    ``owned_basis``: what the owned-GPU rate rests on (ui.render_ownership.OwnedBasis);
    ``calibration``: the file the jobs were planned with (ui.calibration.CalibrationChoice);
    ``prices``: each rented or reserved type's ``HeldPrice``; ``overrides``: ui.jobs_overrides.Overrides."""
    from ui.render_portfolio import portfolio as render_portfolio  # it imports this module's ``out``

    given = {"emitted": emitted, "owned_basis": owned_basis, "calibration": calibration, "prices": prices}
    render_portfolio(solution, as_json=as_json, **given, overrides=overrides)


def progress_line(done: int, total: int, label: str) -> None:
    """One line per stage of a measurement sweep on stderr: a bar and what runs now."""
    width = 20
    filled = width * done // max(total, 1)
    print(f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label}", file=sys.stderr, flush=True)
