"""Prices as data: each provider's dated, sourced offers per GPU and kind (``hw_catalog/prices``).

One file per provider, ``hw_catalog/prices/<id>.toml``::

    id = "aws"
    provider = "AWS"
    [[offers]]
    gpu = "h100-sxm"                 # a catalog GPU id
    kind = "on-demand"               # on-demand | spot | reserved-1y | reserved-3y
    usd_per_gpu_hour = 6.88
    gpus_per_offer = 8               # the provider rents whole 8-GPU nodes (p5.48xlarge)
    offer = "p5.48xlarge"
    region = "us-east-1"             # optional
    date = "2026-11-09"              # when the source read the price
    source = "..."                   # where it comes from
    interruptions_per_node_day = 0.006   # spot only, optional (default: ModelingSettings)

The GPU file's ``price_usd_per_gpu_hour`` stays the default price of every plan; ``--price-kind``
(:func:`catalog_with_price_kind`) prices each GPU at the median of its offers of that kind
instead, and a spot price brings the spot interruptions into goodput (as host failures: a
preemption costs the work since the last checkpoint and a restart, planner/model/goodput.py).
"""

from __future__ import annotations

import statistics
import tomllib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np
from pydantic import BaseModel

from planner.errors import CatalogError
from planner.frozen import FROZEN
from planner.units import HOURS_PER_DAY

if TYPE_CHECKING:
    from planner.catalog.hardware import Catalog, GPUSpec

PriceKind = Literal["on-demand", "spot", "reserved-1y", "reserved-3y"]
PRICE_KINDS: tuple[str, ...] = get_args(PriceKind)


class PriceBasis(StrEnum):
    """Where a GPU's hourly price comes from: a cost is only as good as it (trial s26: no cost
    said its $/GPU-hour, nor that some are estimates)."""

    CATALOG = "catalog"  # the median of the on-demand rates the GPU file cites
    ESTIMATE = "estimate"  # the GPU file's estimate, not such a median (its ESTIMATE source)
    # one provider's listed rate, with no second to take a median of (app trial s45 M2: the MI325X's
    # one TensorWave offer read "an estimate"); still estimated for the ``*`` and the tie order
    ONE_OFFER = "one-offer"
    FILE = "file"  # a GPU file's own price of another kind (a user's file with a quote): its source says
    USER = "user"  # the user's own price (--price, a jobs file's, the app's table)
    # The median of the GPU's offers of a price kind (--price-kind; PRICE_KINDS), by kind:
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVED_1Y = "reserved-1y"
    RESERVED_3Y = "reserved-3y"

    @property
    def words(self) -> str:
        return PRICE_BASIS_WORDS.get(self, f"median of {self.value} offers")

    @property
    def estimated(self) -> bool:
        """No median of listed offers stands behind the price: the ``*`` beside it, and the tie order's
        sourced prices first (``GPUSpec.price_estimated``)."""
        return self in (PriceBasis.ESTIMATE, PriceBasis.ONE_OFFER)

    def words_under(self, kind: str | None) -> str:
        """``words``, with the price kind a user's price was given under ("your spot price"; review
        s30: a spot quote read "your price"), as plan and portfolio both say it."""
        return f"your {kind} price" if self == PriceBasis.USER and kind is not None else self.words


PRICE_BASIS_WORDS = {
    PriceBasis.CATALOG: "median of on-demand offers",
    PriceBasis.ESTIMATE: "an estimate, not a median of listed on-demand offers",
    PriceBasis.ONE_OFFER: "one provider's listed rate, not a median of offers",
    PriceBasis.FILE: "the GPU file's own price: see its source",
    PriceBasis.USER: "your price",
}
# How a GPU file states its price's source (hw_catalog/gpus/*.toml sources.price_usd_per_gpu_hour):
# the catalog's median of listed on-demand rates, or its estimate.
MEDIAN_SOURCE_PREFIX = "median over providers"
ESTIMATE_SOURCE_PREFIX = "ESTIMATE"
ONE_OFFER_SOURCE_PREFIX = "ESTIMATE (one provider's"


