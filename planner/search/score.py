"""Scoring a request's search: the search space a ``PlanRequest`` implies, the evidence of the
validation for each candidate row (``row_evidence``) and the scored table the ILP solves over
(``candidate_table``, ``scored_table``).

planner/api solves over this table and wraps the answer as Plans; planner/api/explore.py reads
the same table for the app's views.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from planner import accuracy
from planner.accuracy.bands import BAND_QUANTILES
from planner.accuracy.ceiling import coarse_experts
from planner.accuracy.memory_band import band_ratios, passes_room
from planner.catalog.hardware import Catalog, GPUSpec
from planner.job_fit import measured_job_rows
from planner.layout import ActivationCheckpointing
from planner.model.candidates import AC_NONE, IMPL_HF, Candidates
from planner.model.estimate import divisible, job_cost_usd, job_totals, score
from planner.model.host import host_capacity_bytes, host_need_bytes
from planner.model.memory import MemoryBreakdown, MemoryTerms, fits, memory_terms
from planner.model.partial_recompute import fit_ac_blocks
from planner.model.rowwise import KNOB_COLUMNS, STAGE_COLUMNS, distinct, rows_of, take
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
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
        trainer_rules=request.stack.trainer_rules,
        stack=request.stack,
        moe_a2a_overlap=request.moe_a2a_overlap,
        optimizer_precision=request.optimizer_precision,
    )


def candidate_table(
    model: ModelSpec,
    c: Candidates,
    gpu_ids: list[str],
    space: SearchSpace,
    training_tokens: float,
    settings: ModelingSettings,
    evidence: RowEvidence | None = None,
    prune_dominated: bool = True,
) -> ScoredTable:
    """Score every candidate and hand the ILP the columns it constrains on. With ``evidence``
    each row is held at its efficiency ceiling, and its time and cost are those at the risk
    quantile (the model's own in ``extra['model_time_s']`` and ``extra['model_cost_usd']``). Only the rows whose GPU memory fits
    are timed (issue 28: a quarter of a 70B search): no other row can be chosen, and the diagnosis
    reads their memory only; their time and cost are NaN. ``prune_dominated``: neither are the
    rows that have a ``recompute_twins`` (a third of what fits, issue 28); they are marked
    ``dominated``, and a blocks row among them keeps the memory of the count it was generated
    at (every block checkpointed), not the fewest that fit."""
    terms = memory_terms(model, c, settings)
    # Before the recompute fit re-keys its rows (the rules read no recompute): once per layout.
    valid = divisible(model, c, space.trainer_rules)
    # The GPU-memory half of score's fit rule: a superset of the rows that fit. The blocks rows
    # are generated at their full count, and the fit below only lowers those that fit to the
    # fewest that still do: the rows that fit are these, before it and after.
    fitting = np.flatnonzero(fits(terms.breakdown.device_total, c.memory_bytes, settings.memory_headroom))
    twin = (
        _standing_twins(c, fitting, terms.breakdown, settings, evidence)
        if prune_dominated
        else np.full(len(fitting), -1)
    )
    pruned = twin >= 0
    mem = _fitted_blocks_memory(model, c, settings, terms, space, evidence, skip=fitting[pruned])
    dominated = np.zeros(len(c), dtype=bool)
    dominated[fitting[pruned]] = True
    fit, (seconds, uncapped) = timed_rows(model, c, fitting[~pruned], training_tokens, settings, evidence, mem)
    # The rest of the fit rule (the host's, for offload) reads no recompute: as the twin's.
    fit[fitting[pruned]] = fit[twin[pruned]]
    factor = 1.0 if evidence is None else evidence.time_factor
    return ScoredTable(
        gpu_id=np.asarray(gpu_ids, dtype=object)[c.gpu_index],
        num_gpus=c.num_gpus,
        fits_memory=fit,
        memory_need_gib=mem.device_total / GIB,
        capacity_gib=c.memory_bytes / GIB,
        time_to_train_s=seconds * factor,
        cost_usd=job_cost_usd(seconds * factor, c, settings),  # the GPUs held that long
        batch_ok=batch_within_tolerance(c, space),
        divisible=valid,
        label=np.full(len(c), "", dtype=object),
        dominated=dominated,
        extra=_extra_columns(model, c, settings, evidence, mem, fitting, (seconds, uncapped, factor)),
    )


def _standing_twins(
    c: Candidates, fitting: np.ndarray, mem: MemoryBreakdown, settings: ModelingSettings, evidence: RowEvidence | None
) -> np.ndarray:
    """Per row of ``fitting``, the ``recompute_twins`` row that stands for it (-1: none): at p80 /
    p90 only one that fits at its band's high end as surely (review s42: the sure recompute rows
    were pruned for twins that may not fit)."""
    twin = recompute_twins(c, fitting)
    if evidence is not None and evidence.judges_memory:
        unsure = may_not_fit(mem, c, settings, evidence)
        twin[(twin >= 0) & unsure[np.maximum(twin, 0)] & ~unsure[fitting]] = -1
    return twin


def _fitted_blocks_memory(
    model: ModelSpec,
    c: Candidates,
    settings: ModelingSettings,
    terms: MemoryTerms,
    space: SearchSpace,
    evidence: RowEvidence | None,
    skip: np.ndarray,
) -> MemoryBreakdown:
    """The memory of every row once the blocks rows checkpoint the fewest blocks that fit (written
    into c's columns), but for the rows ``skip``ped (pruned: never timed, they keep the count
    generated and its memory); where the request fixed the count, the memory as generated."""
    if space.ac_blocks is not None:
        return terms.breakdown
    full = ActivationCheckpointing.FULL in space.activation_checkpointing
    capacity = fit_capacity(c, settings, evidence)
    return fit_ac_blocks(model, c, settings, terms, recode_full=full, skip=skip, capacity=capacity)


def _extra_columns(
    model: ModelSpec,
    c: Candidates,
    settings: ModelingSettings,
    evidence: RowEvidence | None,
    mem: MemoryBreakdown,
    fitting: np.ndarray,
    timed: tuple[np.ndarray, np.ndarray, float | np.ndarray],
) -> dict[str, np.ndarray]:
    """The table's columns beyond those the ILP constrains on: what the alternatives, the ties, the
    row label and the diagnosis read. ``timed``: the model's own time to train and the time before
    the efficiency ceiling (``timed_rows``), seconds, and the risk's factor on them."""
    seconds, uncapped, factor = timed
    lo, hi = (np.nan, np.nan) if evidence is None else evidence.band
    batch = batch_tokens(c)
    return {
        "tp": c.tp,
        "pp": c.pp,
        "dp_shard": c.dp_shard,
        "row": np.arange(len(c)),
        "choice_group": choice_groups(c, fitting, batch),
        "gpu_index": c.gpu_index,  # gpu_id's codes (ScoredTable.gpu_codes)
        "batch_tokens": batch,
        "model_time_s": seconds,
        "model_cost_usd": job_cost_usd(seconds, c, settings),  # what a budget judges beside the risk's
        # the model's own time, before the efficiency ceiling: the ILP's last tie-break
        "uncapped_time_s": uncapped,
        "price_estimated": c.price_estimated,  # a tie's order: sourced prices first (ties.tie_order)
        "sharding": c.sharding,  # and then ZeRO-1 of sharding twins (ties.SHARDING_TIE_RANK)
        # the rest of a row's layout label (ScoredTable.row_label: the diagnosis's named plan,
        # buyer trial s50 L6), the candidates' own arrays
        **{name: getattr(c, name) for name in ("dp_replicate", "cp", "vpp", "ep", "micro_batch", "grad_accum", "ac")},
        "time_factor": np.broadcast_to(factor, seconds.shape),
        "band_lo": np.broadcast_to(lo, seconds.shape),  # the 80 % band of measured / predicted time
        "band_hi": np.broadcast_to(hi, seconds.shape),
        # the cost at the band's slow end: the GPUs held that long (a term billed whole does not
        # grow with the time; ties.settle_near_tie, review s43)
        "cost_hi_usd": job_cost_usd(seconds * hi, c, settings),
        # the memory band's high end passes the GPU's own room: it may not fit (a tie's order)
        "may_not_fit": may_not_fit(mem, c, settings, evidence),
        # ... or passes only the room the fit rule leaves it: into the headroom (a tie's order)
        "in_headroom": may_not_fit(mem, c, settings, evidence, headroom=settings.memory_headroom),
        # offload's host fit (planner/model/host.py), for the diagnosis
        "host_need_gib": host_need_bytes(model, c, settings) / GIB,
        "host_capacity_gib": host_capacity_bytes(c, settings) / GIB,
    }


