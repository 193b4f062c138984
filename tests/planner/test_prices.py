"""Prices as data (planner/catalog/prices.py, hw_catalog/prices): providers' dated, sourced offers
per kind, ``--price-kind`` and spot interruptions in goodput."""

import re
import statistics
from pathlib import Path

import pytest

from planner.api import PlanRequest, build_plan, plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.catalog.prices import PRICE_KINDS, PriceOffer, catalog_with_price_kind, dearer_than_on_demand, offers_of
from planner.errors import CatalogError
from planner.layout import Layout, TrainingConfig
from planner.model.settings import DEFAULT_SETTINGS

CATALOG = load_catalog()


def test_every_offer_has_a_kind_a_date_and_a_source() -> None:
    offers = [o for gpu in CATALOG.gpus.values() for o in gpu.offers]
    assert {o.kind for o in offers} == set(PRICE_KINDS)
    for o in offers:
        assert o.kind in PRICE_KINDS and re.fullmatch(r"\d{4}-\d{2}-\d{2}", o.date) and len(o.source) > 20
        assert o.provider and o.gpus_per_offer >= 1


def test_the_default_price_is_the_on_demand_median() -> None:
    """The GPU file's price (every plan's default) is the median of its on-demand offers, rounded to cents."""
    checked = 0
    for gpu in CATALOG.gpus.values():
        offers = offers_of(gpu, "on-demand")
        if offers:
            median = statistics.median(o.usd_per_gpu_hour for o in offers)
            assert gpu.price_per_gpu_hour_usd == pytest.approx(median, abs=0.005), gpu.id
            checked += 1
    assert checked >= 10


def test_a_price_kind_prices_at_its_median_and_drops_gpus_without_one() -> None:
    spot = catalog_with_price_kind(CATALOG, "spot")
    h100 = spot.gpu("h100-sxm")
    assert h100.price_per_gpu_hour_usd == pytest.approx(statistics.median([6.571, 1.25]))
    assert "median of spot offers" in h100.sources["price_usd_per_gpu_hour"]
    assert "l4" not in spot.gpus
    # spot preemptions join the host failures goodput counts
    base = CATALOG.gpu("h100-sxm").node_failure_rate_per_node_hour
    assert h100.node_failure_rate_per_node_hour == pytest.approx(
        base + DEFAULT_SETTINGS.spot_interruptions_per_node_hour
    )
    # the SemiAnalysis one-year index, AWS's p5.48xlarge RI, Google's a3-highgpu-8g CUD, Azure's ND96isr H100 v5 RI
    assert catalog_with_price_kind(CATALOG, "reserved-1y").gpu("h100-sxm").price_per_gpu_hour_usd == pytest.approx(
        statistics.median([2.35, 5.418, 7.673, 7.8656])
    )
    assert catalog_with_price_kind(CATALOG, None) is CATALOG
    with pytest.raises(
        ValueError,
        match=r"no spot price for l4 .*or add an offer, or leave it out of --gpus \(a jobs file: of its rented types\)$",
    ):
        catalog_with_price_kind(CATALOG, "spot", ["l4"])
    # trial s28c: every named type without an offer at once, not the first of them per try
    with pytest.raises(ValueError, match=r"no spot price for l4, h20 in hw_catalog/prices; give each a price"):
        catalog_with_price_kind(CATALOG, "spot", ["h100-sxm", "l4", "h20"])
    with pytest.raises(ValueError, match="unknown price kind"):
        catalog_with_price_kind(CATALOG, "cheap")
    # on-demand keeps a GPU without offers at its (estimated) file price
    assert catalog_with_price_kind(CATALOG, "on-demand").gpu("l4") == CATALOG.gpu("l4")


def h100_estimate(kind: str | None, settings=DEFAULT_SETTINGS, term_filled: float = 0.0):
    """Llama 3 8B on 64 H100 for 1e11 tokens, rented at ``kind``'s median (None: the catalog's)."""
    return build_plan(
        get_preset("llama3-8b"),
        "h100-sxm",
        Layout(),
        TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=1),
        num_gpus=64,
        training_tokens=1e11,
        price_kind=kind,
        settings=settings,
        term_filled=term_filled,
    ).estimate


