"""Host offload under gradient accumulation: where a stack reduces every micro-batch it moves each
micro-batch's gradients to the host (planner/model/host.py ``offload_accum_s``; the readings of
torch's FSDP2 / FSDP1 and DeepSpeed's ZeRO-2/3 are in planner/model/settings_job.py)."""

from __future__ import annotations

import pytest

from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.estimate_parts import term_words
from planner.explain import Note, NoteKind, largest
from planner.layout import ActivationCheckpointing, Layout, Sharding, TrainingConfig
from planner.model.estimate import estimate
from planner.model.settings import DEFAULT_SETTINGS, ModelingSettings
from planner.model.settings_job import DEEPSPEED_ZERO2_ACCUM_OFFLOAD, AccumOffload
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.model.zero_config import ZeroConfig

CATALOG = load_catalog()
MODEL = get_preset("llama3-8b")
GPUS = 8
# DGX H100's host: 2 sockets x 8 DDR5 channels x 4,400 MT/s x 8 bytes (the catalog's figure)
H100_HOST_BANDWIDTH = 563.2e9


def _estimate(
    sharding: Sharding, grad_accum: int, settings: ModelingSettings = DEFAULT_SETTINGS, offload: bool = True, pp=1
):
    """8 H100s, 8 sequences of 4K a step whatever the accumulation (the same tokens per step)."""
    training = TrainingConfig(
        seq_len=4096,
        micro_batch=8 // grad_accum,
        grad_accum=grad_accum,
        activation_checkpointing=ActivationCheckpointing.FULL,
        offload=offload,
    )
    ranks = {"dp_replicate" if sharding == Sharding.NONE else "dp_shard": GPUS // pp}
    layout = Layout(**ranks, pp=pp, sharding=sharding)
    return estimate(MODEL, "h100-sxm", layout, training, num_gpus=GPUS, catalog=CATALOG, settings=settings)


def _fsdp2_per_microbatch_s(shards: int = GPUS) -> float:
    """FSDP2's blocking copy of the fp32 shard (4 bytes over the host link) and its CPU add (12 bytes
    of host DRAM per parameter, the node's 8 ranks at once at torch's share of its bandwidth)."""
    s = DEFAULT_SETTINGS
    shard = MODEL.num_params() / shards
    link = shard * 4.0 / s.host_link_bandwidth
    add = shard * GPUS * 12.0 / (H100_HOST_BANDWIDTH * s.host_adam_bandwidth_fraction)
    return link + add


def test_fsdp_offload_pays_each_later_micro_batch_s_gradients_to_the_host() -> None:
    """Before: offload was charged once a step, so accumulating 4 micro-batches cost no more host
    traffic than one. FSDP2's foreach_reduce copies a gradient that already exists blocking and adds
    it on the CPU: three more micro-batches pay it, exposed."""
    one, four = _estimate(Sharding.FSDP, 1), _estimate(Sharding.FSDP, 4)
    term = four.time.breakdown_s.offload_accum
    assert one.time.breakdown_s.offload_accum == 0.0
    assert term == pytest.approx(3 * _fsdp2_per_microbatch_s(), rel=0.01)
    # ... and the step is slower by at least that (more micro-batches also dispatch and copy more)
    assert four.time.step_s - one.time.step_s >= term
    # the once-a-step link and host AdamW stay the optimizer's, the same at either accumulation
    assert four.time.breakdown_s.optimizer == pytest.approx(one.time.breakdown_s.optimizer, rel=1e-9)
    # zero2 reduces every micro-batch too (trainer/parallel.py ``set_micro_batch_sync``)
    assert _estimate(Sharding.ZERO2, 4).time.breakdown_s.offload_accum == pytest.approx(term, rel=1e-9)


@pytest.mark.parametrize("sharding", [Sharding.ZERO1, Sharding.NONE])
def test_once_a_step_reductions_move_nothing_per_micro_batch(sharding: Sharding) -> None:
    """zero1 / none accumulate whole gradients on the GPU and reduce them once a step."""
    assert _estimate(sharding, 4).time.breakdown_s.offload_accum == 0.0


def test_a_pipeline_reduces_once_a_step_and_no_offload_pays_nothing() -> None:
    assert _estimate(Sharding.FSDP, 4, pp=2).time.breakdown_s.offload_accum == 0.0
    assert _estimate(Sharding.FSDP, 4, offload=False).time.breakdown_s.offload_accum == 0.0


def test_deepspeed_hides_its_side_stream_copies_under_the_backward_unless_they_outlast_it() -> None:
    """DeepSpeed's ZeRO-3 and ZeRO-2 copy the accumulation buffer up and back non-blocking on the
    reduction stream and add on the GPU: nothing exposed while the backward is longer (8B at 4K x 2
    sequences per micro-batch). On a link 1,000x slower the copies outlast it; ZeRO-2 moves 2 bytes
    a way (its bf16 host buffer), and from the first micro-batch on."""
    ds = STACK_SETTINGS[Stack.DEEPSPEED]
    assert _estimate(Sharding.FSDP, 4, ds).time.breakdown_s.offload_accum == 0.0
    assert _estimate(Sharding.ZERO2, 4, ds).time.breakdown_s.offload_accum == 0.0
    slow = ds.but(host_link_bandwidth=ds.host_link_bandwidth / 1000)
    shard = MODEL.num_params() / GPUS
    zero3 = _estimate(Sharding.FSDP, 4, slow).time.breakdown_s.offload_accum
    zero2 = _estimate(Sharding.ZERO2, 4, slow).time.breakdown_s.offload_accum
    link_s = shard / slow.host_link_bandwidth  # per byte of a parameter
    assert zero3 == pytest.approx(3 * 4.0 * link_s, rel=0.02)  # less the backward hidden under it
    assert zero3 < 3 * 4.0 * link_s
    assert zero2 == pytest.approx(4 * 2.0 * link_s, rel=0.03)
    assert DEEPSPEED_ZERO2_ACCUM_OFFLOAD.from_first_microbatch


def test_deepspeed_zero2_without_overlap_comm_copies_on_the_compute_stream() -> None:
    """stage_1_and_2.py picks the current stream for the copies without overlap_comm: exposed."""
    ds = STACK_SETTINGS[Stack.DEEPSPEED]
    serial = ds.but(deepspeed_zero=ZeroConfig(zero2_overlap_comm=False))
    exposed = _estimate(Sharding.ZERO2, 4, serial).time.breakdown_s.offload_accum
    shard = MODEL.num_params() / GPUS
    assert exposed == pytest.approx(4 * shard * 2.0 / ds.host_link_bandwidth, rel=1e-6)


def test_megatron_keeps_gradients_on_the_gpu_until_the_step() -> None:
    for stack in (Stack.MEGATRON_LM, Stack.MEGATRON_CORE):
        assert STACK_SETTINGS[stack].offload_accum_fsdp == AccumOffload()
        assert STACK_SETTINGS[stack].offload_accum_zero2 == AccumOffload()


def test_the_term_has_words_where_it_dominates() -> None:
    """The breakdown and --explain's step-time note name it in words, not its field name."""
    words = term_words("offload_accum")
    assert words != "offload accum" and "host" in words
    slow = DEFAULT_SETTINGS.but(host_link_bandwidth=DEFAULT_SETTINGS.host_link_bandwidth / 1000)
    name, _ = largest(_estimate(Sharding.FSDP, 4, slow).time.breakdown_s)
    assert name == "offload_accum"
    note = Note(NoteKind.STEP_TIME, (("term", name), ("fraction", 0.9), ("step_s", 2.0)))
    assert note.text().startswith(f"step time: {words} is the largest part")
