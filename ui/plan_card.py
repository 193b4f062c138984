"""The single-job page's plan card: the chosen plan's metrics with their bands, the lines under them
(envelope, price, risk, the search, calibration) and its call-outs, and the planner's warnings of the
request in the page's language (``request_texts``), which the card shows above its metrics.
"""

from __future__ import annotations

import streamlit as st

from planner.api import judged_hours, trains_too_long
from planner.api.notices import (
    tie_rule,
)
from planner.catalog.calibration import cpu_measured_gpus
from planner.catalog.prices import PriceBasis, offers_span
from planner.estimate_parts import GoodputEstimate
from planner.explain import windowed_layers
from planner.fmt import energy, expected_events, number_band
from planner.model.attention_kernels import AttentionKernel
from planner.model.rates import KERNEL_WORDS
from planner.model.run_loss_inputs import RunLossInputs, by_job
from planner.plan import Plan
from planner.plan_accuracy import Uncertainty
from ui import app_core
from ui.batch_messages import larger_batch_text, vary_batch_text
from ui.cached import cached_calibration
from ui.calibration_upload import CalibrationUpload
from ui.i18n import Labels, plain
from ui.messages import (
    BAND_DASH,
    ac_text,
    ceiling_text,
    cost_parts,
    duration,
    envelope_text,
    estimate_only_text,
    figure_bands,
    idle_text,
    interval,
    median_text,
    memory_band_text,
    memory_risk_text,
    near_tie_text,
    optimizer_text,
    over_budget_text,
    per_second,
    plan_note_texts,
    regime_words_text,
    risk_text,
    short_duration,
)
from ui.render_lines import median_offset, nvlink_domains


def goodput_row(tr: Labels, g: GoodputEstimate | None) -> tuple[tuple[int, str, str], ...]:
    """Goodput, job MTTF, expected interruptions and checkpoint interval ("-" where none)."""
    if g is None:
        return ()
    none = "-"
    return (
        (1, "card_goodput", f"{g.goodput_fraction:.1%}"),
        (1, "card_mttf", none if g.mttf_h is None else duration(tr, g.mttf_h)),
        (
            1,
            "card_interruptions",
            none if g.expected_interruptions is None else expected_events(g.expected_interruptions),
        ),
        (
            1,
            "card_ckpt_interval",
            none if g.checkpoint_interval_min is None else interval(tr, g.checkpoint_interval_min),
        ),
    )


def run_losses_text(tr: Labels, plan: Plan) -> str | None:
    """'Goodput on your figures: failure rate 2×, input stalls 5%.' under the goodput, where the
    user's run-loss figures replaced the defaults (the CLI's ``run_losses_note``); None: all defaults."""
    return tr("card_run_losses", words=loss_words(tr, plan.run_losses)) if plan.run_losses.said() else None


def loss_words(tr: Labels, losses: RunLossInputs) -> str:
    """'failure rate 2×, input stalls 5%': the figures given, in the page's language."""
    return tr.join([tr(f"loss_words_{key}", value=value) for key, value in losses.said()])


def jobs_run_losses_texts(tr: Labels, losses: dict[str, RunLossInputs]) -> list[str]:
    """Under the portfolio's jobs: which jobs' days rest on the user's run-loss figures, as the CLI's
    lines under portfolio's table (``by_job``; app trial s48: the page said none)."""
    return [
        tr("portfolio_run_losses_all", words=loss_words(tr, given))
        if job is None
        else tr("portfolio_run_losses_job", job=plain(job), words=loss_words(tr, given))
        for job, given in by_job(losses)
    ]


def calibration_text(tr: Labels, plan: Plan, calibration: CalibrationUpload | None) -> str | None:
    """Where the plan's GPU rates were measured, when a calibration file is in use."""
    if calibration is None:
        return None
    used = cached_calibration(calibration)
    values = dict(used.machine, gpus=tr.join(used.gpus), name=used.name)
    line = tr("calibration_elsewhere", gpu=plan.gpu, **values) if plan.gpu not in used.gpus else None
    line = line or tr("calibration_line", **values)
    if cpu := cpu_measured_gpus(used.applied.record):  # the CLI's warning (ui/calibration.py)
        # its own sentence (trial s35, round 2: "... on 2026-12-05 It was measured on a CPU")
        line = tr.sentences(line + tr("full_stop"), tr("calibration_cpu", gpu=tr.join(cpu)))
    return line


