"""The fast search gives the answers of the plain one (issue 28, "Planner speed back").

planner/model/rowwise.py evaluates a term once per distinct combination of the columns it is
declared to read: that is exact only if the term reads no other column. These tests record the
columns each term reads, on tables of several model families and stacks, and check the spread
results against the whole-table evaluation bit for bit.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import cache

import numpy as np
import pytest

from planner.api.explore import layout_labels, scored_search
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.model import memory as memory_module
from planner.model import pipeline, rowwise, stage_params
from planner.model import step_time as step_module
from planner.model.candidates import AC_BLOCKS, KNOBS, Candidates
from planner.model.configuration import rule_values
from planner.model.estimate import job_cost_usd, job_totals, score
from planner.model.stacks import Stack
from planner.model.structure import structurally_valid
from planner.request import PlanRequest, allowed_gpus, count_limits, request_settings
from planner.search.score import candidate_table, row_evidence, search_space
from planner.search.space import build_candidates, gpu_counts, gpu_rows, shape_rows
from planner.units import GIB

# (preset, request fields): dense, MoE, long context, Hugging Face modules, offload.
CASES: tuple[tuple[str, dict[str, object]], ...] = (
    ("llama3-8b", {"allow_offload": True}),
    ("mixtral-8x7b", {}),
    ("deepseek-v3", {}),
    ("llama3.1-8b", {"seq_len": 65536}),
    ("gemma2-9b", {}),
    ("gpt3-1.3b", {"precision": "fp8"}),
)
TERMS: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "memory": (memory_module._memory, rowwise.MEMORY_COLUMNS),
    "compute": (step_module.compute_time_per_microbatch, rowwise.COMPUTE_COLUMNS),
    "stage": (lambda model, c, s: stage_params._busiest_stage(model, c), rowwise.STAGE_COLUMNS),
    "rules": (lambda model, c, s: structurally_valid(model, **rule_values(c)), rowwise.RULE_COLUMNS),
}
# The stacks whose settings take different branches (native/HF modules, Megatron's recompute).
STACKS = (Stack.TRAINPLAN, Stack.MEGATRON_CORE, Stack.HF_TRAINER, Stack.DEEPSPEED)
_READS: set[str] = set()


@dataclass(frozen=True)
class RecordingCandidates(Candidates):
    """Candidates that note every column read (not the copies ``dataclasses.replace`` makes,
    nor ``len``)."""

    def __getattribute__(self, name: str):
        caller = sys._getframe(1).f_code
        if not name.startswith("_") and "dataclasses" not in caller.co_filename and caller.co_name != "__len__":
            _READS.add(name)
        return object.__getattribute__(self, name)


@cache
def table(preset: str, stack: Stack, extra: tuple, gpus: tuple[str, ...] = ()) -> tuple[PlanRequest, Candidates]:
    """The candidates of a request (``gpus``: the types searched; none: the whole catalog)."""
    request = PlanRequest(
        model=get_preset(preset),
        training_tokens=1e11,
        max_gpus=32,
        stack=stack,
        gpus=dict.fromkeys(gpus) or None,
        **dict(extra),
    )
    catalog = load_catalog()
    limits = count_limits(request, allowed_gpus(request, catalog))
    c = build_candidates(request.model, catalog, dict(limits.limits), search_space(request, limits.largest))
    return request, c


def reads(term: Callable, request: PlanRequest, c: Candidates) -> set[str]:
    # A sample of the rows takes every code path (branches are np.where over rows) at a fraction
    # of the time; the rows with offload are kept (their term runs only where one has it).
    rows = np.random.default_rng(0).choice(len(c), min(len(c), 400), replace=False)
    rows = np.union1d(rows, np.flatnonzero(c.offload)[:50])
    sample = rowwise.take(c, rows)
    recording = RecordingCandidates(**{f.name: getattr(sample, f.name) for f in fields(Candidates)})
    pipeline._last_ranks.__dict__.clear()  # ranks cached from another table would hide their reads
    _READS.clear()
    term(request.model, recording, request_settings(request))
    stored = {f.name for f in fields(Candidates)}
    return _READS & stored


HARDWARE_COLUMNS = {f.name for f in fields(Candidates)} - {k.column for k in KNOBS} - {"num_gpus", "gpu_index"}


@pytest.mark.parametrize("preset,extra", CASES)
@pytest.mark.parametrize("term", sorted(TERMS))
def test_each_term_reads_only_its_declared_columns(term, preset, extra):
    function, declared = TERMS[term]
    for stack in STACKS:
        request, c = table(preset, stack, tuple(sorted(extra.items())))
        read = reads(function, request, c)
        undeclared = read - set(declared)
        if set(rowwise.HARDWARE) <= set(declared):  # gpu_index and precision stand for the hardware
            undeclared -= HARDWARE_COLUMNS
        assert not undeclared, f"{term} reads {sorted(undeclared)}, not in its declared columns"


def same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if hasattr(a, "__dataclass_fields__"):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


@pytest.mark.parametrize("preset,extra", CASES[:2])
@pytest.mark.parametrize("term", sorted(TERMS))
def test_once_per_distinct_row_is_the_whole_table_bit_for_bit(term, preset, extra):
    function, declared = TERMS[term]
    request, c = table(preset, Stack.TRAINPLAN, tuple(sorted(extra.items())))
    assert len(c) >= rowwise.MIN_ROWS
    first, inverse = rowwise.distinct_rows(c, declared)
    assert len(first) < len(c)
    model, s = request.model, request_settings(request)
    whole = function(model, c, s)
    spread = rowwise.spread(function(model, rowwise.take(c, first), s), inverse, len(first))
    assert same(whole, spread)


def test_distinct_rows_groups_equal_rows_only():
    rng = np.random.default_rng(0)
    _, c = table("llama3-8b", Stack.TRAINPLAN, ())
    columns = ("tp", "pp", "micro_batch", "memory_factor")
    first, inverse = rowwise.distinct_rows(c, columns)
    for name in columns:
        values = getattr(c, name)
        assert np.array_equal(values[first][inverse], values)
    assert len({tuple(getattr(c, n)[i] for n in columns) for i in first}) == len(first)
    sample = rng.choice(len(c), 200)
    assert np.array_equal(rowwise.take(c, sample).tp, c.tp[sample])


def test_a_few_rows_over_a_wide_span_are_coded_as_counting_over_the_span_would():
    """Sorting a few rows gives the codes of the count over their span (ascending values)."""
    rng = np.random.default_rng(1)
    wide = rng.integers(0, 3_000_000, 500)  # a span of 3M over 500 rows: sorted, not counted
    codes, count = rowwise._codes(wide)
    assert count == len(np.unique(wide))
    assert np.array_equal(codes, np.searchsorted(np.unique(wide), wide))
    dense = np.concatenate([wide, np.arange(wide.min(), wide.max() + 1, 8)])  # enough rows: counted
    dense_codes, _ = rowwise._codes(dense)
    assert np.array_equal(dense_codes[: len(wide)], np.searchsorted(np.unique(dense), wide))


@pytest.mark.parametrize(
    "preset,extra",
    [("llama3-70b", {"allow_offload": True}), ("mixtral-8x7b", {}), ("llama3-8b", {"precision": "fp8"})],
)
def test_candidate_table_times_the_rows_that_fit_as_scoring_them_all_would(preset, extra):
    """candidate_table times only the rows whose GPU memory fits: those rows, the fit and the
    memory of every row are what scoring the whole table gives; the others' time is NaN."""
    request, c = table(preset, Stack.TRAINPLAN, tuple(sorted(extra.items())), ("a100-80gb-sxm", "h100-sxm", "b200"))
    catalog = load_catalog()
    gpus = allowed_gpus(request, catalog)
    settings = request_settings(request)
    evidence = row_evidence(request, c, [catalog.gpu(g) for g in gpus])
    space = search_space(request, count_limits(request, gpus).largest)
    fast = candidate_table(
        request.model, c, list(gpus), space, request.training_tokens, settings, evidence, prune_dominated=False
    )
    whole = score(request.model, c, settings, evidence.mfu_ceiling)
    seconds, cost, _ = job_totals(whole, c, request.training_tokens, settings)
    assert 0 < whole.fits.sum() < len(c)
    assert np.array_equal(fast.fits_memory, whole.fits)
    assert np.array_equal(fast.memory_need_gib, whole.memory.device_total / GIB)
    fit = fast.fits_memory
    # NaN where the GPU lacks the precision (fp8 on an A100), in both.
    assert np.array_equal(fast.extra["model_time_s"][fit], seconds[fit], equal_nan=True)
    assert np.array_equal(fast.time_to_train_s[fit], (seconds * evidence.time_factor)[fit], equal_nan=True)
    at_risk = job_cost_usd(seconds * evidence.time_factor, c, settings)  # the GPUs held that long
    assert np.array_equal(fast.cost_usd[fit], at_risk[fit], equal_nan=True)
    np.testing.assert_allclose(fast.cost_usd[fit], (cost * evidence.time_factor)[fit], rtol=1e-12)  # by the hour
    timed = np.isfinite(fast.time_to_train_s)
    assert not timed[whole.memory.device_total > c.memory_bytes].any()


