"""A price said with where it comes from, in one place: plan's cost line, and the rates a many-job
answer (fleet, portfolio) rents or reserves each GPU type at, with their warnings (trial s48 H1:
fleet priced a whole answer on one provider's rate and never said so, where plan did)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from planner.catalog.prices import PriceBasis, PriceOffer, offers_words


def rate_words(
    usd_per_gpu_hour: float,
    basis: PriceBasis | str | None,
    kind: str | None = None,
    offers: Sequence[PriceOffer] = (),
) -> str:
    """'$1.95/GPU-h (one provider's listed rate, not a median of offers: TensorWave, 2026-05-18)';
    ``kind``: the price kind a user's price was given under (``PriceBasis.words_under``); ``offers``:
    the ones behind it (``offers_words``); ``basis`` None: a plan file from before the basis was kept."""
    behind = f": {offers_words(offers)}" if offers else ""
    said = "" if basis is None else f" ({PriceBasis(basis).words_under(kind)}{behind})"
    return f"${usd_per_gpu_hour:,.2f}/GPU-h{said}"


@dataclass(frozen=True)
class HeldPrice:
    """The hourly price a many-job answer rents (or reserves) one GPU type at, and its basis."""

    gpu: str
    usd_per_gpu_hour: float
    basis: PriceBasis
    kind: str | None = None  # the price kind it is priced under (None: the catalog's default prices)

    def words(self) -> str:
        """'mi325x at $1.95/GPU-h (one provider's listed rate, not a median of offers)'."""
        return f"{self.gpu} at {rate_words(self.usd_per_gpu_hour, self.basis, self.kind)}"


def rates_line(what: str, prices: Mapping[str, HeldPrice]) -> str:
    """'rent per GPU-hour: b200 at $5.48/GPU-h (...); mi325x at $1.95/GPU-h (...)': the line under
    a fleet's or a portfolio's answer (``what``: 'rent', or the reserved rate it names), types sorted."""
    return f"{what} per GPU-hour: {'; '.join(p.words() for _, p in sorted(prices.items()))}"
