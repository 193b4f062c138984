"""torch's ring attention (torchtitan's context parallelism) as its loop runs it: the fp32 merges and
gradient accumulators of every ring step, and the non-causal half-chunk steps after the first
(planner/model/cp_ring.py; trial ring53)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Layout, TrainingConfig
from planner.model import rates
from planner.model.candidates import single
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stack_profiles import TORCHTITAN_SETTINGS
from planner.model.step_time import ring_merge_s

LLAMA = get_preset("llama3.1-8b")  # 32 layers, 32 query heads of 128
SEQ = 32768


def candidates(cp: int, seq_len: int = SEQ, compile: bool = True):
    layout = Layout(dp_shard=8 // cp, cp=cp).resolve(8)
    training = TrainingConfig(
        seq_len=seq_len, micro_batch=1, compile=compile, activation_checkpointing=ActivationCheckpointing.FULL
    )
    return single(load_catalog().gpu("h100-sxm"), layout, training, gpus_per_node=8, network_bandwidth=50e9)


def test_torch_ring_charges_its_merges_for_every_ring_step():
    """At a fixed sequence each of the cp - 1 later steps merges the rank's whole output again: a
    forward step 46 bytes an element (run twice under full AC), a backward step 60, the call itself
    20 and 84; compile halves the eager ops; trainplan's all-gather CP calls SDPA once and merges
    nothing."""
    for cp in (2, 4, 8):
        c = candidates(cp)
        elements = SEQ / cp * 32 * 128
        eager = 32 * elements * (2 * (20 + 46 * (cp - 1)) + 84 + 60 * (cp - 1))
        expected = (
            eager * TORCHTITAN_SETTINGS.compile_elementwise_factor / rates.eager_bandwidth(c, TORCHTITAN_SETTINGS)
        )
        assert ring_merge_s(LLAMA, c, TORCHTITAN_SETTINGS, 32) == pytest.approx(expected)
        assert ring_merge_s(LLAMA, c, DEFAULT_SETTINGS, 32) == pytest.approx(np.zeros(1))
    growing = [float(ring_merge_s(LLAMA, candidates(cp), TORCHTITAN_SETTINGS, 32)[0]) for cp in (2, 4, 8)]
    assert growing[0] < growing[1] < growing[2]  # (cp - 1) / cp of the sequence merged per layer
    assert ring_merge_s(LLAMA, candidates(1), TORCHTITAN_SETTINGS, 32) == pytest.approx(np.zeros(1))
    eager_run = ring_merge_s(LLAMA, candidates(4, compile=False), TORCHTITAN_SETTINGS, 32)
    assert eager_run == pytest.approx(2.0 * ring_merge_s(LLAMA, candidates(4), TORCHTITAN_SETTINGS, 32))


def test_ring_steps_after_the_first_run_at_the_flash_kernels_non_causal_rate():
    """cp 4 over 16K: a causal 4K step (FA2 forward 319 of 370 TFLOP/s in the FA3 paper's bars;
    backward 310 x 319 / 368 of 322) and three non-causal ones over 2K halves (362 / 370, 291 /
    322), time-weighted; trainplan's all-gather CP keeps the causal rate over its 4K chunk."""
    c = candidates(4, seq_len=16384)
    fwd, bwd = rates.attention_rates(c, TORCHTITAN_SETTINGS, 128)
    causal_fwd, causal_bwd = rates.attention_rates(c, TORCHTITAN_SETTINGS.but(cp_ring_loop=None), 128)
    mix_fwd = 1.0 / (0.25 / (319 / 370) + 0.75 / (362 / 370))
    mix_bwd = 1.0 / (0.25 / (310 * 319 / 368 / 322) + 0.75 / (291 / 322))
    assert fwd / causal_fwd == pytest.approx(mix_fwd / (319 / 370))
    assert bwd / causal_bwd == pytest.approx(mix_bwd / (310 * 319 / 368 / 322))
    assert rates.attention_rates(candidates(1, 4096), TORCHTITAN_SETTINGS, 128)[0] == pytest.approx(
        rates.attention_rates(candidates(1, 4096), DEFAULT_SETTINGS, 128)[0]
    )
