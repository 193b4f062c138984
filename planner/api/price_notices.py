"""What a plan's price assumes beyond its figure (buyer trial s50): that one provider rents the
whole count at its one listed rate (H1: 4,096 MI325X at TensorWave's $1.95 beat every median-priced
type, with only a ``*`` to say so), and spot capacity at a scale no trace behind the preemption's
wait measured (H3: 4,096 spot GPUs, with an 80-minute wait read from traces of 1-16 single-GPU VMs).

Each is a typed record (``one_offer_rent``, ``spot_beyond_traces``) whose ``words()`` are the CLI's
warning and whose fields the app words in the page's language (ui/plan_card.py request_texts)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.prices import PriceBasis, PriceOffer
from planner.fmt import duration_words
from planner.plan import Plan

# The most GPUs any spot capacity trace behind ModelingSettings.spot_capacity_wait_s needed at once
# (docs/spot-capacity-wait.md: 16 GCP a3-highgpu-1g in one zone, AWS's 16-node p3.2xlarge
# availability: single-GPU VMs, so 16 GPUs; review s50 M1: compared with 8-GPU nodes before).
SPOT_WAIT_TRACED_GPUS = 16


@dataclass(frozen=True)
class OneOfferRent:
    """A multi-node plan's cost rests on one provider's listed rate for all ``billed_gpus``."""

    gpu: str
    billed_gpus: int
    offer: PriceOffer

    def words(self) -> str:
        o = self.offer
        return (
            f"{self.gpu} is priced at one provider's listed rate, ${o.usd_per_gpu_hour:,.2f}/GPU-h ({o.provider}"
            f" {o.offer}, {o.date}), not a median of offers: the cost assumes {o.provider} rents"
            f" {self.billed_gpus:,} of them at that rate for the whole run; --price sets your own quote"
        )


@dataclass(frozen=True)
class SpotBeyondTraces:
    """A spot plan on more GPUs than any capacity trace behind its wait needed."""

    gpus: int
    preemptions: float
    wait_s: float
    traced_gpus: int = SPOT_WAIT_TRACED_GPUS

    def words(self) -> str:
        return (
            f"spot capacity for {self.gpus:,} GPUs: each of the {self.preemptions:,.0f} expected preemptions waits"
            f" {duration_words(self.wait_s)} for the nodes back, a wait measured on traces of 1 to"
            f" {self.traced_gpus} single-GPU VMs (docs/spot-capacity-wait.md); {self.gpus:,} spot GPUs in one zone"
            " at once is not measured and may wait far longer, or not be had"
        )


def one_offer_rent(p: Plan) -> OneOfferRent | None:
    """The plan's cost rests on one provider's listed rate: it assumes that provider rents every
    GPU the plan bills, for the whole run, at that rate (said from two nodes on: the cost line
    names the provider and date for any plan)."""
    if p.price_basis != PriceBasis.ONE_OFFER or len(p.price_offers) != 1 or p.num_nodes <= 1:
        return None
    return OneOfferRent(p.gpu, p.billed_gpus, p.price_offers[0])


def spot_beyond_traces(p: Plan) -> SpotBeyondTraces | None:
    """A spot plan on more GPUs than any capacity trace needed: its waits are extrapolated."""
    g = p.estimate.goodput
    if g is None or not g.spot_preemptions or p.num_gpus <= SPOT_WAIT_TRACED_GPUS:
        return None
    return SpotBeyondTraces(p.num_gpus, g.spot_preemptions, g.capacity_wait_s)


def price_assumption_warnings(p: Plan) -> tuple[str, ...]:
    """Both, for plan's and estimate's warnings."""
    return tuple(n.words() for n in (one_offer_rent(p), spot_beyond_traces(p)) if n is not None)
