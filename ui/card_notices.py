"""The planner's warnings of a plan in the page's language: the card's (``request_texts``) and the
layout explorer's (``estimate_texts``), as the CLI's ``search_warnings`` and ``estimate_warnings``.
Where the planner gives a typed record the card words its fields (the CLI says its ``words()``;
parity trial s50: the card lacked a job shorter than its start-up, planner/api/fixed_cost.py, and a
plan that fits only by a memory factor measured on another shape, planner/api/calibration_notices.py)."""

from __future__ import annotations

from planner.api import PlanRequest, plan_commitment
from planner.api.accum_notices import defers_reduction, regathers_zero2
from planner.api.batch_notices import batch_beyond_published, batch_beyond_published_values
from planner.api.calibration_notices import ExtrapolatedMemory, extrapolated_memory
from planner.api.fixed_cost import FixedCostJob, fixed_cost_job
from planner.api.network_notices import CURVE_BY_NODES_WORDS, CurveElsewhere, curve_elsewhere
from planner.api.notices import (
    a2a_exposed_under_megatron,
    gpu_dearer,
    host_staged,
    megatron_lm_after_its_era,
    selective_under_megatron,
    serial_host,
    zero3_across_nodes,
)
from planner.api.price_notices import OneOfferRent, SpotBeyondTraces, one_offer_rent, spot_beyond_traces
from planner.catalog.hf_config import encoder_sections
from planner.errors import RuleViolation
from planner.model.profiles import own_model_profile
from planner.plan import Plan
from planner.request import hf_moe_stack, left_out_gpus
from ui.cached import catalog
from ui.i18n import Labels, plain
from ui.infeasible_words import app_words
from ui.messages import commitment_text, dearer_text, short_duration


def plan_notice_texts(tr: Labels, plan: Plan) -> tuple[str, ...]:
    """Each of the two the plan has, worded (a sequence past the pretrained context is said under the
    sidebar's input, ui/sidebar.py, for the card and the explorer alike)."""
    short, memory, curve = fixed_cost_job(plan), extrapolated_memory(plan), curve_elsewhere(plan)
    return (
        *(() if short is None else (fixed_cost_text(tr, short),)),
        *(() if memory is None else (extrapolated_memory_text(tr, memory),)),
        *(() if curve is None else (curve_elsewhere_text(tr, curve),)),
    )


def curve_elsewhere_text(tr: Labels, c: CurveElsewhere) -> str:
    """The CLI's ``curve_elsewhere_warnings`` in the page's language."""
    likely = tr("curve_elsewhere_slower" if c.slower else "curve_elsewhere_faster")
    values = dict(measured=c.measured_nodes, nodes=c.nodes, evidence=CURVE_BY_NODES_WORDS, likely=likely)
    return tr("curve_elsewhere", network=plain(c.network), **values)


def fixed_cost_text(tr: Labels, f: FixedCostJob) -> str:
    times = dict(training=short_duration(tr, f.training_s), startup=short_duration(tr, f.startup_s))
    wall = short_duration(tr, f.wall_s)
    steps = tr("steps_one") if f.steps == 1 else tr("steps_many", count=f.steps)
    return tr("fixed_cost_job", steps=steps, batch=f.batch_tokens, wall=wall, goodput=f.goodput, **times)


def extrapolated_memory_text(tr: Labels, m: ExtrapolatedMemory) -> str:
    values = dict(factor=m.factor, alone=m.alone_gib, usable=m.usable_gib)
    return tr("extrapolated_memory", job=plain(m.job), shape=plain(m.shape), **values)


def request_texts(tr: Labels, request: PlanRequest, plan: Plan, shown: tuple[Plan, ...] = ()) -> tuple[str, ...]:
    """The planner's warnings of the request in the page's language, for the card: the GPU types the
    attention kernel or precision leaves out, then ``estimate_texts`` of the chosen plan with a price
    kind above on-demand said for each GPU of ``shown`` too (``PlanResult.priced_plans``: the Top
    plans' rows and the side lines' plans; trial s48 M4: Top plans' rows had none; review48: nor had
    the near tie's, over-budget, idle or varied batch's plan the card names)."""
    return (*left_out_texts(tr, request), *estimate_texts(tr, request, plan, shown))


def hf_experts_text(tr: Labels, request: PlanRequest, plan: Plan) -> str:
    """A MoE family on Hugging Face's modules: what the native decoder lacks, a word per feature, not
    the CLI's ``field=value`` (app53 M6: "family='deepseek_v2', ... num_experts=160"), and that its
    bands leave out the modules' expert-by-expert slowdown unless measured rows of such a run set them."""
    gaps = tr.join(tr(f"native_gap_{gap.feature}", value=plain(gap.value)) for gap in request.hf_experts_gaps)
    u = plan.estimate.uncertainty
    measured = u is not None and u.validated and {"moe", "hf_modules"} <= set(u.regime_features)
    band = "" if measured else tr("hf_experts_band_out")
    return tr.sentences(tr("hf_experts", model=plain(plan.model.name), missing=gaps), band)


