"""Issue 28: fix messages name whole GPU counts checked to fit; idle-GPU answers."""

from __future__ import annotations

import re

import pytest

from planner.api import PlanRequest, plan
from planner.catalog.models import get_preset
from planner.errors import Constraint, InfeasiblePlan


def _memory_error(model: str, gpu: str, count: int) -> InfeasiblePlan:
    with pytest.raises(InfeasiblePlan) as caught:
        plan(PlanRequest(model=get_preset(model), training_tokens=1e10, gpus={gpu: count}, top_k=0))
    assert caught.value.constraint is Constraint.MEMORY
    return caught.value


def test_memory_fix_names_the_smallest_count_that_fits() -> None:
    # Before: "shard with FSDP over at least 4 GPUs" (a multiplier of one row's degrees).
    error = _memory_error("llama3-70b", "a100-80gb-sxm", 8)
    found = re.search(r"use at least (\d+) a100-80gb-sxm GPUs, the smallest count that fits", error.fix)
    assert found, error.fix
    count = int(found.group(1))
    assert count == 24
    # The count was checked: a plan exists there, and not one node fewer.
    assert plan(
        PlanRequest(model=get_preset("llama3-70b"), training_tokens=1e10, gpus={"a100-80gb-sxm": count}, top_k=0)
    )
    assert "use at least 24 " in _memory_error("llama3-70b", "a100-80gb-sxm", count - 8).fix
