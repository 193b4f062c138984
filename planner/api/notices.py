"""What the planner says beside an answer: warnings a plan or an estimate carries, and the
words a deadline or budget diagnosis gains from the risk it was judged at."""

from __future__ import annotations

from planner.accuracy import Risk
from planner.catalog.hardware import Catalog, load_catalog
from planner.catalog.prices import dearer_than_on_demand, offers_of
from planner.errors import Constraint, InfeasiblePlan
from planner.fmt import duration_words
from planner.model.structure import context_extension_warning
from planner.plan import Plan
from planner.request import PlanRequest
from planner.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

# A plan that trains for longer than this gets a warning: GPUs, prices and methods rarely hold
# for a year, and "16 H100 for 1,244 days" was answered without a word (issue 10).
LONG_JOB_WARNING_DAYS = 365.0


def judged_at_risk(answer: InfeasiblePlan, risk: Risk) -> InfeasiblePlan:
    """A deadline or budget diagnosis says the quantile its times and costs are judged at (the
    plans' tables show the model's median, so '$3.2M > $3.0M' beside plans of $2.9M needs it)."""
    if risk == Risk.P50 or answer.constraint not in (Constraint.DEADLINE, Constraint.BUDGET):
        return answer
    detail = f"{answer.detail} (at --risk {risk.value}, each plan's {risk.quantile:.0%} quantile; p50: the median)"
    return InfeasiblePlan(answer.constraint, detail, answer.fix, required=answer.required, available=answer.available)


def trains_too_long(chosen: Plan) -> bool:
    """Whether the plan trains for over LONG_JOB_WARNING_DAYS (the CLI warns, the app's card too)."""
    hours = chosen.estimate.time_to_train_h
    return hours is not None and hours * SECONDS_PER_HOUR > LONG_JOB_WARNING_DAYS * SECONDS_PER_DAY


def price_warnings(request: PlanRequest, catalog: Catalog, chosen: Plan) -> tuple[str, ...]:
    """Warnings of the request's price kind: the GPU types a whole-catalog search left out for
    want of its offer (``unpriced_types``), and the chosen GPU rented above its on-demand median
    (``dearer_than_on_demand``; ``catalog``: before the kind priced it)."""
    dropped = unpriced_types(request, catalog)
    left_out = (
        f"--price-kind {request.price_kind}: {len(dropped)} GPU types without such an offer were not searched"
        f" ({', '.join(dropped)}); --gpus with --price prices them"
    )
    words = (left_out,) if dropped else ()
    if any(catalog.gpu(g).id == chosen.gpu for g in request.price_overrides):  # ids match case-blind
        return words
    warning = dearer_than_on_demand(catalog.gpu(chosen.gpu), request.price_kind)
    return words if warning is None else (*words, warning)


def unpriced_types(request: PlanRequest, catalog: Catalog) -> list[str]:
    """The GPU types a whole-catalog search under a price kind other than on-demand leaves out:
    those without an offer of that kind (``catalog_with_price_kind`` drops them)."""
    if request.gpus or request.price_kind in (None, "on-demand"):
        return []
    return sorted(g for g, gpu in catalog.gpus.items() if not offers_of(gpu, request.price_kind))


def estimate_warnings(p: Plan, price_kind: str | None, price: float | None = None) -> tuple[str, ...]:
    """What ``estimate`` warns of, as ``plan`` does: positions beyond the pretrained context, a
    price kind dearer than on-demand (unless ``price`` quotes the GPU), a job over a year."""
    context = context_extension_warning(p.model, p.training.seq_len)
    dearer = None if price is not None else dearer_than_on_demand(load_catalog().gpu(p.gpu), price_kind)
    long = long_job_warnings(p, fix="trainplan plan --deadline-days sizes the GPU count for a date")
    return tuple(w for w in (context, dearer, *long) if w)


def long_job_warnings(
    chosen: Plan, fix: str = "a deadline (--deadline-days) sizes the GPU count for a date"
) -> tuple[str, ...]:
    """A warning when the chosen plan trains for over LONG_JOB_WARNING_DAYS, with ``fix``."""
    if not trains_too_long(chosen):
        return ()
    hours = chosen.estimate.time_to_train_h or 0.0
    return (f"the plan trains for {duration_words(hours * SECONDS_PER_HOUR)}, over a year: {fix}",)