def card_rows(tr: Labels, plan: Plan, bought: bool) -> tuple:
    """The card's metric rows: (column width, label key, value) per metric."""
    e, t = plan.estimate, plan.training
    assert e.time_to_train_h is not None and e.cost_usd is not None  # plan() always has training tokens
    nodes = f"{plan.num_nodes} × {plan.gpus_per_node}"
    if (domains := nvlink_domains(plan)) is not None:  # review s30: 144 GB200 are two NVL72 racks
        nodes += " · " + tr("card_domain" if domains == 1 else "card_domains", count=domains)
    nodes += f" · {plan.network}" if plan.network else ""
    return (
        (
            (1, "card_gpus", f"{plan.num_gpus:,} × {plan.gpu}"),  # 4,096 as the page's other counts (app53 L3)
            (1, "card_nodes", nodes),
            (1, "card_time", duration(tr, e.time_to_train_h)),
            (1, "card_cost_bought" if bought else "card_cost", cost_parts(e)[0]),
        ),
        (  # tokens/s with its band, as time and cost have theirs (trial s33: only in the footer)
            (1, "card_tokens", per_second(e.throughput.tokens_per_s)),
            (1, "card_mfu", f"{e.throughput.mfu:.1%}"),
            (1, "card_energy", energy(e.energy_kwh)),
            (1, "card_memory", f"{e.memory.reserved_gib:.1f} GiB"),
        ),
        (
            (2, "card_layout", plan.layout_words),
            (1, "card_batch", f"{t.micro_batch} × {t.grad_accum} × {t.seq_len}"),
            (1, "card_ac", ac_text(tr, t, plan.layout.pp)),
        ),
        goodput_row(tr, e.goodput),
    )


# A metric's tooltip: what its figure assumes (review s48: the energy's 80% of maximum power was unsaid).
CARD_HELP = {"card_energy": "card_energy_help", "card_batch": "card_batch_help"}


def card_help(tr: Labels, key: str) -> str | None:
    """A metric's tooltip; the batch's names the sidebar's field by that field's own label."""
    if key not in CARD_HELP:
        return None
    return tr(CARD_HELP[key], field=tr("global_batch")) if key == "card_batch" else tr(CARD_HELP[key])


def card_deltas(tr: Labels, plan: Plan) -> dict[str, str | None]:
    """What each metric shows below it: the 80 % band of time, cost, energy, tokens/s and memory."""
    bands = figure_bands(tr, plan.estimate)
    return {
        "card_time": bands["time_to_train_h"],
        "card_cost": bands["cost_usd"],
        "card_cost_bought": bands["cost_usd"],
        "card_energy": bands["energy_kwh"],
        "card_tokens": bands["tokens_per_s"],
        "card_mfu": bands["mfu"],
        "card_memory": memory_delta(tr, plan),
        "card_batch": batch_delta(tr, plan),
    }


def memory_delta(tr: Labels, plan: Plan) -> str:
    """Under the memory: the reserved peak's 80 % band, as the other figures have theirs (app53 M2:
    only in the grey text), then its share of the GPU's capacity."""
    mem, band = plan.estimate.memory, figure_bands(tr, plan.estimate)["reserved_gib"]
    share = tr("card_memory_of", fraction=mem.reserved_gib / mem.capacity_gib, capacity=mem.capacity_gib)
    return share if band is None else tr("card_memory_band", band=band, share=share)


def batch_delta(tr: Labels, plan: Plan) -> str:
    """Under the batch: its tokens per step, and whether they are the default for the model's size,
    which no one chose (the CLI's ``batch_note``; buyer trial s50 M6)."""
    e = plan.estimate
    return tr("card_batch_default" if e.batch_defaulted else "card_batch_tokens", tokens=e.global_batch_tokens)


