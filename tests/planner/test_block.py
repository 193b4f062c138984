"""The block-operations table (planner/model/block.py) and the figures derived from it."""

from __future__ import annotations

import numpy as np
import pytest

from planner.api import build_plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset, list_presets
from planner.layout import Implementation, Layout, TrainingConfig
from planner.model.block import block_table, grown_position_params, root_table
from planner.model.block_rows import Part, TpSplit
from planner.model.candidates import single
from planner.model.flops import forward_flops_per_token, model_flops_per_token
from planner.model.memory import block_activation_bytes_per_token, block_input_bytes_per_token
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.spec import ModelSpec

MOE_GELU = ModelSpec(
    name="moe-gelu",
    family="gpt2",
    num_layers=4,
    hidden_size=256,
    ffn_hidden_size=704,
    num_heads=8,
    num_kv_heads=2,
    vocab_size=1000,
    mlp="gelu",
    norm="layernorm",
    position="learned",
    qkv_bias=True,
    out_bias=True,
    mlp_bias=True,
    norm_bias=True,
    embedding_norm=True,
    num_experts=8,
    experts_per_token=2,
)
MODELS = [get_preset(name) for name in list_presets()] + [MOE_GELU]


def _closed_form_attention(m: ModelSpec) -> int:
    h, q, kv = m.hidden_size, m.q_size, m.kv_size
    if m.mla is not None:  # DeepSeek MLA (transformers' DeepseekV3Attention)
        a, heads = m.mla, m.num_heads
        nope = m.dim_head - a.qk_rope_head_dim
        queries = h * q if a.q_lora_rank is None else h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * q
        kv_path = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank
        kv_path += a.kv_lora_rank * heads * (nope + a.v_head_dim)
        return queries + kv_path + heads * a.v_head_dim * h
    attention = 2 * h * q + 2 * h * kv + ((q + 2 * kv) if m.qkv_bias else 0) + (h if m.out_bias else 0)
    qk_norm = {"none": 0, "head": 2 * m.dim_head, "full": q + kv}[m.qk_norm]
    gate = h * q if m.attention_output_gate else 0  # AFMoE's gate_proj
    return attention + qk_norm + (m.num_heads if m.attention_sinks else 0) + gate


def _closed_form_mlp(m: ModelSpec, f: int) -> int:
    h = m.hidden_size
    mats, up_biases = (2, f) if m.mlp in ("gelu", "relu2") else (3, 2 * f)
    return mats * h * f + ((up_biases + h) if m.mlp_bias else 0)


def closed_form_params(m: ModelSpec) -> int:
    """The parameter count written out by hand (Hugging Face module structure)."""
    h, f, v = m.hidden_size, m.ffn_hidden_size, m.vocab_size
    norm = h * (2 if m.norm_bias else 1)
    norms = (4 if m.norm_placement == "sandwich" else 2) * norm
    attention = _closed_form_attention(m)
    mlp = _closed_form_mlp(m, f) * m.num_experts + (
        _closed_form_mlp(m, f * m.shared_experts) if m.shared_experts else 0
    )
    router = (h + m.router_bias) * m.num_experts + (h if m.shared_expert_gate else 0) if m.is_moe else 0
    dense_mlp = _closed_form_mlp(m, m.dense_ffn_hidden_size or f)
    embedding = v * h + (m.max_seq_len * h if m.position == "learned" else 0) + (norm if m.embedding_norm else 0)
    head = 0 if m.tied_embeddings else v * h
    blocks = (m.num_layers - m.dense_layers) * (attention + mlp + router + norms)
    blocks += m.dense_layers * (attention + dense_mlp + norms)
    return embedding + blocks + norm + head


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_parameters_from_the_table_match_the_closed_form(model):
    assert model.num_params() == closed_form_params(model)
    block = block_table(model)
    assert block.params() == model.param_counts().per_layer


@pytest.mark.parametrize(
    "name, params",
    [
        ("llama2-7b", 6_738_415_616),
        ("llama3-8b", 8_030_261_248),
        ("llama3.2-1b", 1_235_814_400),  # tied embeddings
        ("mistral-7b", 7_241_732_096),
        ("qwen2.5-7b", 7_615_616_512),  # q/k/v biases
        ("mixtral-8x7b", 46_702_792_704),  # 8 experts + router
    ],
)
def test_parameters_of_known_models(name, params):
    assert get_preset(name).num_params() == params


def test_tied_head_has_no_parameters_of_its_own():
    tied, untied = get_preset("llama3.2-1b"), get_preset("llama3-8b")
    assert root_table(tied).lm_head.tied and root_table(tied).lm_head.params == 0
    assert root_table(untied).lm_head.params == untied.vocab_size * untied.hidden_size