def file_price_basis(source: str) -> PriceBasis:
    """The basis of a GPU file's own price, from its stated source."""
    if source.startswith(MEDIAN_SOURCE_PREFIX):
        return PriceBasis.CATALOG
    if source.startswith(ONE_OFFER_SOURCE_PREFIX):
        return PriceBasis.ONE_OFFER
    return PriceBasis.ESTIMATE if source.startswith(ESTIMATE_SOURCE_PREFIX) else PriceBasis.FILE


# The bases that are a median of offers (of the GPU file's on-demand ones, or of a price kind's).
MEDIAN_BASES = (
    PriceBasis.CATALOG,
    PriceBasis.ON_DEMAND,
    PriceBasis.SPOT,
    PriceBasis.RESERVED_1Y,
    PriceBasis.RESERVED_3Y,
)


def offered_price_basis(basis: PriceBasis, offers_behind: int) -> PriceBasis:
    """A median over one offer is that provider's rate, not a market median (buyer trial s45 L7:
    the a100-80gb-pcie's $3.67 and the h100-nvl's $6.98 are one Azure VM each; review s46 M5: the
    same under --price-kind): it is said as one provider's rate and starred, whatever the GPU
    file's source calls it."""
    return PriceBasis.ONE_OFFER if basis in MEDIAN_BASES and offers_behind == 1 else basis


class PriceOffer(BaseModel):
    """One provider's rate for one GPU, per GPU-hour, with its date and source."""

    model_config = FROZEN
    provider: str
    kind: PriceKind
    usd_per_gpu_hour: float
    gpus_per_offer: int  # the smallest number of GPUs the provider rents together (a node: 8)
    offer: str
    region: str | None = None
    date: str
    source: str
    # Spot only: preemptions per node-hour; None: ModelingSettings.spot_interruptions_per_node_hour.
    interruptions_per_node_hour: float | None = None


def _fields() -> dict[str, Any]:
    from planner.catalog.hardware import _Num, _Text

    return {
        "gpu": _Text(),
        "kind": _Text(PRICE_KINDS),
        "usd_per_gpu_hour": _Num(0, 1_000),
        "gpus_per_offer": _Num(0, 1024, integer=True),
        "offer": _Text(),
        "region": _Text(required=False),
        "date": _Text(pattern=r"\d{4}-\d{2}-\d{2}", example="2026-11-09"),
        "source": _Text(),
        "interruptions_per_node_day": _Num(0, 1_000, required=False),
    }


def _read_file(path: Path, gpu_ids: set[str]) -> list[tuple[str, PriceOffer]]:
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise CatalogError(f"{where}: invalid TOML: {err}") from None
    unknown = set(raw) - {"id", "provider", "offers"}
    if unknown:
        raise CatalogError(f"{where}: field '{sorted(unknown)[0]}': unknown field (expected id, provider, offers)")
    if raw.get("id") != path.stem:
        raise CatalogError(f"{where}: field 'id': must equal the file name '{path.stem}', got {raw.get('id')!r}")
    provider = raw.get("provider")
    offers = raw.get("offers")
    if not isinstance(provider, str) or not provider.strip():
        raise CatalogError(f"{where}: field 'provider': expected a non-empty string, got {provider!r}")
    if not isinstance(offers, list) or not offers:
        raise CatalogError(f"{where}: field 'offers': expected an array of [[offers]] tables")
    return [_offer(entry, provider, gpu_ids, f"{where}: offers[{i}]") for i, entry in enumerate(offers)]


def _offer(entry: Any, provider: str, gpu_ids: set[str], where: str) -> tuple[str, PriceOffer]:
    fields = _fields()
    if not isinstance(entry, dict):
        raise CatalogError(f"{where}: expected a table, got {entry!r}")
    for key in entry:
        if key not in fields:
            raise CatalogError(f"{where}: field '{key}': unknown field")
    values = {}
    for name, spec in fields.items():
        if name in entry:
            values[name] = spec.check(entry[name], f"{where}: field '{name}'")
        elif spec.required:
            raise CatalogError(f"{where}: field '{name}': missing")
    if values["gpu"] not in gpu_ids:
        raise CatalogError(f"{where}: field 'gpu': unknown GPU '{values['gpu']}'")
    per_day = values.pop("interruptions_per_node_day", None)
    if per_day is not None and values["kind"] != "spot":
        raise CatalogError(f"{where}: field 'interruptions_per_node_day': only a spot offer is interrupted")
    gpu = values.pop("gpu")
    rate = None if per_day is None else per_day / HOURS_PER_DAY
    return gpu, PriceOffer(provider=provider, interruptions_per_node_hour=rate, **values)


