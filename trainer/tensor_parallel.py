"""Tensor parallelism (Megatron-style) with DTensor ``parallelize_module`` on the tp axis.

Native model: q/k/v, gate and up projections are column-parallel, the output and down
projections row-parallel; norms run sequence-parallel (activations between blocks are
split along the sequence), the embedding is split over the vocabulary and the LM head
column-parallel with a vocabulary-parallel loss (``loss_parallel``), so the full logits
are never gathered.

HF models: the same column/row split of attention and MLP projections, without sequence
parallelism (HF blocks take extra arguments whose layouts we do not control); embedding,
norms and LM head stay replicated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    ParallelStyle,
    PrepareModuleInput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

from trainer.parallel import block_container

if TYPE_CHECKING:
    from trainer.model import ModelArgs


def _native_block_plan(swiglu: bool) -> dict:
    plan = {
        "attention_norm": SequenceParallel(),
        # (x, rope): gather the sequence-split x; rope is a plain replicated buffer.
        "attention": PrepareModuleInput(input_layouts=(Shard(1), None), desired_input_layouts=(Replicate(), None)),
        "attention.wq": ColwiseParallel(),
        "attention.wk": ColwiseParallel(),
        "attention.wv": ColwiseParallel(),
        "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
        "ffn_norm": SequenceParallel(),
        "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
        "feed_forward.w1": ColwiseParallel(),
        "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
    }
    if swiglu:
        plan["feed_forward.w3"] = ColwiseParallel()
    return plan


def _native_root_plan(model: nn.Module, loss_parallel: bool) -> dict:
    """Plans only for the parts this pipeline stage holds."""
    plan: dict[str, ParallelStyle] = {}
    if model.tok_embeddings is not None and model.pos_embeddings is None:
        plan["tok_embeddings"] = RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1))
    elif model.tok_embeddings is not None:
        # Learned positions are added to the whole sequence (same on every tp rank, so the
        # replicated position table gets the same gradient everywhere), then split for the
        # sequence-parallel first norm.
        plan["tok_embeddings"] = RowwiseParallel(input_layouts=Replicate(), output_layouts=Replicate())
        plan["pos_embeddings"] = PrepareModuleOutput(output_layouts=Replicate(), desired_output_layouts=Shard(1))
    if model.norm is not None:
        plan["norm"] = SequenceParallel()
    if model.output is not None:
        plan["output"] = ColwiseParallel(
            input_layouts=Shard(1),
            output_layouts=Shard(-1) if loss_parallel else Replicate(),
            use_local_output=not loss_parallel,
        )
    return plan


def apply_native_tensor_parallel(model: nn.Module, tp_mesh: DeviceMesh, loss_parallel: bool) -> None:
    parallelize_module(model, tp_mesh, _native_root_plan(model, loss_parallel))
    args = cast("ModelArgs", model.args)  # the native Transformer (or StageChunks) keeps its ModelArgs
    for block in block_container(model).children():
        parallelize_module(block, tp_mesh, _native_block_plan(args.mlp == "swiglu"))
    if args.tied_embeddings and model.tok_embeddings is not None and model.output is not None:
        # Both are Shard(0) over the vocabulary; parallelize_module made two copies, re-tie them.
        cast(nn.Module, model.output).weight = cast(nn.Module, model.tok_embeddings).weight


def _has_submodule(module: nn.Module, path: str) -> bool:
    try:
        module.get_submodule(path)
    except AttributeError:
        return False
    return True


def apply_hf_tensor_parallel(model: nn.Module, tp_mesh: DeviceMesh) -> None:
    plan = {
        "self_attn.q_proj": ColwiseParallel(),
        "self_attn.k_proj": ColwiseParallel(),
        "self_attn.v_proj": ColwiseParallel(),
        "self_attn.o_proj": RowwiseParallel(),
        "mlp.gate_proj": ColwiseParallel(),
        "mlp.up_proj": ColwiseParallel(),
        "mlp.down_proj": RowwiseParallel(),
    }
    for block in block_container(model).children():
        missing = [name for name in plan if not _has_submodule(block, name)]
        if missing:
            raise ValueError(
                f"tensor parallelism for HF models needs Llama-style blocks; "
                f"{type(block).__name__} lacks {', '.join(missing)}"
            )
        parallelize_module(block, tp_mesh, plan)