def test_scored_search_labels_are_layout_labels():
    """scored_search labels each distinct layout once, formatted row by row: the strings of
    ``layout_labels`` over the whole frame."""
    request = PlanRequest(
        model=get_preset("llama3-8b"), training_tokens=1e11, gpus={"h100-sxm": 64, "a100-80gb-sxm": 32}
    )
    frame = scored_search(request).frame
    assert frame["layout"].equals(layout_labels(frame.drop(columns=["layout"])))


def test_once_per_table_keeps_the_last_table_only():
    request, c = table("llama3-8b", Stack.TRAINPLAN, ())
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert rowwise.once_per_table("test term", c, request.model, compute) == 1
    assert rowwise.once_per_table("test term", c, request.model, compute) == 1  # kept
    other = rowwise.take(c, np.arange(10))
    assert rowwise.once_per_table("test term", other, request.model, compute) == 2  # another table
    assert rowwise.once_per_table("test term", other, get_preset("llama3-70b"), compute) == 3  # another model
    assert stage_params.busiest_stage(request.model, c) is stage_params.busiest_stage(request.model, c)


@pytest.mark.parametrize("preset,extra", CASES)
# (not HF Trainer: its gradient checkpointing has no ``blocks`` switch since session 42; llm-foundry's
# activation_checkpointing_target has)
@pytest.mark.parametrize("stack", (Stack.TRAINPLAN, Stack.MEGATRON_CORE, Stack.LLM_FOUNDRY))
def test_blocks_memory_from_the_ranks_terms_is_memory_bit_for_bit(preset, extra, stack):
    """partial_recompute's fast path: a ``blocks`` row's memory at any count, from its ranks'
    count-free terms (``memory_terms``), is ``memory``'s at that count."""
    request, c = table(preset, stack, tuple(extra.items()))
    s = request_settings(request)
    rows = np.flatnonzero(c.ac == AC_BLOCKS)
    assert len(rows)
    sub = rowwise.take(c, np.random.default_rng(0).choice(rows, min(len(rows), 6000), replace=False))
    terms = memory_module.memory_terms(request.model, sub, s)
    assert same(terms.breakdown, memory_module.memory(request.model, sub, s))
    ranks = terms.of_rows(np.arange(len(sub)))
    for count in (np.ones(len(sub), dtype=int), sub.ac_blocks - 1, np.arange(len(sub)) % 40 + 1, sub.ac_blocks + 3):
        count = np.maximum(count, 1)
        # Counts not generated by the search: rows of their own (Candidates.layout_id).
        recounted = replace(sub, ac_blocks=count, layout_id=np.arange(len(sub)))
        expect = memory_module.memory(request.model, recounted, s)
        assert same(memory_module.blocks_memory(ranks, count, s), expect)
        assert np.array_equal(memory_module.blocks_device_total(ranks, count, s), expect.device_total)


