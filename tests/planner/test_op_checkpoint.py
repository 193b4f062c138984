"""torchtitan's per-op selective checkpointing (planner/model/op_checkpoint.py; measured against
PyTorch's own in tests/trainer/test_op_checkpoint_saved.py) and the compiled loss."""

from __future__ import annotations

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Layout, Precision, TrainingConfig
from planner.model.candidates import single
from planner.model.memory import block_activation_bytes_per_token, loss_bytes_per_logit, memory, recompute_bytes
from planner.model.op_checkpoint import op_policy_bytes_per_token, op_policy_rows
from planner.model.settings import FUSED_CE_BYTES_PER_LOGIT
from planner.model.spec import ModelSpec
from planner.model.stack_profiles import TORCHTITAN_SETTINGS
from planner.model.stacks import STACK_SETTINGS, Stack

TINY = ModelSpec(
    name="tiny-llama",
    family="llama",
    num_layers=1,
    hidden_size=64,
    ffn_hidden_size=160,
    num_heads=4,
    num_kv_heads=2,
    vocab_size=128,
)
BATCH, SEQ = 2, 32


def fp32_candidates(model: ModelSpec, tp: int = 1):
    layout = Layout(dp_shard=1, tp=tp)
    training = TrainingConfig(
        seq_len=SEQ,
        micro_batch=BATCH,
        precision=Precision.FP32,
        activation_checkpointing=ActivationCheckpointing.SELECTIVE,
    )
    gpu = load_catalog().gpu("h100-sxm")
    return single(gpu, layout, training, gpus_per_node=8, network_bandwidth=50e9)


def test_the_odd_numbered_matmuls_and_attention_are_kept():
    names = [t.name for t in op_policy_rows(get_preset("llama3.1-8b")) or ()]
    # wq, wk, wv, wo, w1, w3, w2: the 1st, 3rd, 5th and 7th are kept.
    assert names == [
        "block input",
        "qkv output",
        "qkv output",
        "gate+up output",
        "down output",
        "attention output",
        "log-sum-exp",
    ]
    widths = [t.elements for t in op_policy_rows(get_preset("llama3.1-8b")) or ()]
    assert widths == [4096, 4096, 1024, 14336, 4096, 4096, 32]


def test_biased_projections_are_neither_counted_nor_kept():
    # Qwen2.5's q/k/v carry biases (addmm): wo, w1, w3, w2 are the 1st to 4th matmuls.
    rows = op_policy_rows(get_preset("qwen2.5-7b")) or ()
    assert [t.name for t in rows][:3] == ["block input", "o output", "gate+up output"]


@pytest.mark.parametrize("name", ["deepseek-v3", "mixtral-8x7b"])
def test_moe_and_latent_attention_blocks_keep_the_every_other_block_reading(name):
    assert op_policy_rows(get_preset(name)) is None


def test_torchtitans_selective_holds_less_than_every_other_block():
    model = TINY.model_copy(update={"num_layers": 4})
    c = fp32_candidates(model)
    per_op = memory(model, c, TORCHTITAN_SETTINGS).activations[0]
    alternate = memory(model, c, TORCHTITAN_SETTINGS.but(selective_per_op=False)).activations[0]
    assert per_op < alternate


def test_a_compiled_torchtitan_loss_holds_four_bytes_a_logit():
    model = get_preset("llama3.1-8b")
    c = fp32_candidates(model)
    eager = float(loss_bytes_per_logit(c, TORCHTITAN_SETTINGS)[0])
    c.compile[:] = True
    compiled = float(loss_bytes_per_logit(c, TORCHTITAN_SETTINGS)[0])
    before_bbb1b616 = float(loss_bytes_per_logit(c, TORCHTITAN_SETTINGS.but(compile_fuses_loss=False))[0])
    assert (eager, compiled, before_bbb1b616) == (12.0, FUSED_CE_BYTES_PER_LOGIT, 12.0)