# Kernels whose CLI words describe them rather than name a product (FlashAttention-3, cuDNN):
# written in the page's language (trial s44 app L8: "Triton flash (llm-foundry)" on the 中文 card).
KERNEL_LABELS = {AttentionKernel.EAGER: "kernel_eager", AttentionKernel.TRITON: "kernel_triton"}


def kernel_name(tr: Labels, kernel: AttentionKernel) -> str:
    key = KERNEL_LABELS.get(kernel)
    return KERNEL_WORDS[kernel] if key is None else tr(key)


def kernel_words(tr: Labels, plan: Plan) -> str:
    """The attention kernel the estimate timed: the CLI's words in English; in Chinese from the typed
    kernel (a plan file from before it: the CLI's words)."""
    e = plan.estimate
    sdpa = tr("kernel_sdpa") if e.sdpa_picks_cudnn else tr("kernel_sdpa_skips") if e.sdpa_skips_cudnn else ""
    if tr.lang == "en" or e.attention_kernel_timed is None:
        return (e.attention_kernel or (plan.attention.value if plan.attention else "-")) + sdpa
    fallback = kernel_name(tr, e.attention_cp_fallback_from or AttentionKernel.CUDNN)
    cp = tr("kernel_cp_fallback", kernel=fallback) if e.attention_cp_fallback else ""
    return kernel_name(tr, e.attention_kernel_timed) + cp + sdpa


def window_text(tr: Labels, plan: Plan) -> str | None:
    """The CLI's window words (ui/render_lines.py ``window_words``) on the card: how many layers are
    windowed, and what their kernel computes beyond the window where it does; None without windows."""
    w = windowed_layers(plan)
    if w is None:
        return None
    text = tr("card_windows", layers=w.layers, total=w.total, window=w.window_tokens)
    if not w.extra_gflop_per_token:
        return text
    return text + tr("card_windows_sdpa" if w.by_sdpa else "card_windows_band", gflops=w.extra_gflop_per_token)


def price_text(tr: Labels, plan: Plan, bought: bool) -> str | None:
    """'Cost at $5.07/GPU-h: an estimate, not a median of listed on-demand offers.' (trial s26: no cost said its
    price or that some prices are estimates); None for an owned GPU's cost or an unpriced plan."""
    if bought or plan.price_per_gpu_hour_usd is None or plan.price_basis is None:
        return None
    basis = tr(PRICE_BASIS_KEYS[plan.price_basis]) + offers_text(tr, plan)
    text = tr("card_price", price=plan.price_per_gpu_hour_usd, basis=basis)
    if plan.billed_gpus == plan.num_gpus:
        return text
    return text + tr("card_billed", billed=plan.billed_gpus, unit=plan.rent_unit_gpus)


def offers_text(tr: Labels, plan: Plan) -> str:
    """' (TensorWave, 2026-05-18)' or ' (6 offers, 2026-07-02 to 2026-11-09)': the offers behind the
    price, as the CLI's cost line names them (``offers_span``; buyer trial s50 M8); '' for none."""
    span = offers_span(plan.price_offers)
    if span is None:
        return ""
    if span.provider is not None:
        return tr("card_price_offer", provider=plain(tr.provider(span.provider)), date=span.first_date)
    if span.first_date == span.last_date:
        return tr("card_price_offers_day", count=span.count, date=span.first_date)
    return tr("card_price_offers", count=span.count, first=span.first_date, last=span.last_date)


# Each price basis's words (ui/i18n.py), one key per basis.
PRICE_BASIS_KEYS = {
    PriceBasis.CATALOG: "price_basis_catalog",
    PriceBasis.ESTIMATE: "price_basis_estimate",
    PriceBasis.ONE_OFFER: "price_basis_one_offer",
    PriceBasis.FILE: "price_basis_file",
    PriceBasis.USER: "price_basis_user",
    PriceBasis.ON_DEMAND: "price_basis_on_demand",
    PriceBasis.SPOT: "price_basis_spot",
    PriceBasis.RESERVED_1Y: "price_basis_reserved_1y",
    PriceBasis.RESERVED_3Y: "price_basis_reserved_3y",
}