def test_spot_costs_less_and_takes_longer_with_its_interruptions() -> None:
    default, spot = h100_estimate(None), h100_estimate("spot")
    assert h100_estimate("on-demand").cost_usd == pytest.approx(default.cost_usd, rel=1e-3)  # 5.0725 against 5.07
    assert spot.time_to_train_h > default.time_to_train_h
    assert spot.goodput.expected_interruptions > default.goodput.expected_interruptions
    assert spot.cost_usd < default.cost_usd


def test_each_spot_preemption_waits_for_capacity_beside_its_lost_work() -> None:
    """Trial s30: a preemption was timed as a host failure (lost work and a restart) with no wait
    for a node to be had again. The wait is per preemption: k p wait of every wall hour."""
    default, spot = h100_estimate(None).goodput, h100_estimate("spot").goodput
    assert default.spot_preemptions is None and spot.spot_preemptions > 0
    assert spot.capacity_wait_s == DEFAULT_SETTINGS.spot_capacity_wait_s == 80 * 60
    assert default.capacity_wait_s == 0.0  # review s31: on-demand JSON said 4800
    # review s31: without a token budget the wait is charged in goodput and still said
    from ui.render_lines import goodput_line

    untimed = build_plan(
        get_preset("llama3-8b"), "h100-sxm", Layout(), TrainingConfig(seq_len=4096), num_gpus=64, price_kind="spot"
    ).estimate.goodput
    assert untimed.spot_preemptions is None and untimed.capacity_wait_s == 80 * 60
    assert "spot preemptions, each waiting 80.0 minutes for capacity" in goodput_line(untimed)
    no_wait = h100_estimate("spot", DEFAULT_SETTINGS.but(spot_capacity_wait_s=0.0)).goodput
    # W = work / (survived - waiting), waiting = k p wait (8 nodes): goodput falls by the share
    # waiting / survived of itself, survived being the share failures and restarts leave (0.9-1)
    waiting = 8 * DEFAULT_SETTINGS.spot_interruptions_per_node_hour * 80 / 60
    fall = 1 - spot.goodput_fraction / no_wait.goodput_fraction
    assert waiting <= fall <= waiting / 0.9


def _median(gpu_id: str, kind: str) -> float:
    return statistics.median(o.usd_per_gpu_hour for o in offers_of(CATALOG.gpu(gpu_id), kind))


def _rate(gpu_id: str, provider: str, kind: str) -> float | None:
    rates = [o.usd_per_gpu_hour for o in offers_of(CATALOG.gpu(gpu_id), kind) if o.provider == provider]
    return rates[0] if rates else None


def test_a_longer_commitment_prices_lower_at_each_provider() -> None:
    """At each provider a three-year term is cheaper than its one-year term, and that cheaper than its
    on-demand row where the catalog has one. Medians over providers need not be ordered: the
    reserved offers come from hyperscalers, the on-demand median also from neoclouds."""
    three_year = {(g.id, o.provider) for g in CATALOG.gpus.values() for o in offers_of(g, "reserved-3y")}
    assert {gpu for gpu, _ in three_year} >= {"h100-sxm", "h200-sxm", "a100-40gb-sxm", "a100-80gb-sxm"}
    assert {provider for _, provider in three_year} == {"AWS", "Google Cloud", "Azure"}
    for gpu, provider in three_year:
        three, one = _rate(gpu, provider, "reserved-3y"), _rate(gpu, provider, "reserved-1y")
        assert one is not None and three is not None and three < one, (gpu, provider)
        on_demand = _rate(gpu, provider, "on-demand")
        assert on_demand is None or one < on_demand, (gpu, provider)
    for gpu in ("a100-40gb-sxm", "a100-80gb-sxm"):
        assert _median(gpu, "reserved-3y") < _median(gpu, "reserved-1y") < _median(gpu, "on-demand"), gpu
    # the H100's one-year median (three hyperscalers and the index) sits above its on-demand median
    assert _median("h100-sxm", "reserved-1y") > _median("h100-sxm", "on-demand")


# "per GPU 23.77728 / 8 = 2.9722": the arithmetic a source shows from an instance price to a GPU's.
PER_GPU = re.compile(r"per GPU (\d+(?:\.\d+)?) / (\d+) = (\d+(?:\.\d+)?)")


