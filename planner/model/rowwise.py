"""Evaluate a row-wise term of the model once per distinct input, not once per candidate.

The candidate table repeats the same inputs many times: memory does not depend on the GPU type
(25 in the catalog), nor a micro-batch's compute time on the GPU count or the sharding. A term
whose row ``i`` depends only on row ``i``'s values of some columns (element-wise numpy, no
reduction across rows) gives, evaluated on one row per distinct combination of those columns and
spread back by index, the very floats it gives on the whole table: the answers do not change,
the work shrinks 5-20x (issue 28). tests/planner/test_search_speed_equivalence.py checks every
declared column list against the columns its term reads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from planner.model.candidates import KNOBS, RECOMPUTE_KNOBS, REWRITTEN_COLUMNS, Candidates

# pandas is imported where it factorizes, not here: the trainer's workers and torchrun agent load
# this module through the plan's types and never search, and its import cost each of them 0.5-0.8 s
# of CPU per launch (tests/trainer/test_worker_start.py).

T = TypeVar("T")

# Below this many rows the bookkeeping (keys, gathers) costs more than it saves; the scalar path
# (``estimate``, one row) never pays it.
MIN_ROWS = 4096
# Evaluate on the whole table when the distinct rows are more than this share of it.
MAX_DISTINCT_SHARE = 0.6
# Every hardware column is gathered per GPU type (``gpu_index``) and, for the rates, per precision
# (candidates.hardware_columns): the two stand for all of them in a key.
HARDWARE = ("gpu_index", "precision")
_KEY_SPAN = 1 << 62  # mixed-radix keys are re-coded before they could overflow int64
_DENSE_SPAN = 1 << 22  # codes by a count over the span up to this (a 4 MB mask)
_DENSE_PER_ROW = 16  # ... and up to this many values of the span per row (else by sorting)

# What each term reads (a superset is safe, only slower); the test records the reads.
KNOB_COLUMNS = tuple(k.column for k in KNOBS)
# The knobs a micro-batch's compute does not see: data parallelism, sharding, accumulation.
PER_STEP_KNOBS = ("dp_replicate", "dp_shard", "sharding", "grad_accum", "offload")
MEMORY_COLUMNS = (*KNOB_COLUMNS, "memory_factor")
# What the structural rules read (planner/model/structure.py): the knobs but recompute, and the
# GPU's scale-up domain.
RULE_COLUMNS = (*(k for k in KNOB_COLUMNS if k not in RECOMPUTE_KNOBS), "scaleup_domain_size")
# What a pipeline rank's parameters read (stage_params.py ``busiest_stage``): the layout.
STAGE_COLUMNS = tuple(k for k in KNOB_COLUMNS if k not in RECOMPUTE_KNOBS)
COMPUTE_COLUMNS = (*(k for k in KNOB_COLUMNS if k not in PER_STEP_KNOBS), *HARDWARE)


def distinct_rows(c: Candidates, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inverse)``: a row index per distinct combination of ``columns`` and, for each
    row, the position of its combination in ``first`` (``c``'s rows = ``first[inverse]``'s).
    Where ``columns`` hold the whole layout, it is read as ``layout_id`` (``key_columns``): rows
    of one id are alike in every knob (Candidates.layout_id), at a fraction of the work."""
    return distinct([np.asarray(getattr(c, name)) for name in key_columns(columns)], len(c))


def key_columns(columns: Sequence[str]) -> tuple[str, ...]:
    """``columns`` without repeats; where they hold every knob but recompute's, the knob columns
    replaced by ``layout_id``, which fixes them all (a finer key where recompute is not read)."""
    names = tuple(dict.fromkeys(columns))
    if not set(names) >= set(STAGE_COLUMNS):
        return names
    return ("layout_id", *(n for n in names if n not in KNOB_COLUMNS))


def distinct(arrays: Sequence[np.ndarray], num_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """``distinct_rows`` over equal-length arrays (or scalars, which do not vary). Columns are
    small ints mostly: each is coded, and the mixed-radix key re-coded, by a count over its span
    rather than by hashing or sorting a million rows."""
    key = np.zeros(num_rows, dtype=np.int64)
    span = 1
    for values in arrays:
        values = np.asarray(values)
        if values.ndim == 0 or num_rows == 0:
            continue
        codes, size = _codes(values)
        if size <= 1:
            continue
        if span * size > _DENSE_SPAN:
            key, span = _codes(key, span)
        if span * size >= _KEY_SPAN:  # only with many wide columns: a hash instead
            import pandas as pd

            key, uniques = pd.factorize(key)
            span = len(uniques)
        key = key * size + codes
        span *= size
    inverse, count = _codes(key, span)
    # Any row of a combination stands for it (its rows are alike in every column read).
    first = np.empty(count, dtype=np.int64)
    first[inverse] = np.arange(num_rows)
    return first, inverse


def _codes(values: np.ndarray, span: int | None = None) -> tuple[np.ndarray, int]:
    """Codes 0..k-1 of ``values`` and k, how many distinct (ints below ``span`` when given)."""
    if values.dtype.kind == "b":
        values = values.view(np.uint8)  # an index, not a mask
    if values.dtype.kind in "iu" and len(values):
        low = 0 if span is not None else int(values.min())
        width = span if span is not None else int(values.max()) - low + 1
        if width == 1:  # one value: no code to tell rows apart
            return np.zeros(len(values), dtype=np.int64), 1
        if width <= _DENSE_SPAN and width > _DENSE_PER_ROW * len(values):
            # A span much wider than the rows (a re-coded key of a few thousand rows): sorting the
            # rows beats counting over the span, with the same codes (ascending values).
            uniques, codes = np.unique(values, return_inverse=True)
            return codes.astype(np.int64, copy=False), len(uniques)
        if width <= _DENSE_SPAN:
            shifted = values - low if low else values
            present = np.zeros(width, dtype=bool)
            present[shifted] = True
            recode = np.cumsum(present) - 1
            return recode[shifted], int(recode[-1]) + 1
    if values.dtype.kind == "f" and len(values) and values.min() == values.max():  # NaN: not equal
        return np.zeros(len(values), dtype=np.int64), 1  # one value (a GPU column most types share)
    # Floats (NaN its own code) and wide ints: by hashing.
    import pandas as pd

    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), len(uniques)


