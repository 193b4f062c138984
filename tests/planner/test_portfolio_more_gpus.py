"""A portfolio job that misses its deadline on the inventory is answered as plan answers it: the
fewest GPUs past the inventory that meet it (count_probe.deadline_fix, typed in ``more_gpus``) and
the quantile its figures are judged at (trial s48 M7: "set deadline_days and horizon_days to 424.6 or
more" was the only fix; L3: its days are a p80 figure and the line did not say so)."""

from __future__ import annotations

import pickle
import re

import pytest

from planner.accuracy import Risk
from planner.api import PlanRequest, plan
from planner.api.explore import plan_portfolio
from planner.catalog.models import get_preset
from planner.errors import Constraint, InfeasiblePlan

GPUS = {"h100-sxm": 8}
JUDGED = "(each plan judged at p80, the 80% quantile of its band;"
# how the median is set, as each answer names it: plan's flag, the jobs file's key
RISK_FLAG, RISK_KEY = "--risk p50", 'risk = "p50"'


def _late(deadline_days: float, risk: Risk = Risk.P80) -> PlanRequest:
    model = get_preset("llama3.2-1b")
    return PlanRequest(model=model, training_tokens=3e11, deadline_days=deadline_days, gpus=GPUS, risk=risk)


def _answer(requests: dict[str, PlanRequest], **options) -> InfeasiblePlan:
    with pytest.raises(InfeasiblePlan) as caught:
        plan_portfolio(requests, GPUS, **options)
    return caught.value


def test_a_late_job_names_plans_count_past_the_inventory_and_its_risk():
    request = _late(1.0)
    with pytest.raises(InfeasiblePlan) as alone:
        plan(request)
    planned = re.search(r" or ([\d,]+) h100-sxm GPUs, more than the inventory has", alone.value.fix)
    assert planned is not None and alone.value.more_gpus is not None
    answer = _answer({"late": request})
    assert answer.constraint is Constraint.DEADLINE and answer.job == "late"
    # plan's count, after the jobs file's keys
    assert f"or more, or {planned[1]} h100-sxm GPUs, more than the inventory has (" in answer.fix
    assert answer.more_gpus == alone.value.more_gpus and answer.more_gpus_help is True
    assert answer.more_gpus.num_gpus > GPUS["h100-sxm"]
    assert answer.more_gpus.seconds <= 86400.0  # it meets the deadline
    # the risk clause, in the jobs file's key: portfolio has no --risk
    assert JUDGED in answer.detail and RISK_KEY in answer.detail and RISK_FLAG not in answer.detail
    assert pickle.loads(pickle.dumps(answer)).more_gpus == answer.more_gpus  # the app caches it


def test_at_the_median_no_clause():
    answer = _answer({"late": _late(1.0, Risk.P50)})
    assert "each plan judged at" not in answer.detail and answer.more_gpus is not None


def test_two_late_jobs_each_get_a_count_and_the_clause_once():
    answer = _answer({"a": _late(1.0), "b": _late(0.5)})
    assert answer.constraint is Constraint.DEADLINE and answer.detail.count("each plan judged at") == 1
    counts = {name: job.more_gpus for name, job in answer.jobs}
    assert all(counts.values()) and counts["b"].num_gpus > counts["a"].num_gpus  # the tighter deadline, more
    assert answer.fix.count("more than the inventory has") == 2


def test_a_job_that_fits_nowhere_in_time_says_so():
    answer = _answer({"late": _late(1e-4)})  # under 9 seconds: no count up to the probe's meets it
    assert answer.more_gpus is None and answer.more_gpus_help is False
    assert "even past the inventory up to 65,536" in answer.fix
