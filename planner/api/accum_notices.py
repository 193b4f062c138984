"""What an estimate says of a stack that skips the gradient reduction on inner micro-batches (HF
Trainer's no_sync under accelerate's FSDP: planner/model/settings_job.py ``ACCELERATE_NO_SYNC``,
docs/hf-trainer-reading.md): the assumption in words, the CLI's and the card's."""

from __future__ import annotations

from planner.catalog.hardware import load_catalog
from planner.layout import Sharding
from planner.model.accum_sync import defers_reduction as rows_defer
from planner.model.candidates import on_default_node
from planner.model.stacks import STACK_SETTINGS
from planner.plan import Plan

# The English of ``defers_reduction_words``, the CLI's and the card's ({zero2}: ZERO2_REGATHER_WORDS
# under zero2, else nothing).
DEFERRED_REDUCTION_WORDS = (
    "--stack {stack} runs {accum} micro-batches a step as HF Trainer does on accelerate's FSDP, all but the"
    " last under no_sync: each GPU holds the whole model's gradients in the compute dtype until the last one"
    " reduces them (accelerate's sync_each_batch, or DeepSpeed: --stack deepspeed, reduces every micro-batch)"
    "{zero2}"
)
ZERO2_REGATHER_WORDS = (
    "; zero2 gathers the parameters every micro-batch, as FSDP2 (transformers' default) does, once a step"
    " under FSDP1's SHARD_GRAD_OP"
)


def defers_reduction(p: Plan) -> bool:
    """Whether the plan's stack skips the reduction on its inner micro-batches where the layout
    shards gradients: the estimate's own rule (``accum_sync.defers_reduction``) on the plan's row."""
    catalog = load_catalog()
    c = on_default_node(catalog.gpu(p.gpu), catalog, p.layout.resolve(p.num_gpus), p.training, p.num_gpus)
    return bool(rows_defer(c, STACK_SETTINGS[p.stack])[0])


def regathers_zero2(p: Plan) -> bool:
    """Whether such a plan's zero2 gathers its parameters every micro-batch (FSDP2's reshard)."""
    sync = STACK_SETTINGS[p.stack].accum_sync
    return sync.zero2_gather_every_microbatch and p.layout.sharding is Sharding.ZERO2


def defers_reduction_warnings(p: Plan) -> tuple[str, ...]:
    """The CLI's words of ``defers_reduction``."""
    if not defers_reduction(p):
        return ()
    zero2 = ZERO2_REGATHER_WORDS if regathers_zero2(p) else ""
    return (DEFERRED_REDUCTION_WORDS.format(stack=p.stack.value, accum=p.training.grad_accum, zero2=zero2),)