def take(c: Candidates, rows: np.ndarray) -> Candidates:
    """The candidates at ``rows``, every column (each gathered when first read: a term reads a
    third of the 50 columns, and gathering them all cost a tenth of a search, issue 28)."""
    return _Taken(c, np.asarray(rows))


class _Taken(Candidates):
    """``take``'s table: a column is ``source``'s at ``rows``, gathered on its first read and
    kept. The columns the search rewrites in place are gathered at once, so that a later write
    to ``source`` cannot reach this table (the answers are those of an eager copy)."""

    def __new__(cls, *args: Any, **columns: Any) -> Candidates:  # type: ignore[misc]  # a plain table, below
        if columns:  # dataclasses.replace builds a new table from every column: a plain one
            return Candidates(**columns)
        return object.__new__(cls)

    def __init__(self, source: Candidates, rows: np.ndarray) -> None:
        object.__setattr__(self, "_source", source)
        object.__setattr__(self, "_rows", rows)
        for name in REWRITTEN_COLUMNS:
            getattr(self, name)

    def __getattr__(self, name: str) -> Any:  # only for a column not read yet
        if name not in _COLUMNS:
            raise AttributeError(name)
        value = np.asarray(getattr(self._source, name))[self._rows]
        object.__setattr__(self, name, value)
        return value


_COLUMNS = frozenset(f.name for f in dataclasses.fields(Candidates))


def spread(value: Any, inverse: np.ndarray, num_distinct: int) -> Any:
    """A result over the distinct rows, spread back over every row (arrays of one entry per
    distinct row, inside dicts, tuples and dataclasses; anything else is left as it is)."""
    if isinstance(value, np.ndarray):
        return value[inverse] if value.ndim >= 1 and len(value) == num_distinct else value
    if isinstance(value, dict):
        return {k: spread(v, inverse, num_distinct) for k, v in value.items()}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(spread(v, inverse, num_distinct) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: spread(getattr(value, f.name), inverse, num_distinct) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    return value


def rows_of(value: T, rows: np.ndarray, num_rows: int) -> T:
    """``rows`` of a result over ``num_rows`` rows (arrays of that length, in the containers
    ``spread`` walks)."""
    return spread(value, rows, num_rows)


def per_distinct_row(term: Callable[[Candidates], T], c: Candidates, columns: Sequence[str]) -> T:
    """``term(c)``, evaluated on one row per distinct combination of ``columns`` (every column
    ``term`` reads; a hardware column by ``HARDWARE``) and spread back over ``c``'s rows."""
    found = distinct_or_all(c, columns)
    if found is None:
        return term(c)
    first, inverse = found
    return spread(term(take(c, first)), inverse, len(first))


def distinct_or_all(c: Candidates, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """``distinct_rows``, or None where evaluating on every row costs less (``MIN_ROWS``,
    ``MAX_DISTINCT_SHARE``)."""
    if len(c) < MIN_ROWS:
        return None
    first, inverse = distinct_rows(c, columns)
    return None if len(first) > MAX_DISTINCT_SHARE * len(c) else (first, inverse)


# The last table's value of each term ``once_per_table`` keeps, by term: (the table, weakly; the
# other input it was computed for; the value). One per thread: the app scores on several threads
# (one per rerun and session), and a thread's last table is the one it is scoring.
_LAST = threading.local()


def once_per_table(term: str, c: Candidates, other: object, compute: Callable[[], T]) -> T:
    """``compute()``, kept for the last table ``c`` (and ``other``, by identity: the model) that
    asked for ``term`` on this thread: one scoring pass asks for some terms several times."""
    kept: dict[str, tuple[weakref.ref, object, Any]] = _LAST.__dict__.setdefault("terms", {})
    last = kept.get(term)
    if last is not None and last[0]() is c and last[1] is other:
        return last[2]
    value = compute()
    with contextlib.suppress(TypeError):  # a stand-in table without weak references: not kept
        kept[term] = (weakref.ref(c), other, value)
    return value