@pytest.mark.parametrize("name", ["llama3-8b", "llama2-7b", "mistral-7b"])
def test_model_flops_are_6n_plus_attention(name):
    """Dense, bias-free, untied: every non-embedding, non-norm weight is a matmul weight."""
    m = get_preset(name)
    c = m.param_counts()
    n_matmul = m.num_params() - c.embedding - m.num_layers * c.norms_per_layer - c.final_norm
    seq = np.array([2048, 8192])
    causal = 0.5 if DEFAULT_SETTINGS.causal_attention_flops else 1.0
    attention = 3 * 4 * seq * m.q_size * m.num_layers * causal  # QK^T and AV, fwd + bwd
    np.testing.assert_array_equal(model_flops_per_token(m, seq, DEFAULT_SETTINGS), 6.0 * n_matmul + attention)


def test_moe_counts_every_expert_but_runs_the_routed_ones():
    m = get_preset("mixtral-8x7b")
    block = block_table(m)
    mlp = [g for g in block.gemms if g.part == Part.MLP]
    assert all(g.experts == 8 and g.active == 2 for g in mlp)
    dense_mlp = 3 * m.hidden_size * m.ffn_hidden_size
    assert block.params(Part.MLP) == 8 * dense_mlp
    router = next(g for g in block.gemms if g.part == Part.ROUTER)
    assert (router.split, router.timed, router.params) == (TpSplit.NONE, True, m.hidden_size * 8)
    attention = sum(g.active_weights for g in block.gemms if g.part == Part.ATTENTION)
    assert block.matmul_weights == attention + 2 * dense_mlp + router.params
    assert m.num_active_params() < m.num_params()


def test_gqa_shrinks_k_and_v_only():
    gqa = get_preset("llama3-8b")
    mha = gqa.model_copy(update={"num_kv_heads": gqa.num_heads})
    t_gqa, t_mha = block_table(gqa), block_table(mha)
    assert t_gqa.gemms[0].name == "qkv" and t_gqa.gemms[0].d_out == 4096 + 2 * 8 * 128
    assert t_mha.gemms[0].d_out == 3 * 4096
    assert t_gqa.params(Part.MLP) == t_mha.params(Part.MLP)
    assert t_mha.params(Part.ATTENTION) - t_gqa.params(Part.ATTENTION) == 2 * 4096 * (32 - 8) * 128
    # K and V (what context parallelism exchanges) shrink by heads / kv_heads; q and the scores do not.
    assert t_mha.cp_gathered_elements == 4 * t_gqa.cp_gathered_elements
    assert t_gqa.attention.flops_per_token_per_key == t_mha.attention.flops_per_token_per_key
    seq = np.array([4096])
    assert forward_flops_per_token(gqa, seq, DEFAULT_SETTINGS).attention == (
        forward_flops_per_token(mha, seq, DEFAULT_SETTINGS).attention
    )


def test_gpt_blocks_have_biases_gelu_and_no_rotary():
    m = get_preset("gpt3-125m")
    block = block_table(m)
    assert [g.name for g in block.gemms] == ["qkv", "o", "up", "down"]
    assert all(g.bias for g in block.gemms)
    assert "rotary" not in [e.name for e in block.elementwise]
    assert [t.name for t in block.saved_in(Part.MLP)] == ["fc1 output (GeLU input)", "GeLU output (fc2 input)"]
    assert root_table(m).embedding_params == (m.vocab_size + m.max_seq_len) * m.hidden_size


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_tensor_parallel_splits_every_block_gemm(tp):
    block = block_table(get_preset("llama3-70b"))
    for g in block.gemms:
        d_in, d_out = g.local_dims(tp)
        assert d_in * d_out * tp == g.d_in * g.d_out
        assert (d_out if g.split == TpSplit.COLUMN else d_in) == (g.d_out if g.split == TpSplit.COLUMN else g.d_in) / tp


def test_hf_rmsnorm_saves_and_moves_more_than_a_fused_norm():
    llama, gpt = get_preset("llama3-8b"), get_preset("gpt3-125m")
    h = llama.hidden_size
    native, hf = block_table(llama), block_table(llama, hf_modules=True)
    assert [t.elements for t in native.saved_in(Part.NORMS)] == [h, h, h, h]
    assert [t.elements for t in hf.saved_in(Part.NORMS)] == [3 * h, h, 3 * h, h]
    assert hf.elementwise_elements() - native.elementwise_elements() == 2 * (18 - 4) * h
    assert block_table(gpt) == block_table(gpt, hf_modules=True)  # LayerNorm is fused either way


