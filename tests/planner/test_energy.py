"""Energy at the wall (planner/model/energy.py): one rule for the estimate, the fleet and the app."""

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.model.energy import energy_kwh, gpu_wall_power_w, max_power_w
from planner.model.estimate import estimate
from planner.model.settings import DEFAULT_SETTINGS
from planner.search.ownership import GpuEconomics, TcoAssumptions, break_even

CATALOG = load_catalog()


@pytest.mark.parametrize(("gpu_id", "dgx_kw"), [("h100-sxm", 10.2), ("h200-sxm", 10.2), ("a100-80gb-sxm", 6.5)])
def test_a_dgx_draws_its_datasheet_maximum_at_full_load(gpu_id: str, dgx_kw: float) -> None:
    gpu = CATALOG.gpu(gpu_id)
    assert 8 * max_power_w(gpu.tdp_watts, gpu.node_power_w_per_gpu) == pytest.approx(dgx_kw * 1000)
    full = DEFAULT_SETTINGS.but(power_fraction_of_max=1.0)
    assert 8 * gpu_wall_power_w(gpu, full) == pytest.approx(dgx_kw * 1000)
    # the host, NICs and switches are counted: far above the GPUs' own 0.8 x TDP
    assert gpu_wall_power_w(gpu) > 1.5 * DEFAULT_SETTINGS.power_fraction_of_max * gpu.tdp_watts


def test_a_gpu_without_a_server_figure_adds_the_host_share() -> None:
    l4 = CATALOG.gpu("l4")
    assert l4.node_power_w_per_gpu is None
    host = DEFAULT_SETTINGS.host_power_fraction_of_tdp
    assert gpu_wall_power_w(l4) == pytest.approx(DEFAULT_SETTINGS.power_fraction_of_max * l4.tdp_watts * (1 + host))


def test_estimate_fleet_and_app_price_the_same_energy() -> None:
    e = estimate(
        get_preset("llama3-8b"),
        "h100-sxm",
        Layout(),
        TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=1),
        num_gpus=8,
        catalog=CATALOG,
        training_tokens=1e10,
    )
    gpu_hours = e.time_to_train_h * 8
    wall = gpu_wall_power_w(CATALOG.gpu("h100-sxm"))
    assert e.energy_kwh == pytest.approx(energy_kwh(gpu_hours, wall, DEFAULT_SETTINGS.pue))
    assert e.energy_kwh == pytest.approx(gpu_hours * 1.275 * 0.8 * 1.25)  # DGX H100: 10.2 kW / 8
    # Owning with nothing but power to pay (no depreciation, hosting or staff), busy all the time:
    usd_per_kwh = 0.1
    tco = TcoAssumptions(residual_fraction=1.0, hosting_usd_per_gpu_month=0.0, electricity_usd_per_kwh=usd_per_kwh)
    economics = GpuEconomics(purchase_usd=1.0, wall_power_w=wall)
    fleet = break_even("h100-sxm", economics, tco, gpu_hours, rent_usd_per_gpu_hour=10.0)
    assert fleet.owned_fixed_usd + fleet.owned_usd_per_busy_hour * gpu_hours == pytest.approx(
        e.energy_kwh * usd_per_kwh
    )
    from ui import app_core

    app = app_core.amortised_price_per_gpu_hour(1.0, wall, 1.0, tco)
    assert app * gpu_hours == pytest.approx(e.energy_kwh * usd_per_kwh)


def test_the_fleet_pue_is_the_modelling_setting() -> None:
    assert TcoAssumptions().pue == DEFAULT_SETTINGS.pue
