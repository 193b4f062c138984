"""Tensor parallelism (Megatron-style) with DTensor ``parallelize_module`` on the tp axis.

Native model: q/k/v, gate and up projections are column-parallel, the output and down
projections row-parallel; norms run sequence-parallel (activations between blocks are
split along the sequence), the embedding is split over the vocabulary and the LM head
column-parallel with a vocabulary-parallel loss (``loss_parallel``), so the full logits
are never gathered.

Float8 (precision fp8, torchao tensor-wise scaling): blocks whose projections are all
``Float8Linear`` use torchao's float8 styles instead, as torchtitan does: the sequence-split
norm output is cast to float8 *before* the all-gather (``PrepareFloat8ModuleInput``), so
q/k/v (gate/up) share one float8 all-gather of half the bf16 bytes, and the row-parallel
outputs' gradients are cast to float8 before their backward all-gather. The embedding, norms
and LM head stay bf16, as ``apply_fp8`` leaves them.

HF models: the same column/row split of attention and MLP projections, without sequence
parallelism (HF blocks take extra arguments whose layouts we do not control); embedding,
norms and LM head stay replicated.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, cast

import torch
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

log = logging.getLogger(__name__)


def _block_linears(swiglu: bool) -> tuple[str, ...]:
    return ("attention.wq", "attention.wk", "attention.wv", "attention.wo", "feed_forward.w1", "feed_forward.w2") + (
        ("feed_forward.w3",) if swiglu else ()
    )


def is_float8_block(block: nn.Module, swiglu: bool) -> bool:
    """Every projection of the block converted by ``apply_fp8`` (dims divisible by 16), with the
    tensor-wise scales torchao's float8 styles assume (row-wise blocks would keep the plain
    styles and gather bf16, as torchtitan does)."""
    if "torchao.float8" not in sys.modules:  # apply_fp8 imports it: no Float8Linear without it
        return False  # (and importing torchao costs ~3 s of CPU per process)
    try:
        from torchao.float8.config import ScalingGranularity
        from torchao.float8.float8_linear import Float8Linear
    except ImportError:
        return False
    linears = [block.get_submodule(name) for name in _block_linears(swiglu)]
    return all(
        isinstance(linear, Float8Linear)
        and linear.config.cast_config_input.scaling_granularity is ScalingGranularity.TENSORWISE
        for linear in linears
    )


def gather_float8_as_bytes() -> None:
    """gloo has no float8 dtypes (its all-gather raises "Invalid scalar type"); NCCL moves them
    as bytes. On CPU, torchao's float8 all-gather goes through a uint8 view of the same bytes,
    bit-identical, so CPU runs exercise the float8 styles end to end. The collective stays
    asynchronous: its pending work is keyed by storage, which the float8 view shares."""
    from torchao.float8.float8_ops import FLOAT8_OPS_TABLE
    from torchao.float8.float8_training_tensor import Float8TrainingTensor

    def all_gather_bytes(aten_op, args, kwargs=None):
        fp8 = args[0]
        data = fp8._data.contiguous()
        gathered = aten_op(data.view(torch.uint8), *args[1:], **(kwargs or {})).view(data.dtype)
        return Float8TrainingTensor(gathered, fp8._scale, fp8._orig_dtype, fp8._linear_mm_config, fp8._gemm_input_role)

    for op in (
        torch.ops._c10d_functional.all_gather_into_tensor.default,
        torch.ops.c10d_functional.all_gather_into_tensor.default,
    ):
        FLOAT8_OPS_TABLE[op] = all_gather_bytes


def _native_block_plan(swiglu: bool, float8: bool) -> dict:
    if float8:
        from torchao.float8.float8_tensor_parallel import (
            Float8ColwiseParallel,
            Float8RowwiseParallel,
            PrepareFloat8ModuleInput,
        )

        colwise, rowwise, prepare_input = Float8ColwiseParallel, Float8RowwiseParallel, PrepareFloat8ModuleInput
    else:
        colwise, rowwise, prepare_input = ColwiseParallel, RowwiseParallel, PrepareModuleInput
    plan = {
        "attention_norm": SequenceParallel(),
        # (x, rope): gather the sequence-split x; rope is a plain replicated buffer.
        "attention": prepare_input(input_layouts=(Shard(1), None), desired_input_layouts=(Replicate(), None)),
        "attention.wq": colwise(),
        "attention.wk": colwise(),
        "attention.wv": colwise(),
        "attention.wo": rowwise(output_layouts=Shard(1)),
        "ffn_norm": SequenceParallel(),
        "feed_forward": prepare_input(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
        "feed_forward.w1": colwise(),
        "feed_forward.w2": rowwise(output_layouts=Shard(1)),
    }
    if swiglu:
        plan["feed_forward.w3"] = colwise()
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
    swiglu = args.mlp == "swiglu"
    blocks = list(block_container(model).children())
    float8 = [is_float8_block(block, swiglu) for block in blocks]
    if any(float8) and tp_mesh.device_type == "cpu":
        gather_float8_as_bytes()
    for block, block_float8 in zip(blocks, float8, strict=True):
        parallelize_module(block, tp_mesh, _native_block_plan(swiglu, block_float8))
    if any(float8):
        log.info(f"tensor parallel: float8 all-gathers in {sum(float8)} of {len(blocks)} blocks")
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
