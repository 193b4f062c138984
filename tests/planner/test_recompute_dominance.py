"""The search leaves untimed the rows that recompute where the same layout fits without (issue 28,
"prune dominated candidates before scoring"): planner/search/score.py ``recompute_twins``.

That is safe only if no such row could ever be chosen: its twin must be as fast and as cheap at
the model's figures and at every risk, and fit wherever it fits. These tests score whole tables
without the pruning and check exactly that, with the rows grouped here independently of the
code under test; then that the plans chosen with and without it are the same.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

from planner import api
from planner.api import PlanRequest, plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.model.candidates import AC_BLOCKS, AC_NONE, KNOBS, RECOMPUTE_KNOBS, Candidates
from planner.model.memory import fits
from planner.model.partial_recompute import full_ac_blocks
from planner.model.stacks import Stack
from planner.request import allowed_gpus, count_limits, request_settings
from planner.search.ilp import ScoredTable, check_rows, solve_single
from planner.search.score import scored_table, search_space
from planner.search.space import build_candidates

GPUS = {"a100-80gb-sxm": None, "h100-sxm": None, "b200": None}
CASES = (
    ("llama3-70b", Stack.TRAINPLAN, {"allow_offload": True}),
    ("llama3-8b", Stack.MEGATRON_CORE, {"seq_len": 32768}),
    ("mixtral-8x7b", Stack.TRAINPLAN, {}),
    ("llama3-8b", Stack.DEEPSPEED, {"precision": "fp8"}),
)


def scored(preset: str, stack: Stack, extra: dict, prune: bool) -> tuple[PlanRequest, Candidates, ScoredTable]:
    request = PlanRequest(
        model=get_preset(preset), training_tokens=1e11, gpus=dict(GPUS), max_gpus=64, stack=stack, **extra
    )
    catalog = load_catalog()
    gpus = allowed_gpus(request, catalog)
    limits = count_limits(request, gpus)
    space = search_space(request, limits.largest)
    c = build_candidates(request.model, catalog, dict(limits.limits), space)
    table = scored_table(request, catalog, c, list(gpus), space, request_settings(request), prune_dominated=prune)
    return request, c, table


def twins_by_pandas(c: Candidates, fits: np.ndarray) -> pd.DataFrame:
    """(row, twin): each fitting row that recomputes, and the fitting row of its GPU type that is
    alike in every knob but recompute and recomputes nothing."""
    columns = ["gpu_index", *(k.column for k in KNOBS if k.column not in RECOMPUTE_KNOBS)]
    rows = np.flatnonzero(fits)
    frame = pd.DataFrame({name: getattr(c, name)[rows] for name in columns})
    frame["row"], frame["none"] = rows, c.ac[rows] == AC_NONE
    twins = frame[frame["none"]].drop(columns="none").rename(columns={"row": "twin"})
    return frame[~frame["none"]].merge(twins, on=columns)[["row", "twin"]]


@pytest.mark.parametrize("preset,stack,extra", CASES)
def test_a_fitting_row_without_recompute_is_never_slower_nor_dearer(preset, stack, extra):
    request, c, whole = scored(preset, stack, extra, prune=False)
    # Paired as the search pairs them: on the GPU-memory half of the fit rule.
    gpu_fit = fits(whole.memory_need_gib, whole.capacity_gib, request_settings(request).memory_headroom)
    pairs = twins_by_pandas(c, gpu_fit)
    assert len(pairs) > 100, "the case should have rows to prune"
    row, twin = pairs["row"].to_numpy(), pairs["twin"].to_numpy()
    for column in (whole.time_to_train_s, whole.cost_usd, whole.extra["model_time_s"]):
        timed = np.isfinite(column[row])  # NaN in both where the GPU lacks the precision
        assert np.array_equal(timed, np.isfinite(column[twin]))
        # (goodput rounds the checkpoint interval to whole steps: a hair of slack)
        assert (column[twin][timed] <= column[row][timed] * (1 + 1e-9)).all()
    # The rest of the checks (the host's fit with offload among them) read no recompute: the
    # twin passes wherever the row does.
    for passes in (whole.fits_memory, whole.divisible, whole.batch_ok):
        assert (passes[twin] | ~passes[row]).all()
    assert np.array_equal(whole.extra["band_hi"][row], whole.extra["band_hi"][twin])


@pytest.mark.parametrize("preset,stack,extra", CASES[:3])
def test_the_pruned_rows_are_the_twinned_ones_and_keep_their_memory(preset, stack, extra):
    request, c, whole = scored(preset, stack, extra, prune=False)
    _, c_pruned, pruned = scored(preset, stack, extra, prune=True)
    # The pruning reads the GPU-memory half of the fit rule (the host's comes after timing).
    gpu_fit = fits(whole.memory_need_gib, whole.capacity_gib, request_settings(request).memory_headroom)
    expected = np.zeros(len(c), dtype=bool)
    pairs = twins_by_pandas(c, gpu_fit)
    row, twin = pairs["row"].to_numpy(), pairs["twin"].to_numpy()
    # at the request's p80 a twin that may not fit stands for no row that surely does (review s42)
    unsure = whole.extra["may_not_fit"]
    assert request.risk.judges_memory
    expected[row[~(unsure[twin] & ~unsure[row])]] = True
    assert np.array_equal(pruned.dominated, expected)
    assert np.isnan(pruned.time_to_train_s[pruned.dominated]).all()
    # A pruned blocks row keeps the memory of its generated count (every block checkpointed):
    # no more than at the fewest that fit, which the whole table lowered it to.
    blocks = pruned.dominated & (c_pruned.ac == AC_BLOCKS)
    assert blocks.any()
    generated = full_ac_blocks(request.model.num_layers, c_pruned.pp[blocks], c_pruned.vpp[blocks])
    assert np.array_equal(c_pruned.ac_blocks[blocks], generated)  # the blocks fit skipped them
    assert np.array_equal(pruned.memory_need_gib[~blocks], whole.memory_need_gib[~blocks])
    assert (pruned.memory_need_gib[blocks] <= whole.memory_need_gib[blocks]).all()
    assert np.array_equal(pruned.fits_memory, whole.fits_memory)
    kept = ~pruned.dominated
    assert np.array_equal(pruned.time_to_train_s[kept], whole.time_to_train_s[kept], equal_nan=True)


@pytest.mark.parametrize("objective", ["cost", "time", "mix"])
@pytest.mark.parametrize("preset,stack,extra", CASES)
def test_the_choice_and_its_alternatives_are_those_of_the_whole_table(preset, stack, extra, objective):
    _, _, whole = scored(preset, stack, extra, prune=False)
    _, _, pruned = scored(preset, stack, extra, prune=True)
    deadline = float(np.nanquantile(whole.time_to_train_s[check_rows(whole).feasible()], 0.3))
    for limits in ({}, {"deadline_s": deadline}):
        a = solve_single(whole, objective, top_k=5, **limits)
        b = solve_single(pruned, objective, top_k=5, **limits)
        # The same figures (a tie with a pruned row can only be an exact one, at a ceiling) ...
        for column in (whole.time_to_train_s, whole.cost_usd):
            assert column[a.row] == column[b.row]
        # ... and the alternatives less the pruned rows, in order: copies of a layout with more
        # recompute held at the same efficiency ceiling no longer fill them.
        kept = [r for r in a.alternatives if not pruned.dominated[r]]
        # (Rows held at one ceiling tie exactly on time and cost; which of them fills a place in a
        # tie is not the pruning's to keep: the figures are compared, in order.)
        figures = lambda rows: [(whole.time_to_train_s[r], whole.cost_usd[r]) for r in rows]  # noqa: E731
        assert figures(b.alternatives[: len(kept)]) == figures(kept)


def test_plan_chooses_as_the_unpruned_search_does(monkeypatch):
    """A whole 70B plan on H100 (objective cost, no limit): the same plan and alternatives with
    the pruned rows timed and without."""
    request = PlanRequest(model=get_preset("llama3-70b"), training_tokens=2e12, gpus={"h100-sxm": None}, max_gpus=256)
    pruned = plan(request)
    monkeypatch.setattr(api, "scored_table", functools.partial(scored_table, prune_dominated=False))
    whole = plan(request)
    assert pruned.plan == whole.plan
    # The alternatives' figures in order; a place that rows held at one efficiency ceiling tie for
    # exactly may be filled by either (not the pruning's to keep: the test above), any other by the
    # same plan.
    figures = [(a.estimate.time_to_train_h, a.estimate.cost_usd) for a in whole.alternatives]
    assert [(a.estimate.time_to_train_h, a.estimate.cost_usd) for a in pruned.alternatives] == figures
    untied = [i for i, f in enumerate(figures) if figures.count(f) == 1]
    assert [pruned.alternatives[i] for i in untied] == [whole.alternatives[i] for i in untied]
