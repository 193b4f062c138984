"""Scoring a request's search: the search space a ``PlanRequest`` implies, the evidence of the
validation for each candidate row (``row_evidence``) and the scored table the ILP solves over
(``candidate_table``, ``scored_table``).

planner/api solves over this table and wraps the answer as Plans; planner/api/explore.py reads
the same table for the app's views.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner import accuracy
from planner.accuracy.bands import BAND_QUANTILES
from planner.catalog.hardware import Catalog, GPUSpec
from planner.layout import ActivationCheckpointing
from planner.model.candidates import Candidates
from planner.model.estimate import divisible, job_totals, score
from planner.model.host import host_capacity_bytes, host_need_bytes
from planner.model.memory import MemoryBreakdown, fits, memory_terms
from planner.model.partial_recompute import fit_ac_blocks
from planner.model.rowwise import rows_of, take
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stacks import Stack
from planner.request import PlanRequest, requested_batch_tokens
from planner.search.ilp import ScoredTable
from planner.search.space import DEFAULT_MAX_GPUS, SearchSpace, batch_tokens, batch_within_tolerance
from planner.units import GIB


def search_space(request: PlanRequest, max_gpus: int | None = None) -> SearchSpace:
    assert request.seq_len is not None and request.impl is not None, "PlanRequest's validator sets both"
    return SearchSpace(
        seq_len=request.seq_len,
        global_batch_tokens=requested_batch_tokens(request),
        batch_tolerance=request.batch_tolerance,
        precisions=(request.precision,),
        activation_checkpointing=request.activation_checkpointing,
        ac_blocks=request.ac_blocks,
        allow_offload=request.allow_offload,
        impl=request.impl,
        compile=request.compile,
        max_gpus=max_gpus or request.max_gpus or DEFAULT_MAX_GPUS,
        trainer_rules=request.stack == Stack.TRAINPLAN,
    )


def candidate_table(
    model: ModelSpec,
    c: Candidates,
    gpu_ids: list[str],
    space: SearchSpace,
    training_tokens: float,
    settings: ModelingSettings,
    evidence: RowEvidence | None = None,
) -> ScoredTable:
    """Score every candidate and hand the ILP the columns it constrains on. With ``evidence``
    each row is held at its efficiency ceiling, and its time and cost are those at the risk
    quantile (the model's own in ``extra['model_time_s']``). Only the rows whose GPU memory fits
    are timed (issue 28: a quarter of a 70B search): no other row can be chosen, and the diagnosis
    reads their memory only; their time and cost are NaN."""
    terms = memory_terms(model, c, settings)
    mem = terms.breakdown
    # Before the recompute fit re-keys its rows (the rules read no recompute): once per layout.
    valid = divisible(model, c, space.trainer_rules)
    # The blocks rows' checkpointed blocks, the fewest that fit (written into c's columns).
    if space.ac_blocks is None:
        full = ActivationCheckpointing.FULL in space.activation_checkpointing
        mem = fit_ac_blocks(model, c, settings, terms, recode_full=full)
    need = mem.device_total
    # The GPU-memory half of score's fit rule: a superset of the rows that fit.
    timed = np.flatnonzero(fits(need, c.memory_bytes, settings.memory_headroom))
    fit, (seconds, cost) = timed_rows(model, c, timed, training_tokens, settings, evidence, mem)
    factor = 1.0 if evidence is None else evidence.time_factor
    lo, hi = (np.nan, np.nan) if evidence is None else evidence.band
    return ScoredTable(
        gpu_id=np.asarray(gpu_ids, dtype=object)[c.gpu_index],
        num_gpus=c.num_gpus,
        fits_memory=fit,
        memory_need_gib=need / GIB,
        capacity_gib=c.memory_bytes / GIB,
        time_to_train_s=seconds * factor,
        cost_usd=cost * factor,
        batch_ok=batch_within_tolerance(c, space),
        divisible=valid,
        label=np.full(len(c), "", dtype=object),
        extra={
            "tp": c.tp,
            "pp": c.pp,
            "dp_shard": c.dp_shard,
            "row": np.arange(len(c)),
            "gpu_index": c.gpu_index,  # gpu_id's codes (ScoredTable.gpu_codes)
            "batch_tokens": batch_tokens(c),
            "model_time_s": seconds,
            "time_factor": np.broadcast_to(factor, seconds.shape),
            "band_lo": np.broadcast_to(lo, seconds.shape),  # the 80 % band of measured / predicted time
            "band_hi": np.broadcast_to(hi, seconds.shape),
            # offload's host fit (planner/model/host.py), for the diagnosis
            "host_need_gib": host_need_bytes(model, c, settings) / GIB,
            "host_capacity_gib": host_capacity_bytes(c, settings) / GIB,
        },
    )


def timed_rows(
    model: ModelSpec,
    c: Candidates,
    rows: np.ndarray,
    training_tokens: float,
    settings: ModelingSettings,
    evidence: RowEvidence | None,
    mem: MemoryBreakdown,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """``score``'s fit and ``job_totals``' seconds and cost of ``rows``, over all of ``c``'s rows
    (False and NaN elsewhere); ``mem``: ``memory`` of all of ``c``."""
    fit, seconds, cost = np.zeros(len(c), dtype=bool), np.full(len(c), np.nan), np.full(len(c), np.nan)
    if len(rows):
        subset = take(c, rows)
        ceiling = None if evidence is None else evidence.mfu_ceiling[rows]
        s = score(model, subset, settings, ceiling, mem=rows_of(mem, rows, len(c)))
        fit[rows] = s.fits
        seconds[rows], cost[rows], _ = job_totals(s, subset, training_tokens, settings)
    return fit, (seconds, cost)


@dataclass(frozen=True)
class RowEvidence:
    """What the validation says of each candidate (planner/accuracy): the efficiency ceiling of
    its regime (NaN: none), its risk quantile of measured / predicted time, and its 80 % band."""

    mfu_ceiling: np.ndarray
    time_factor: np.ndarray
    band: tuple[np.ndarray, np.ndarray]


def scored_table(
    request: PlanRequest,
    catalog: Catalog,
    c: Candidates,
    gpu_ids: list[str],
    space: SearchSpace,
    settings: ModelingSettings,
    calibrated: frozenset[str] = frozenset(),
) -> ScoredTable:
    """``candidate_table`` with the request's evidence: every row held at its efficiency ceiling
    and judged at the request's risk (what plan, the app's views and the diagnosis solve over)."""
    evidence = row_evidence(request, c, [catalog.gpu(g) for g in gpu_ids], calibrated)
    return candidate_table(request.model, c, gpu_ids, space, request.training_tokens, settings, evidence)


def row_evidence(
    request: PlanRequest, c: Candidates, gpus: list[GPUSpec], calibrated: frozenset[str] = frozenset()
) -> RowEvidence:
    """The evidence columns of ``c`` for the request's stack and risk (``calibrated``: the GPU ids
    a calibration file measured, whose ceiling it lifts)."""
    moe = request.model.is_moe
    risk, lo, hi = accuracy.time_factors(c, gpus, request.stack.value, moe, (request.risk.quantile, *BAND_QUANTILES))
    return RowEvidence(
        mfu_ceiling=accuracy.mfu_ceilings(c, gpus, request.stack.value, moe, calibrated),
        time_factor=risk,
        band=(lo, hi),
    )
