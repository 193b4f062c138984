"""explain's advice agrees with itself and with the stack it describes."""

from __future__ import annotations

from planner.api import build_plan
from planner.catalog.models import get_preset
from planner.explain import NoteKind, plan_notes
from planner.layout import ActivationCheckpointing, Layout, TrainingConfig
from planner.model.stacks import Stack


def _kinds(stack: Stack, compile: bool = False) -> set[NoteKind]:
    """A host-bound step whose memory is mostly activations: the tiny preset, 8 x 512 tokens."""
    training = TrainingConfig(
        micro_batch=8, seq_len=512, activation_checkpointing=ActivationCheckpointing.NONE, compile=compile
    )
    plan = build_plan(get_preset("tiny"), "h100-sxm", Layout(), training, num_gpus=1, stack=stack)
    return {note.kind for note in plan_notes(plan)}


def test_a_host_bound_step_is_not_told_to_shrink_its_micro_batch():
    kinds = _kinds(Stack.TRAINPLAN)
    assert NoteKind.HOST_BOUND in kinds
    assert NoteKind.ACTIVATIONS_DOMINATE not in kinds


def test_memory_with_room_to_spare_gets_no_advice_to_cut_it():
    """Trial s33: 'activations dominate: selective or full checkpointing or tp/cp would cut them'
    for a plan whose reserved memory was 1 % of the GPU. Its largest term is still named."""
    kinds = _kinds(Stack.TRAINPLAN)
    advice = {NoteKind.ACTIVATIONS_DOMINATE, NoteKind.ACTIVATIONS_AT_ONE, NoteKind.ACTIVATIONS_HOST_BOUND}
    assert NoteKind.MEMORY in kinds and not kinds & (advice | {NoteKind.STATES_DOMINATE})


def test_torch_compile_is_advised_only_where_it_is_trainplans_option_and_off():
    for kinds in (_kinds(Stack.TORCHTITAN), _kinds(Stack.MEGATRON_CORE), _kinds(Stack.TRAINPLAN, compile=True)):
        assert NoteKind.HOST_BOUND_LAUNCHES in kinds and NoteKind.HOST_BOUND not in kinds


def test_a_micro_batch_of_one_is_not_told_to_shrink_it():
    """Trial s28b: at micro-batch 1, explain advised 'a smaller micro-batch'."""
    training = TrainingConfig(micro_batch=1, seq_len=8192, activation_checkpointing=ActivationCheckpointing.NONE)
    plan = build_plan(get_preset("llama3-8b"), "h100-sxm", Layout(dp_shard=8), training, num_gpus=8)
    notes = {note.kind: note for note in plan_notes(plan)}
    assert NoteKind.ACTIVATIONS_AT_ONE in notes and NoteKind.ACTIVATIONS_DOMINATE not in notes
    assert "micro-batch" not in notes[NoteKind.ACTIVATIONS_AT_ONE].text()


def test_a_serial_host_is_said_and_not_blamed_on_a_slow_dispatch():
    """Review s32: megatron-deepspeed's host time runs in series with the GPU (CUDA_LAUNCH_BLOCKING=1,
    as its measured runs ran); explain advised compilation or CUDA graphs, and nothing said why."""
    from planner.api.notices import estimate_warnings

    training = TrainingConfig(seq_len=4096, micro_batch=2, grad_accum=16, activation_checkpointing="none")
    layout = Layout(tp=2, pp=2, sharding="zero1")
    plan = build_plan(
        get_preset("llama2-7b"), "h100-sxm", layout, training, num_gpus=64, stack=Stack.MEGATRON_DEEPSPEED
    )
    kinds = {note.kind for note in plan_notes(plan)}
    assert NoteKind.HOST_SERIAL in kinds and NoteKind.HOST_BOUND_LAUNCHES not in kinds
    said = [w for w in estimate_warnings(plan, None) if "CUDA_LAUNCH_BLOCKING=1" in w]
    assert len(said) == 1 and f"{plan.estimate.time.breakdown_s.host_stall:,.1f} s" in said[0]
    core = build_plan(get_preset("llama2-7b"), "h100-sxm", layout, training, num_gpus=64, stack=Stack.MEGATRON_CORE)
    assert not any("CUDA_LAUNCH_BLOCKING" in w for w in estimate_warnings(core, None))
    assert Stack.MEGATRON_DEEPSPEED.serialises_host and not Stack.MEGATRON_CORE.serialises_host
