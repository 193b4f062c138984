"""What a plan's price assumes beyond its figure (buyer trial s50): that one provider rents the
whole count at its one listed rate (H1: 4,096 MI325X at TensorWave's $1.95 beat every median-priced
type, with only a ``*`` to say so), and spot capacity at a scale no trace behind the preemption's
wait measured (H3: 4,096 spot GPUs, with an 80-minute wait read from traces of 1-16 single-GPU VMs)."""

from __future__ import annotations

from planner.catalog.prices import PriceBasis
from planner.fmt import duration_words
from planner.plan import Plan

# The most GPUs any spot capacity trace behind ModelingSettings.spot_capacity_wait_s needed at once
# (docs/spot-capacity-wait.md: 16 GCP a3-highgpu-1g in one zone, AWS's 16-node p3.2xlarge
# availability: single-GPU VMs, so 16 GPUs; review s50 M1: compared with 8-GPU nodes before).
SPOT_WAIT_TRACED_GPUS = 16


def one_offer_warnings(p: Plan) -> tuple[str, ...]:
    """The plan's cost rests on one provider's listed rate: it assumes that provider rents every
    GPU the plan bills, for the whole run, at that rate (said from two nodes on: the cost line
    names the provider and date for any plan)."""
    if p.price_basis != PriceBasis.ONE_OFFER or len(p.price_offers) != 1 or p.num_nodes <= 1:
        return ()
    o = p.price_offers[0]
    return (
        f"{p.gpu} is priced at one provider's listed rate, ${o.usd_per_gpu_hour:,.2f}/GPU-h ({o.provider} {o.offer},"
        f" {o.date}), not a median of offers: the cost assumes {o.provider} rents {p.billed_gpus:,} of"
        " them at that rate for the whole run; --price sets your own quote",
    )


def spot_scale_warnings(p: Plan) -> tuple[str, ...]:
    """A spot plan on more GPUs than any capacity trace needed: its waits are extrapolated."""
    g = p.estimate.goodput
    if g is None or not g.spot_preemptions or p.num_gpus <= SPOT_WAIT_TRACED_GPUS:
        return ()
    return (
        f"spot capacity for {p.num_gpus:,} GPUs: each of the {g.spot_preemptions:,.0f} expected preemptions waits"
        f" {duration_words(g.capacity_wait_s)} for the nodes back, a wait measured on traces of 1 to"
        f" {SPOT_WAIT_TRACED_GPUS} single-GPU VMs (docs/spot-capacity-wait.md); {p.num_gpus:,} spot GPUs in one zone"
        " at once is not measured and may wait far longer, or not be had",
    )


def price_assumption_warnings(p: Plan) -> tuple[str, ...]:
    """Both, for plan's and estimate's warnings."""
    return one_offer_warnings(p) + spot_scale_warnings(p)
