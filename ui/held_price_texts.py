"""A many-job answer's price warnings (planner/search/held_warnings.py) in the page's language: the
records the CLI says in English (``words``), worded here for the app's portfolio view (app49: the
page showed none of them, and English strings could not be shown on a Chinese page)."""

from __future__ import annotations

from planner.search.fleet_plan import Holding
from planner.search.held_warnings import DearerHeldPrice, HeldPriceWarning, ManyJobAnswer
from ui.i18n import Labels, plain
from ui.messages import dearer_text
from ui.plan_card import PRICE_BASIS_KEYS

# The label of each answer and holding a warning names (ui/i18n_page.py).
ANSWER_KEYS = {ManyJobAnswer.PORTFOLIO: "held_answer_portfolio", ManyJobAnswer.FLEET_MIXED: "held_answer_mixed"}
VERB_KEYS = {Holding.RENTED: "held_verb_rented", Holding.RESERVED: "held_verb_reserved"}


def held_price_text(tr: Labels, warning: HeldPriceWarning, fix: str) -> str:
    """``warning.words()`` in the page's language: a type priced above its on-demand median as the
    single-job card says it (``dearer_text``), or the jobs held on a price no median of offers backs.
    ``fix``: the label of what to do (``price_fix_job`` where the jobs keep the prices they were added
    with, the portfolio's; ``price_fix_table`` where the view reads the GPU table's, the fleet's)."""
    if isinstance(warning, DearerHeldPrice):
        return dearer_text(tr, warning.dearer, fix)
    price = warning.price
    return tr(
        "held_price_estimated",
        answer=tr(ANSWER_KEYS[warning.answer]),
        verb=tr(VERB_KEYS[warning.holding]),
        gpu=price.gpu,
        rate=price.usd_per_gpu_hour,
        basis=tr(PRICE_BASIS_KEYS[price.basis]),
        jobs=tr.join(plain(job) for job in warning.jobs),  # the user's names, shown as written
        fix=tr(fix, button=tr("update_job")),
    )
