"""The native DeepSeek-V3 decoder (MLA, dense first blocks, MoE blocks with shared experts and
the group-limited sigmoid router) computes what transformers' DeepseekV3ForCausalLM computes
with the same weights (fp32, CPU, tiny dims), and holds the planner's parameter count."""

from __future__ import annotations

import json

import pytest
import torch

from planner.catalog.models import get_preset, model_from_hf_config
from planner.model.structure import native_unsupported
from trainer.model import ModelArgs, Transformer, build_native_model, native_init_rule
from trainer.moe import MoE
from trainer.parallel import init_parameters

transformers = pytest.importorskip("transformers")

SEQ = 20
_TINY = dict(
    model_type="deepseek_v3",
    hidden_size=64,
    intermediate_size=96,
    moe_intermediate_size=32,
    num_hidden_layers=3,
    first_k_dense_replace=1,
    num_attention_heads=4,
    num_key_value_heads=4,
    q_lora_rank=32,
    kv_lora_rank=16,
    qk_nope_head_dim=16,
    qk_rope_head_dim=8,
    v_head_dim=12,
    n_routed_experts=16,  # 8 groups of 2, the best 4 groups eligible (DeepSeek-V3's routing)
    num_experts_per_tok=4,
    n_shared_experts=2,
    n_group=8,
    topk_group=4,
    routed_scaling_factor=2.5,
    norm_topk_prob=True,
    vocab_size=256,  # a multiple of 128: the native model pads nothing
    max_position_embeddings=64,
    rope_theta=10000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)


_SWIGLU = (("w1", "gate_proj"), ("w3", "up_proj"), ("w2", "down_proj"))


def _attention_weights(sd: dict[str, torch.Tensor], p: str, h: str) -> dict[str, torch.Tensor]:
    names = {
        "wq": "q_proj",
        "wq_a": "q_a_proj",
        "q_norm": "q_a_layernorm",
        "wq_b": "q_b_proj",
        "wkv_a": "kv_a_proj_with_mqa",
        "kv_norm": "kv_a_layernorm",
        "wkv_b": "kv_b_proj",
        "wo": "o_proj",
    }
    return {
        f"{h}self_attn.{hf}.weight": sd[f"{p}attention.{ours}.weight"]
        for ours, hf in names.items()
        if f"{p}attention.{ours}.weight" in sd
    }


def _mlp_weights(native: Transformer, sd: dict[str, torch.Tensor], i: int, p: str, h: str) -> dict[str, torch.Tensor]:
    moe = native.layers[str(i)].feed_forward
    if not isinstance(moe, MoE):
        return {f"{h}mlp.{hf}.weight": sd[f"{p}feed_forward.{ours}.weight"] for ours, hf in _SWIGLU}
    experts = f"{p}feed_forward.experts."
    out = {
        f"{h}mlp.gate.weight": sd[f"{p}feed_forward.router.weight"],
        f"{h}mlp.gate.e_score_correction_bias": moe.e_score_correction_bias,
        # transformers: gate_up [E, 2 ffn, h] and down [E, h, ffn]; ours [E, in, out] each.
        f"{h}mlp.experts.gate_up_proj": torch.cat([sd[experts + "w1"], sd[experts + "w3"]], dim=2).transpose(1, 2),
        f"{h}mlp.experts.down_proj": sd[experts + "w2"].transpose(1, 2),
    }
    return out | {
        f"{h}mlp.shared_experts.{hf}.weight": sd[f"{p}feed_forward.shared.{ours}.weight"] for ours, hf in _SWIGLU
    }


def _hf_state_dict(native: Transformer) -> dict[str, torch.Tensor]:
    sd = native.state_dict()
    out = {
        "model.embed_tokens.weight": sd["tok_embeddings.weight"],
        "model.norm.weight": sd["norm.weight"],
        "lm_head.weight": sd["output.weight"],
    }
    for i in range(native.args.num_layers):
        p, h = f"layers.{i}.", f"model.layers.{i}."
        out |= _attention_weights(sd, p, h) | _mlp_weights(native, sd, i, p, h)
        out[h + "input_layernorm.weight"] = sd[p + "attention_norm.weight"]
        out[h + "post_attention_layernorm.weight"] = sd[p + "ffn_norm.weight"]
    return out


def _native(data: dict, tmp_path) -> Transformer:
    (tmp_path / "config.json").write_text(json.dumps(data))
    spec = model_from_hf_config(tmp_path / "config.json")
    assert native_unsupported(spec) == []
    args = ModelArgs.from_spec(spec, seq_len=SEQ)
    native = Transformer(args)
    native.init_buffers(torch.device("cpu"))
    init_parameters(native, seed=7, rule=native_init_rule(args))
    gen = torch.Generator().manual_seed(3)
    for name, param in native.named_parameters():
        if name.endswith("norm.weight"):  # norms away from one, so each one matters
            param.data.normal_(1.0, 0.3, generator=gen)
        if name.endswith("router.weight"):  # well-separated affinities: no near-ties in the top k
            param.data.normal_(0.0, 0.5, generator=gen)
    for moe in native.modules():
        if isinstance(moe, MoE):  # the correction bias steers the choice, not the weights
            moe.e_score_correction_bias.normal_(0.0, 0.3, generator=gen)
    return native


@pytest.mark.parametrize("q_lora_rank", [32, None])
def test_native_deepseek_v3_computes_what_transformers_computes(tmp_path, q_lora_rank):
    data = _TINY | dict(q_lora_rank=q_lora_rank)
    native = _native(data, tmp_path)
    assert isinstance(native.layers["1"].feed_forward, MoE) and not isinstance(native.layers["0"].feed_forward, MoE)
    fields = {k: v for k, v in data.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model("deepseek_v3", **fields)
    hf = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    hf.load_state_dict(_hf_state_dict(native), strict=True)
    hf.eval()
    native.eval()
    tokens = torch.randint(0, data["vocab_size"], (2, SEQ), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours, theirs = native(tokens), hf(input_ids=tokens).logits
        assert ours.abs().max() > 0.1
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
        # The correction bias matters (it picks other experts): without it the logits differ.
        for moe in native.modules():
            if isinstance(moe, MoE):
                moe.e_score_correction_bias.zero_()
        assert not torch.allclose(native(tokens), theirs, atol=1e-3)


def test_native_deepseek_v3_trains_a_step(tmp_path):
    """Backward reaches every parameter (router through the weights, shared experts, MLA)."""
    native = _native(_TINY, tmp_path)
    tokens = torch.randint(0, _TINY["vocab_size"], (2, SEQ), generator=torch.Generator().manual_seed(1))
    logits = native(tokens)
    torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()).backward()
    missing = [n for n, p in native.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


def test_native_deepseek_v3_holds_the_planner_count():
    """The preset's native model (meta device: no memory) holds exactly the spec's parameters
    (129280 is a multiple of 128: no vocabulary padding); the MTP module is not built."""
    spec = get_preset("deepseek-v3")
    assert native_unsupported(spec) == []
    model = build_native_model(spec, seq_len=4096)
    assert sum(p.numel() for p in model.parameters()) == spec.num_params()
    assert sum(isinstance(m, MoE) for m in model.modules()) == spec.num_layers - spec.dense_layers