def read_offers(dirs: list[Path], gpu_ids: set[str]) -> dict[str, tuple[PriceOffer, ...]]:
    """GPU id -> its offers over every provider file; a later directory's file replaces an
    earlier one of the same provider id."""
    files: dict[str, Path] = {}
    for directory in dirs:
        for path in sorted((directory / "prices").glob("*.toml")):
            files[path.stem] = path
    out: dict[str, list[PriceOffer]] = {}
    for path in files.values():
        for gpu, offer in _read_file(path, gpu_ids):
            out.setdefault(gpu, []).append(offer)
    return {gpu: tuple(offers) for gpu, offers in out.items()}


def offers_of(gpu: GPUSpec, kind: str) -> tuple[PriceOffer, ...]:
    return tuple(o for o in gpu.offers if o.kind == kind)


def offers_behind(gpu: GPUSpec, kind: str | None) -> tuple[PriceOffer, ...]:
    """The listed offers ``gpu``'s price is the median (or the one) of, under ``kind`` (None: the
    catalog's on-demand price); none for an estimate or a user's price (buyer trial s50 M8: a plan
    named neither the provider nor the date behind its cost)."""
    if gpu.price_basis not in (*MEDIAN_BASES, PriceBasis.ONE_OFFER):
        return ()
    return offers_of(gpu, kind or "on-demand")


@dataclass(frozen=True)
class OffersSpan:
    """What a price's offers are said by: how many, their dates' span, and the one offer's provider
    (None for several): the CLI's ``offers_words`` and the app's card word it (ui/plan_card.py)."""

    count: int
    first_date: str
    last_date: str
    provider: str | None


def offers_span(offers: Sequence[PriceOffer]) -> OffersSpan | None:
    """None for no offers."""
    if not offers:
        return None
    first, last = min(o.date for o in offers), max(o.date for o in offers)
    return OffersSpan(len(offers), first, last, offers[0].provider if len(offers) == 1 else None)


@dataclass(frozen=True)
class OffersRange:
    """The range of a GPU's listed offers of one price kind (trial s51 M4: fleet's rent-vs-buy answer
    rested on one median, $5.07 for H100 between offers of $3.49 and $12.29, unsaid)."""

    kind: str
    count: int
    low_usd_per_gpu_hour: float
    high_usd_per_gpu_hour: float


def offers_range(gpu: GPUSpec, kind: str | None) -> OffersRange | None:
    """``gpu``'s listed offers of ``kind`` (None: on-demand), whatever its price's basis (a user's quote
    is weighed against them too); None where the catalog lists none."""
    offers = offers_of(gpu, kind or "on-demand")
    if not offers:
        return None
    rates = [o.usd_per_gpu_hour for o in offers]
    return OffersRange(kind or "on-demand", len(offers), min(rates), max(rates))


def offers_words(offers: Sequence[PriceOffer]) -> str:
    """'TensorWave, 2026-05-18' (one offer), or '6 of them, 2026-07-02 to 2026-11-09'."""
    span = offers_span(offers)
    if span is None:
        return ""
    if span.provider is not None:
        return f"{span.provider}, {span.first_date}"
    last = "" if span.first_date == span.last_date else f" to {span.last_date}"
    return f"{span.count} of them, {span.first_date}{last}"