def test_a_reserved_offer_shows_its_per_gpu_arithmetic_and_payment_option() -> None:
    """A provider's reserved offer (AWS and Azure RIs, Google CUDs) states its payment option and
    divides the instance price by its GPUs to the listed price (to the 4 decimals written)."""
    checked = 0
    for gpu in CATALOG.gpus.values():
        for o in gpu.offers:
            if o.kind.startswith("reserved") and o.region is not None:
                shown = PER_GPU.search(o.source)
                assert shown, o.offer
                instance, gpus, per_gpu = shown.groups()
                assert int(gpus) == o.gpus_per_offer and "Upfront" in o.offer and "read 2026-12-03" in o.source
                assert float(instance) / int(gpus) == pytest.approx(o.usd_per_gpu_hour, abs=5e-5), o.offer
                assert float(per_gpu) == pytest.approx(o.usd_per_gpu_hour, abs=5e-5), o.offer
                checked += 1
    assert checked >= 18  # AWS 6, Google Cloud 6, Azure 6


def test_a_three_year_plan_bills_its_reserved_price() -> None:
    """``price_kind="reserved-3y"`` rents the H100 at the median of AWS's p5.48xlarge RI (2.9722),
    Google's a3-highgpu-8g CUD (38.864381 / 8 = 4.858) and Azure's ND96isr H100 v5 RI (5.3953): Google's,
    by whole 8-GPU nodes, and costs less than on-demand for the same job."""
    reserved, on_demand = h100_estimate("reserved-3y", term_filled=1.0), h100_estimate("on-demand")
    assert reserved.cost_usd == pytest.approx(reserved.time_to_train_h * 64 * 38.864381 / 8, rel=1e-4)
    assert reserved.cost_usd < on_demand.cost_usd  # by the hour: other work fills the term
    whole = h100_estimate("reserved-3y")  # the job alone pays the whole term (trial s42 H2)
    assert whole.cost_usd == pytest.approx(3 * 8766 * 64 * 38.864381 / 8, rel=1e-4)
    with pytest.raises(ValueError, match="no reserved-3y price for b200"):
        catalog_with_price_kind(CATALOG, "reserved-3y", ["b200"])


def _price_file(tmp_path: Path, body: str) -> Path:
    (tmp_path / "prices").mkdir()
    (tmp_path / "prices" / "mine.toml").write_text('id = "mine"\nprovider = "Mine"\n' + body)
    return tmp_path


OFFER = 'gpu = "h100-sxm"\nkind = "spot"\nusd_per_gpu_hour = 2.0\ngpus_per_offer = 8\noffer = "x"\n'


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ("[[offers]]\n" + OFFER + 'source = "quote"\n', "field 'date': missing"),
        ("[[offers]]\n" + OFFER.replace("h100-sxm", "h999") + 'date = "2026-01-01"\nsource = "q"\n', "unknown GPU"),
        ("[[offers]]\n" + OFFER.replace("spot", "cheap") + 'date = "2026-01-01"\nsource = "q"\n', "expected one of"),
        (
            "[[offers]]\n" + OFFER.replace("spot", "on-demand") + 'date = "2026-01-01"\nsource = "q"\n'
            "interruptions_per_node_day = 1.0\n",
            "only a spot offer",
        ),
    ],
)
def test_a_bad_offer_is_refused_at_load(tmp_path: Path, body: str, error: str) -> None:
    with pytest.raises(CatalogError, match=error):
        load_catalog([_price_file(tmp_path, body)])


def test_a_user_offer_with_its_own_interruption_rate(tmp_path: Path) -> None:
    body = "[[offers]]\n" + OFFER + 'date = "2026-01-01"\nsource = "my quote"\ninterruptions_per_node_day = 2.4\n'
    catalog = load_catalog([_price_file(tmp_path, body)])
    mine = [o for o in catalog.gpu("h100-sxm").offers if o.provider == "Mine"]
    assert mine[0].interruptions_per_node_hour == pytest.approx(0.1)


