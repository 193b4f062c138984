"""Mixture-of-experts terms: expert weights per rank, the busiest rank's routed load, the
grouped-GEMM shape of small per-expert batches, and the dispatch/combine all-to-alls.

Experts are split over ``ep`` ranks borrowed from ``dp_shard x cp`` (planner/layout.py) and
FSDP-sharded over the remaining ``dp_shard x cp / ep`` ranks (torchtitan's dp_shard_mod_ep,
trainer/parallel.py); each is split over tp like the dense MLP (expert tp = tp), or kept whole
while every tp rank routes its own sequence shard (``expert_tp`` off: expert tp = 1, ep borrows
the tp ranks too, ``Candidates.expert_token_split``). A token picks ``experts_per_token``
experts; each routed copy of its hidden state travels to the rank holding that expert and back
(trainer/moe.py). Derivations and sources: docs/model.md, section "Mixture of experts".
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.model import comm, rates
from planner.model.block import EXPERT_BIAS_TRAFFIC, block_table
from planner.model.block_rows import Recompute
from planner.model.candidates import PREC_FP8, PREC_FP32, Candidates
from planner.model.flops import busiest_recompute_fraction, hf_dense_experts
from planner.model.settings import ModelingSettings
from planner.model.shape import ModelShape
from planner.model.spec import ModelSpec
from planner.units import FP32_BYTES

# The biased experts' bias loop (planner/model/block.py ``EXPERT_BIAS_TRAFFIC``, Megatron-Core's
# ``_apply_bias``) with fp32 probabilities (``ModelingSettings.moe_probs_fp32``): ``b * p`` and
# ``t + b p`` promote to fp32, the cat copies fp32 and ``.to(dtype)`` casts back (~14 h forward,
# counted in bf16 elements); backward casts the gradient up (3 h) and back for ``t`` (3 h) and
# forms both products' gradients in fp32 (~12 h): ~32 h over the three passes, ~11 h in forward units.
EXPERT_BIAS_TRAFFIC_FP32_PROBS = 11


def expert_bias_fp32_probs_elements(model: ModelShape) -> int:
    """Forward-unit elements per token the bias loop adds over ``EXPERT_BIAS_TRAFFIC`` when the
    probabilities are fp32 (0 without biased routed experts)."""
    if not (model.is_moe and model.mlp_bias):
        return 0
    return (EXPERT_BIAS_TRAFFIC_FP32_PROBS - EXPERT_BIAS_TRAFFIC) * model.hidden_size * model.experts_per_token


def routed_expert_params_per_layer(model: ModelSpec) -> int:
    """Parameters of one block's routed experts (the block-table GEMMs stored per expert)."""
    return sum(g.params for g in block_table(model).gemms if g.experts > 1)


def held_fraction(c: Candidates) -> np.ndarray:
    """Share of the routed experts one rank holds before FSDP sharding, in units of the 1/tp
    that every other weight takes (callers divide by tp): 1/ep, whole experts ``tp / (ep etp)``."""
    return c.expert_token_split / np.maximum(c.ep, 1)


def expert_view(c: Candidates) -> Candidates:
    """The candidates as the routed experts see them: split over the expert tp degree (the
    tokens a rank routes are ``routed_tokens``)."""
    return replace(c, tp=c.etp)


def routed_tokens(c: Candidates) -> np.ndarray:
    """Tokens one rank routes per micro-batch: its context shard, or with expert tp off the
    sequence-parallel shard of it (each tp rank routes its own)."""
    return c.micro_batch * c.seq_len / c.cp / c.expert_token_split


