"""Why a GPU type lost (:class:`WhyNot`, ``why_not_answer``, ``why_not``): its own best plan against
the chosen one, or what rules it out; split from planner/api/explore.py, which re-exports them."""

from __future__ import annotations

from dataclasses import dataclass

from planner.api import search
from planner.catalog.hardware import Catalog, load_catalog
from planner.errors import InfeasiblePlan
from planner.fmt import counted, duration_words, money
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.plan import Plan
from planner.request import PlanRequest
from planner.units import SECONDS_PER_HOUR

__all__ = ["WhyNot", "why_not", "why_not_answer"]


@dataclass(frozen=True)
class WhyNot:
    """Why a GPU type lost, as data: its own best plan and the chosen one, or what rules it out.

    ``mine`` None: the type alone is infeasible (``infeasible`` says why). ``winner`` None with
    ``mine`` set: no type at all is feasible under the full request (``infeasible``).
    """

    gpu: str
    mine: Plan | None = None
    winner: Plan | None = None
    infeasible: InfeasiblePlan | None = None

    @property
    def chosen(self) -> bool:
        return self.winner is not None and self.winner.gpu == self.gpu

    def text(self) -> str:
        if self.mine is None:
            return f"{self.gpu} is infeasible: {self.infeasible}"
        if self.winner is None:
            return f"no GPU type is feasible: {self.infeasible}"
        if self.chosen:
            return f"{self.gpu} is the chosen GPU type"
        mine, winner = self.mine, self.winner
        e, w = mine.estimate, winner.estimate
        assert e.time_to_train_h is not None and w.time_to_train_h is not None  # requests carry tokens
        # trial s33 (app): "1 GPUs", and "0.2 days" where the card said 4.6 h
        return (
            f"{self.gpu}: best plan {counted(mine.num_gpus, 'GPU')} ({mine.layout_words}) costs {money(e.cost_usd)} in "
            f"{duration_words(e.time_to_train_h * SECONDS_PER_HOUR)} (MFU {e.throughput.mfu:.1%}); the chosen"
            f" {winner.gpu} plan costs {money(w.cost_usd)} in {duration_words(w.time_to_train_h * SECONDS_PER_HOUR)}"
        )


def why_not_answer(
    request: PlanRequest, gpu_id: str, *, catalog: Catalog | None = None, settings: ModelingSettings = DEFAULT_SETTINGS
) -> WhyNot:
    """Why a GPU type lost: its own best plan compared with the winner, or what rules it out."""
    catalog = catalog or load_catalog()
    gpu = catalog.gpu(gpu_id).id
    inventory = (request.gpus or {}).get(gpu) if request.gpus and gpu in request.gpus else None
    only = request.model_copy(update={"gpus": {gpu: inventory}, "top_k": 0})
    try:
        mine = search(only, catalog=catalog, settings=settings).plan
    except InfeasiblePlan as exc:
        return WhyNot(gpu=gpu, infeasible=exc)
    try:
        winner = search(request.model_copy(update={"top_k": 0}), catalog=catalog, settings=settings).plan
    except InfeasiblePlan as exc:
        return WhyNot(gpu=gpu, mine=mine, infeasible=exc)
    return WhyNot(gpu=gpu, mine=mine, winner=winner)


def why_not(
    request: PlanRequest, gpu_id: str, *, catalog: Catalog | None = None, settings: ModelingSettings = DEFAULT_SETTINGS
) -> str:
    """``why_not_answer`` in one English sentence."""
    return why_not_answer(request, gpu_id, catalog=catalog, settings=settings).text()