# The knobs a plan's alternatives need not differ in: how the batch splits into micro-batches
# (and the checkpointed blocks that split fits). Listing "mb 1 x 16", "2 x 8" and "4 x 4" of one
# layout as three alternatives at one time and cost tells a buyer nothing (trial s25).
SPLIT_KNOBS = ("micro_batch", "grad_accum", "ac_blocks")


def choice_groups(c: Candidates, rows: np.ndarray, batch: np.ndarray) -> np.ndarray:
    """Per row, a code shared by the rows that differ only in ``SPLIT_KNOBS`` on one GPU type and
    count at one global batch (``batch``: each row's, in tokens; -1 off ``rows``: those never reach
    the ILP). The ILP lists one alternative per code."""
    group = np.full(len(c), -1, dtype=np.int64)
    if not len(rows):
        return group
    # As recompute_twins: the knobs read once per layout_id (rows of one id are alike in all).
    ids, by_id = distinct([c.layout_id[rows]], len(rows))
    _, layout = distinct([getattr(c, k)[rows[ids]] for k in KNOB_COLUMNS if k not in SPLIT_KNOBS], len(ids))
    # The batch too: under --vary-batch one layout's splits train different global batches.
    key = [c.gpu_index[rows], c.num_gpus[rows], layout[by_id], batch[rows]]
    group[rows] = distinct(key, len(rows))[1]
    return group


