"""Gemma 2's soft-capped attention on the Hugging Face path runs eager (transformers has no SDPA
path for it): the planner times its s x s scores through HBM, as the trainer builds it
(planner/model/step_time.py ``eager_softcap_attention``, ModelSpec.hf_attention_implementation)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Implementation, Layout, TrainingConfig
from planner.model import rates
from planner.model.block import block_table
from planner.model.candidates import single
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.step_time import eager_softcap_attention, rank_compute_time, unfused_attention_bytes

GEMMA2 = get_preset("gemma2-9b")
NO_CAP = GEMMA2.model_copy(update={"attn_softcap": None})


def candidates(impl: Implementation, seq_len: int = 4096):
    catalog = load_catalog()
    gpu = catalog.gpu("h100-sxm")
    return single(
        gpu,
        Layout().resolve(8),
        TrainingConfig(seq_len=seq_len, micro_batch=1, grad_accum=1, impl=impl),
        gpus_per_node=catalog.node(gpu.default_node).gpus_per_node,
        network_bandwidth=catalog.network(gpu.default_network).bandwidth_bytes_per_s_per_gpu,
    )


def test_the_planner_and_the_trainer_pick_the_same_attention():
    assert GEMMA2.hf_attention_implementation == "eager"
    assert NO_CAP.hf_attention_implementation == "sdpa"
    hf = candidates(Implementation.HF)
    assert eager_softcap_attention(GEMMA2, hf).all()
    assert not eager_softcap_attention(NO_CAP, hf).any()


def test_eager_scores_stream_through_hbm_at_their_kernels_bytes():
    s = DEFAULT_SETTINGS
    c = candidates(Implementation.HF)
    got = unfused_attention_bytes(GEMMA2, c, s, GEMMA2.num_layers)
    scores = 4096 * 4096 * GEMMA2.num_heads  # one micro-batch of 4096 tokens, every head
    expected = GEMMA2.num_layers * scores * s.eager_softcap_attention_bytes_per_score * 3.0  # fwd + 2x bwd
    assert got[0] == pytest.approx(expected)
    assert unfused_attention_bytes(NO_CAP, c, s, NO_CAP.num_layers)[0] == 0.0


def test_eager_attention_times_every_score_and_its_traffic_grows_with_the_sequence():
    s = DEFAULT_SETTINGS
    extra = []
    for seq in (2048, 8192):
        c = candidates(Implementation.HF, seq)
        eager, flash = (rank_compute_time(m, c, s, m.num_layers, True) for m in (GEMMA2, NO_CAP))
        assert eager["matmul"][0] == pytest.approx(flash["matmul"][0])
        # Eager: every s x s score of every block (masked ones and the sliding window's outside
        # too), fwd + 2x bwd, at the batched-GEMM rate of a head-dim inner dimension.
        flops = block_table(GEMMA2).attention.flops_per_token_per_key * seq * GEMMA2.num_layers * seq
        rate = rates.unfused_attention_rate(c, s, block_table(GEMMA2).attention.head_dim)
        assert eager["attention"][0] == pytest.approx((3.0 * flops / rate)[0])
        extra.append((eager["memory_bound"] - flash["memory_bound"])[0] / seq)
    # Per token the score traffic is linear in the sequence (s x s scores over s tokens).
    assert np.isclose(extra[1] / extra[0], 4.0, rtol=1e-6)
