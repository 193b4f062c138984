"""A scored row's layout label read from the table's own columns (``ScoredTable.row_label``: the
diagnosis's named plan, buyer trial s50 L6) is the label its plan gets (``plan_label``)."""

from __future__ import annotations

import numpy as np

from planner.api.explore import plan_label, scored_search
from planner.catalog.models import get_preset
from planner.request import PlanRequest


def test_a_rows_label_from_the_table_is_its_plans_label():
    request = PlanRequest(model=get_preset("mixtral-8x7b"), training_tokens=1e10, gpus={"h100-sxm": 64})
    search = scored_search(request)
    table = search.table
    assert not any(table.label)  # the search's table carries no strings: row_label reads its columns
    valid = np.flatnonzero(table.valid())
    picks = {table.row_label(int(r)): int(r) for r in valid}  # one row of each distinct label
    rows = list(picks.values())[:: max(1, len(picks) // 12)]
    labels = [table.row_label(r) for r in rows]
    assert len(set(labels)) == len(rows) > 5 and any("ep=" in x for x in labels) and any("ac full" in x for x in labels)
    assert labels == [plan_label(search.plan_for_row(r)) for r in rows]
