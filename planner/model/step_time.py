"""Step time per GPU: compute, memory-bound work, host dispatch, communication, bubble.

One step = ``grad_accum`` micro-batches (the pipeline's micro-batches when pp > 1) plus one
optimizer step. The GPU's busy time and the host's dispatch time run concurrently; the longer
one sets the pace. Exposed communication and the pipeline bubble add to the GPU's time.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from planner.model import comm, moe, rates
from planner.model.accum_sync import ddp_reductions_per_step, gathers_per_step, reductions_per_step
from planner.model.attention_scores import eager_softcap_attention, flash_attention_on, scores_per_microbatch
from planner.model.block import block_table, root_table
from planner.model.block_rows import Gemm, Part
from planner.model.candidates import IMPL_HF, PREC_FP8, SHARD_NONE, SHARD_ZERO1, Candidates
from planner.model.cp_ring import ring_merge_bytes
from planner.model.flops import (
    attention_recompute_fraction,
    forward_flops_per_token,
    head_recompute_fraction,
    masked_window_flops_per_token,
    module_recompute_share,
    recompute_fraction,
)
from planner.model.host import host_adam_seconds, offload_accum_s
from planner.model.memory import compute_dtype_bytes
from planner.model.pipeline import PipelineRank, pipeline_ranks
from planner.model.rowwise import COMPUTE_COLUMNS, per_distinct_row
from planner.model.settings import ModelingSettings
from planner.model.spec import ModelSpec
from planner.model.stage_params import busiest_stage, layers_per_stage, stage_params
from planner.model.step_comm import comm_times


@dataclass(frozen=True)
class TimeBreakdown:
    """Seconds per optimizer step (arrays over candidates)."""

    matmul: np.ndarray  # block and LM-head GEMMs, recompute included
    attention: np.ndarray  # fused attention kernels
    memory_bound: np.ndarray  # norms, activations, rotary, residuals, loss
    optimizer: np.ndarray  # AdamW + clipping (+ offload's once-a-step host link and host AdamW)
    shard_copies: np.ndarray  # FSDP / ZeRO cast and copy kernels around each collective
    # offload under gradient accumulation: each later micro-batch's gradients to the host (host.py)
    offload_accum: np.ndarray
    host_stall: np.ndarray  # host dispatch time the GPU waits for
    dp_comm: np.ndarray  # exposed FSDP/ZeRO/DDP collectives
    tp_comm: np.ndarray  # exposed tensor-parallel collectives
    pp_comm: np.ndarray  # exposed pipeline send/recv
    cp_comm: np.ndarray  # exposed context-parallel KV exchange
    ep_comm: np.ndarray  # exposed MoE dispatch/combine all-to-alls
    bubble: np.ndarray  # pipeline fill and drain
    measured_correction: np.ndarray  # (compute_time_factor - 1) x compute: a measured job's (measured_job.py)
    step: np.ndarray
    # What holding the step at the best measured efficiency adds (planner/accuracy/ceiling.py,
    # applied by ``estimate.score``); 0 where the model's own step is no faster than that.
    efficiency_ceiling: np.ndarray | float = 0.0

    def as_dict(self, row: int = 0) -> dict[str, float]:
        return {
            f.name: float(np.broadcast_to(getattr(self, f.name), self.step.shape)[row])
            for f in fields(self)
            if f.name != "step"
        }


def block_gemm_time_per_token(
    model: ModelSpec,
    c: Candidates,
    s: ModelingSettings,
    routed_only: bool = False,
    recomputed_only: bool = False,
    part: Part | None = None,
) -> np.ndarray:
    """Forward GEMM seconds per token for one block, shape-aware, split by tp (``routed_only``:
    the routed experts' GEMMs alone; ``recomputed_only``: those of the modules the stack
    recomputes in backward, ``s.recompute_modules``; ``part``: that part's alone).

    The timed GEMMs of ``planner/model/block.py``: each costs 2 * in * out FLOPs per token at
    the GPU's large-GEMM rate (``rates.gemm_rate``) times the shape factor of its dims; MoE runs
    ``experts_per_token`` MLPs, at the busiest ep rank's load and the shape factor of the
    per-expert batch (``moe.routed_gemm_time_factor``).
    """
    rate = rates.gemm_rate(c, s)
    routed = moe.routed_gemm_time_factor(model, c, s) if model.is_moe else 1.0
    seconds: Any = np.zeros(len(c))
    for gemm in block_table(model).gemms:
        if not gemm.timed or (routed_only and gemm.experts <= 1):
            continue
        if (recomputed_only and gemm.recompute not in s.recompute_modules) or part not in (None, gemm.part):
            continue
        d_in, d_out, share = rank_gemm(gemm, c)
        seconds = seconds + 2.0 * d_in * d_out * share * gemm.copies * (routed if gemm.experts > 1 else 1.0) / (
            rate * rates.shape_factor([d_in, d_out], s)
        )
    return seconds


def rank_gemm(gemm: Gemm, c: Candidates) -> tuple[Any, Any, Any]:
    """A block GEMM's (in, out) dims on one rank and the share of the rank's tokens it runs on:
    a routed expert's split by the expert tp degree and the router's, on the tokens the rank
    routes (1, or 1/tp when each tp rank routes its own shard: ``expert_tp`` off); any other
    GEMM by tp."""
    if gemm.experts > 1 or gemm.part == Part.ROUTER:
        d_in, d_out = gemm.local_dims(c.etp)
        return d_in, d_out, 1.0 / c.expert_token_split
    d_in, d_out = gemm.local_dims(c.tp)
    return d_in, d_out, 1.0


def forward_gemm_time_per_token(
    model: ModelSpec,
    c: Candidates,
    s: ModelingSettings,
    routed_only: bool = False,
    recomputed_only: bool = False,
    part: Part | None = None,
) -> np.ndarray:
    """``block_gemm_time_per_token`` of a forward pass: the FP8 recipes run forward GEMMs at
    fast accumulation (``rates.fp8_forward_gemm_speedup``), the backward ones at the catalog's
    rate."""
    gemms = block_gemm_time_per_token(model, c, s, routed_only, recomputed_only, part)
    return gemms / rates.fp8_forward_gemm_speedup(c, s)


def fp8_cast_bytes_per_token(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """HBM bytes per token and block of the FP8 recipe's casts (forward + backward): every timed
    GEMM's input and output-gradient elements are scaled and cast (``fp8_cast_bytes_per_element``)."""
    elements: Any = 0.0
    for gemm in block_table(model).gemms:
        if gemm.timed:
            d_in, d_out, share = rank_gemm(gemm, c)
            elements = elements + (d_in + d_out) * share * gemm.copies
    return np.where(c.precision == PREC_FP8, elements * s.fp8_cast_bytes_per_element, 0.0)


def elementwise_bytes_per_token(
    model: ModelSpec, c: Candidates, s: ModelingSettings, eager_only: bool = False
) -> np.ndarray:
    """HBM bytes moved by one block's non-GEMM kernels per token, forward + backward (eager).

    The ``elementwise`` rows of ``planner/model/block.py``, counted kernel by kernel (read +
    write, in compute-dtype units d; backward about twice the forward): an unfused RMSNorm (HF:
    upcast, pow, mean, mul, downcast, weight mul) moves ~18 elements of h forward, a fused norm
    ~4; rotary ~10 per q/k element; SwiGLU's SiLU and product ~5 per ffn element (GeLU ~3); two
    residual adds ~3 h each; SDPA layout copies none. Each on 1/tp of a rank's work, but for the
    norms and residual adds, unsplit without sequence parallelism (``s.sequence_parallel``).
    ``eager_only``: the rows every stack runs as eager ops (``Elementwise.eager``).
    """
    tables = block_table(model), block_table(model, hf_modules=True)
    native, hf = (
        per_tp_rank(t.elementwise_elements(eager_only), t.sequence_elementwise_elements(eager_only), c, s)
        for t in tables
    )
    if s.moe_probs_fp32:  # an eager loop on the routed copies (split like them: per_tp_rank)
        native = native + per_tp_rank(moe.expert_bias_fp32_probs_elements(model), 0.0, c, s)
    elements = native if tables[0].elementwise == tables[1].elementwise else np.where(c.impl == IMPL_HF, hf, native)
    return 3.0 * elements * compute_dtype_bytes(c)


def per_tp_rank(elements: float, sequence_elements: float, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Per-token elementwise traffic one tp rank runs: all of it / tp, but what sequence
    parallelism alone splits runs whole on every rank without it."""
    unsplit = 0.0 if s.sequence_parallel else sequence_elements * (1.0 - 1.0 / c.tp)
    return elements / c.tp + unsplit


def unfused_attention_bytes(model: ModelSpec, c: Candidates, s: ModelingSettings, n_layers) -> np.ndarray:
    """HBM traffic of materialised attention scores per micro-batch (no flash attention): every
    head writes and re-reads its full s x s score matrix (masked, not skipped), forward once,
    backward about twice, recompute once more; at the eager soft-capped kernels' bytes per score
    where those run (``s.eager_softcap_attention_bytes_per_score``)."""
    scores = scores_per_microbatch(model, c)
    recomputed = recompute_fraction(c, n_layers) + attention_recompute_fraction(c)
    passes = 3.0 + recomputed
    per_score = np.where(
        eager_softcap_attention(model, c),
        s.eager_softcap_attention_bytes_per_score,
        s.unfused_attention_bytes_per_score,
    )
    unfused = n_layers * scores * per_score * passes
    if model.position == "alibi":  # the bias added in every forward, recomputed ones too
        unfused = unfused + n_layers * scores * s.alibi_bias_bytes_per_score * (1.0 + recomputed)
    return np.where(flash_attention_on(model, c, s), 0.0, unfused)


def compute_time_per_microbatch(model: ModelSpec, c: Candidates, s: ModelingSettings) -> dict[str, np.ndarray]:
    """GPU seconds of one micro-batch's forward + backward on the slowest pp rank: uneven stages
    (planner/model/pipeline.py) and the LM head + loss on the last one; in a 1F1B pipeline the
    slowest stage sets the pace of every other (stage imbalance)."""
    per_rank = []
    for rank in pipeline_ranks(model.num_layers, c):
        terms = rank_compute_time(model, c, s, rank.layers, rank.head)
        terms["memory_bound"] = terms["memory_bound"] + grad_accumulation_s(model, c, s, rank)
        terms["memory_bound"] = terms["memory_bound"] + ring_merge_s(model, c, s, rank.layers)
        per_rank.append(terms)
    slowest = np.argmax(np.stack([sum(terms.values()) for terms in per_rank]), axis=0)
    return {term: np.choose(slowest, [terms[term] for terms in per_rank]) for term in per_rank[0]}


def grad_accumulation_s(model: ModelSpec, c: Candidates, s: ModelingSettings, rank: PipelineRank) -> np.ndarray:
    """Seconds per micro-batch a rank spends adding its 16-bit gradients into an fp32 buffer:
    its stage's parameters / tp x ``s.grad_accum_bytes_per_param`` at copy speed (DeepSpeed's
    BF16_Optimizer; 0 for the stacks that reduce or accumulate in place). All of a stage's
    parameters are local to its tp rank: the stacks that set it run dense models."""
    if not s.grad_accum_bytes_per_param:
        return np.zeros(len(c))
    params = stage_params(model, c, rank).total / c.tp
    return params * s.grad_accum_bytes_per_param / rates.copy_bandwidth(c, s)


def ring_merge_s(model: ModelSpec, c: Candidates, s: ModelingSettings, n_layers) -> np.ndarray:
    """Seconds per micro-batch of the stack's ring merges (``s.cp_ring_loop``, planner/model/
    cp_ring.py) on a rank of ``n_layers`` blocks: eager ops of the stack's own Python, so compile
    fuses them as it fuses any (``fused_elementwise_bytes``), at the eager kernels' bandwidth.
    They run wherever the ring forward runs, recomputed forwards too (as its flash term)."""
    if s.cp_ring_loop is None:
        return np.zeros(len(c))
    attention = block_table(model).attention
    elements = c.micro_batch * c.seq_len / c.cp * attention.heads * attention.v_head_dim / c.tp
    forwards = 1.0 + recompute_fraction(c, n_layers) + attention_recompute_fraction(c)
    merged = n_layers * ring_merge_bytes(s.cp_ring_loop, elements, c.cp, forwards)
    return fused_elementwise_bytes(merged, merged, c, s) / rates.eager_bandwidth(c, s)


def recomputed_module_work(
    model: ModelSpec, c: Candidates, s: ModelingSettings, n_layers, tokens
) -> tuple[np.ndarray, np.ndarray]:
    """(GEMM seconds, elementwise bytes as the stack fuses them: ``fused_elementwise_bytes``) of
    the modules the stack recomputes in backward (``s.recompute_modules``) over ``n_layers`` blocks
    of ``tokens`` tokens: one more forward of their GEMMs and passes, in the native blocks no
    checkpoint already re-runs whole."""
    block_tokens = n_layers * tokens
    share = module_recompute_share(c, n_layers)
    gemms = forward_gemm_time_per_token(model, c, s, recomputed_only=True)
    table, modules = block_table(model), s.recompute_modules

    def passes(eager_only: bool) -> np.ndarray:
        again = table.recomputed_elementwise_elements(modules, eager_only=eager_only)
        sequence = table.recomputed_elementwise_elements(modules, sequence_only=True, eager_only=eager_only)
        return per_tp_rank(again, sequence, c, s) * compute_dtype_bytes(c)

    return block_tokens * share * gemms, block_tokens * share * fused_elementwise_bytes(
        passes(False), passes(True), c, s
    )


def fused_elementwise_bytes(all_bytes, eager_bytes, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """The HBM traffic of elementwise passes counted as PyTorch eager runs them (``all_bytes``, of
    which ``eager_bytes`` are ``Elementwise.eager`` rows) once the stack fuses what it fuses:
    torch.compile shrinks every pass by ``compile_elementwise_factor``; a library of hand-fused
    kernels (``elementwise_fusion_factor``) only the passes it has kernels for, not the eager ops
    of the stack's own Python code."""
    fused = np.where(c.compile, s.compile_elementwise_factor, s.elementwise_fusion_factor)
    eager = np.where(c.compile, s.compile_elementwise_factor, 1.0)
    return (all_bytes - eager_bytes) * fused + eager_bytes * eager