def test_a_kind_whose_providers_rent_whole_nodes_bills_whole_nodes() -> None:
    """Every on-demand A100 40GB SXM offer is an 8-GPU node (p4d, ND96asr, Lambda 8x): a 4-GPU job
    pays for 8 under --price-kind; the default price (and --price) stays per GPU."""
    on_demand = catalog_with_price_kind(CATALOG, "on-demand")
    assert on_demand.gpu("a100-40gb-sxm").rent_unit_gpus == 8
    assert on_demand.gpu("h100-sxm").rent_unit_gpus == 1  # Nebius and RunPod rent single GPUs
    assert CATALOG.gpu("a100-40gb-sxm").rent_unit_gpus == 1
    assert on_demand.gpu("a100-40gb-sxm").with_price(2.0).rent_unit_gpus == 1

    def cost(kind, num_gpus):
        return build_plan(
            get_preset("gpt3-125m"),
            "a100-40gb-sxm",
            Layout(),
            TrainingConfig(seq_len=2048, micro_batch=1, grad_accum=1),
            num_gpus=num_gpus,
            training_tokens=1e9,
            price_kind=kind,
        ).estimate

    four, four_default = cost("on-demand", 4), cost(None, 4)
    price = on_demand.gpu("a100-40gb-sxm").price_per_gpu_hour_usd
    assert four.cost_usd == pytest.approx(four.time_to_train_h * 8 * price)
    assert four_default.cost_usd == pytest.approx(
        four_default.time_to_train_h * 4 * CATALOG.gpu("a100-40gb-sxm").price_per_gpu_hour_usd
    )


def _offer(kind: str, usd: float, provider: str) -> PriceOffer:
    return PriceOffer(
        provider=provider, kind=kind, usd_per_gpu_hour=usd, gpus_per_offer=8, offer="x", date="2026-12-03", source="t"
    )


def test_a_kind_dearer_than_on_demand_is_said_and_a_cheaper_one_is_not() -> None:
    """A term's median above the on-demand median (hyperscalers' terms against smaller clouds'
    on-demand rates) warns in plan's answer; one below, or a GPU whose price is overridden, does not."""
    gpu = CATALOG.gpu("h100-sxm").model_copy(
        update={
            "offers": (
                _offer("on-demand", 2.0, "Neocloud"),
                _offer("on-demand", 3.0, "Other"),
                _offer("reserved-1y", 4.0, "Hyperscaler"),
                _offer("reserved-3y", 1.5, "Hyperscaler"),
            )
        }
    )
    warning = dearer_than_on_demand(gpu, "reserved-1y")
    assert warning is not None and "$4.00" in warning and "$2.50" in warning and "Hyperscaler" in warning
    assert dearer_than_on_demand(gpu, "reserved-3y") is None and dearer_than_on_demand(gpu, None) is None
    catalog = CATALOG.model_copy(update={"gpus": {**CATALOG.gpus, gpu.id: gpu}})
    ask = dict(model=get_preset("gpt3-125m"), training_tokens=1e9, gpus={gpu.id: 8}, price_kind="reserved-1y")
    assert warning in plan(PlanRequest(**ask), catalog=catalog).warnings
    quoted = PlanRequest(**ask, price_overrides={gpu.id.upper(): 3.5})  # ids match case-blind
    assert not any("reserved-1y prices" in w for w in plan(quoted, catalog=catalog).warnings)


def test_one_providers_rate_is_said_as_such_and_still_starred() -> None:
    """App trial s45 M2: the MI325X's one TensorWave offer read "an estimate, not a median of listed
    on-demand offers". A GPU file whose source is one provider's rate says so; it keeps the ``*`` and
    the tie order of an estimate (no median stands behind it)."""
    from planner.catalog.prices import PriceBasis

    for gpu_id in ("mi325x", "b300", "rtx-4090"):
        gpu = CATALOG.gpu(gpu_id)
        assert gpu.price_basis == PriceBasis.ONE_OFFER and gpu.price_estimated, gpu_id
        assert gpu.price_basis.words == "one provider's listed rate, not a median of offers"
    assert CATALOG.gpu("h800").price_basis == PriceBasis.ESTIMATE and CATALOG.gpu("h800").price_estimated
    # buyer trial s45 L7: a "median over providers" of one on-demand offer is that provider's rate
    for gpu in CATALOG.gpus.values():
        if gpu.price_basis in (PriceBasis.CATALOG, PriceBasis.ONE_OFFER) and offers_of(gpu, "on-demand"):
            single = len(offers_of(gpu, "on-demand")) == 1
            assert (gpu.price_basis == PriceBasis.ONE_OFFER) == single, gpu.id
    assert CATALOG.gpu("a100-80gb-pcie").price_basis == PriceBasis.ONE_OFFER == CATALOG.gpu("h100-nvl").price_basis
    assert CATALOG.gpu("mi300x").price_basis == PriceBasis.CATALOG and not CATALOG.gpu("mi300x").price_estimated


