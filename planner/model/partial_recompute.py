"""How many blocks a ``blocks`` candidate checkpoints: the fewest that fit its GPU's memory.

``ActivationCheckpointing.BLOCKS`` checkpoints the first ``ac_blocks`` blocks of each pipeline
rank (Megatron-LM's ``--recompute-method block --recompute-num-layers N``). Each more block
checkpointed saves one block's activations and costs one more block forward in backward, so the
row's best count is the smallest that fits: the search does not enumerate counts, it fills each
row's (``fit_ac_blocks``, called where the search scores its table).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from planner.model.candidates import AC_BLOCKS, AC_FULL, Candidates
from planner.model.memory import (
    MemoryBreakdown,
    MemoryTerms,
    StageTerms,
    blocks_device_total,
    blocks_memory,
    fits,
    usable_capacity,
)
from planner.model.pipeline import rank_layers
from planner.model.rowwise import MEMORY_COLUMNS, distinct, distinct_rows, rows_of, take
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec

# Chord steps before bisection (_fewest_that_fit): where memory is linear in the count the first
# tries the count below the fewest and the second the fewest.
CHORD_STEPS = 2
# What a row's fewest count depends on: its memory's columns and its GPU's memory.
FIT_COLUMNS = (*MEMORY_COLUMNS, "memory_bytes")


def full_ac_blocks(num_layers: int, pp: np.ndarray, vpp: np.ndarray) -> np.ndarray:
    """The count that checkpoints every block of every pp rank: the most any rank holds (the
    first, second or last rank, planner/model/pipeline.py ``pipeline_ranks``); once per
    distinct (pp, vpp)."""
    pp, vpp = np.asarray(pp), np.asarray(vpp)
    first, inverse = distinct([pp, vpp], len(pp))
    pp, vpp = pp[first], vpp[first]
    ranks = (np.zeros_like(pp), np.minimum(1, pp - 1), pp - 1)
    most = np.maximum.reduce([rank_layers(num_layers, pp, vpp, rank) for rank in ranks]).astype(int)
    return most[inverse]


def too_many_ac_blocks(num_layers: int, ac_blocks, pp, vpp) -> np.ndarray:
    """Rows asking to checkpoint more blocks per pp rank than the fullest rank holds (trial s26:
    `--ac-blocks 50` on 12 blocks per rank ran as full recompute under "50 per pp rank"); one rule
    for the search's filter and an estimate's refusal (planner/request.py ``ac_blocks_problem``)."""
    ac_blocks, pp, vpp = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v)) for v in (ac_blocks, pp, vpp)))
    return ac_blocks > full_ac_blocks(num_layers, pp, vpp)


def fit_ac_blocks(
    model: ModelSpec,
    c: Candidates,
    s: ModelingSettings,
    terms: MemoryTerms,
    recode_full: bool,
    skip: np.ndarray | None = None,
    capacity: np.ndarray | None = None,
) -> MemoryBreakdown:
    """Lower ``ac_blocks`` of the ``blocks`` rows, generated at their full count
    (``full_ac_blocks``), to the fewest that fit where that fits, writing the table's column in
    place (and the rows' ``layout_id``, ``rekey``); ``terms``: ``memory_terms`` of ``c``, whose
    memory is returned with those rows re-evaluated. ``recode_full``: a row whose count
    checkpoints every block becomes a ``full`` row (the same memory and time; the search then
    generates no ``full`` rows, planner/search/space.py ``searched_ac_codes``). ``skip``: rows
    left as generated (the search's pruned rows, which it never times). ``capacity``: each row's
    memory the count is fitted to (its GPU's by default; less at --risk p80 / p90, where the
    memory band's high end must fit too: planner/search/score.py ``fit_capacity``)."""
    mem = terms.breakdown
    searched = c.ac == AC_BLOCKS
    if skip is not None:
        searched[skip] = False
    blocks = np.flatnonzero(searched)
    if not len(blocks):
        return mem
    full = full_ac_blocks(model.num_layers, c.pp[blocks], c.vpp[blocks])
    capacity = c.memory_bytes if capacity is None else capacity
    rows = blocks[fits(mem.device_total[blocks], capacity[blocks], s.memory_headroom)]
    if len(rows):
        # Rows alike in their layout and their GPU's memory have the same fewest: once each.
        first, inverse = distinct_rows(take(c, rows), FIT_COLUMNS)
        once = rows[first]
        chosen = _fewest_that_fit(terms.of_rows(once), c.ac_blocks[once], capacity[once], mem.device_total[once], s)
        lowered = chosen != c.ac_blocks[once]
        moved = lowered[inverse]
        c.ac_blocks[rows] = chosen[inverse]
        if lowered.any():
            at = blocks_memory(terms.of_rows(once[lowered]), chosen[lowered], s)
            # Each moved row's place among the lowered distinct rows.
            place = (np.cumsum(lowered) - 1)[inverse[moved]]
            mem = _with_rows(mem, rows[moved], rows_of(at, place, int(lowered.sum())))
    if recode_full:
        # Every block checkpointed is full recompute: the same floats under either code.
        whole = blocks[c.ac_blocks[blocks] >= full]
        c.ac[whole], c.ac_blocks[whole] = AC_FULL, 0
    rekey(c, blocks)
    return mem


def rekey(c: Candidates, rows: np.ndarray) -> None:
    """New ``layout_id``s for ``rows``, whose recompute was rewritten: one per distinct (old id,
    ac, ac_blocks), above every id in use, so that rows of one id stay alike in every knob."""
    _, codes = distinct([c.layout_id[rows], c.ac[rows], c.ac_blocks[rows]], len(rows))
    c.layout_id[rows] = int(c.layout_id.max(initial=-1)) + 1 + codes


def _fewest_that_fit(
    ranks: tuple[StageTerms, ...], count: np.ndarray, capacity: np.ndarray, need: np.ndarray, s: ModelingSettings
) -> np.ndarray:
    """Per row (``ranks``: its ranks' ``stage_terms``), which fits at ``count`` blocks (needing
    ``need`` of its GPU's ``capacity``): the fewest blocks that fit.

    Memory is convex and falling in the count: per pp rank it falls by one block's activations
    less its input per block checkpointed, until the rank's blocks run out or the end-of-step
    peak takes over, and the device total is the largest rank's. So after one block (the first
    step), the chord between a count that does not fit and one that does crosses the limit at a
    count that fits, no lower than the fewest: each step tries one below that crossing, on the
    rows still open, until the fewest is bracketed (one step where memory is linear;
    ``CHORD_STEPS``, then halving the bracket, where it bends). Only the activations depend on
    the count: each try re-adds them to the ranks' other terms (``blocks_device_total``: the
    floats ``memory`` gives)."""
    limit = usable_capacity(capacity, s.memory_headroom)
    high, need_high = count.copy(), need.copy()
    low, need_low = np.zeros_like(high), np.full(len(high), np.inf)
    for step in itertools.count():
        if not (open_ := np.flatnonzero(high - low > 1)).size:
            break
        trial = low[open_] + 1 if step == 0 else _next_count(step, open_, (low, need_low), (high, need_high), limit)
        if len(open_) * 4 > len(high):  # on every row (most are open): cheaper than gathering terms
            tries = high.copy()
            tries[open_] = trial
            at_trial = blocks_device_total(ranks, tries, s)[open_]
        else:
            at_trial = blocks_device_total(rows_of(ranks, open_, len(high)), trial, s)
        ok = fits(at_trial, capacity[open_], s.memory_headroom)
        high[open_[ok]], need_high[open_[ok]] = trial[ok], at_trial[ok]
        low[open_[~ok]], need_low[open_[~ok]] = trial[~ok], at_trial[~ok]
    return high


def _next_count(step: int, open_: np.ndarray, low: Bracket, high: Bracket, limit: np.ndarray) -> np.ndarray:
    """The count ``_fewest_that_fit`` tries next in rows ``open_``: one below the chord's crossing,
    or, where memory bends (after ``CHORD_STEPS``), the middle of the bracket."""
    (below, need_low), (above, need_high) = (tuple(a[open_] for a in side) for side in (low, high))
    span = above - below
    if step > CHORD_STEPS:
        return below + span // 2
    drop = np.maximum(need_low - need_high, 1e-9)
    crossing = below + np.ceil((need_low - limit[open_]) / drop * span).astype(int)
    return np.clip(crossing - 1, below + 1, above - 1)


Bracket = tuple[np.ndarray, np.ndarray]  # counts and their memory: one side of the search


def _with_rows(mem: MemoryBreakdown, rows: np.ndarray, sub: MemoryBreakdown) -> MemoryBreakdown:
    """``mem`` with its ``rows`` replaced by ``sub``'s: in place where a column is an array of its
    own (``memory`` builds them per call), else in a copy."""
    changes = {}
    for f in dataclasses.fields(MemoryBreakdown):
        column = getattr(mem, f.name)
        if not (isinstance(column, np.ndarray) and column.flags.owndata and column.flags.writeable):
            column = np.array(column, dtype=column.dtype if isinstance(column, np.ndarray) else float)
        column[rows] = getattr(sub, f.name)
        changes[f.name] = column
    return dataclasses.replace(mem, **changes)
