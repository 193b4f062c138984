"""Mixture-of-experts terms: expert weights per rank, the busiest rank's routed load, the
grouped-GEMM shape of small per-expert batches, and the dispatch/combine all-to-alls.

Experts are split over ``ep`` ranks borrowed from ``dp_shard x cp`` (planner/layout.py) and
FSDP-sharded over the remaining ``dp_shard x cp / ep`` ranks (torchtitan's dp_shard_mod_ep,
trainer/parallel.py). A token picks ``experts_per_token`` experts; each routed copy of its hidden
state travels to the rank holding that expert and back (trainer/moe.py). Derivations and
sources: docs/model.md, section "Mixture of experts".
"""

from __future__ import annotations

import numpy as np

from planner.model import comm
from planner.model.block import block_table
from planner.model.flops import recompute_fraction
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.search.candidates import Candidates


def routed_expert_params_per_layer(model: ModelSpec) -> int:
    """Parameters of one block's routed experts (the block-table GEMMs stored per expert)."""
    return sum(g.params for g in block_table(model).gemms if g.experts > 1)


def held_fraction(c: Candidates) -> np.ndarray:
    """Share of the routed experts one rank holds (before FSDP sharding): 1/ep."""
    return 1.0 / np.maximum(c.ep, 1)


def busiest_rank_load(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Routed tokens on the busiest rank over the mean. Without expert parallelism a rank runs
    every expert on its own tokens (exactly k copies per token, however they split); with it,
    the rank holding the most popular experts sets the pace (``moe_token_imbalance``)."""
    return np.where(c.ep > 1, s.moe_token_imbalance, 1.0)


def tokens_per_expert(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Mean rows of one expert's GEMM per micro-batch: the ep group's ``ep N k`` routed copies
    over ``E`` experts (``N`` = local tokens)."""
    tokens = c.micro_batch * c.seq_len / c.cp
    return c.ep * tokens * model.experts_per_token / model.num_experts


def routed_gemm_time_factor(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Multiplier on a routed expert GEMM's time: the busiest rank's load over the shape factor of
    its token dimension (``eff(M) = M / (M + matmul_half_dim)``, the same factor as the weight
    dims, for the per-expert batch M of a grouped GEMM)."""
    m = tokens_per_expert(model, c)
    return busiest_rank_load(c, s) * (m + s.matmul_half_dim) / m


def all_to_all_s(model: ModelSpec, c: Candidates, s: ModelingSettings, dtype_bytes) -> np.ndarray:
    """Dispatch + combine all-to-alls of the stage's MoE blocks for one micro-batch.

    Each rank sends its ``N k`` routed token copies (``h`` elements each, times the busiest
    rank's load) and gets as many back: dispatch and combine forward, their transposes backward,
    again on recompute (4 + 2 x recompute per block)."""
    if not model.is_moe:
        return np.zeros(len(c))
    tokens = c.micro_batch * c.seq_len / c.cp
    send = tokens * model.experts_per_token * model.hidden_size * dtype_bytes * busiest_rank_load(c, s)
    # ep groups are innermost next to tp (planner/layout.py): ranks tp apart.
    one = comm.all_to_all_s(c, send, c.ep, c.tp, s)
    calls = 4.0 + 2.0 * recompute_fraction(c)
    return np.where(c.ep > 1, calls * one, 0.0)