def _one(model: ModelSpec, impl: Implementation, tp: int = 1):
    gpu = load_catalog().gpu("h100-sxm")
    layout = Layout(tp=tp).resolve(tp)
    return single(gpu, layout, TrainingConfig(impl=impl), gpus_per_node=8, network_bandwidth=50e9)


@pytest.mark.parametrize("impl", list(Implementation))
def test_saved_activation_bytes_per_token(impl):
    """bf16, tp=1: q, k, v, attention output (2 bytes) + fp32 LSE; SwiGLU 4 ffn-wide tensors;
    two norms of 2 tensors each (HF's eager RMSNorm: 4 h units)."""
    m = get_preset("llama3-8b")
    h, f, q, kv = m.hidden_size, m.ffn_hidden_size, m.q_size, m.kv_size
    got = block_activation_bytes_per_token(m, _one(m, impl), DEFAULT_SETTINGS)
    norm = (4 if impl == Implementation.HF else 2) * h * 2
    assert {k: float(v[0]) for k, v in got.items()} == {
        "attention": (2 * q + 2 * kv) * 2 + 4 * m.num_heads,
        "mlp": 4 * f * 2,
        "norms": 2 * norm,
    }
    assert float(block_input_bytes_per_token(m, _one(m, impl), DEFAULT_SETTINGS)[0]) == h * 2


def test_tensor_parallel_splits_saved_tensors_except_the_gathered_norm_outputs():
    m = get_preset("llama3-8b")
    one, four = (
        block_activation_bytes_per_token(m, _one(m, Implementation.NATIVE, tp), DEFAULT_SETTINGS) for tp in (1, 4)
    )
    assert four["attention"] == one["attention"] / 4 and four["mlp"] == one["mlp"] / 4
    h = m.hidden_size
    assert four["norms"] == 2 * (h * 2 / 4 + h * 2)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_two_row_parallel_gemms_per_block(model):
    """o and down: Megatron's two tp all-reduces per block forward, whatever the family."""
    assert block_table(model).tp_reductions == 2


def test_a_parallel_block_reduces_attention_and_mlp_once_under_tensor_parallelism():
    """Falcon paper sec. 4.3.4: attention and MLP outputs add before one all_reduce per layer
    forward; backward once only where the stack gathers the block input once (review s39);
    weights, FLOPs and the trainer's refusals (native; HF tensor parallelism) follow the flag."""
    from planner.model.structure import native_unsupported

    gpt = get_preset("gpt3-13b")
    parallel = gpt.model_copy(update={"parallel_block": True})
    assert block_table(parallel).tp_reductions == 1 and block_table(parallel).routed_only_reductions == 0
    assert block_table(parallel).params() == block_table(gpt).params()
    assert "parallel_block=True" in native_unsupported(parallel) and not native_unsupported(gpt)
    from planner.model.structure import hf_tensor_parallel_unsupported

    assert "parallel_block=True" in hf_tensor_parallel_unsupported(parallel)
    from planner.model.stacks import Stack

    layout, training = Layout(tp=8, sharding="zero1"), TrainingConfig(seq_len=2048)
    times = [
        build_plan(m, "h100-sxm", layout, training, num_gpus=8, stack=Stack.MEGATRON_LM).estimate.time.breakdown_s
        for m in (gpt, parallel)
    ]
    # one reduction forward, two backward (one per branch's input) unless the stack gathers once
    assert times[1].tp_comm == pytest.approx(times[0].tp_comm * 3 / 4, rel=1e-6)
    assert times[1].matmul == pytest.approx(times[0].matmul)
    from planner.model.stacks import STACK_SETTINGS

    once = STACK_SETTINGS[Stack.MEGATRON_LM].but(parallel_block_single_gather=True)
    gigatron = build_plan(parallel, "h100-sxm", layout, training, num_gpus=8, stack=Stack.MEGATRON_LM, settings=once)
    assert gigatron.estimate.time.breakdown_s.tp_comm == pytest.approx(times[0].tp_comm / 2, rel=1e-6)


def test_a_gpt_past_its_table_holds_the_grown_position_rows():
    """Memory counts the rows the trainer adds past max_seq_len (fp32 parameters on one GPU)."""
    spec = get_preset("gpt3-125m")
    params = [
        build_plan(
            spec, "h100-sxm", Layout(), TrainingConfig(seq_len=s, micro_batch=1, grad_accum=1), num_gpus=1
        ).estimate.memory.breakdown_gib.params
        for s in (spec.max_seq_len, 2 * spec.max_seq_len)
    ]
    grown = float(grown_position_params(spec, 2 * spec.max_seq_len))
    assert grown == spec.max_seq_len * spec.hidden_size
    assert (params[1] - params[0]) * 2**30 == pytest.approx(4 * grown)
