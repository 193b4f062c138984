"""explain's advice agrees with itself and with the stack it describes."""

from __future__ import annotations

import pytest

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


def _tight(plan, fraction: float):
    """``plan`` with its reserved memory at ``fraction`` of the usable (explain reads the record)."""
    memory = plan.estimate.memory
    reserved = memory.model_copy(update={"reserved_gib": fraction * memory.usable_gib})
    return plan.model_copy(update={"estimate": plan.estimate.model_copy(update={"memory": reserved})})


def test_memory_advice_starts_at_the_tight_fraction_and_keeps_its_host_bound_form():
    """Review s33: after the 80 % rule the host-bound test passed whatever the advice did."""
    from planner.explain import TIGHT_MEMORY_FRACTION

    training = TrainingConfig(micro_batch=8, seq_len=512, activation_checkpointing=ActivationCheckpointing.NONE)
    plan = build_plan(get_preset("tiny"), "h100-sxm", Layout(), training, num_gpus=1)

    def kinds(fraction):
        return {note.kind for note in plan_notes(_tight(plan, fraction))}

    assert NoteKind.ACTIVATIONS_HOST_BOUND in kinds(TIGHT_MEMORY_FRACTION) and NoteKind.HOST_BOUND in kinds(0.9)
    assert NoteKind.ACTIVATIONS_DOMINATE not in kinds(0.9)  # host-bound: no smaller micro-batch
    assert not kinds(TIGHT_MEMORY_FRACTION - 0.01) & {NoteKind.ACTIVATIONS_HOST_BOUND, NoteKind.ACTIVATIONS_DOMINATE}


def test_the_losses_named_add_up_to_what_goodput_loses_spot_waits_included():
    """Review s33: a spot preemption's wait for capacity was left out of the shares."""
    from planner.model.goodput import loss_shares

    model, training = get_preset("llama3-8b"), TrainingConfig(seq_len=4096)
    for kind in (None, "spot"):
        plan = build_plan(model, "h100-sxm", Layout(dp_shard=64), training, num_gpus=64, training_tokens=1e12,
                          price_kind=kind)  # fmt: skip
        g, hours = plan.estimate.goodput, plan.estimate.time_to_train_h
        shares = loss_shares(g, hours * g.goodput_fraction, hours)
        assert shares.total == pytest.approx(1 - g.goodput_fraction, rel=1e-6), kind
        assert (shares.capacity_wait > 0) == (kind == "spot")


def test_a_run_shorter_than_young_daly_says_it_checkpoints_once():
    """Review s33: the cut was guessed from the interval (below half of Young/Daly's), so a run of
    0.5-1x the interval read as Young/Daly's own. goodput() now says when it cuts."""
    import numpy as np

    from planner.model.goodput import goodput
    from planner.model.settings import DEFAULT_SETTINGS

    young = float(np.sqrt(2 * (1e11 / (8 * DEFAULT_SETTINGS.checkpoint_bandwidth_bytes_per_s_per_gpu)) * 3600e3))
    args = (np.array([1.0]), np.array([8.0]), np.array([1e-3 / 8]), 1e11, DEFAULT_SETTINGS)
    for share, cut in ((0.7, True), (1.5, False)):
        g = goodput(np.array([share * young]), *args)
        assert bool(g.interval_cut[0]) is cut and float(g.young_s[0]) == pytest.approx(young)


def test_a_plan_whose_cp_displaced_the_kernel_says_so_in_both_languages():
    """Trial s37: explain listed cp's terms but said nothing of the kernel cp displaced (cuDNN ->
    FlashAttention-2), the long-context lever; a plan without cp has no such note."""
    from ui.i18n import Labels
    from ui.messages import note_text

    model, training = get_preset("llama3.1-8b"), TrainingConfig(seq_len=32768, activation_checkpointing="full")
    ring = build_plan(model, "h100-sxm", Layout(cp=8), training, num_gpus=8)
    (note,) = [n for n in plan_notes(ring) if n.kind is NoteKind.CP_KERNEL]
    assert "so cuDNN, which runs here without cp, does not" in note.text()
    assert "cuDNN" in note_text(Labels("zh"), note) and "runs here" not in note_text(Labels("zh"), note)
    plain = build_plan(model, "h100-sxm", Layout(tp=8), training, num_gpus=8)
    assert all(n.kind is not NoteKind.CP_KERNEL for n in plan_notes(plain))