@pytest.mark.parametrize("preset,extra", CASES)
def test_rows_of_one_layout_id_hold_the_same_knobs(preset, extra):
    # The search keys memory, stages and rules by layout_id (rowwise.key_columns): exact only if
    # rows of one id agree in every knob the id fixes. The ids are shared across GPU types.
    # Scoring rewrites the blocks rows' recompute (partial_recompute.py), which re-keys them.
    request, generated = table(preset, Stack.TRAINPLAN, tuple(sorted(extra.items())))
    c = replace(generated, ac=generated.ac.copy(), ac_blocks=generated.ac_blocks.copy())
    c = replace(c, layout_id=c.layout_id.copy())
    before = c.ac_blocks.copy()
    space = search_space(request, 32)
    candidate_table(
        request.model, c, list(allowed_gpus(request, load_catalog())), space, 1e11, request_settings(request)
    )
    assert not np.array_equal(before, c.ac_blocks)  # some rows were lowered
    first, inverse = rowwise.distinct([c.layout_id], len(c))
    for name in rowwise.KNOB_COLUMNS:
        values = np.asarray(getattr(c, name))
        assert np.array_equal(values[first][inverse], values), name
    assert len(first) * 2 < len(c)


def test_a_taken_table_is_an_eager_copy():
    _, c = table("llama3-8b", Stack.TRAINPLAN, ())
    rows = np.arange(0, len(c), 7)
    taken = rowwise.take(c, rows)
    before = c.ac_blocks[rows].copy()
    c.ac_blocks[rows] += 1  # the search rewrites this column in place after taking rows
    try:
        assert np.array_equal(taken.ac_blocks, before)
    finally:
        c.ac_blocks[rows] -= 1
    for f in fields(Candidates):
        assert np.array_equal(getattr(taken, f.name), np.asarray(getattr(c, f.name))[rows], equal_nan=True), f.name
    assert type(replace(taken, tp=taken.tp)) is Candidates