def rank_compute_time(model: ModelSpec, c: Candidates, s: ModelingSettings, n_layers, head_on) -> dict[str, np.ndarray]:
    """GPU seconds of one micro-batch's forward + backward on a rank of ``n_layers`` blocks, with
    the LM head and loss where ``head_on``."""
    tokens = c.micro_batch * c.seq_len / c.cp
    head_share = np.where(head_on, 1.0, 0.0)
    recomputed = recompute_fraction(c, n_layers)
    passes = 3.0 + recomputed  # fwd + 2x bwd + recomputed fwd
    # The forward pass and its recompute, then the backward's two GEMMs (data and weight gradient).
    forward = forward_gemm_time_per_token(model, c, s) * (1.0 + recomputed)
    blocks = n_layers * tokens * (forward + 2.0 * block_gemm_time_per_token(model, c, s))
    # attention: each block's attention projections run forward once more.
    again = attention_recompute_fraction(c)
    if again.any():
        blocks = blocks + n_layers * tokens * again * forward_gemm_time_per_token(model, c, s, part=Part.ATTENTION)
    module_gemms, module_passes = recomputed_module_work(model, c, s, n_layers, tokens)
    blocks = blocks + module_gemms
    # The LM head stays in 16-bit under FP8 recipes (TransformerEngine quantises block GEMMs).
    head_rate = np.where(c.precision == PREC_FP8, rates.bf16_gemm_rate(c, s), rates.gemm_rate(c, s))
    lm_head = root_table(model).lm_head
    head_dims = list(lm_head.local_dims(c.tp))
    # fwd + 2x bwd, + one more forward where the chunked loss recomputes the logits.
    head_passes = 3.0 + head_recompute_fraction(c, s)
    head = (
        head_passes
        * 2.0
        * lm_head.d_in
        * lm_head.d_out
        / c.tp
        * tokens
        / (head_rate * rates.shape_factor(head_dims, s))
    ) * head_share
    fwd = forward_flops_per_token(model, c.seq_len, s)
    # what the kernel computes: the keys a window's mask drops too (masked_window_flops_per_token)
    computed = fwd.attention + masked_window_flops_per_token(model, c, s)
    attn_flops = computed / model.num_layers * n_layers / c.tp * tokens
    # Forward (and its recompute) at the forward rate; the backward, 2x the forward's FLOPs, and
    # with flash attention half a forward more (it recomputes the scores), at the backward rate.
    head_dim = block_table(model).attention.head_dim
    attn_fwd, attn_bwd = rates.attention_rates(c, s, head_dim)
    flash = attn_flops * ((1.0 + recomputed + again) / attn_fwd + 2.5 / attn_bwd)
    # Eager attention's batched GEMMs compute every score, masked or outside a sliding window
    # (not skipped, unlike flash kernels): s keys per query in every block.
    eager_flops = block_table(model).attention.flops_per_token_per_key * c.seq_len * n_layers / c.tp * tokens
    unfused_flops = np.where(eager_softcap_attention(model, c), eager_flops, attn_flops)
    unfused = unfused_flops * (3.0 + recomputed + again) / rates.unfused_attention_rate(c, s, head_dim)
    attention = np.where(flash_attention_on(model, c, s), flash, unfused)
    per_token = fused_elementwise_bytes(
        elementwise_bytes_per_token(model, c, s), elementwise_bytes_per_token(model, c, s, eager_only=True), c, s
    )
    elementwise = n_layers * tokens * per_token * (passes / 3.0) + module_passes
    fp8_casts = n_layers * tokens * fp8_cast_bytes_per_token(model, c, s) * (passes / 3.0)
    loss = s.loss_traffic_bytes_per_logit * tokens * model.vocab_size / c.tp
    # Passes around the embedding and head (Gemma's embedding scaling, the logit soft-cap).
    root_passes = sum(e.elements for e in root_table(model).elementwise)
    if root_passes:
        loss = loss + 3.0 * root_passes * tokens / c.tp * compute_dtype_bytes(c)
    loss = loss * head_share
    scores = unfused_attention_bytes(model, c, s, n_layers) / rates.copy_bandwidth(c, s)
    memory_bound = (elementwise + fp8_casts + loss) / rates.eager_bandwidth(c, s) + scores
    return {"matmul": blocks + head, "attention": attention, "memory_bound": memory_bound}


