"""Rows scored held out but kept out of the bands (the AMD Instinct rows): an estimate on their
architecture cites them beside a band read from other architectures' rows (buyer trial s48 M3: an
MI325X plan won on Hopper rows' band, its own architecture's rows, +11 % on average, unsaid)."""

from __future__ import annotations

import pytest

from planner.accuracy.unbanded import UNBANDED_CSV, architecture_rows, architecture_words, load_unbanded_rows
from planner.api import build_plan
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig


def test_the_file_is_the_harness_output(tmp_path):
    """A model change that moves an AMD prediction must rebuild it (bench/validate_amd.py --write)."""
    from validation.amd_runs import write_unbanded

    fresh = write_unbanded(path=tmp_path / "unbanded_rows.csv")
    assert fresh.read_text() == UNBANDED_CSV.read_text()
    assert {r.generation for r in load_unbanded_rows()} == {"CDNA3", "CDNA4"}


def test_an_architectures_rows_are_summarised_and_worded():
    cdna3 = architecture_rows("CDNA3")
    assert cdna3 is not None and cdna3.rows == 3 and cdna3.sources == ("PRIMUS_AAC11",)
    errors = [r.error for r in load_unbanded_rows() if r.generation == "CDNA3"]
    assert cdna3.errors == tuple(sorted(errors)) and cdna3.mean_error == pytest.approx(sum(errors) / 3)
    words = architecture_words(cdna3)
    assert words.startswith("; its architecture's own rows, scored but not band rows: 3 on CDNA3")
    assert f"{min(errors):+.0%} to {max(errors):+.0%} against them, {sum(errors) / 3:+.1%} on average" in words
    assert architecture_rows("Hopper") is None and architecture_words(None) == ""


@pytest.mark.parametrize(("gpu", "cited"), [("mi325x", "CDNA3"), ("mi355x", "CDNA4"), ("h100-sxm", None)])
def test_an_estimate_cites_its_architectures_own_rows_beside_a_band_of_others(gpu, cited):
    training = TrainingConfig(seq_len=4096, grad_accum=8)
    p = build_plan(get_preset("llama3-8b"), gpu, Layout(dp_shard=8), training, num_gpus=8, training_tokens=1e11)
    u = p.estimate.uncertainty
    assert u is not None and not u.validated
    if cited is None:
        assert u.architecture_rows is None and "scored but not band rows" not in u.envelope
    else:
        assert u.architecture_rows is not None and u.architecture_rows.generation == cited
        assert u.envelope.endswith(architecture_words(u.architecture_rows))
