"""HF Trainer's gradient accumulation as its code runs it (docs/hf-trainer-reading.md): every
micro-batch but the last under accelerate's no_sync, so under FSDP the inner micro-batches skip the
reduce-scatter and hold the whole model's gradients in the compute dtype, reduced once a step
(planner/model/accum_sync.py; settings_job.py ``ACCELERATE_NO_SYNC``). Before, the hf-trainer
profile reduced every micro-batch, as trainplan's own FSDP2 trainer does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Implementation, Layout, Sharding, TrainingConfig
from planner.model.accum_sync import gathers_per_step, reductions_per_step
from planner.model.candidates import on_default_node
from planner.model.estimate import estimate
from planner.model.settings_job import ACCELERATE_NO_SYNC, REDUCE_EVERY_MICROBATCH
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.units import GIB

CATALOG = load_catalog()
MODEL = get_preset("llama3-8b")
GPUS = 8
HF = STACK_SETTINGS[Stack.HF_TRAINER]
# The profile as it was: the same, reducing every micro-batch.
HF_BEFORE = HF.but(accum_sync=REDUCE_EVERY_MICROBATCH)


def _training(grad_accum: int, offload: bool = False) -> TrainingConfig:
    """8 sequences of 4K a step whatever the accumulation."""
    return TrainingConfig(
        seq_len=4096,
        micro_batch=8 // grad_accum,
        grad_accum=grad_accum,
        activation_checkpointing=ActivationCheckpointing.FULL,
        offload=offload,
        impl=Implementation.HF,
    )


def _estimate(settings, sharding: Sharding, grad_accum: int, offload: bool = False):
    layout = Layout(dp_shard=GPUS, sharding=sharding)
    training = _training(grad_accum, offload)
    return estimate(MODEL, "h100-sxm", layout, training, num_gpus=GPUS, catalog=CATALOG, settings=settings)


def test_the_profile_is_accelerates_no_sync_and_no_other_stack_takes_it() -> None:
    """DeepSpeed inherits the HF profile, but Trainer takes no no_sync under it (trainer.py l. 1941-1947)."""
    assert HF.accum_sync == ACCELERATE_NO_SYNC
    others = [stack for stack in Stack if stack not in (Stack.HF_TRAINER, Stack.TORCHTITAN)]
    assert all(STACK_SETTINGS[stack].accum_sync == REDUCE_EVERY_MICROBATCH for stack in others)
    # torchtitan's differs in its DDP only, which reduces every micro-batch too (review56)
    titan = STACK_SETTINGS[Stack.TORCHTITAN].accum_sync
    assert titan.ddp_reduce_every_microbatch
    assert replace(titan, ddp_reduce_every_microbatch=False) == REDUCE_EVERY_MICROBATCH


@pytest.mark.parametrize("sharding", [Sharding.FSDP, Sharding.ZERO2])
def test_one_micro_batch_is_unchanged(sharding: Sharding) -> None:
    """At grad-accum 1 there is nothing to skip: memory and time as before, term for term."""
    now, before = _estimate(HF, sharding, 1), _estimate(HF_BEFORE, sharding, 1)
    assert now.memory == before.memory
    assert now.time.breakdown_s == before.time.breakdown_s


@pytest.mark.parametrize("sharding", [Sharding.FSDP, Sharding.ZERO2])
@pytest.mark.parametrize("offload", [False, True])
def test_the_inner_micro_batches_hold_the_whole_models_bf16_gradients(sharding: Sharding, offload: bool) -> None:
    """At the last micro-batch's backward each GPU holds every parameter's gradient in bf16 (2 bytes),
    not its fp32 shard (4 / 8 bytes): 15 GiB for Llama 3 8B, on the GPU under offload too (FSDP1
    offloads only after the sync)."""
    now, before = _estimate(HF, sharding, 4, offload), _estimate(HF_BEFORE, sharding, 4, offload)
    whole_bf16 = MODEL.num_params() * 2.0 / GIB
    assert now.memory.breakdown_gib.grads == pytest.approx(whole_bf16, rel=1e-6)
    sharded_fp32 = 0.0 if offload else MODEL.num_params() * 4.0 / GPUS / GIB
    assert before.memory.breakdown_gib.grads == pytest.approx(sharded_fp32, rel=1e-6)
    assert now.memory.reserved_gib > before.memory.reserved_gib + (whole_bf16 - sharded_fp32)


def test_the_step_reduces_once_and_fsdp_still_gathers_every_pass() -> None:
    """Four micro-batches: FULL_SHARD gathers before each forward and backward (8), the reduce-scatter
    runs once; FSDP2's zero2 (transformers' default version) gathers once per micro-batch (4)."""
    layout, training = Layout(dp_shard=GPUS, sharding=Sharding.FSDP), _training(4)
    gpu = CATALOG.gpu("h100-sxm")
    c = on_default_node(gpu, CATALOG, layout.resolve(GPUS), training, GPUS)
    assert reductions_per_step(c, HF)[0] == 1.0 and reductions_per_step(c, HF_BEFORE)[0] == 4.0
    assert gathers_per_step(c, HF)[0] == gathers_per_step(c, HF_BEFORE)[0] == 8.0
    zero2 = on_default_node(
        gpu, CATALOG, layout.model_copy(update={"sharding": Sharding.ZERO2}).resolve(GPUS), training
    )
    assert gathers_per_step(zero2, HF)[0] == 4.0 and gathers_per_step(zero2, HF_BEFORE)[0] == 1.0


@pytest.mark.parametrize(
    "sharding, passes_now, passes_before",
    # FSDP2's copy-in per gather (8 bytes a parameter) and copy-out per reduction (12): settings.py
    [(Sharding.FSDP, 8 * 8 + 12 * 1, 8 * 8 + 12 * 4), (Sharding.ZERO2, 8 * 4 + 12 * 1, 8 * 1 + 12 * 4)],
)
def test_the_time_breakdown_counts_the_passes_the_code_runs(sharding, passes_now, passes_before) -> None:
    now, before = _estimate(HF, sharding, 4), _estimate(HF_BEFORE, sharding, 4)
    ratio = now.time.breakdown_s.shard_copies / before.time.breakdown_s.shard_copies
    assert ratio == pytest.approx(passes_now / passes_before, rel=1e-9)
    if sharding is Sharding.FSDP:  # three reduce-scatters fewer, the same gathers
        assert now.time.breakdown_s.dp_comm < before.time.breakdown_s.dp_comm


def test_offload_moves_nothing_per_micro_batch_under_no_sync() -> None:
    """FSDP2's blocking copy and CPU add ran for every later micro-batch (session 53); under no_sync
    nothing is reduced, so nothing is offloaded, until the last."""
    now, before = _estimate(HF, Sharding.FSDP, 4, offload=True), _estimate(HF_BEFORE, Sharding.FSDP, 4, offload=True)
    assert before.time.breakdown_s.offload_accum > 1.0
    assert now.time.breakdown_s.offload_accum == 0.0
    assert now.time.breakdown_s.optimizer == pytest.approx(before.time.breakdown_s.optimizer, rel=1e-9)


@pytest.mark.parametrize("stack", [Stack.TRAINPLAN, Stack.DEEPSPEED, Stack.TORCHTITAN])
def test_other_stacks_keep_their_sharded_gradients(stack: Stack) -> None:
    s = STACK_SETTINGS[stack]
    e = _estimate(s, Sharding.FSDP, 4)
    assert e.memory.breakdown_gib.grads < MODEL.num_params() * 2.0 / GIB / 2
    assert e.memory == _estimate(s.but(accum_sync=REDUCE_EVERY_MICROBATCH), Sharding.FSDP, 4).memory


def test_a_smaller_micro_batch_is_no_fix_where_the_whole_gradients_then_overflow() -> None:
    """Llama 3.2 3B on 8 RTX 4090 at micro-batch 4 x 4K needs 37.6 GiB of 22.7. Lowering the micro-batch
    keeps the batch by accumulating, and under no_sync that adds 6 GiB of whole gradients: micro-batch 1 x
    4 still needs 26.3 GiB, so it is not named; on the profile that reduced every micro-batch it fitted
    (11.8 GiB) and was."""
    model = get_preset("llama3.2-3b")
    layout = Layout(dp_shard=8, sharding=Sharding.FSDP)

    def est(settings, micro_batch: int, grad_accum: int):
        training = TrainingConfig(
            seq_len=4096,
            micro_batch=micro_batch,
            grad_accum=grad_accum,
            activation_checkpointing=ActivationCheckpointing.FULL,
            impl=Implementation.HF,
        )
        return estimate(model, "rtx-4090", layout, training, num_gpus=8, catalog=CATALOG, settings=settings)

    assert not est(HF, 1, 4).feasible and est(HF_BEFORE, 1, 4).feasible
    now, before = est(HF, 4, 1), est(HF_BEFORE, 4, 1)
    assert not now.feasible and not before.feasible
    assert "micro-batch" not in (now.fix or "") and "lower the micro-batch below 4" in (before.fix or ""), now.fix