def spot_wait_text(tr: Labels, g: GoodputEstimate | None) -> str | None:
    """'1.1 spot preemptions expected, each waiting 80 min for capacity (in the time and cost).'"""
    if g is None or g.spot_preemptions is None:
        return None
    return tr("spot_wait", count=expected_events(g.spot_preemptions), wait=short_duration(tr, g.capacity_wait_s))


def tie_rule_text(tr: Labels, result) -> str | None:
    """The CLI's tie-rule line in the page's language (planner/api/notices.py tie_rule)."""
    rule = None if result is None else tie_rule(result)
    if rule is None:
        return None
    best = app_core.money(rule.best) if rule.objective == "cost" else duration(tr, rule.best)
    key = "tie_rule_cost" if rule.objective == "cost" else "tie_rule_time"
    # the app's table ranks the chosen plan 1, the CLI's marks it apart (trial s34: "#1" named the chosen row)
    return tr(key, fraction=rule.fraction, risk=rule.risk, best=best, rank=rule.rank + 1)


def few_rows_text(tr: Labels, u: Uncertainty) -> str | None:
    """p80 and p90 both the farthest of one regime's few rows (``Uncertainty.few_rows_end``), the
    CLI's ui/render_lines.py ``few_rows_line`` (buyer trial s48 M2: both 17.1 days, unexplained)."""
    end = u.few_rows_end
    if end is None:
        return None
    *first, last = end.risks
    return tr(
        "card_few_rows",
        risks=tr("and_join", items=tr.join(first), last=last),
        regime=regime_words_text(tr, end.regime_parts),
        errors=tr.join(f"{x:+.0%}" for x in end.errors),
    )


def loss_text(tr: Labels, e) -> str | None:
    """The stack's loss as counted (``MemoryEstimate.loss_chunk_tokens``; trial s36: HF Trainer's full
    fp32 logits were nowhere in the output); None for a plan file from before."""
    chunk, per_logit = e.memory.loss_chunk_tokens, e.memory.loss_bytes_per_logit
    if chunk is None or per_logit is None:
        return None
    if chunk:
        return tr("card_loss_chunked", chunk=chunk, bytes=per_logit)
    return tr("card_loss_whole", bytes=per_logit)


def card_captions(
    tr: Labels, plan: Plan, result, calibration: CalibrationUpload | None, bought: bool = False, kept: bool = False
) -> list[str]:
    """The lines under the metrics: envelope, price, ceiling, risk, the search, estimate-only,
    calibration; ``kept``: the answer came from the cache, so its solve time is the first run's."""
    e, u = plan.estimate, plan.estimate.uncertainty
    lines = [*filter(None, (run_losses_text(tr, plan),))]  # first: it sits under the goodput's row
    lines += [] if u is None else [envelope_text(tr, u)]
    if u is not None and u.point_outside is not None:
        lines.append(tr(f"point_outside_{u.point_outside}"))
    if u is not None and (memory := memory_band_text(tr, u)) is not None:
        lines.append(memory)
    if u is not None and u.time_to_train_h_at_risk is not None and u.cost_usd_at_risk is not None:
        risk = result.risk.value  # what the search judged this plan by (trial s25: p50/p80/p90 looked alike)
        time, cost = duration(tr, u.time_to_train_h_at_risk[risk]), app_core.money(u.cost_usd_at_risk[risk])
        lines.append(tr("card_at_risk", risk=risk, time=time, cost=cost))
        # trial s35 (app): the card chose 32 x b200 where 16 x b200 was cheaper at p80, said under Top plans only
        lines += [*filter(None, (few_rows_text(tr, u), tie_rule_text(tr, result)))]
    # trial s28d: the CLI said the median, the card did not; trial s33: judged at p50, it repeated that line
    if (median := median_offset(e)) is not None and result.risk.value != "p50":
        lines.append(median_text(tr, median))
    lines += [*filter(None, (price_text(tr, plan, bought), spot_wait_text(tr, e.goodput), window_text(tr, plan)))]
    lines += [
        *filter(None, (ceiling_text(tr, e), risk_text(tr, result))),
        tr(
            "card_footer_kept" if kept else "card_footer",
            # the CLI's formatter and precision (ui/render_lines.py step_line)
            step=number_band(e.time.step_s, None if u is None else u.step_s, 3, dash=BAND_DASH),
            kernel=kernel_words(tr, plan),
            candidates=result.num_candidates,
            feasible=result.solution.num_feasible,
            solver=result.solution.solver,
            seconds=result.seconds,
        ),
    ]
    formats = optimizer_text(tr, plan)  # a trainplan plan in pure bf16 says it too (bf16pure55)
    if not plan.emittable:
        lines += [estimate_only_text(tr, plan), *filter(None, (formats, loss_text(tr, e)))]
    elif formats:
        lines.append(formats)
    return lines + list(filter(None, (calibration_text(tr, plan, calibration),)))


