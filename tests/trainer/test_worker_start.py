"""What a torchrun worker pays before and while it trains beyond the run itself: the imports it
does not need (pandas), and garbage collections that walk every object its imports made."""

from __future__ import annotations

import gc

import pytest
from support import REPO
from support.imports import loaded_at_import

import trainer.train
import trainer.worker


@pytest.mark.parametrize("module", ["trainer.train", "trainer.job_spec"])
def test_neither_a_worker_nor_the_agent_imports_pandas(module):
    """Every worker imports trainer.train and the torchrun agent reads the job (trainer.job_spec):
    through the planner they imported pandas, 0.5-0.8 s of CPU per process and launch on a 2-core
    machine, for a function of the candidate search they never call (planner/model/rowwise.py
    imports it where it factorizes)."""
    assert "pandas" not in loaded_at_import(module, REPO)


def test_the_check_sees_pandas():
    """The check above means something: the search's table module imports pandas at load."""
    assert loaded_at_import("planner.search.table", REPO)["pandas"] == "planner.search.table"


def test_a_worker_trains_with_the_imports_heap_frozen(monkeypatch):
    """trainer.worker freezes what the imports made before the run starts (freeze_imports), so the
    collections during and after the run walk only what the run makes."""
    frozen = []
    monkeypatch.setattr(trainer.train, "main", lambda argv: frozen.append(gc.get_freeze_count()) or 0)
    gc.unfreeze()
    try:
        assert trainer.worker.main(["job"]) == 0
    finally:
        gc.unfreeze()  # this test process's heap: collected as before
    assert frozen and frozen[0] > 100_000
