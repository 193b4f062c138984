"""Idle GPUs: when keeping the requested batch leaves part of an inventory unused (issue 28).

A data-parallel degree must divide the global batch (in sequences), so an exact batch can fit
only some GPU counts: GPT-3 175B at 4M tokens uses 512 of 992 A100s, although 992 would train
in half the time at a batch 0.1 % off. When the chosen plan leaves more than IDLE_FRACTION of
its GPU type's inventory unused and is judged by time (objectives time and mix), the best plan
that uses the inventory is found, with the batch nearest the request within
IDLE_BATCH_TOLERANCE, and reported beside the plan when it is faster. docs/ilp.md ("Idle GPUs").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from planner.errors import InfeasiblePlan
from planner.search.ilp import Objective, ScoredTable, check_rows, solve_single

__all__ = ["IDLE_BATCH_TOLERANCE", "IDLE_FRACTION", "IdleGPUs", "idle_gpus"]

# An inventory left idle by more than this share is reported (issue 28: "more than 10 %"). The
# alternative must use at least (1 - IDLE_FRACTION) of it.
IDLE_FRACTION = 0.10
# How far the alternative's global batch may move from the request (relative). An assumption,
# not a measurement: the alternative is shown beside the exact-batch plan with its batch, for the
# user to judge; published runs moved their batch by more than this (BLOOM ramped from 192 to
# 2,048 sequences, OPT-175B trained at 2M tokens where GPT-3 used 3.2M).
IDLE_BATCH_TOLERANCE = 0.25


@dataclass(frozen=True)
class IdleGPUs:
    """The chosen plan's use of its GPU type's inventory, and the row of the plan that uses it."""

    gpu: str
    used: int  # GPUs the chosen plan uses
    inventory: int  # GPUs of that type on hand
    batch_tokens: int  # the chosen plan's global batch
    row: int  # the alternative's row of the candidate table

    @property
    def idle(self) -> int:
        return self.inventory - self.used


def idle_gpus(
    table: ScoredTable,
    chosen: int,
    objective: Objective,
    inventory: dict[str, int] | None,
    on_hand: dict[str, int],
    *,
    batch_target: int,
    deadline_s: float | None,
    budget_usd: float | None,
    cost_weight: float = 0.5,
) -> IdleGPUs | None:
    """The best plan using at least 1 - IDLE_FRACTION of the chosen type's inventory (``on_hand``:
    the types the request gave a count; ``inventory``: the limits the search ran under), at the batch
    nearest ``batch_target`` within IDLE_BATCH_TOLERANCE; None when the chosen plan uses that much,
    the objective is cost (idle GPUs are then the objective's choice), no such plan passes the
    other constraints, or it is not faster than the chosen one."""
    gpu, used = str(table.gpu_id[chosen]), int(table.num_gpus[chosen])
    owned = on_hand.get(gpu)
    if objective is Objective.COST or owned is None or used >= (1 - IDLE_FRACTION) * owned:
        return None
    batch = table.extra["batch_tokens"]
    wide = np.abs(batch - batch_target) <= IDLE_BATCH_TOLERANCE * batch_target
    checks = check_rows(table, deadline_s=deadline_s, budget_usd=budget_usd, inventory=inventory)
    uses = (table.gpu_id == gpu) & (table.num_gpus >= (1 - IDLE_FRACTION) * owned)
    rows = np.flatnonzero(checks.memory & checks.divisibility & checks.inventory & uses & wide)
    if len(rows) == 0:
        return None
    subset = replace(table.take(rows), batch_ok=np.ones(len(rows), dtype=bool))
    try:
        solution = solve_single(
            subset,
            objective,
            cost_weight=cost_weight,
            deadline_s=deadline_s,
            budget_usd=budget_usd,
            inventory=inventory,
            top_k=0,
            batch_target=batch_target,
        )
    except InfeasiblePlan:  # none within the deadline or the budget
        return None
    row = int(rows[solution.row])
    if not table.time_to_train_s[row] < table.time_to_train_s[chosen]:
        return None
    return IdleGPUs(gpu=gpu, used=used, inventory=owned, batch_tokens=int(batch[chosen]), row=row)
