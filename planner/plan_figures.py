"""The relations a plan's figures keep among themselves (``Plan.check``): a hand-edited price,
token budget or step time leaves the others describing another job, and explain or emit would
print them as this one's.

- throughput = tokens per step / step time (planner/model/estimate.py ``score``);
- cost = time-to-train x billed GPUs x price, the billed GPUs whole rental units of the GPU's
  offers (``billed_gpus``: 1, or a provider's node);
- the steps' own time = training tokens / throughput = time-to-train x goodput, unless failures
  outpace progress (the goodput is then held at MIN_GOODPUT, planner/model/goodput.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from planner.catalog.terms import billed_hours
from planner.model.goodput import MIN_GOODPUT
from planner.units import SECONDS_PER_HOUR

if TYPE_CHECKING:
    from planner.catalog.hardware import GPUSpec
    from planner.plan import Plan

# Figures written by the planner keep their relations to float rounding; an edit breaks them by more.
RELATION_TOLERANCE = 1e-6

RERUN = "the figures are of another job; re-run estimate or plan"


def figures_problem(plan: Plan, gpu: GPUSpec) -> str | None:
    """The first relation ``plan``'s figures break, in words, or None."""
    e = plan.estimate
    near = lambda a, b: math.isclose(a, b, rel_tol=RELATION_TOLERANCE)  # noqa: E731
    if e.time.step_s > 0 and not near(e.throughput.tokens_per_s, e.global_batch_tokens / e.time.step_s):
        return (
            f"estimate.throughput.tokens_per_s {e.throughput.tokens_per_s:,.1f} is not global_batch_tokens / "
            f"step_s = {e.global_batch_tokens / e.time.step_s:,.1f}: {RERUN}"
        )
    hours, price = e.time_to_train_h, plan.price_per_gpu_hour_usd
    if hours and price and e.cost_usd is not None:
        units = {1, *(o.gpus_per_offer for o in gpu.offers)}
        billed = {math.ceil(plan.num_gpus / u) * u for u in units}
        paid = float(billed_hours(hours, e.term))  # a reserved term's whole (``TermBilling``)
        if not any(near(e.cost_usd, paid * n * price) for n in billed):
            return (
                f"estimate.cost_usd {e.cost_usd:,.2f} is not the hours billed x GPUs x price_per_gpu_hour_usd = "
                f"{paid * plan.num_gpus * price:,.2f}: {RERUN}"
            )
    g, tokens = e.goodput, plan.training_tokens
    if hours and g is not None and tokens and e.throughput.tokens_per_s > 0 and g.goodput_fraction > MIN_GOODPUT:
        steps_s, useful_s = tokens / e.throughput.tokens_per_s, hours * SECONDS_PER_HOUR * g.goodput_fraction
        if not math.isclose(steps_s, useful_s, rel_tol=1e-4):
            return (
                f"training_tokens {tokens:,.0f} at {e.throughput.tokens_per_s:,.1f} tokens/s take "
                f"{steps_s / SECONDS_PER_HOUR:,.2f} h, not time_to_train_h x goodput = "
                f"{useful_s / SECONDS_PER_HOUR:,.2f} h: {RERUN}"
            )
    return None
