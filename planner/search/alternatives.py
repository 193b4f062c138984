"""A plan's alternatives (``best_rows``): the best-scoring rows besides the chosen one, one per layout
a buyer can tell apart (``twin_key``). Split from planner/search/ilp.py, whose ``solve_single`` lists them."""

from __future__ import annotations

import numpy as np

from planner.model.rowwise import distinct
from planner.search.table import ScoredTable


def twin_key(table: ScoredTable, rows: np.ndarray, T: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Per table row, a code shared by those of ``rows`` a buyer cannot tell apart: the same GPU
    type and count at the same time to train (to the millisecond), cost (to the cent) and memory
    (to the MiB); -1 off ``rows``. Layouts held at one efficiency ceiling tie on time and cost but
    not on memory: they stay apart."""
    code = np.full(len(T), -1, dtype=np.int64)
    memory = np.round(np.asarray(table.memory_need_gib)[rows] * 1024)
    key = [table.gpu_id[rows], table.num_gpus[rows], np.round(T[rows], 3), np.round(C[rows], 2), memory]
    code[rows] = distinct(key, len(rows))[1]
    return code


def _first_of_each(ranked: np.ndarray, code: np.ndarray, chosen: int) -> np.ndarray:
    """The first of ``ranked`` per ``code``, none of the chosen row's code, in rank order."""
    _, first = np.unique(code[ranked], return_index=True)
    ranked = ranked[np.sort(first)]
    return ranked[code[ranked] != code[chosen]]


def best_rows(
    rows: np.ndarray,
    score: np.ndarray,
    chosen: int,
    top_k: int,
    group: np.ndarray | None = None,
    twins: np.ndarray | None = None,
) -> tuple[int, ...]:
    """The ``top_k`` best-scoring rows other than ``chosen``, best first (ties: the earlier in
    ``rows``). With ``group`` (a code per table row, score.py ``choice_groups``), the best row of
    each code only, and none of the chosen row's code: alternatives that differ in more than the
    micro-batch split. With ``twins`` (``twin_key``), likewise one row per GPU type, count, time,
    cost and memory (trial s26: zero1 / zero2 twins of one time, cost and memory took half the list)."""
    if top_k == 0 or len(rows) == 0:
        return ()
    order = np.lexsort((np.arange(len(rows)), score))
    ranked = rows[order]
    for code in (group, twins):
        if code is not None:
            ranked = _first_of_each(ranked, code, chosen)
    return tuple(int(r) for r in ranked if r != chosen)[:top_k]