@dataclass(frozen=True)
class DearerKind:
    """A price kind whose median for a GPU is above its on-demand median (``dearer_kind``)."""

    kind: str
    gpu: str
    usd_per_gpu_hour: float  # the kind's median
    on_demand_usd_per_gpu_hour: float  # the on-demand median
    offers: int  # how many offers of the kind the median is of
    providers: tuple[str, ...]

    def words(self, fix: str = "--price sets your own quote") -> str:
        """The CLI's warning (the app words the same record in its page's language); ``fix``: how to
        quote one's own price where the warning is given (a jobs file: its [rent_usd_per_gpu_hour])."""
        # trial s48 L2: "the median of 1 offers"; one offer is that provider's rate
        one = self.offers == 1
        which = "one offer" if one else f"the median of {self.offers} offers"
        return (
            f"{self.kind} prices {self.gpu} at ${self.usd_per_gpu_hour:.2f} per GPU-hour, {which}"
            f" ({', '.join(self.providers)}), above its on-demand median ${self.on_demand_usd_per_gpu_hour:.2f}:"
            f" {'the offer and the median' if one else 'the two medians'} come from different providers"
            f" (hw_catalog/prices); {fix}"
        )


def dearer_kind(gpu: GPUSpec, kind: str | None) -> DearerKind | None:
    """``kind``'s median for ``gpu`` (the catalog's entry, before pricing) when above its on-demand
    median: the kinds' offers come from different providers (hyperscalers' terms against smaller
    clouds' on-demand rates), so a term's saving is not in the two medians."""
    if kind is None or kind == "on-demand":
        return None
    offers, on_demand = offers_of(gpu, kind), offers_of(gpu, "on-demand")
    if not offers or not on_demand:
        return None
    price = statistics.median(o.usd_per_gpu_hour for o in offers)
    base = statistics.median(o.usd_per_gpu_hour for o in on_demand)
    if price <= base:
        return None
    return DearerKind(kind, gpu.id, price, base, len(offers), tuple(sorted({o.provider for o in offers})))


def dearer_than_on_demand(gpu: GPUSpec, kind: str | None) -> str | None:
    """``dearer_kind``'s warning in the CLI's words, or None."""
    found = dearer_kind(gpu, kind)
    return None if found is None else found.words()


def billed_gpus(num_gpus: np.ndarray | int, unit: np.ndarray | int, num_nodes: np.ndarray | int) -> np.ndarray:
    """The GPUs a job pays for: whole rental units on each of its nodes (a provider that rents only
    8-GPU nodes bills a 4-GPU job for 8, and 9 GPUs on 3 nodes of 3 for 24: review s27, they were
    billed as 16)."""
    per_node = np.ceil(np.asarray(num_gpus, dtype=float) / num_nodes)
    return np.asarray(num_nodes) * np.ceil(per_node / unit) * unit


def of_offers(kind: str, count: int) -> str:
    """'median of spot offers', or 'one spot offer' where there is one."""
    return f"one {kind} offer" if count == 1 else f"median of {kind} offers"


def priced_kind(gpu: GPUSpec, kind: str, spot_interruptions_per_node_hour: float, node_failures: float) -> GPUSpec:
    """The GPU at the median of its ``kind`` offers (ValueError without one); a spot price adds
    the offers' median interruption rate to its host failures (``node_failures`` where the
    catalog has none)."""
    offers = offers_of(gpu, kind)
    if not offers:
        kinds = sorted({o.kind for o in gpu.offers})
        have = f"it has {', '.join(kinds)}" if kinds else "it has no offers"
        # trial s27: a jobs file's user was told --price, a flag the file has as [rent_usd_per_gpu_hour]
        raise ValueError(
            f"no {kind} price for {gpu.id} in hw_catalog/prices ({have}); give a price (--price, or"
            " [rent_usd_per_gpu_hour] in a jobs file) or add an offer"
        )
    price = statistics.median(o.usd_per_gpu_hour for o in offers)
    listed = ", ".join(f"{o.provider} {o.offer} {o.usd_per_gpu_hour:g} ({o.date})" for o in offers)
    update: dict[str, Any] = {
        "price_per_gpu_hour_usd": float(price),
        # whole nodes where every provider of this kind rents only whole nodes
        "rent_unit_gpus": min(o.gpus_per_offer for o in offers),
        "sources": {**gpu.sources, "price_usd_per_gpu_hour": f"{of_offers(kind, len(offers))} [{listed}]"},
        "price_basis": offered_price_basis(PriceBasis(kind), len(offers)),
    }
    if kind == "spot":
        rates = [o.interruptions_per_node_hour for o in offers]
        spot = statistics.median(spot_interruptions_per_node_hour if r is None else r for r in rates)
        update["node_failure_rate_per_node_hour"] = with_interruptions(gpu, spot, node_failures)
        update["spot_preemptions_per_node_hour"] = spot
    return gpu.model_copy(update=update)


