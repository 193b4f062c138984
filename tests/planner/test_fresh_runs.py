"""The fresh held-out rows (data/validation/fresh_runs.csv, validation/fresh_runs.py).

The reader and the score's arithmetic are checked, not the model's error (bench/validate_fresh.py
prints that): every row's command names a catalog GPU and a model that exists, its GPU count
matches the row's, and a band is read per GPU as the figure is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import PRESET_CONFIGS
from validation.fresh_runs import coverage, read_fresh, score_from_json

REPO = Path(__file__).resolve().parents[2]
ROWS = read_fresh()


def _flag(args: tuple[str, ...], name: str) -> str:
    return args[args.index(name) + 1]


def test_every_row_names_a_catalog_gpu_a_model_and_its_own_gpu_count():
    assert len(ROWS) == 63 and len({r.row_id for r in ROWS}) == 63
    gpus = load_catalog().gpus
    for row in ROWS:
        assert _flag(row.estimate_args, "--gpu") in gpus, row.row_id
        model = _flag(row.estimate_args, "--model")
        assert model in PRESET_CONFIGS or (REPO / model).is_file(), row.row_id
        assert int(_flag(row.estimate_args, "--num-gpus")) == row.num_gpus, row.row_id
        assert row.measured_tokens_per_s_per_gpu > 0


def test_each_set_keeps_its_own_rows():
    """Set 1 (session 51) is F01-F14, set 2 (session 52) F15-F28, set 3 (session 53) F29-F47, set 4
    (session 54) F48-F63: a row moved between sets, or a set read as text, would merge collections
    scored at different times."""
    sets = {row.row_id: row.fresh_set for row in ROWS}
    assert {r for r, s in sets.items() if s == 1} == {f"F{i:02d}" for i in range(1, 15)}
    assert {r for r, s in sets.items() if s == 2} == {f"F{i:02d}" for i in range(15, 29)}
    assert {r for r, s in sets.items() if s == 3} == {f"F{i:02d}" for i in range(29, 48)}
    assert {r for r, s in sets.items() if s == 4} == {f"F{i:02d}" for i in range(48, 64)}


def _answer(gpus: int, figure: float, band: tuple[float, float]) -> dict:
    return {
        "feasible": True,
        "gpu": "h100-sxm",
        "num_gpus": gpus,
        "throughput": {"tokens_per_s_per_gpu": figure},
        "uncertainty": {"tokens_per_s": list(band), "validated": True, "envelope": "validated: ..."},
    }


def test_the_band_is_read_per_gpu_and_the_error_is_signed():
    row = ROWS[0]  # 8 GPUs, 55,000 tokens/s per GPU measured
    score = score_from_json(row, _answer(8, 60_500.0, (8 * 50_000.0, 8 * 56_000.0)))
    assert score.band_tokens_per_s_per_gpu == (50_000.0, 56_000.0)
    assert score.error == pytest.approx(0.10) and score.in_band
    below = score_from_json(row, _answer(8, 60_500.0, (8 * 56_000.0, 8 * 70_000.0)))
    assert not below.in_band
    (summary,) = coverage([score, below], lambda s: s.generation)
    assert (summary.group, summary.rows, summary.in_band) == ("Hopper", 2, 1)


def test_an_infeasible_answer_is_not_scored():
    with pytest.raises(ValueError, match="infeasible"):
        score_from_json(ROWS[0], {"feasible": False, "reason": "out of memory"})


def test_a_job_refused_though_it_ran_is_scored_if_it_fit_and_flagged():
    answer = _answer(8, 60_500.0, (8 * 50_000.0, 8 * 70_000.0)) | {"feasible": False, "reason": "memory: needs 88 GiB"}
    refused = score_from_json(ROWS[0], answer)
    assert refused.refused == "memory: needs 88 GiB" and refused.in_band
    fits = score_from_json(ROWS[0], _answer(8, 60_500.0, (1.0, 2.0)))
    assert fits.refused is None
    (summary,) = coverage([refused, fits], lambda s: "all")
    assert (summary.rows, summary.in_band, summary.refused) == (2, 1, 1)
