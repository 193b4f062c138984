"""A part whose scale-up link no well-measured part of its architecture has is judged apart for its
band and envelope, not for its ceiling (planner/accuracy/links.py; trial s36 of issue 27, finding 3:
an H800 at tp 8 read "validated" from H100 rows)."""

from __future__ import annotations

import numpy as np

from planner.accuracy import band_generation
from planner.accuracy.bands import row_ceiling_regime, row_regime
from planner.accuracy.links import link_apart, measured_links, row_generation
from planner.accuracy.regime import GENERATION_WEIGHT, LINK_WEIGHT, Regime, base_generation, distances
from planner.accuracy.residuals import load_residuals
from planner.api import build_plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig

GPUS = load_catalog().gpus
TP8 = Layout(tp=8, pp=2, sharding="zero1")
TRAINING = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=32)


def _estimate(gpu: str, num_gpus: int = 64, layout: Layout = TP8):
    plan = build_plan(get_preset("llama3-70b"), gpu, layout, TRAINING, num_gpus=num_gpus, stack="megatron-core")
    return plan.estimate


def test_the_measured_links_are_the_sxm_boards_and_the_export_and_pcie_parts_are_apart():
    links = measured_links()
    assert set(links) == {"Ampere", "Hopper", "Blackwell"}
    apart = {g for g, spec in GPUS.items() if link_apart(spec)}
    assert {"h800", "a800-80gb-sxm", "h100-pcie", "h100-nvl", "h200-nvl", "a100-80gb-pcie"} <= apart
    # the same chip on the same board as a measured part, or an architecture with no row at all
    assert not apart & {"h100-sxm", "h200-sxm", "h20", "a100-80gb-sxm", "b200", "b300", "gb200", "gb300"}
    assert not apart & {"l40s", "rtx-4090", "mi300x"}


def test_an_h800_at_tp_8_is_outside_the_envelope_where_the_h100_is_validated():
    h100, h800 = _estimate("h100-sxm"), _estimate("h800")
    assert h100.uncertainty.validated and h100.uncertainty.regime_generation == "Hopper"
    u = h800.uncertainty
    assert not u.validated
    assert u.regime_generation == "Hopper (h800's link)"
    assert "no measured row of megatron-core on Hopper (h800's link)" in u.envelope
    # its nearest rows are the H100's, one feature away, not another architecture's
    assert "nearest megatron-core on Hopper," in u.envelope and "the link of Hopper's measured parts" in u.envelope


def test_one_gpu_crosses_no_link_and_keeps_its_architecture():
    layout = Layout(sharding="none")
    training = TrainingConfig(seq_len=2048, micro_batch=1, grad_accum=1)
    plan = build_plan(get_preset("llama3.2-1b"), "h800", layout, training, num_gpus=1, stack="trainplan")
    assert plan.estimate.uncertainty.regime_generation == "Hopper"
    assert band_generation(GPUS["h800"], False) == "Hopper" and band_generation(GPUS["h800"], True) != "Hopper"
    assert band_generation(GPUS["h20"], True) == "Hopper (h20)"  # another balance: its own rule


def test_a_part_apart_for_its_link_keeps_its_architectures_ceiling():
    a100, a800 = _estimate("a100-80gb-sxm"), _estimate("a800-80gb-sxm")
    assert a100.ceiling is not None and a800.ceiling is not None
    assert (a800.ceiling.mfu, a800.ceiling.row) == (a100.ceiling.mfu, a100.ceiling.row)


def test_the_link_is_one_feature_and_another_architecture_two():
    query = Regime("megatron-core", "Hopper (h800's link)", 0)
    generations = np.array(["Hopper (h800's link)", "Hopper", "Blackwell", "Hopper (h20)"], dtype=object)
    stacks = np.array(["megatron-core"] * 4, dtype=object)
    d = distances(query, stacks, generations, np.zeros(4, dtype=np.int64))
    assert list(d) == [0.0, LINK_WEIGHT, GENERATION_WEIGHT, GENERATION_WEIGHT]
    assert base_generation("Hopper (h800's link)") == "Hopper" and base_generation("Hopper (h20)") == "Hopper (h20)"


def test_a_validation_row_on_such_a_part_is_placed_by_the_same_rule():
    (deepseek,) = [r for r in load_residuals() if r.gpu == "h800"]
    assert row_generation(deepseek) == "Hopper (h800's link)" == row_regime(deepseek).generation
    assert row_ceiling_regime(deepseek).generation == "Hopper"  # its ceiling: its architecture's
    assert all(row_generation(r) == r.generation for r in load_residuals() if r.gpu in ("h100-sxm", "a100-80gb-sxm"))


def test_another_vendors_gpu_is_another_architecture_and_more():
    """Buyer trial s45: with AMD priced at its listed offers, an AMD plan read its band from Hopper rows
    at another architecture's distance only, though no row ran ROCm's kernels or RCCL. Another vendor
    adds VENDOR_WEIGHT, so its band is widened more than an unmeasured NVIDIA architecture's, and says so."""
    from planner.accuracy.regime import VENDOR_WEIGHT
    from planner.catalog.specs import vendor_of

    stacks = np.array(["torchtitan"] * 3, dtype=object)
    generations = np.array(["Hopper", "Ada", "AMD"], dtype=object)
    on_amd = distances(Regime("torchtitan", "AMD", 0), stacks, generations, np.zeros(3, dtype=np.int64))
    on_ada = distances(Regime("torchtitan", "Ada", 0), stacks, generations, np.zeros(3, dtype=np.int64))
    assert list(on_amd) == [GENERATION_WEIGHT + VENDOR_WEIGHT, GENERATION_WEIGHT + VENDOR_WEIGHT, 0.0]
    assert list(on_ada) == [GENERATION_WEIGHT, 0.0, GENERATION_WEIGHT + VENDOR_WEIGHT]
    nvidia = ("Ampere", "Hopper", "Blackwell", "Ada", "Hopper (h20)", "Hopper (h800's link)")
    assert {vendor_of(g) for g in nvidia} == {"nvidia"} != {vendor_of("AMD")}
    # review s45 L4: the label's vendor is the spec's own, for every part in the catalog
    assert all(vendor_of(g.generation) == g.vendor for g in GPUS.values())
    amd, h100 = _estimate("mi300x"), _estimate("h100-sxm")
    assert amd.uncertainty is not None and h100.uncertainty is not None
    assert "another vendor" in amd.uncertainty.envelope
    low, high = amd.uncertainty.tokens_per_s
    assert amd.uncertainty.widened_by > h100.uncertainty.widened_by + 0.1 and high / low > 1.5


def test_amd_parts_are_grouped_by_their_architecture():
    """Session 46: every AMD part read as one "AMD" architecture, so a CDNA 3 plan would have read
    CDNA 4 rows as its own. AMD's LLVM target names the architecture (ROCm's GPU specifications),
    and the label still maps back to its vendor."""
    from planner.catalog.specs import vendor_of

    by_id = {g: GPUS[g].generation for g in ("mi250x", "mi300x", "mi325x", "mi350x", "mi355x")}
    assert by_id == {"mi250x": "CDNA2", "mi300x": "CDNA3", "mi325x": "CDNA3", "mi350x": "CDNA4", "mi355x": "CDNA4"}
    assert {vendor_of(g) for g in by_id.values()} == {"amd"}
