"""DeepSpeed ZeRO's configuration, as the ``deepspeed`` stack's collectives read it.

Plain data (no model imports), so that ``ModelingSettings`` can hold it. The values are those
a Hugging Face Trainer / accelerate run gets from transformers' documented DeepSpeed configs
(``docs/source/en/deepspeed.md``: ZeRO-1 ``{"stage": 1}``; ZeRO-2 ``overlap_comm: true``,
``reduce_bucket_size: 5e8``; ZeRO-3 ``overlap_comm: true`` with ``"auto"`` bucket sizes) and
DeepSpeed's own defaults for the rest (``deepspeed/runtime/zero/config.py`` at edaa7221, 0.19.6).
docs/model.md, "DeepSpeed's collectives", gives each reading with its line.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ZeroConfig:
    """The ``zero_optimization`` sizes (in parameters, i.e. elements) and switches that decide
    how many collectives DeepSpeed issues and which of them run under compute."""

    # ZeRO-1/2 gradient bucket (``reduce_bucket_size``, DeepSpeed default 5e8 elements, the value
    # transformers' ZeRO-2 example sets): one all-reduce per bucket; a parameter larger than it
    # is reduced alone (stage_1_and_2.py "extra_large_param").
    zero12_reduce_bucket_elements: float = 5e8
    # ``overlap_comm`` per stage: unset, DeepSpeed turns it on for ZeRO-3 only (config.py
    # ``overlap_comm_valid``); transformers' ZeRO-2 example sets it, its ZeRO-1 example does not.
    # A pipeline engine turns it off (engine.py: "Pipeline parallelism does not support
    # overlapped communication").
    zero1_overlap_comm: bool = False
    zero2_overlap_comm: bool = True
    # Optimizer parameter groups: ZeRO-1/2 all-gather each group's updated bf16 partition once
    # per step, one blocking call per group (runtime/utils.py ``all_gather_into_tensor_dp_groups``;
    # ``allgather_bucket_size`` is unused with torch's all_gather_into_tensor). transformers'
    # Trainer builds two (weight decay and none). INFERRED from the Trainer's grouping.
    param_groups: int = 2
    # ZeRO-3 under transformers' "auto" (integrations/deepspeed.py ``trainer_config_finalize``,
    # 5.25.0): reduce_bucket_size = hidden^2, stage3_prefetch_bucket_size = 0.9 hidden^2,
    # stage3_param_persistence_threshold = 10 hidden.
    zero3_reduce_bucket_hidden_sq: float = 1.0
    zero3_prefetch_bucket_hidden_sq: float = 0.9
    zero3_persistence_threshold_hidden: float = 10.0


# The configuration transformers' DeepSpeed documentation shows, as above.
HF_DOCUMENTED_ZERO = ZeroConfig()