def unlisted_kind(gpu: GPUSpec, kind: str, spot_interruptions_per_node_hour: float, node_failures: float) -> GPUSpec:
    """A GPU without ``kind`` offers that the caller prices: its price stays for the caller to set;
    a spot one adds the default interruption rate (``priced_kind``'s, with no offer to read)."""
    if kind != "spot":
        return gpu
    rate = with_interruptions(gpu, spot_interruptions_per_node_hour, node_failures)
    update = {
        "node_failure_rate_per_node_hour": rate,
        "spot_preemptions_per_node_hour": spot_interruptions_per_node_hour,
    }
    return gpu.model_copy(update=update)


def with_interruptions(gpu: GPUSpec, spot_per_node_hour: float, node_failures: float) -> float:
    """A spot node's interruptions per node-hour: its host failures (``node_failures`` where the
    catalog has none) plus the spot interruptions."""
    base = gpu.node_failure_rate_per_node_hour
    return (node_failures if base is None else base) + spot_per_node_hour


def catalog_with_price_kind(
    catalog: Catalog,
    kind: str | None,
    pinned: list[str] | None = None,
    settings: Any = None,
    priced: Collection[str] = (),
) -> Catalog:
    """Every GPU at the median of its ``kind`` offers (None: the catalog's default prices).
    On-demand keeps the file's price where a GPU has no offer (its estimate); another kind drops
    the GPUs without one, and refuses (ValueError) when ``pinned`` names such a GPU or none is left.
    ``priced``: GPUs the caller prices itself (``--price``): kept without an offer, a spot one at the
    default interruption rate (trial s29b: a spot quote for a GB200 was refused, told to give --price)."""
    if kind is None:
        return catalog
    if kind not in PRICE_KINDS:
        raise ValueError(f"unknown price kind '{kind}'; expected one of {', '.join(PRICE_KINDS)}")
    from planner.model.settings import DEFAULT_SETTINGS

    settings = settings or DEFAULT_SETTINGS
    spot, failures = settings.spot_interruptions_per_node_hour, settings.failure_rate_per_node_hour
    own = {catalog.gpu(g).id for g in priced}
    missing = [
        catalog.gpu(g)
        for g in pinned or []
        if kind != "on-demand" and not offers_of(catalog.gpu(g), kind) and catalog.gpu(g).id not in own
    ]
    if len(missing) == 1:  # raises, naming what the GPU has (buyer trial s45 L6: and that it may be left out)
        try:
            priced_kind(missing[0], kind, spot, failures)
        except ValueError as exc:
            raise ValueError(f"{exc}, or leave it out of --gpus (a jobs file: of its rented types)") from None
    if missing:  # trial s28c: the first of several was named, then the next on the next try
        raise ValueError(
            f"no {kind} price for {', '.join(g.id for g in missing)} in hw_catalog/prices; give each a price"
            " (--price, or [rent_usd_per_gpu_hour] in a jobs file), leave them out of --gpus (a jobs file: of its"
            " rented types), or add offers"
        )
    gpus = {}
    for gpu_id, gpu in catalog.gpus.items():
        if offers_of(gpu, kind):
            gpus[gpu_id] = priced_kind(gpu, kind, spot, failures)
        elif kind == "on-demand":
            gpus[gpu_id] = gpu
        elif gpu_id in own:
            gpus[gpu_id] = unlisted_kind(gpu, kind, spot, failures)
    if not gpus:
        raise ValueError(f"no GPU in the catalog has a {kind} price")
    return catalog.model_copy(update={"gpus": gpus})
