"""What a many-job answer (fleet, portfolio) warns of the prices it rents or reserves at, as typed
records (planner/api/held_prices.py finds them): the CLI says each one's ``words``, the app words
the same record in its page's language (ui/held_price_texts.py; app49: English strings could not be
shown on a Chinese page)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from planner.catalog.held_price import HeldPrice
from planner.catalog.prices import DearerKind
from planner.search.fleet_plan import Holding

__all__ = [
    "HELD_VERBS",
    "JOBS_FILE_QUOTE",
    "DearerHeldPrice",
    "EstimatedHeldPrice",
    "HeldPriceWarning",
    "ManyJobAnswer",
]

# How a jobs file's user sets a price of their own (plan's is --price).
JOBS_FILE_QUOTE = "[rent_usd_per_gpu_hour] in the jobs file sets your own quote"
# What an answer does with a type it does not own, in its warning's words.
HELD_VERBS = {Holding.RENTED: "rents", Holding.RESERVED: "reserves"}


class ManyJobAnswer(StrEnum):
    """The answer whose jobs a warning names: a portfolio's, or a fleet's chosen (mixed) option."""

    PORTFOLIO = "portfolio"
    FLEET_MIXED = "mixed"

    @property
    def words(self) -> str:
        """How the CLI's warning names the answer."""
        return ANSWER_WORDS[self]


ANSWER_WORDS = {ManyJobAnswer.PORTFOLIO: "the portfolio", ManyJobAnswer.FLEET_MIXED: "the mixed answer"}


@dataclass(frozen=True)
class DearerHeldPrice:
    """A type the answer prices above its on-demand median (trial s48 M4), once per type."""

    dearer: DearerKind

    @property
    def gpu(self) -> str:
        return self.dearer.gpu

    def words(self) -> str:
        """``DearerKind.words`` with a jobs file's fix."""
        return self.dearer.words(JOBS_FILE_QUOTE)


@dataclass(frozen=True)
class EstimatedHeldPrice:
    """Jobs the answer holds (rents or reserves) on a type at a price with no median of offers behind
    it (``PriceBasis.estimated``: one provider's rate, an estimate), whose cost then rests on that one
    figure (trial s48 H1)."""

    answer: ManyJobAnswer
    holding: Holding  # RENTED or RESERVED: an owned type's cost is not its rent
    price: HeldPrice
    jobs: tuple[str, ...]

    @property
    def gpu(self) -> str:
        return self.price.gpu

    def words(self) -> str:
        """'the portfolio rents mi325x at $1.95/GPU-h (one provider's listed rate, not a median of
        offers) for job-a: its cost rests on that price; [rent_usd_per_gpu_hour] ...'."""
        held = f"{self.answer.words} {HELD_VERBS[self.holding]} {self.price.words()}"
        return f"{held} for {', '.join(self.jobs)}: its cost rests on that price; {JOBS_FILE_QUOTE}"


HeldPriceWarning = DearerHeldPrice | EstimatedHeldPrice
