"""A job shorter than its start-up: its time and cost are then the fixed costs of a run (start-up,
checkpoint writes), not training (``--tokens 1000``). A typed record: the CLI says ``words()``, the
app's card words the fields in the page's language (ui/plan_card.py)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.fmt import counted, duration_words
from planner.plan import Plan
from planner.units import SECONDS_PER_HOUR


@dataclass(frozen=True)
class FixedCostJob:
    """The plan trains for ``training_s`` (``steps`` of ``batch_tokens``), under its ``startup_s``;
    ``wall_s``: its whole time to train, at ``goodput``."""

    training_s: float
    steps: int
    batch_tokens: int
    startup_s: float
    wall_s: float
    goodput: float

    def words(self) -> str:
        return (
            f"the job trains for {duration_words(self.training_s)} ({counted(self.steps, 'step')} of"
            f" {self.batch_tokens:,} tokens): start-up ({duration_words(self.startup_s)}) and checkpoint writes"
            f" take most of its {duration_words(self.wall_s)} (goodput {self.goodput:.1%})"
        )


def fixed_cost_job(p: Plan) -> FixedCostJob | None:
    """The plan's ``FixedCostJob`` when it trains for less time than it takes to start, else None."""
    e, g = p.estimate, p.estimate.goodput
    steps = p.training_steps
    if g is None or e.time_to_train_h is None or steps is None:
        return None
    training_s = steps * e.time.step_s
    if training_s >= g.startup_s:
        return None
    wall_s = e.time_to_train_h * SECONDS_PER_HOUR
    return FixedCostJob(training_s, steps, e.global_batch_tokens, g.startup_s, wall_s, g.goodput_fraction)


def fixed_cost_warnings(p: Plan) -> tuple[str, ...]:
    """The CLI's words of ``fixed_cost_job``."""
    found = fixed_cost_job(p)
    return () if found is None else (found.words(),)
