"""fp8 x tensor parallelism: the structural rule and what the step-time and memory models charge."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import Layout, Precision, TrainingConfig
from planner.model import comm
from planner.model.candidates import single
from planner.model.memory import block_activation_bytes_per_token
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stack_profiles import MEGATRON_CORE_SETTINGS
from planner.model.step_comm import comm_times
from planner.model.step_time import block_gemm_time_per_token
from planner.model.structure import first_structural_problem

LLAMA = get_preset("llama3-8b")
RULES = dict(pp=1, cp=1, seq_len=4096, grad_accum=1, scaleup_domain_size=8, one_f_one_b=True)


def candidates(precision: Precision, tp: int):
    layout = Layout(dp_shard=8 // tp, tp=tp).resolve(8)
    training = TrainingConfig(seq_len=4096, micro_batch=1, precision=precision)
    return single(load_catalog().gpu("h100-sxm"), layout, training, gpus_per_node=8, network_bandwidth=50e9)


def test_fp8_with_tp_is_built_natively_and_refused_for_hf_models():
    assert first_structural_problem(LLAMA, tp=4, hf=False, fp8=True, **RULES) is None
    assert first_structural_problem(LLAMA, tp=4, hf=True, fp8=True, **RULES) == (
        "fp8 with tensor parallelism needs impl 'native' (or estimate it under another --stack, e.g. megatron-core)"
    )
    assert first_structural_problem(LLAMA, tp=1, hf=True, fp8=True, **RULES) is None


def test_fp8_tp_gathers_float8_and_reduce_scatters_bf16():
    """Per row-parallel GEMM pass: an all-gather of 1-byte elements plus a bf16 reduce-scatter,
    where bf16 moves 2 + 2 bytes; with the stack setting off fp8 moves what bf16 does."""
    fp8, bf16 = candidates(Precision.FP8, 4), candidates(Precision.BF16, 4)
    fp8_tp, bf16_tp = comm_times(LLAMA, fp8, DEFAULT_SETTINGS).tp[0], comm_times(LLAMA, bf16, DEFAULT_SETTINGS).tp[0]
    link = comm.group_link(bf16, bf16.tp, np.ones_like(bf16.tp), DEFAULT_SETTINGS)
    elements = 4096 * LLAMA.hidden_size
    one_pair = comm.all_gather_s(elements * 2.0, 4, link)[0]
    fp8_pair = comm.all_gather_s(elements * 1.0, 4, link)[0] + one_pair
    assert fp8_tp / bf16_tp == pytest.approx(fp8_pair / (2 * one_pair))
    assert 0.75 < fp8_tp / bf16_tp < 0.8
    assert comm_times(LLAMA, fp8, MEGATRON_CORE_SETTINGS).tp[0] == pytest.approx(
        comm_times(LLAMA, bf16, MEGATRON_CORE_SETTINGS).tp[0]
    )


def test_fp8_tp_gemms_run_on_the_local_shapes_and_save_the_gathered_input_in_float8():
    s = DEFAULT_SETTINGS
    tp1, tp4 = candidates(Precision.FP8, 1), candidates(Precision.FP8, 4)
    # Each rank runs 1/tp of every block GEMM at the fp8 rate (shape factors aside: >= 1/4).
    ratio = block_gemm_time_per_token(LLAMA, tp4, s)[0] / block_gemm_time_per_token(LLAMA, tp1, s)[0]
    assert 0.25 <= ratio < 0.3
    fp8, bf16 = (
        block_activation_bytes_per_token(LLAMA, tp4, s),
        block_activation_bytes_per_token(LLAMA, candidates(Precision.BF16, 4), s),
    )
    # The two gathered norm outputs (h each, whole on every tp rank) shrink from 2 to 1 byte.
    saved_delta = sum(bf16[part][0] - fp8[part][0] for part in bf16)
    assert saved_delta == pytest.approx(2 * LLAMA.hidden_size)
    tp1_bf16 = block_activation_bytes_per_token(LLAMA, candidates(Precision.BF16, 1), s)
    assert sum(tp1_bf16.values()) == pytest.approx(sum(block_activation_bytes_per_token(LLAMA, tp1, s).values()))