def memory_warning_text(tr: Labels, plan: Plan, result) -> str | None:
    """The card's memory warning: where the search fell back to the model's figure (no plan that
    fits at its band's high end met the request; ``PlanResult.memory_judged_at_model``), that first,
    as the CLI's warning says it (app53 H1: the card said only "may not fit"); then the band's words."""
    memory = memory_risk_text(tr, plan.estimate)
    if not result.memory_judged_at_model:
        return memory
    at_model = tr("memory_judged_at_model", risk=result.risk.value)
    return at_model if memory is None else tr.sentences(at_model, memory)


def plan_card(
    tr: Labels,
    plan: Plan,
    result,
    bought: bool = False,
    calibration: CalibrationUpload | None = None,
    notes: tuple[str, ...] = (),
    kept: bool = False,
) -> None:
    """The chosen plan's figures with their bands, the planner's warnings in the page's language
    (``notes``: the request's, ``request_texts``), and the near tie, idle and batch call-outs."""
    deltas = card_deltas(tr, plan)
    with st.container(border=True):
        st.subheader(tr("plan_card", model=plain(plan.model.name)))
        if trains_too_long(plan, result.risk):  # the planner's warning (long_job_warnings), in the page's language
            hours = judged_hours(plan, result.risk) or 0.0
            st.warning(tr("long_job", time=duration(tr, hours), risk=result.risk.value))
        for note in notes:
            st.warning(note)
        if (memory := memory_warning_text(tr, plan, result)) is not None:
            st.warning(memory, icon=":material/memory:")
        for row in filter(None, card_rows(tr, plan, bought)):
            for column, (_, key, value) in zip(st.columns([width for width, _, _ in row]), row, strict=True):
                help_text = card_help(tr, key)
                column.metric(tr(key), value, deltas.get(key), help=help_text, delta_color="off", delta_arrow="off")
        for line in card_captions(tr, plan, result, calibration, bought, kept):
            st.caption(line)
        callouts = (
            (near_tie_text(tr, result), "⚖️"),
            (over_budget_text(tr, result), ":material/trending_up:"),  # a much faster plan a little over the budget
            (idle_text(tr, result), "💤"),  # the inventory left idle by the exact batch (issue 28)
            (vary_batch_text(tr, result), "📏"),  # what the exact-batch rule costs against --vary-batch
            # a batch of one sequence per GPU, where tp/pp/cp split each (trial s28d: 📦 drew as an empty
            # box; review s28b: 📏 is the vary-batch callout's): Streamlit's bundled icon font
            (larger_batch_text(tr, result), ":material/stacks:"),
        )
        for text, icon in callouts:
            if text:
                st.info(text, icon=icon)
        with st.expander(tr("why_this_plan")):
            st.markdown("\n".join(f"- {note}" for note in plan_note_texts(tr, plan)))
