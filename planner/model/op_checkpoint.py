"""torchtitan's per-op selective activation checkpointing: what a block keeps for backward.

torchtitan's ``selective`` AC is a per-op policy (``SelectiveAC`` in
torchtitan/distributed/activation_checkpoint.py today; ``_apply_ac_to_transformer_block`` with
``selective_ac_option = "op"``, its train configs' default, in 9dec370 of its 2024 benchmarks and
e7c0cae of June 2025). Inside each checkpointed block it keeps the outputs of the ops on its save
list and recomputes everything else from the block's input in the block's backward:

- every odd-numbered matmul in execution order (``aten.mm``; "saves output of all compute ops,
  except every second mm": wq, wv, w1, w2 of a Llama block, where wk, wo, w3 run again);
- the attention kernel's output and its log-sum-exp (``_scaled_dot_product_flash_attention``);
- the reduce-scatter of a row-parallel linear under tensor + sequence parallelism;
- float8's amax (a scalar per tensor: not counted). From 2024-11-26 to 2025-02-06 the list also held
  ``aten.abs`` (a full-size copy of each float8 linear's input, dropped for "unexpected increase in
  peak memory"); torchtitan's fp8 rows of 9dec370 peak within 0.2 GiB of their bf16 twins under
  compile, so it is not counted either.

Norms, rotary, SwiGLU's activation and product, residual adds are recomputed. The rule is
written for dense blocks of separate projections (wq, wk, wv; w1, w3, w2); a biased linear
calls ``addmm``, on neither the save list nor the count, so it is recomputed and skipped.
``op_policy_rows`` gives None for MoE and MLA blocks, which keep the every-other-block reading
(``memory.selective_bytes``).
"""

from __future__ import annotations

import numpy as np

from planner.model.block import QKV_GEMM, block_table
from planner.model.block_rows import Gemm, Part, Saved, TpSplit
from planner.model.candidates import Candidates
from planner.model.saved_bytes import compute_dtype_bytes, saved_bytes, unsplit_sequence
from planner.model.settings import ModelingSettings
from planner.model.shape import ModelShape


def _matmul_outputs(model: ModelShape, gemm: Gemm) -> tuple[Saved, ...]:
    """The outputs of the ``aten.mm`` calls one block-table GEMM row stands for, in call order:
    the table's one q/k/v row is three matmuls (q, k, v) unless the weights are fused, the
    gate/up row two (gate, then up). A column-parallel output is a 1/tp slice; a row-parallel
    one is each rank's whole partial sum before its reduction."""
    split = gemm.split == TpSplit.COLUMN
    widths: tuple[int, ...] = (gemm.d_out,) * gemm.count
    if gemm.name == QKV_GEMM and not model.fused_projections:
        widths = (model.q_size, model.kv_size, model.kv_size)
    return tuple(Saved(f"{gemm.name} output", gemm.part, w, tp_split=split) for w in widths)


def op_policy_rows(model: ModelShape) -> tuple[Saved, ...] | None:
    """What a block keeps under the per-op policy, per token: its input, the odd-numbered matmul
    outputs (biased linears are not matmuls there), the attention output and LSE. None where the
    rule is not written (MoE, MLA)."""
    if model.is_moe or model.mla is not None:
        return None
    table = block_table(model)
    outputs = [out for gemm in table.gemms if not gemm.bias for out in _matmul_outputs(model, gemm)]
    kept = tuple(out for i, out in enumerate(outputs) if i % 2 == 0)  # the 1st, 3rd, ... call
    attention = (
        Saved("attention output", Part.ATTENTION, model.q_size),
        Saved("log-sum-exp", Part.ATTENTION, model.num_heads, fp32=True),
    )
    return (table.checkpoint, *kept, *attention)


def reduce_scatter_elements(model: ModelShape) -> int:
    """Elements per token the saved reduce-scatters of the row-parallel linears (o, down) hold,
    before the 1/tp sequence split: only under tensor parallelism, where they run."""
    return sum(g.d_out for g in block_table(model).gemms if g.split == TpSplit.ROW)


def op_policy_bytes_per_token(model: ModelShape, c: Candidates, s: ModelingSettings) -> np.ndarray | None:
    """Bytes per local token one block keeps under the per-op policy (``op_policy_rows``, in the
    compute dtype: float8 linears return bf16), with the reduce-scatter outputs where tensor and
    sequence parallelism run them. None where the rule is not written."""
    rows = op_policy_rows(model)
    if rows is None:
        return None
    dtype = compute_dtype_bytes(c)
    kept = saved_bytes(unsplit_sequence(rows, s), dtype, c.tp)
    scattered = reduce_scatter_elements(model) * dtype / c.tp
    return kept + np.where((c.tp > 1) & s.sequence_parallel, scattered, 0.0)
