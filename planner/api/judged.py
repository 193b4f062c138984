"""A plan's figures as a limit judges them (at the request's risk, never under the model's own
figure: ``limit_figure``), and the words a deadline or budget diagnosis gains from the risk it was
judged at. Split from planner/api/notices.py, whose warnings read them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from enum import Enum

import numpy as np

from planner.accuracy import Risk
from planner.errors import Constraint, InfeasiblePlan
from planner.plan import Plan
from planner.search.slots import jobs_infeasible
from planner.search.table import limit_figure


class RiskSetting(Enum):
    """How the user sets the risk an answer is judged at, in the words its clause names the median
    by: plan's flag, or the jobs file's key that portfolio and fleet read (file-wide or per job,
    ui/portfolio_file.py)."""

    FLAG = "--risk {risk}"
    JOBS_FILE = 'risk = "{risk}"'

    def setting(self, risk: Risk) -> str:
        """'--risk p50', 'risk = "p50"': how ``risk`` is set this way."""
        return self.value.format(risk=risk.value)


def judged_at_risk(answer: InfeasiblePlan, risk: Risk, setting: RiskSetting) -> InfeasiblePlan:
    """A deadline or budget diagnosis says the quantile its times and costs are judged at (the
    plans' tables show the model's median, so '$3.2M > $3.0M' beside plans of $2.9M needs it), and
    how to judge at the median where the user sets it (``setting``). Its named plans say the
    quantile in their own fields (``NamedPlan.risk``; buyer trial s50 L6: ``seconds`` unsaid)."""
    named, more = answer.named, answer.more_gpus
    if named is not None or more is not None:
        answer = answer.but(
            named=None if named is None else replace(named, risk=risk.value),
            more_gpus=None if more is None else replace(more, risk=risk.value),
        )
    if risk == Risk.P50 or answer.constraint not in (Constraint.DEADLINE, Constraint.BUDGET):
        return answer
    # trial s27: "...; p50: the median)" read as a dangling phrase
    detail = (
        f"{answer.detail} (each plan judged at {risk.value}, the {risk.quantile:.0%} quantile of its band;"
        f" {setting.setting(Risk.P50)} judges the median, never under the model's own figure)"
    )
    return answer.but(detail=detail)


def failed_jobs(answer: InfeasiblePlan) -> tuple[tuple[str, InfeasiblePlan], ...]:
    """The jobs of a portfolio's or fleet's answer that cannot run alone, each with its own answer
    (none: an answer of no one job, as jobs that do not fit together)."""
    return answer.jobs or (((answer.job, answer),) if answer.job is not None else ())


def jobs_judged_at_risk(failed: Sequence[tuple[str, InfeasiblePlan]], risks: Mapping[str, Risk]) -> InfeasiblePlan:
    """The answer of the jobs that cannot run alone (``failed``, none empty; ``risks``: each job's)
    with the risk clause, in the jobs file's words: said once where the jobs share a constraint and
    a risk, else in each job's answer (trial s48 L3: portfolio's 424.6 days is a p80 figure)."""
    combined = jobs_infeasible(failed)
    shared = {risks[name] for name, _ in failed}
    if len(shared) == 1 and combined.constraint is not Constraint.JOBS:
        return judged_at_risk(combined, shared.pop(), RiskSetting.JOBS_FILE)
    return jobs_infeasible([(name, judged_at_risk(job, risks[name], RiskSetting.JOBS_FILE)) for name, job in failed])


def judged_hours(chosen: Plan, risk: Risk | None = None) -> float | None:
    """The plan's time to train as the search judged it (``limit_figure``): at ``risk`` where its
    band gives one, never under the model's own figure (trial s42: 328 days by the model's figure,
    416 at p80, and no word of a year; buyer trial s48 M1: at p50 it said 396.8 days, the median,
    where the search judged the headline's 420.0), else the model's own figure."""
    e = chosen.estimate
    return _judged(None if risk is None else e.time_h_at(risk.value), e.time_to_train_h)


def judged_cost_usd(chosen: Plan, risk: Risk | None = None) -> float | None:
    """The plan's cost as a budget judged it: ``judged_hours``'s rule for its cost."""
    e = chosen.estimate
    return _judged(None if risk is None else e.cost_usd_at(risk.value), e.cost_usd)


def _judged(at_risk: float | None, own: float | None) -> float | None:
    """``limit_figure`` of one plan's figure at a risk and its own; either where the other is absent."""
    if at_risk is None or own is None:
        return own if at_risk is None else at_risk
    return float(limit_figure(np.array(at_risk), np.array(own)))