def estimate_texts(tr: Labels, request: PlanRequest, plan: Plan, shown: tuple[Plan, ...] = ()) -> tuple[str, ...]:
    """The planner's warnings of one estimate in the page's language, as the CLI's ``estimate_warnings``
    (the card's and the layout explorer's; parity trial s50: the explorer said the reserved term
    alone): a MoE family on Hugging Face's modules (PlanRequest.hf_experts_missing), a price kind
    above on-demand for the plan's GPU (and ``shown``'s), a reserved term longer than the job, what
    the stack and layout make of the plan, the price's assumptions, ``plan_notice_texts``."""
    missing = request.hf_experts_missing
    own_hf = missing is None and hf_moe_stack(plan.model, request.stack)
    gpus = dict.fromkeys(p.gpu for p in (plan, *shown))
    dearer = [d for d in (gpu_dearer(request, catalog(), g) for g in gpus) if d is not None]
    term = plan_commitment(request.price_kind, plan)
    gpu, encoders = catalog().gpu(plan.gpu), encoder_sections(request.hf_config_path)
    return (
        *(() if missing is None else (hf_experts_text(tr, request, plan),)),
        *((tr("hf_experts_stack", model=plain(plan.model.name), stack=request.stack.value),) if own_hf else ()),
        *(dearer_text(tr, d) for d in dearer),
        *(() if term is None else (commitment_text(tr, term),)),
        # trial s28b: the CLI's warnings of this session, in the page's language
        *((tr("encoders_not_planned", sections=tr.join(list(encoders))),) if encoders else ()),
        *((tr("selective_under_megatron"),) if selective_under_megatron(plan) else ()),
        *((tr("a2a_exposed"),) if a2a_exposed_under_megatron(plan) else ()),
        *((serial_host_text(tr, plan),) if serial_host(plan) else ()),
        *(
            (tr("own_model_profile", model=plain(plan.model.name)),)
            if own_model_profile(plan.model, plan.stack)
            else ()
        ),
        *(
            (tr("host_staged", gpu=gpu.id, gbps=gpu.scaleup_bandwidth_bytes_per_s / 1e9),)
            if host_staged(plan, gpu)
            else ()
        ),
        *((tr("zero3_across_nodes", nodes=plan.num_nodes),) if zero3_across_nodes(plan) else ()),
        *((deferred_reduction_text(tr, plan),) if defers_reduction(plan) else ()),
        *((app_words(tr, tr("megatron_lm_era", gpu=gpu.id)),) if megatron_lm_after_its_era(plan, gpu) else ()),
        *((batch_beyond_published_text(tr, plan),) if batch_beyond_published(plan) else ()),
        *price_assumption_texts(tr, plan),
        *plan_notice_texts(tr, plan),
    )


def deferred_reduction_text(tr: Labels, plan: Plan) -> str:
    """The CLI's ``defers_reduction_warnings`` in the page's language."""
    zero2 = tr("deferred_reduction_zero2") if regathers_zero2(plan) else ""
    return tr("deferred_reduction", stack=plan.stack.value, accum=plan.training.grad_accum, zero2=zero2)


def price_assumption_texts(tr: Labels, plan: Plan) -> tuple[str, ...]:
    """The CLI's ``price_assumption_warnings`` in the page's language: one provider's rate for a
    multi-node plan, spot capacity past the traced scale (buyer trial s50 H1, H3)."""
    rent, spot = one_offer_rent(plan), spot_beyond_traces(plan)
    return (
        *(() if rent is None else (one_offer_rent_text(tr, rent),)),
        *(() if spot is None else (spot_beyond_traces_text(tr, spot),)),
    )


def one_offer_rent_text(tr: Labels, rent: OneOfferRent) -> str:
    o = rent.offer
    provider = plain(tr.provider(o.provider))
    values = dict(gpu=rent.gpu, rate=o.usd_per_gpu_hour, offer=plain(o.offer), date=o.date, billed=rent.billed_gpus)
    return tr("one_offer_rent", provider=provider, fix=tr("price_fix_table"), **values)


def spot_beyond_traces_text(tr: Labels, spot: SpotBeyondTraces) -> str:
    wait = short_duration(tr, spot.wait_s)
    return tr("spot_beyond_traces", gpus=spot.gpus, preemptions=spot.preemptions, wait=wait, traced=spot.traced_gpus)


def batch_beyond_published_text(tr: Labels, plan: Plan) -> str:
    """The card's words of ``batch_beyond_published`` (the CLI's: ``batch_beyond_published_warnings``)."""
    return tr("batch_beyond_published", **batch_beyond_published_values(plan))


def serial_host_text(tr: Labels, plan: Plan) -> str:
    """The card's words of ``serial_host`` (the CLI's: ``serial_host_warnings``)."""
    t = plan.estimate.time
    return tr("serial_host", host_s=t.breakdown_s.host_stall, step_s=t.step_s)


def left_out_texts(tr: Labels, request: PlanRequest) -> list[str]:
    """The GPU types the request's kernel or precision leaves out: one line per cause, not one box
    per GPU (trial s25: flash3 filled the card with 18 boxes)."""
    left_out = left_out_gpus(request, catalog())
    by_precision = [g for g, problem in left_out.items() if isinstance(problem, RuleViolation)]
    by_kernel = [g for g in left_out if g not in by_precision]
    texts = []
    if by_kernel:
        kernel = request.attention.value if request.attention is not None else ""
        texts.append(tr("gpus_left_out_kernel", kernel=kernel, gpus=tr.join(by_kernel)))
    if by_precision:
        texts.append(tr("gpus_left_out_precision", precision=request.precision.value, gpus=tr.join(by_precision)))
    return texts