def recompute_twins(c: Candidates, rows: np.ndarray) -> np.ndarray:
    """For each of ``rows`` (rows that fit GPU memory) that recomputes although a row alike in
    every other knob, on the same GPU type, fits without, that row (else -1). Recomputing only
    adds work (its FLOPs and, under tp, its collectives: step_time.py ``recompute_fraction``),
    the compute it adds hides no more traffic than it lasts (comm.py ``within_window``), and the
    regime a row's band and efficiency ceiling come from reads no recompute, so the twin
    is as fast and as cheap under every objective and limit: the search need not time the row
    (tests/planner/test_recompute_dominance.py checks it on whole scored tables)."""
    twin = np.full(len(rows), -1)
    if not len(rows):
        return twin
    # Rows of one layout_id are alike in every knob (Candidates.layout_id): group the ids by every
    # knob but recompute's (STAGE_COLUMNS) on one row each, a third of the rows.
    ids, by_id = distinct([c.layout_id[rows]], len(rows))
    _, layout = distinct([getattr(c, k)[rows[ids]] for k in STAGE_COLUMNS], len(ids))
    # num_gpus is no knob: every layout of one id is on one count today, the key keeps it so.
    first, inverse = distinct([c.gpu_index[rows], c.num_gpus[rows], layout[by_id]], len(rows))
    none = c.ac[rows] == AC_NONE
    of_group = np.full(len(first), -1)
    of_group[inverse[none]] = rows[none]
    twin[~none] = of_group[inverse[~none]]
    return twin


