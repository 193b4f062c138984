"""The app's rent choices by price kind (ui/gpu_table.py with_price_kind, issue 28)."""

from support.app import CATALOG, EN, card, planned, request_for, run_app

from planner.catalog.prices import catalog_with_price_kind
from ui import app_core


def test_spot_rent_plans_at_the_spot_median_without_gpus_that_have_none() -> None:
    at = run_app(pricing="spot")
    spot = catalog_with_price_kind(CATALOG, "spot", ["h100-sxm"])
    note = EN(
        "price_kind_note",
        kind="spot",
        prices=f"h100-sxm ${spot.gpu('h100-sxm').price_per_gpu_hour_usd:.2f}",
        dropped=" (a100-80gb-sxm)",
    )
    assert note in [c.value for c in at.sidebar.caption]
    request = request_for(gpus={"h100-sxm": None}, price_kind="spot")
    assert card(at)[EN("card_cost")] == app_core.money(planned(request).plan.estimate.cost_usd)