def test_a_price_kind_over_one_offer_is_said_as_one_providers_rate():
    """Review s46 M5: --price-kind on-demand over the A100 80GB PCIe's one Azure offer still said
    "median of on-demand offers"; a kind's median of two offers is still a median."""
    from planner.catalog.prices import PriceBasis

    one = catalog_with_price_kind(CATALOG, "on-demand").gpu("a100-80gb-pcie")
    assert one.price_basis == PriceBasis.ONE_OFFER and one.price_estimated
    assert one.sources["price_usd_per_gpu_hour"].startswith("one on-demand offer [")
    two = catalog_with_price_kind(CATALOG, "spot").gpu("h100-sxm")
    assert two.price_basis == PriceBasis.SPOT and not two.price_estimated


def test_a_kind_priced_at_one_offer_is_said_as_that_offer_not_a_median() -> None:
    """Trial s48 L2: spot H200 warned "the median of 1 offers"; one offer is that provider's rate,
    named; two offers are still a median."""
    on_demand = (_offer("on-demand", 2.0, "Neocloud"), _offer("on-demand", 3.0, "Other"))
    one = CATALOG.gpu("h200-sxm").model_copy(update={"offers": (*on_demand, _offer("spot", 6.26, "Google Cloud"))})
    words = dearer_than_on_demand(one, "spot")
    assert words is not None and "one offer (Google Cloud)" in words and "median of 1" not in words
    assert "the offer and the median come from different providers" in words
    two = one.model_copy(update={"offers": (*one.offers, _offer("spot", 7.0, "AWS"))})
    words = dearer_than_on_demand(two, "spot")
    assert words is not None and "the median of 2 offers (AWS, Google Cloud)" in words


def test_every_gpu_a_plan_prices_above_its_on_demand_median_is_warned_once() -> None:
    """Trial s48 M4: --per-gpu rows priced above their on-demand median had no warning; only the
    chosen GPU's was given. Each GPU the answer shows a price for is warned of, once."""
    on_demand = (_offer("on-demand", 2.0, "Neocloud"), _offer("on-demand", 3.0, "Other"))
    cheap = CATALOG.gpu("h100-sxm").model_copy(update={"offers": (*on_demand, _offer("reserved-1y", 1.0, "A"))})
    dear = CATALOG.gpu("h200-sxm").model_copy(update={"offers": (*on_demand, _offer("reserved-1y", 40.0, "B"))})
    catalog = CATALOG.model_copy(update={"gpus": {**CATALOG.gpus, cheap.id: cheap, dear.id: dear}})
    ask = dict(model=get_preset("gpt3-125m"), training_tokens=1e9, gpus={cheap.id: 8, dear.id: 8})
    result = plan(PlanRequest(**ask, price_kind="reserved-1y", per_gpu=True), catalog=catalog)
    assert result.plan.gpu == cheap.id and [p.gpu for p in result.per_gpu or ()] == [dear.id]
    warned = [w for w in result.warnings if "above its on-demand median" in w]
    assert warned == [dearer_than_on_demand(dear, "reserved-1y")]  # the row's GPU, once; not the cheaper chosen one


def test_a_side_plan_priced_above_on_demand_is_warned_of_too() -> None:
    """App trial s48: the answer named a knee on h200-sxm, spot-priced above its on-demand median,
    with no warning, since only the tables' plans were checked; every plan the answer prices is."""
    request = PlanRequest(
        model=get_preset("gpt3-125m"),
        training_tokens=2.5e9,
        gpus={"a100-80gb-sxm": None, "h200-sxm": None},
        price_kind="spot",
    )
    result = plan(request)
    tables = {p.gpu for p in (result.plan, *result.alternatives)}
    assert result.knee_plan is not None and result.knee_plan.gpu == "h200-sxm" and "h200-sxm" not in tables
    assert any(w.startswith("spot prices h200-sxm at $") for w in result.warnings)