def busiest_rank_load(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Routed tokens on the busiest rank over the mean. Without expert parallelism a rank runs
    every expert on its own tokens (exactly k copies per token, however they split); with it,
    the rank holding the most popular experts sets the pace (``moe_token_imbalance``)."""
    return np.where(c.ep > 1, s.moe_token_imbalance, 1.0)


def tokens_per_expert(model: ModelSpec, c: Candidates) -> np.ndarray:
    """Mean rows of one expert's GEMM per micro-batch: the ep group's ``ep N k`` routed copies
    over ``E`` experts (``N`` = ``routed_tokens``); all ``N`` where every expert runs on every
    token (``hf_dense_experts``)."""
    routed = c.ep * routed_tokens(c) * model.experts_per_token / model.num_experts
    return np.where(hf_dense_experts(model, c), routed_tokens(c), routed)


def routed_gemm_time_factor(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Multiplier on a routed expert GEMM's time: the busiest rank's load over the shape factor of
    its token dimension (``eff(M) = M / (M + matmul_half_dim)``, the same factor as the weight
    dims, for the per-expert batch M of a grouped GEMM); E / k where every expert runs on every
    token (``hf_dense_experts``: E GEMMs per token in place of the k routed ones), in bf16 whatever
    the recipe: those experts are ``torch.bmm`` on parameters, which float8 training's swap of
    ``nn.Linear`` modules leaves alone (trainer/parallel.py ``apply_fp8``; review s36)."""
    m = tokens_per_expert(model, c)
    dense = hf_dense_experts(model, c)
    every = np.where(dense, model.hf_expert_work_factor * rates.gemm_rate(c, s) / rates.bf16_gemm_rate(c, s), 1.0)
    return busiest_rank_load(c, s) * every * (m + s.matmul_half_dim) / m


def all_to_all_s(model: ModelSpec, c: Candidates, s: ModelingSettings, dtype_bytes) -> np.ndarray:
    """Dispatch + combine all-to-alls of the stage's MoE blocks for one micro-batch.

    Each rank sends its ``N k`` routed token copies (``h`` elements each, times the busiest
    rank's load) and gets as many back: dispatch and combine forward, their transposes backward,
    again on recompute (4 + 2 x recompute per block). With node-limited routing
    (``s.moe_max_nodes_per_token``) fewer copies leave the node (``network_copies_per_token``)."""
    if not model.is_moe:
        return np.zeros(len(c))
    calls = 4.0 + 2.0 * busiest_recompute_fraction(model, c)
    return calls * one_all_to_all_s(model, c, s, dtype_bytes)


def one_all_to_all_s(model: ModelSpec, c: Candidates, s: ModelingSettings, dtype_bytes) -> np.ndarray:
    """One dispatch (or combine) all-to-all of one MoE block and micro-batch; 0 without ep."""
    if not model.is_moe:
        return np.zeros(len(c))
    send = routed_tokens(c) * model.experts_per_token * model.hidden_size * dtype_bytes * busiest_rank_load(c, s)
    # Node-limited routing: the copies that cross the network are fewer than the routed ones.
    network = send * network_copies_per_token(model, c, s) / model.experts_per_token
    # ep groups are innermost next to tp (planner/layout.py): ranks tp apart; neighbours when
    # they borrow the tp ranks (expert tp off).
    one = comm.all_to_all_s(c, send, c.ep, c.etp, s, network_send_bytes=network)
    return np.where(c.ep > 1, one, 0.0)


def grouped_mlp_saved_bytes_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Bytes a grouped expert MLP saves per local token (``s.moe_grouped_mlp``), all routed copies:
    fc1 input ``h``, fc1 output ``2f`` (SwiGLU; ``f`` for GeLU), fc2 input ``f`` unless the
    activation is recomputed, and one fp32 router probability per copy. The linear inputs are FP8
    under the FP8 recipe (TransformerEngine saves the quantised input for the weight gradient);
    the activation input is FP8 with ``s.moe_fp8_activation_cache``. The f-wide tensors split over
    tp, the dispatched input (and the probability) over the ranks that route their own tokens."""
    h, f, k = model.hidden_size, model.ffn_hidden_size, model.experts_per_token
    glu = 2 if model.mlp == "swiglu" else 1
    dtype = np.where(c.precision == PREC_FP32, 4.0, 2.0)
    linear_in = np.where(c.precision == PREC_FP8, 1.0, dtype)
    act_in = np.where(s.moe_fp8_activation_cache, 1.0, dtype)
    # Megatron-Core's "moe_act" recompute: the activation output (the fc2 input) is rebuilt.
    fc2_in = 0.0 if Recompute.MOE_ACT in s.recompute_modules else f * linear_in
    return k * ((h * linear_in + FP32_BYTES) / c.expert_token_split + (glu * f * act_in + fc2_in) / c.tp)


def a2a_unpaired_share(pp, vpp, grad_accum) -> np.ndarray:
    """Share of the all-to-alls Megatron-Core's combined 1F1B leaves with no other micro-batch's
    compute beside them, on the busiest pipeline rank: without a pipeline the first forward and the
    last backward of ``m`` (combined_1f1b.py ``combined_1f1b_schedule_for_no_pipelining``: 1 / m);
    interleaved, the warm-up forwards, (pp - 1) x 2 + (vpp - 1) x pp chunks and the one more the
    overlap schedules, and as many cool-down backwards, of m x vpp chunks (schedules.py
    ``get_pp_rank_microbatches``; Megatron-LM d98e8a6)."""
    pp, vpp, grad_accum = (np.asarray(v) for v in (pp, vpp, grad_accum))
    chunks = grad_accum * vpp
    warmup = np.where(pp > 1, (pp - 1) * 2 + (vpp - 1) * pp + 1, 1)
    return np.minimum(warmup, chunks) / chunks


def expert_launch_s(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Host dispatch of one block's per-expert kernels (forward + backward) on one rank: the
    ``E / ep`` experts it holds, each with its GEMM launches and, under FP8, its cast launches,
    at ``s.moe_launch_s`` each."""
    if not model.is_moe:
        return np.zeros(len(c))
    local = model.num_experts / np.maximum(c.ep, 1)
    casts = np.where(c.precision == PREC_FP8, s.moe_fp8_cast_launches_per_local_expert, 0.0)
    return local * (s.moe_gemm_launches_per_local_expert + casts) * s.moe_launch_s


def dispatch_launch_s(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Host dispatch of one MoE block's router, token dispatcher and combine per micro-batch
    (forward before and after the host sync, and backward), at ``s.moe_launch_s`` each."""
    if not model.is_moe:
        return np.zeros(len(c))
    launches = s.moe_dispatch_launches_pre_sync + s.moe_dispatch_launches_post_sync + s.moe_dispatch_launches_backward
    return np.full(len(c), launches * s.moe_launch_s)


def post_sync_host_s(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Host dispatch an MoE block issues after its host sync, forward: the dispatcher's
    post-sync launches and the local experts' forward GEMM (and FP8 cast) launches."""
    if not model.is_moe or not s.moe_host_sync:
        return np.zeros(len(c))
    local = model.num_experts / np.maximum(c.ep, 1)
    casts = np.where(c.precision == PREC_FP8, s.moe_forward_fp8_cast_launches_per_local_expert, 0.0)
    per_expert = local * (s.moe_forward_gemm_launches_per_local_expert + casts)
    return (s.moe_dispatch_launches_post_sync + per_expert) * s.moe_launch_s


def network_copies_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Copies of a token's hidden state that leave its node. Without a node limit every routed
    copy on another node crosses the network; with node-limited routing (DeepSeek-V3, sec.
    2.1.2) a token crosses once per destination node, at most ``s.moe_max_nodes_per_token``,
    and is forwarded to its experts inside the node over NVLink (sec. 3.2.2)."""
    k = float(model.experts_per_token)
    if s.moe_hierarchical_dispatch:
        return hierarchical_network_copies(model, c)
    if s.moe_max_nodes_per_token <= 0:
        return np.full(len(c), k)
    return np.minimum(k, float(s.moe_max_nodes_per_token))


def hierarchical_network_copies(model: ModelSpec, c: Candidates) -> np.ndarray:
    """``network_copies_per_token`` of a hierarchical dispatcher (``s.moe_hierarchical_dispatch``):
    a token crosses the network once per other node holding one of its experts, then fans out
    over NVLink. With the ep group over ``n`` nodes and ``k`` balanced (uniform) routed copies it
    visits ``(n - 1)(1 - (1 - 1/n)^k)`` other nodes on average; in the convention of
    ``comm.all_to_all_s`` (a copy's share ``(n - 1)/n`` leaves the node) that is
    ``n (1 - (1 - 1/n)^k)`` copies."""
    k = float(model.experts_per_token)
    per_node = np.clip(np.maximum(c.scaleup_domain_size, 1) // np.maximum(c.etp, 1), 1, np.maximum(c.ep, 1))
    nodes = np.maximum(c.ep / per_node, 1.0)
    copies = nodes * (1.0 - (1.0 - 1.0 / nodes) ** k)
    return np.where(nodes > 1.0, np.minimum(copies, k), k)
