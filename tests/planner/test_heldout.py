"""Leave-one-generation-out: the settings that score a generation are fitted without its rows."""

from __future__ import annotations

import numpy as np

from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS
from validation import heldout
from validation.published import compare_published
from validation.published_rows import Stack, read_published_runs


def _subset():
    runs = [r for r in read_published_runs()[0] if r.source in ("S4", "S14")]
    by_gen: dict[str, list] = {}
    for run, c in zip(runs, compare_published(runs), strict=True):
        if c.excluded is None:
            by_gen.setdefault(heldout.generation(run), []).append(run)
    return [run for rows in by_gen.values() for run in rows[:2]]  # two rows of each generation


def test_each_generation_is_scored_with_settings_fitted_on_the_others(monkeypatch):
    grid = {"attention_kernel_factor": [0.8, 1.6], "tp_comm_overlap": [0.0, 0.9]}
    monkeypatch.setattr(heldout, "MC_GRID", grid)
    runs = _subset()
    items = heldout.published_leave_one_generation_out(runs)
    assert {i.generation for i in items} == {"A100", "H100", "B200/GB200"}
    choices = heldout._grid(grid)
    for gen in ("H100", "B200/GB200"):
        others = [r for r in runs if heldout.generation(r) != gen and r.stack == Stack.MEGATRON_CORE]
        loss = [
            np.mean(
                np.abs(
                    [
                        c.error
                        for c in compare_published(others, {Stack.MEGATRON_CORE: MEGATRON_CORE_SETTINGS.but(**ch)})
                    ]
                )
            )
            for ch in choices
        ]
        expected = choices[int(np.argmin(loss))]
        assert all(i.fit == expected for i in items if i.generation == gen)
    # the A100 rows run the Megatron-LM profile: nothing fitted on published rows applies to them
    assert all(i.fit == {} and i.error == i.fitted_error for i in items if i.generation == "A100")


def test_only_the_fit_sources_are_fitted_on(monkeypatch):
    """A Megatron-Core row outside MC_FIT_SOURCES (S15, the Nemotron-4 340B report) is scored with
    settings fitted without it, and no fold is fitted on it."""
    assert {"S3", "S13", "S14"} == heldout.MC_FIT_SOURCES
    monkeypatch.setattr(heldout, "MC_GRID", {"attention_kernel_factor": [0.5, 1.0], "tp_comm_overlap": [0.0, 0.9]})
    s15 = [r for r in read_published_runs()[0] if r.source == "S15"]
    assert len(s15) == 3 and all(r.stack == Stack.MEGATRON_CORE for r in s15)
    blackwell = [r for r in _subset() if heldout.generation(r) == "B200/GB200"]
    items = heldout.published_leave_one_generation_out(blackwell + s15)
    # S15 (H100) is scored with a fit on the Blackwell rows; the Blackwell fold has no row to fit on
    assert {i.source for i in items if i.generation == "H100"} == {"S15"}
    assert all(i.fit for i in items if i.generation == "H100")
    assert all(i.fit == {} and i.error == i.fitted_error for i in items if i.generation == "B200/GB200")


def test_summary_means():
    items = [heldout.HeldOut("H100", "S14", str(k), "llama", e, e, {}) for k, e in enumerate((0.1, -0.3))]
    (s,) = heldout.summarise(items, lambda i: i.generation)
    assert (s.rows, round(s.mean_signed, 6), round(s.mean_abs, 6), s.worst) == (2, -0.1, 0.2, -0.3)