def test_once_per_table_keeps_each_threads_last_table():
    # The app scores on several threads: another thread's table must not evict this one's.
    request, c = table("llama3-8b", Stack.TRAINPLAN, ())
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert rowwise.once_per_table("thread term", c, request.model, compute) == 1
    other = rowwise.take(c, np.arange(10))
    worker = threading.Thread(target=rowwise.once_per_table, args=("thread term", other, request.model, compute))
    worker.start()
    worker.join()
    assert len(calls) == 2  # the other thread computed its own table's value
    assert rowwise.once_per_table("thread term", c, request.model, compute) == 1  # still kept here


@pytest.mark.parametrize("preset,extra", CASES)
def test_a_shapes_rows_taken_from_a_larger_ones_are_its_own(preset, extra):
    # space.shape_rows filters a larger limit's and scale-up domain's rows for a shape that fits in
    # it (and generates the counts it lacks): the same rows, in the same order, as generating them.
    request = PlanRequest(model=get_preset(preset), training_tokens=1e11, max_gpus=96, **extra)
    space = search_space(request, 96)
    shapes = dict.fromkeys(
        (per_node, limit, domain)
        for per_node, limit, domain in ((8, 96, 8), (8, 96, 4), (8, 40, 8), (8, 72, 2), (8, 16, 1), (4, 96, 72))
    )
    derived = shape_rows(request.model, space, shapes)
    assert list(derived) == list(shapes)
    for per_node, limit, domain in shapes:
        counts = gpu_counts(limit, per_node, space.min_gpus, space.extra_counts)
        direct = gpu_rows(request.model, domain, per_node, counts, space)
        got = derived[(per_node, limit, domain)]
        assert direct.keys() == got.keys()
        assert all(np.array_equal(direct[k], got[k]) and direct[k].dtype == got[k].dtype for k in direct), (
            limit,
            domain,
        )
