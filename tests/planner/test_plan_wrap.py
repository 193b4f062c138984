"""One constructor for a Plan (planner/api/wrap.py): a searched row and the same configuration
given to ``build_plan`` are the same plan, and a re-estimate at the plan's own rate keeps every
field that says where that rate comes from."""

import pytest

from planner.api import PlanRequest, build_plan, plan, replan, restack
from planner.api.wrap import PriceProvenance
from planner.catalog.models import get_preset
from planner.catalog.prices import PriceBasis
from planner.layout import Layout, TrainingConfig
from planner.model.run_loss_inputs import RunLossInputs
from planner.model.stacks import Stack
from planner.plan import Plan

# the estimate's record of the request's batch, which only a search fills in
SEARCH_ONLY = {"requested_global_batch_tokens", "batch_varied", "batch_defaulted"}


def test_a_searched_plan_is_the_plan_build_plan_makes_of_its_configuration() -> None:
    losses = RunLossInputs(failure_rate_x=2.0)
    request = PlanRequest(
        model=get_preset("llama3-8b"),
        training_tokens=1e10,
        gpus={"h100-sxm": 16},
        price_kind="spot",
        network="RoCE-400G",  # the catalog's spelling is kept, whoever is asked
        run_losses=losses,
    )
    searched = plan(request).plan
    built = build_plan(
        request.model,
        searched.gpu,
        searched.layout,
        searched.training,
        num_gpus=searched.num_gpus,
        num_nodes=searched.num_nodes,
        training_tokens=request.training_tokens,
        price_kind="spot",
        network="RoCE-400G",
        run_losses=losses,
    )
    assert (searched.network, searched.price_kind, searched.price_basis) == ("roce-400g", "spot", PriceBasis.SPOT)
    assert searched.price_offers and searched.run_losses == losses
    assert searched.model_dump(exclude={"estimate"}) == built.model_dump(exclude={"estimate"})
    assert searched.estimate.model_dump(exclude=SEARCH_ONLY) == built.estimate.model_dump(exclude=SEARCH_ONLY)


def test_a_re_estimate_at_the_plans_own_rate_keeps_where_that_rate_comes_from() -> None:
    """restack passes an on-demand median on as a price (``price_args``), which alone would read as
    the user's own, with no offers behind it: ``with_price_basis`` puts back every provenance field."""
    assert set(PriceProvenance._fields) <= set(Plan.model_fields)
    p = build_plan(get_preset("llama3-8b"), "h100-sxm", Layout(dp_shard=8), TrainingConfig(), num_gpus=8)
    assert p.price_basis not in (None, PriceBasis.USER) and p.price_offers
    again = restack(p, Stack.TORCHTITAN)
    assert again.stack == Stack.TORCHTITAN
    assert PriceProvenance.of_plan(again) == PriceProvenance.of_plan(p)
    assert again.price_per_gpu_hour_usd == p.price_per_gpu_hour_usd


@pytest.mark.parametrize("kind", ["spot", "reserved-1y"])
def test_a_replanned_plan_lists_the_offers_of_its_own_price_kind(kind: str) -> None:
    """A spot plan replanned (``trainplan run --auto-replan``) kept its spot price but recorded no
    kind and listed the on-demand offers behind it ("median of spot offers: 6 of them", the
    on-demand count)."""
    model, layout = get_preset("llama3-8b"), Layout(dp_shard=8)
    p = build_plan(model, "h100-sxm", layout, TrainingConfig(), num_gpus=8, training_tokens=1e10, price_kind=kind)
    assert p.price_offers and {o.kind for o in p.price_offers} == {kind}
    for again in (replan(p, 1.2), restack(p, Stack.TORCHTITAN)):
        assert PriceProvenance.of_plan(again) == PriceProvenance.of_plan(p)
        assert again.price_per_gpu_hour_usd == p.price_per_gpu_hour_usd
