"""The app's words for a batch other than the one asked for: --vary-batch's choice against the exact
batch, and the larger batch that stops tp / pp / cp splitting each sequence (planner/api/notices.py,
planner/api/batch_offers.py). Split from ui/messages.py."""

from __future__ import annotations

from planner.api import PlanResult
from planner.api.batch_offers import fewer_gpus, own_figures
from ui.app_core import money
from ui.i18n import Labels, plain
from ui.messages import duration


def vary_batch_text(tr: Labels, result: PlanResult) -> str | None:
    """The exact batch costs the objective over 5 % against --vary-batch's choice (planner/api/notices.py)."""
    hint, other = result.vary_batch, result.vary_batch_plan
    if hint is None or other is None:
        return None
    key = "vary_batch_cost" if hint.objective == "cost" else "vary_batch_time"
    return tr(
        key,
        batch=hint.batch_tokens,
        change=hint.change,
        saving=hint.saving,
        risk=hint.risk.value,
        gpus=other.num_gpus,
        gpu=other.gpu,
    )


def larger_batch_text(tr: Labels, result: PlanResult) -> str | None:
    """One sequence per GPU would save over 5 %: the batch asked for leaves tp / pp / cp to split
    each sequence (planner/api/batch_offers.py ``LargerBatch``)."""
    offer, other = result.larger_batch, result.larger_batch_plan
    if offer is None or other is None:
        return None
    cost = offer.objective == "cost"

    def shown(value: float) -> str:  # USD, or hours of training
        return money(value) if cost else duration(tr, value)

    # the CLI's figures: the risk's, then the model's own (the headline's; trial s48 M6)
    own = own_figures(other, result.plan, cost)
    text = tr(
        "larger_batch_cost" if cost else "larger_batch_time",
        figure=shown(offer.figure),
        chosen=shown(offer.chosen_figure),
        sequences=offer.sequences,
        split=offer.split,
        num_gpus=result.plan.num_gpus,
        batch=offer.batch_tokens,
        saving=offer.saving,
        risk=offer.risk.value,
        gpus=other.num_gpus,
        gpu=other.gpu,
        layout=plain(other.layout_words),
        own="" if own is None else tr("larger_batch_own", figure=shown(own[0]), chosen=shown(own[1])),
        per_gpu=tr("larger_batch_fewer", num_gpus=result.plan.num_gpus, gpus=other.num_gpus)
        if fewer_gpus(result.plan, other)
        else tr("larger_batch_per_gpu"),
    )
    if offer.nearer is None:
        return text
    return text + " " + tr("larger_batch_nearer", batch=offer.nearer.batch_tokens, saving=offer.nearer.saving)
