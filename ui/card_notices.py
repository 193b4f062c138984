"""The planner's typed warnings of a plan, in the page's language, for the card (the CLI says each
record's ``words()``; parity trial s50: the card lacked them): training past the pretrained context
(planner/model/structure.py), a job shorter than its start-up (planner/api/fixed_cost.py), a plan
that fits only by a memory factor measured on another shape (planner/api/calibration_notices.py)."""

from __future__ import annotations

from planner.api.calibration_notices import ExtrapolatedMemory, extrapolated_memory
from planner.api.fixed_cost import FixedCostJob, fixed_cost_job
from planner.model.structure import ContextExtension, context_extension
from planner.plan import Plan
from ui.i18n import Labels, plain
from ui.messages import short_duration


def plan_notice_texts(tr: Labels, plan: Plan) -> tuple[str, ...]:
    """Each of the three the plan has, worded."""
    context = context_extension(plan.model, plan.training.seq_len)
    short, memory = fixed_cost_job(plan), extrapolated_memory(plan)
    return (
        *(() if context is None else (context_text(tr, context),)),
        *(() if short is None else (fixed_cost_text(tr, short),)),
        *(() if memory is None else (extrapolated_memory_text(tr, memory),)),
    )


def context_text(tr: Labels, c: ContextExtension) -> str:
    key = "context_learned" if c.learned else "context_extension"
    return tr(key, model=plain(c.model), seq_len=c.seq_len, max_seq_len=c.max_seq_len)


def fixed_cost_text(tr: Labels, f: FixedCostJob) -> str:
    times = dict(training=short_duration(tr, f.training_s), startup=short_duration(tr, f.startup_s))
    wall = short_duration(tr, f.wall_s)
    steps = tr("steps_one") if f.steps == 1 else tr("steps_many", count=f.steps)
    return tr("fixed_cost_job", steps=steps, batch=f.batch_tokens, wall=wall, goodput=f.goodput, **times)


def extrapolated_memory_text(tr: Labels, m: ExtrapolatedMemory) -> str:
    values = dict(factor=m.factor, alone=m.alone_gib, usable=m.usable_gib)
    return tr("extrapolated_memory", job=plain(m.job), shape=plain(m.shape), **values)