def optimizer_time(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """AdamW and clipping stream the local shard of the fp32 states. With offload the states
    cross the host link once a step (``offload_bytes_per_param``: the first micro-batch's
    gradients down, the parameters up) and the host runs AdamW (planner/model/host.py); what
    later micro-batches move is the backward's, not the optimizer's (``offload_accum_s``)."""
    local = busiest_stage(model, c).total / c.tp
    shard = np.where(c.sharding >= SHARD_ZERO1, np.maximum(c.shard_group, 1), 1)
    optimizer_bytes = local / shard * (s.adamw_bytes_per_param + s.clip_bytes_per_param)
    on_gpu = np.where(c.offload, 0.0, 1.0)
    offload = np.where(c.offload, local / shard * s.offload_bytes_per_param / s.host_link_bandwidth, 0.0)
    return optimizer_bytes * on_gpu / rates.eager_bandwidth(c, s) + offload + host_adam_seconds(model, c, s)


def backward_share(model: ModelSpec, c: Candidates) -> np.ndarray:
    """The backward's share of a micro-batch's compute: two of a block's three passes, and the
    forward it recomputes (``rank_compute_time``'s passes)."""
    recomputed = recompute_fraction(c, layers_per_stage(model, c))
    return (2.0 + recomputed) / (3.0 + recomputed)


def shard_copy_time(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Sharded data parallelism casts and copies parameters into each all-gather's buffer and
    gradients out of each reduce-scatter's (FSDP2's copy-in / copy-out kernels): per pass, not
    per step, so they grow with the accumulation (docs/model.md)."""
    stage = busiest_stage(model, c)
    gather_passes = gathers_per_step(c, s)
    reductions = reductions_per_step(c, s)
    # Gathered and reduced: the rank's share of the experts (1/ep) with the dense weights.
    copy_bytes = (
        stage.held
        / c.tp
        * (s.fsdp_gather_copy_bytes_per_param * gather_passes + s.fsdp_reduce_copy_bytes_per_param * reductions)
    )
    return np.where(c.sharding >= SHARD_ZERO1, copy_bytes, 0.0) / rates.eager_bandwidth(c, s)


def host_time(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Host dispatch: per block per micro-batch (more with recompute; MoE blocks add their
    per-expert launches), plus per step."""
    per_block = s.host_overhead_per_block_s * np.where(c.compile, s.compile_host_factor, 1.0)
    n_layers = layers_per_stage(model, c)
    per_block = per_block * (1.0 + recompute_fraction(c, n_layers) * s.recompute_host_share)
    per_block = per_block + moe.expert_launch_s(model, c, s)  # MoE: per-expert kernels
    per_block = per_block + moe.dispatch_launch_s(model, c, s)  # MoE: router and dispatcher
    return n_layers * c.grad_accum * per_block + s.host_overhead_per_step_s


def host_sync_exposed_s(model: ModelSpec, c: Candidates, s: ModelingSettings) -> np.ndarray:
    """Host time the GPU waits for because an MoE block's forward synchronises the host
    (``s.moe_host_sync``; docs/model.md, "Host sync of the token dispatcher").

    At the sync the GPU's queue is empty, so the kernels issued after it cannot start before
    they are launched: the block's post-sync forward dispatch (``moe.post_sync_host_s``) is
    exposed where it outlasts the GPU work it launches, the dispatch all-to-all and the routed
    experts' forward GEMMs (the combine all-to-all, launched last, covers only the next block's
    launches). Once per MoE block and forward pass (recomputed forwards too).
    """
    host = moe.post_sync_host_s(model, c, s)
    tokens = c.micro_batch * c.seq_len / c.cp
    gemms = tokens * forward_gemm_time_per_token(model, c, s, routed_only=True) * c.compute_time_factor
    gpu = gemms + moe.one_all_to_all_s(model, c, s, compute_dtype_bytes(c))
    n_layers = layers_per_stage(model, c)
    forwards = n_layers * c.grad_accum * (1.0 + recompute_fraction(c, n_layers))
    return forwards * np.maximum(host - gpu, 0.0)


def ep_overlap(c: Candidates, s: ModelingSettings) -> np.ndarray:
    """The share of the expert all-to-alls the stack can hide: ``ep_comm_overlap``, less what a
    paired schedule leaves unpaired (``moe.a2a_unpaired_share``; review s31: one micro-batch was
    credited the whole overlap)."""
    unpaired = moe.a2a_unpaired_share(c.pp, c.vpp, c.grad_accum) if s.ep_overlap_needs_pairs else np.zeros(len(c))
    return s.ep_comm_overlap * (1.0 - unpaired)


def dp_window_s(model: ModelSpec, c: Candidates, s: ModelingSettings, compute) -> np.ndarray:
    """The compute a step's data-parallel traffic can hide under: the whole step's, but a DDP
    reduction (sharding none) only the last micro-batch's backward where the stack reduces from
    backward hooks (``s.ddp_reduces_in_backward``): torch DDP's Reducer all-reduces a bucket once its
    gradients are ready, FSDP2's replicate a unit after its backward, and inner micro-batches skip
    the sync (no_sync, set_requires_gradient_sync), so neither the forwards nor the earlier
    backwards run beside it (each backward's own, where the stack reduces every micro-batch:
    ``ddp_reductions_per_step``); with a pipeline none of it (``s.pipeline_reduces_after_backward``)."""
    last_backward = compute / c.grad_accum * backward_share(model, c) * ddp_reductions_per_step(c, s)
    after_pipeline = (c.pp > 1) & s.pipeline_reduces_after_backward
    ddp_window = np.where(after_pipeline, 0.0, last_backward)
    return np.where((c.sharding == SHARD_NONE) & s.ddp_reduces_in_backward, ddp_window, compute)


def step_time(model: ModelSpec, c: Candidates, s: ModelingSettings) -> TimeBreakdown:
    """Combine: GPU busy time vs host dispatch, exposed comm, and the pipeline bubble."""
    # Each term once per distinct input it reads (rowwise.py): the same floats, less work.
    per_mb = per_distinct_row(lambda rows: compute_time_per_microbatch(model, rows, s), c, COMPUTE_COLUMNS)
    m = c.grad_accum
    matmul, attention, memory_bound = (per_mb[k] * m for k in ("matmul", "attention", "memory_bound"))
    # A measured job's correction scales the GPU compute the rest of the step overlaps with.
    correction = (c.compute_time_factor - 1.0) * (matmul + attention + memory_bound)
    compute = matmul + attention + memory_bound + correction
    optimizer, copies = optimizer_time(model, c, s), shard_copy_time(model, c, s)
    accum = offload_accum_s(model, c, s, compute / m * backward_share(model, c))
    raw = comm_times(model, c, s)
    hideable_dp = raw.dp - raw.dp_serial
    axes = (hideable_dp, raw.tp, raw.pp, raw.cp, raw.ep)
    alone = (
        comm.exposed_s(hideable_dp, dp_window_s(model, c, s, compute), s.dp_comm_overlap),
        comm.exposed_s(raw.tp, compute, s.tp_comm_overlap),
        comm.exposed_s(raw.pp, compute, s.pp_comm_overlap),
        comm.exposed_s(raw.cp, per_mb["attention"] * m, s.cp_comm_overlap),
        comm.exposed_s(raw.ep, compute, ep_overlap(c, s)),
    )
    dp, tp, pp, cp, ep = comm.within_window(axes, alone, compute)
    dp = dp + raw.dp_serial
    host = host_time(model, c, s)
    # Dispatch in series with the GPU (host_overlap < 1: CUDA_LAUNCH_BLOCKING=1) lengthens every
    # micro-batch slot, the idle ones of the fill and drain too (review s32).
    serial = (1.0 - s.host_overlap) * host
    # Fill and drain: (pp-1) micro-batch slots idle per step (Narayanan et al. 2021, eq. 1);
    # the interleaved schedule fills them with chunks 1/vpp as long (their sec. 2.2.2).
    bubble = np.where(c.pp > 1, (c.pp - 1) / c.vpp * (compute + tp + serial) / m, 0.0)
    gpu = compute + optimizer + copies + accum + dp + tp + pp + cp + ep + bubble
    # The host runs ahead of the GPU (queue) except across an MoE block's host sync: the step
    # waits for the larger of the whole step's excess dispatch and the post-sync exposures
    # (the segments between syncs alike, docs/model.md "Host sync of the token dispatcher"),
    # the latter not again where the dispatch is in series anyway (review s32).
    in_series = (1.0 - s.host_overlap) * np.minimum(host, gpu)
    exposed = np.maximum(np.maximum(host - gpu, 0.0), host_sync_exposed_s(model, c, s) - in_series)
    host_stall = exposed + in_series
    return TimeBreakdown(
        matmul=matmul,
        attention=attention,
        memory_bound=memory_bound,
        optimizer=optimizer,
        shard_copies=copies,
        offload_accum=accum,
        host_stall=host_stall,
        dp_comm=dp,
        tp_comm=tp,
        pp_comm=pp,
        cp_comm=cp,
        ep_comm=ep,
        bubble=bubble,
        measured_correction=correction,
        step=gpu + host_stall,
    )