def test_a_tensor_parallel_loss_keeps_loss_parallels_bytes_compiled_or_not():
    """Under tp > 1 the loss is DTensor's loss_parallel (16 bytes a logit eager); its compiled form
    no measured peak shows, so compile does not lower it (trial s41: a 70B TP 8 plan read 4)."""
    c = fp32_candidates(get_preset("llama3.1-8b"), tp=2)
    eager = float(loss_bytes_per_logit(c, TORCHTITAN_SETTINGS)[0])
    c.compile[:] = True
    assert eager == float(loss_bytes_per_logit(c, TORCHTITAN_SETTINGS)[0]) == 16.0
    megatron = float(loss_bytes_per_logit(c, STACK_SETTINGS[Stack.MEGATRON_CORE])[0])
    assert megatron == STACK_SETTINGS[Stack.MEGATRON_CORE].loss_bytes_per_logit  # its own vocabulary-parallel loss


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        # (tp 1 eager, tp 1 compiled, tp 2 eager, tp 2 compiled), native modules
        (Stack.TRAINPLAN, (12.0, 12.0, 16.0, 16.0)),
        (Stack.TORCHTITAN, (12.0, 4.0, 16.0, 16.0)),
        (Stack.LLM_FOUNDRY, (4.0, 4.0, 4.0, 4.0)),
        (Stack.HF_TRAINER, (12.0, 12.0, 12.0, 12.0)),
        (Stack.DEEPSPEED, (12.0, 12.0, 12.0, 12.0)),
        (Stack.MEGATRON_LM, (6.0, 6.0, 6.0, 6.0)),
        (Stack.MEGATRON_CORE, (6.0, 6.0, 6.0, 6.0)),
        (Stack.DEEPSEEK_V3, (6.0, 6.0, 6.0, 6.0)),
    ],
)
def test_each_stack_holds_its_own_loss_bytes(stack, expected):
    """Review s41: llm-foundry at tp 2 was charged torch's loss_parallel (16) for its fused loss (4)."""
    model, settings = get_preset("llama3.1-8b"), STACK_SETTINGS[stack].but(loss_chunk_tokens=0)
    got = []
    for tp in (1, 2):
        c = fp32_candidates(model, tp=tp)
        for compiled in (False, True):
            c.compile[:] = compiled
            got.append(float(loss_bytes_per_logit(c, settings)[0]))
    assert tuple(got) == expected


def bf16_candidates(model: ModelSpec, tp: int):
    layout = Layout(dp_shard=1, tp=tp)
    training = TrainingConfig(
        seq_len=SEQ, micro_batch=BATCH, activation_checkpointing=ActivationCheckpointing.SELECTIVE
    )
    return single(load_catalog().gpu("h100-sxm"), layout, training, gpus_per_node=8, network_bandwidth=50e9)


def test_under_tensor_and_sequence_parallelism_the_row_parallel_partial_sum_is_kept_whole():
    """Review s41 (unmeasured: no per-op row ran tp > 1). Llama 3.1 8B, bf16, tp 8 with sequence
    parallelism, bytes per token: the input 4096/8, q 4096/8, v 1024/8, w1 14336/8 and the attention
    output 4096/8 (x 2 each), the LSE 32/8 x 4, w2's whole partial sum 4096 x 2 and the two
    reduce-scatters 2 x 4096/8 x 2."""
    model = get_preset("llama3.1-8b")
    per_token = op_policy_bytes_per_token(model, bf16_candidates(model, tp=8), TORCHTITAN_SETTINGS)
    assert per_token is not None
    assert float(per_token[0]) == (512 + 512 + 128 + 1792 + 512) * 2 + 4 * 4 + 4096 * 2 + 2 * 512 * 2 == 17168


def test_a_per_op_block_rebuilds_in_its_backward_what_it_did_not_keep():
    model = get_preset("llama3.1-8b")
    c = bf16_candidates(model, tp=1)
    tokens = BATCH * SEQ
    full = sum(block_activation_bytes_per_token(model, c, TORCHTITAN_SETTINGS).values()) * tokens
    kept = op_policy_bytes_per_token(model, c, TORCHTITAN_SETTINGS)
    assert kept is not None
    rebuilt = recompute_bytes(model, c, TORCHTITAN_SETTINGS)
    assert float(rebuilt[0]) == pytest.approx(float(full[0] - kept[0] * tokens))
    layer = recompute_bytes(model, c, TORCHTITAN_SETTINGS.but(selective_per_op=False))
    assert float(layer[0]) == pytest.approx(float(full[0]))  # every other block: a whole block again
