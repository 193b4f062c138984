"""``ModelingSettings.sequence_parallel``: without it (BigScience's Megatron-DeepSpeed, Megatron-LM
of 2021) the norms and residual adds run on the whole sequence on every tp rank and a checkpointed
block's input is kept whole, so wide tensor parallelism is slower and holds more; at tp 1 nothing
changes."""

from __future__ import annotations

import pytest

from planner.api import build_plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Layout, Precision, Sharding, TrainingConfig
from planner.model.candidates import single
from planner.model.saved_bytes import block_input_bytes_per_token, tp_gathered_bytes
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.stack_profiles import MEGATRON_DEEPSPEED_SETTINGS
from planner.model.stacks import STACK_SETTINGS, Stack

MODEL = get_preset("llama3-70b")
NO_SP = DEFAULT_SETTINGS.but(sequence_parallel=False)


def _plan(tp: int, ac: ActivationCheckpointing, settings):
    layout = Layout(dp_shard=16 // tp, tp=tp, sharding=Sharding.FSDP)
    training = TrainingConfig(seq_len=4096, micro_batch=1, activation_checkpointing=ac)
    return build_plan(MODEL, "h100-sxm", layout, training, num_gpus=16, settings=settings).estimate


@pytest.mark.parametrize("ac", [ActivationCheckpointing.NONE, ActivationCheckpointing.FULL])
def test_at_tp_1_sequence_parallelism_changes_nothing(ac):
    assert _plan(1, ac, NO_SP).model_dump() == _plan(1, ac, DEFAULT_SETTINGS).model_dump()


def test_without_it_wide_tp_runs_the_norms_whole_and_keeps_more():
    sp, whole = _plan(8, ActivationCheckpointing.NONE, DEFAULT_SETTINGS), _plan(8, ActivationCheckpointing.NONE, NO_SP)
    assert whole.time.breakdown_s.memory_bound > sp.time.breakdown_s.memory_bound
    assert whole.time.breakdown_s.matmul == pytest.approx(sp.time.breakdown_s.matmul)
    assert whole.memory.breakdown_gib.activations > sp.memory.breakdown_gib.activations


def test_a_checkpointed_block_keeps_its_whole_input_on_every_tp_rank_without_it():
    gpu = load_catalog().gpu("h100-sxm")
    training = TrainingConfig(seq_len=4096, micro_batch=1, activation_checkpointing=ActivationCheckpointing.FULL)
    c = single(
        gpu, Layout(dp_shard=2, tp=8).resolve(16), training, network_bandwidth=5e10, gpus_per_node=8, num_gpus=16
    )
    split, whole = (float(block_input_bytes_per_token(MODEL, c, s)[0]) for s in (DEFAULT_SETTINGS, NO_SP))
    assert whole == pytest.approx(8 * split) and whole == MODEL.hidden_size * 2


def test_only_the_megatron_deepspeed_profile_runs_without_it():
    assert not MEGATRON_DEEPSPEED_SETTINGS.sequence_parallel
    assert all(STACK_SETTINGS[s].sequence_parallel for s in Stack if s != Stack.MEGATRON_DEEPSPEED)


def test_without_it_nothing_is_gathered_so_fp8_saves_no_float8_copy():
    """FP8 linears under sequence parallelism all-gather their input in float8 and save that copy;
    without sequence parallelism there is no gather and the whole input is the compute dtype."""
    gpu = load_catalog().gpu("h100-sxm")
    training = TrainingConfig(seq_len=4096, micro_batch=1, precision=Precision.FP8)
    c = single(
        gpu, Layout(dp_shard=2, tp=8).resolve(16), training, network_bandwidth=5e10, gpus_per_node=8, num_gpus=16
    )
    assert float(tp_gathered_bytes(c, DEFAULT_SETTINGS)[0]) == 1.0
    assert float(tp_gathered_bytes(c, NO_SP)[0]) == 2.0


@pytest.mark.parametrize("name", ["llama3-8b", "gpt3-1.3b", "deepseek-v3", "mixtral-8x7b", "gemma2-9b"])
def test_only_rows_tp_splits_are_marked_as_split_by_sequence_parallelism(name):
    """``sequence_split`` refines ``tp_split``: a row whole on every rank cannot be one sequence
    parallelism splits (``unsplit_sequence`` would otherwise split nothing it should)."""
    from planner.model.block import block_table

    for hf in (False, True):
        table = block_table(get_preset(name), hf_modules=hf)
        rows = (*table.saved, table.checkpoint, *table.elementwise)
        assert all(r.tp_split for r in rows if r.sequence_split)
        assert any(r.sequence_split for r in rows)
