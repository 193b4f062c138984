"""A portfolio's infeasible answer in plan's words (``plan_portfolio``, planner/api/explore.py).

A job that cannot run alone is diagnosed on its own rows (planner/search/job_candidates.py ``job_rows``),
which stop at the inventory. As plan's answer (planner/api ``explained``), a deadline answer gains
the smallest count past the inventory that meets the deadline (``count_probe.deadline_fix``, trial
s48 M7: portfolio offered only a later deadline where plan named 1,056 H100), and a deadline or
budget answer says the quantile its figures are judged at (``jobs_judged_at_risk``, trial s48 L3: its
424.6 days is a p80 figure).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from planner.api.judged import failed_jobs, jobs_judged_at_risk
from planner.count_probe import deadline_fix
from planner.errors import Constraint, InfeasiblePlan
from planner.model.settings import ModelingSettings
from planner.request import allowed_gpus, count_limits, request_settings

if TYPE_CHECKING:
    from planner.api.explore import ScoredSearch

__all__ = ["portfolio_answer"]

# The fix is in the jobs file's keys ("set deadline_days to 424.6 or more"): the count is another
# way, after a comma, not "or more or 1056".
COUNT_JOINED = ", or "


def portfolio_answer(
    answer: InfeasiblePlan, searches: Mapping[str, ScoredSearch], settings: ModelingSettings | None
) -> InfeasiblePlan:
    """``answer`` (``solve_portfolio``'s) with each job that cannot run alone probed past the
    inventory for its deadline, and the risk clause said once where the jobs share a constraint and
    a risk, else in each job's answer; an answer of no one job (the jobs do not fit together) as it is."""
    failed = failed_jobs(answer)
    if not failed:
        return answer
    probed = [(name, _probed(job, searches[name], settings)) for name, job in failed]
    return jobs_judged_at_risk(probed, {name: searches[name].request.risk for name, _ in failed})


def _probed(answer: InfeasiblePlan, search: ScoredSearch, settings: ModelingSettings | None) -> InfeasiblePlan:
    """One job's answer with plan's deadline fix, probed on the job's own request and catalog over
    the types with an inventory count (a capped type's search did not stop at GPUs on hand)."""
    request, catalog = search.request, search.catalog
    if answer.constraint is not Constraint.DEADLINE or catalog is None:
        return answer
    limits = count_limits(request, allowed_gpus(request, catalog))
    held = {gpu: n for gpu, n in limits.limits.items() if gpu not in limits.caps}
    if not held:
        return answer
    scoring = request_settings(request, settings, whole_terms=False)  # as scored_search scored the job
    return deadline_fix(answer, request, catalog, held, scoring, joined=COUNT_JOINED)
