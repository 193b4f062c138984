"""Pipeline ranks over a ``Candidates`` table: blocks, embedding/head and in-flight micro-batches.

Stages are uneven (``planner.layout.stage_layer_counts``, the rule the trainer builds); pp rank
``r`` runs stages ``r, r + pp, ...`` (``vpp`` of them, trainer/pipeline.py ``local_stage_ids``).
Memory and step time are those of the most loaded rank. Over the middle ranks ``1..pp-2`` both
the block count and the in-flight micro-batches are non-increasing in the rank, so the first,
the second and the last rank (``pipeline_ranks``) bound every rank: the first holds the
embedding and the most in-flight activations, the second the most blocks of a middle rank, the
last the head and the loss.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.layout import PIPELINE_INPUT_WEIGHT, PIPELINE_OUTPUT_WEIGHT
from planner.model.candidates import SCHED_GPIPE, Candidates


@dataclass(frozen=True)
class PipelineRank:
    """One pp rank of every candidate (arrays over candidates)."""

    rank: np.ndarray
    layers: np.ndarray  # transformer blocks over all of the rank's stages
    embedding: np.ndarray  # bool: holds the first stage (embedding)
    head: np.ndarray  # bool: holds the last stage (final norm, LM head, loss)
    # The table, to read ``in_flight`` from when asked rather than up front: step time never
    # asks, and a term that does not read the accumulation is evaluated once for all the rows
    # that differ only there (planner/model/rowwise.py). A weak reference: the last ranks are
    # kept (``pipeline_ranks``), the table need not be.
    table: Callable[[], Any] = field(repr=False, compare=False)

    @functools.cached_property
    def in_flight(self) -> np.ndarray:
        """Micro-batches of activations alive at the peak, in units of all its blocks."""
        table = self.table()
        assert table is not None, "a pipeline rank outlived its table"
        return in_flight_microbatches(table, self.rank)


def rank_layers(num_layers: int, pp, vpp, rank) -> np.ndarray:
    """Blocks on pp rank ``rank`` by ``stage_layer_counts`` (vectorised; tests check both agree).

    With ``S = pp vpp`` stages every stage has ``base = slots // S`` weighted slots; the remainder
    ``extra`` goes to stage 0, then stage S-1, then stages 1, 2, ..., extra-2 (``extra_slot_order``).
    Stage ``r + k pp`` is on rank ``r``; stage 0 is on rank 0 and stage S-1 on rank pp-1.
    """
    pp, vpp, rank = (np.asarray(v) for v in (pp, vpp, rank))
    stages = pp * vpp
    base, extra = np.divmod(num_layers + PIPELINE_INPUT_WEIGHT + PIPELINE_OUTPUT_WEIGHT, stages)
    first, last = rank == 0, rank == pp - 1
    last_stage_extra = (extra >= 2) & (stages > 1)
    # Middle stages 1..extra-2 on this rank: r + k pp <= extra - 2, k >= 0 (k >= 1 on rank 0).
    top = extra - 2
    middle = np.where(top >= rank, (top - rank) // pp + 1, 0) - np.where(first & (top >= 0), 1, 0)
    extras = np.maximum(middle, 0) + (first & (extra >= 1)) + (last & last_stage_extra)
    single = stages == 1
    layers = vpp * base + extras - PIPELINE_INPUT_WEIGHT * first - PIPELINE_OUTPUT_WEIGHT * last
    return np.where(single, num_layers, layers)


def in_flight_microbatches(c: Candidates, rank) -> np.ndarray:
    """Micro-batches whose activations pp rank ``rank`` holds at its peak, in units of all its
    blocks (tests/trainer/test_pipeline_schedules.py counts them in torch's action lists).

    torch's Schedule1F1B warms up with ``min(m, pp - rank)`` forwards before its first backward
    (one more forward per backward after), so rank r holds ``pp - r``; GPipe keeps all ``m``.
    Interleaved 1F1B (vpp chunks per rank) runs ``m // pp`` equal rounds of ``r = m / rounds``
    micro-batches and holds ``(vpp-1) r + 2 (pp-1-rank) + 1`` chunk forwards before its first
    backward (torch's ``_get_warmup_ops`` + the steady forward; Megatron's with ``r = pp``), at
    most all ``vpp m``; each chunk is 1/vpp of the rank's blocks: ``pp + (pp-1)/vpp`` on the first
    rank when ``r = pp`` (Korthikanti et al. 2022, sec. 4.2.3: ``pp (1 + (pp-1)/(pp vpp))``).
    """
    m = c.grad_accum.astype(float)
    vpp = c.vpp.astype(float)
    rank = np.asarray(rank)
    per_round = m / np.maximum(1, c.grad_accum // np.maximum(c.pp, 1))
    hops = 2.0 * (c.pp - 1 - rank)
    interleaved = np.minimum((vpp - 1) * per_round + hops + 1, vpp * m) / vpp
    plain = np.minimum(c.pp - rank, m)
    one_f_one_b = np.where(vpp > 1, interleaved, plain)
    alive = np.where(c.pp_schedule == SCHED_GPIPE, m, one_f_one_b)
    return np.where(c.pp == 1, 1.0, alive)


def pipeline_rank(num_layers: int, c: Candidates, rank) -> PipelineRank:
    rank = np.broadcast_to(np.asarray(rank), c.pp.shape)
    return PipelineRank(
        rank=rank,
        layers=rank_layers(num_layers, c.pp, c.vpp, rank).astype(float),
        embedding=rank == 0,
        head=rank == c.pp - 1,
        table=_reference(c),
    )


def _reference(c: Any) -> Callable[[], Any]:
    """A weak reference to ``c``, or a strong one where it takes none (a stand-in table)."""
    try:
        return weakref.ref(c)
    except TypeError:
        return lambda: c


# One scoring pass asks for the ranks of the same table a dozen times (memory, step time, comm):
# the last table's ranks are kept, keyed by the table itself (a weak reference, so nothing leaks),
# one per thread (the app and the portfolio score several tables at once).
_last_ranks = threading.local()


def pipeline_ranks(num_layers: int, c: Candidates) -> tuple[PipelineRank, ...]:
    """The first, second and last pp rank (the same rank where pp is 1 or 2): they bound every
    rank's memory and time (module docstring)."""
    last_ranks = getattr(_last_ranks, "value", None)
    if last_ranks is not None and last_ranks[0]() is c and last_ranks[1] == num_layers:
        return last_ranks[2]
    last = c.pp - 1
    ranks = tuple(pipeline_rank(num_layers, c, r) for r in (np.zeros_like(c.pp), np.minimum(1, last), last))
    with contextlib.suppress(TypeError):  # a stand-in table without weak references: not cached
        _last_ranks.value = (weakref.ref(c), num_layers, ranks)
    return ranks


def max_rank_layers(num_layers: int, c: Candidates) -> np.ndarray:
    """Blocks on the rank with the most of them."""
    return np.maximum.reduce([r.layers for r in pipeline_ranks(num_layers, c)])