def timed_rows(
    model: ModelSpec,
    c: Candidates,
    rows: np.ndarray,
    training_tokens: float,
    settings: ModelingSettings,
    evidence: RowEvidence | None,
    mem: MemoryBreakdown,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """``score``'s fit and ``job_totals``' seconds of ``rows``, and the seconds without the
    efficiency ceiling's stretch of the step, over all of ``c``'s rows (False and NaN elsewhere);
    ``mem``: ``memory`` of all of ``c``. (The cost is billed from the seconds at the request's risk:
    ``job_cost_usd`` in ``candidate_table``.)"""
    fit, seconds, uncapped = np.zeros(len(c), dtype=bool), np.full(len(c), np.nan), np.full(len(c), np.nan)
    if len(rows):
        subset = take(c, rows)
        ceiling = None if evidence is None else evidence.mfu_ceiling[rows]
        s = score(model, subset, settings, ceiling, mem=rows_of(mem, rows, len(c)))
        fit[rows] = s.fits
        seconds[rows] = job_totals(s, subset, training_tokens, settings)[0]
        uncapped[rows] = seconds[rows] * (1.0 - s.time.efficiency_ceiling / s.time.step)
    return fit, (seconds, uncapped)


def fit_capacity(c: Candidates, s: ModelingSettings, evidence: RowEvidence | None) -> np.ndarray:
    """The memory a ``blocks`` row's checkpointed count is fitted to: its GPU's, or where the
    request's risk judges memory the smaller capacity at which the fit rule's limit is also where
    its reserved peak's band's high end meets the GPU's room (``passes_room``): reserved x high =
    memory - CUDA context, so device total = room / high + context (trial s42: at p90 the fewest
    blocks that fit by the model's figure were a plan its band said may not fit)."""
    if evidence is None or not evidence.judges_memory or evidence.memory_high is None:
        return c.memory_bytes
    room = c.memory_bytes - s.cuda_context_bytes
    sure_total = room / evidence.memory_high + s.cuda_context_bytes
    return np.minimum(c.memory_bytes, sure_total / (1.0 - s.memory_headroom))


def sure_fit_table(table: ScoredTable) -> ScoredTable:
    """``table`` with only the rows whose reserved peak fits at its band's high end as fitting (the
    search's memory rule at --risk p80 / p90: ``Risk.judges_memory``)."""
    return replace(table, fits_memory=table.fits_memory & ~table.extra["may_not_fit"])


def may_not_fit(
    mem: MemoryBreakdown, c: Candidates, s: ModelingSettings, evidence: RowEvidence | None, headroom: float = 0.0
) -> np.ndarray:
    """Rows whose reserved peak's band passes the GPU's room (its memory less the CUDA context), as
    ``MemoryBand.may_not_fit`` says of one plan; none without evidence. ``headroom``: the room the
    fit rule leaves (memory x (1 - headroom) less the context; trial s43: of two twins alike in
    time and cost, the one whose band's high end reached 177.2 of 178.5 GiB was chosen)."""
    if evidence is None or evidence.memory_high is None:
        return np.zeros(len(c), dtype=bool)
    return passes_room(mem.reserved, evidence.memory_high, c.memory_bytes * (1.0 - headroom) - s.cuda_context_bytes)


@dataclass(frozen=True)
class RowEvidence:
    """What the validation says of each candidate (planner/accuracy): the efficiency ceiling of
    its regime (NaN: none), its risk quantile of measured / predicted time, and its 80 % band."""

    mfu_ceiling: np.ndarray
    time_factor: np.ndarray
    band: tuple[np.ndarray, np.ndarray]
    # The high end of its reserved peak's 80 % band, as measured / predicted (memory_band.band_ratios).
    memory_high: np.ndarray | None = None
    # Whether plans must fit at that high end too (the request's ``Risk.judges_memory``).
    judges_memory: bool = False


def scored_table(
    request: PlanRequest,
    catalog: Catalog,
    c: Candidates,
    gpu_ids: list[str],
    space: SearchSpace,
    settings: ModelingSettings,
    calibrated: frozenset[str] = frozenset(),
    prune_dominated: bool = True,
) -> ScoredTable:
    """``candidate_table`` with the request's evidence: every row held at its efficiency ceiling
    and judged at the request's risk (what plan, the app's views and the diagnosis solve over)."""
    evidence = row_evidence(request, c, [catalog.gpu(g) for g in gpu_ids], calibrated)
    return candidate_table(
        request.model, c, gpu_ids, space, request.training_tokens, settings, evidence, prune_dominated
    )


def row_evidence(
    request: PlanRequest, c: Candidates, gpus: list[GPUSpec], calibrated: frozenset[str] = frozenset()
) -> RowEvidence:
    """The evidence columns of ``c`` for the request's stack and risk (``calibrated``: the GPU ids
    a calibration file measured, whose ceiling it lifts)."""
    moe, named, run = request.model.is_moe, request.kernel_choice, request.run_features
    quantiles = (request.risk.quantile, *BAND_QUANTILES)
    risk, lo, hi = accuracy.time_factors(
        c, gpus, request.stack.value, moe, quantiles, named_kernel=named, run_features=run
    )
    # a coarse-expert model is held at the dense ceiling (planner/accuracy/ceiling.py)
    ceilings = accuracy.mfu_ceilings(
        c,
        gpus,
        request.stack.value,
        moe,
        calibrated,
        named_kernel=named,
        coarse=coarse_experts(request.model),
        run_features=run,
    )
    if any(g.measured_job is not None for g in gpus):  # its own shape is its measurement: not held
        ceilings = np.where(measured_job_rows(c, gpus, request.model.name, request.stack), np.nan, ceilings)
    return RowEvidence(
        mfu_ceiling=ceilings,
        time_factor=risk,
        band=(lo, hi),
        memory_high=memory_high_ratios(c, request.stack.value, run),
        judges_memory=request.risk.judges_memory,
    )


def memory_high_ratios(c: Candidates, stack: str, run_features: int = 0) -> np.ndarray:
    """Each row's memory band's high end (measured / predicted) by its kind: the stack's, its
    modules' (Hugging Face's or not) and its scale (one GPU or more), widened for the run's choices
    no measured peak ran (``run_features``: pure bf16, memory_band.py)."""
    hf, multi = c.impl == IMPL_HF, c.num_gpus > 1
    kinds = [(h, m) for h in (False, True) for m in (False, True)]
    highs = [band_ratios(stack, h, m, features=run_features)[1] for h, m in kinds]
    return np.select([(hf == h) & (multi == m) for h, m in kinds], highs)
