"""The native Qwen3-MoE decoder (Qwen3's attention with per-head q/k norms, every block a routed
SwiGLU MoE under the softmax router) computes what transformers' Qwen3MoeForCausalLM computes
with the same weights (fp32, CPU, tiny dims), with ``norm_topk_prob`` either way, and holds the
planner's parameter count for the released models."""

from __future__ import annotations

import json

import pytest
import torch

from planner.catalog.models import get_preset, model_from_hf_config
from planner.layout import Implementation
from planner.model.structure import default_implementation, native_unsupported
from trainer.model import ModelArgs, Transformer, build_native_model, native_init_rule
from trainer.moe import MoE
from trainer.parallel import init_parameters

transformers = pytest.importorskip("transformers")

SEQ = 20
_TINY = dict(
    model_type="qwen3_moe",
    hidden_size=64,
    intermediate_size=96,
    moe_intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    num_experts=8,
    num_experts_per_tok=2,
    norm_topk_prob=True,
    decoder_sparse_step=1,
    mlp_only_layers=[],
    vocab_size=256,  # a multiple of 128: the native model pads nothing
    max_position_embeddings=64,
    rope_theta=1e6,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)


def _hf_state_dict(native: Transformer) -> dict[str, torch.Tensor]:
    sd = native.state_dict()
    out = {
        "model.embed_tokens.weight": sd["tok_embeddings.weight"],
        "model.norm.weight": sd["norm.weight"],
        "lm_head.weight": sd["output.weight"],
    }
    attention = {"wq": "q_proj", "wk": "k_proj", "wv": "v_proj", "wo": "o_proj", "q_norm": "q_norm", "k_norm": "k_norm"}
    for i in range(native.args.num_layers):
        p, h = f"layers.{i}.", f"model.layers.{i}."
        out |= {f"{h}self_attn.{hf}.weight": sd[f"{p}attention.{ours}.weight"] for ours, hf in attention.items()}
        experts = f"{p}feed_forward.experts."
        out[f"{h}mlp.gate.weight"] = sd[f"{p}feed_forward.router.weight"]
        # transformers: gate_up [E, 2 ffn, h] and down [E, h, ffn]; ours [E, in, out] each.
        out[f"{h}mlp.experts.gate_up_proj"] = torch.cat([sd[experts + "w1"], sd[experts + "w3"]], dim=2).transpose(1, 2)
        out[f"{h}mlp.experts.down_proj"] = sd[experts + "w2"].transpose(1, 2)
        out[h + "input_layernorm.weight"] = sd[p + "attention_norm.weight"]
        out[h + "post_attention_layernorm.weight"] = sd[p + "ffn_norm.weight"]
    return out


def _native(data: dict, tmp_path) -> Transformer:
    (tmp_path / "config.json").write_text(json.dumps(data))
    spec = model_from_hf_config(tmp_path / "config.json")
    assert native_unsupported(spec) == [] and spec.moe_renormalize == data["norm_topk_prob"]
    args = ModelArgs.from_spec(spec, seq_len=SEQ)
    native = Transformer(args)
    native.init_buffers(torch.device("cpu"))
    init_parameters(native, seed=7, rule=native_init_rule(args))
    gen = torch.Generator().manual_seed(3)
    for name, param in native.named_parameters():
        if name.endswith("norm.weight"):  # norms away from one, so each one matters
            param.data.normal_(1.0, 0.3, generator=gen)
        if name.endswith("router.weight"):  # well-separated probabilities: no near-ties in the top k
            param.data.normal_(0.0, 0.5, generator=gen)
        if ".experts." in name:  # experts that move the logits, so their weighting shows
            param.data.normal_(0.0, 0.2, generator=gen)
    return native


@pytest.mark.parametrize("norm_topk_prob", [True, False])
def test_native_qwen3_moe_computes_what_transformers_computes(tmp_path, norm_topk_prob):
    data = _TINY | dict(norm_topk_prob=norm_topk_prob)
    native = _native(data, tmp_path)
    assert all(isinstance(layer.feed_forward, MoE) for layer in native.layers.values())
    fields = {k: v for k, v in data.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model("qwen3_moe", **fields)
    hf = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    hf.load_state_dict(_hf_state_dict(native), strict=True)
    hf.eval()
    native.eval()
    tokens = torch.randint(0, data["vocab_size"], (2, SEQ), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours, theirs = native(tokens), hf(input_ids=tokens).logits
        assert ours.abs().max() > 0.1
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
        # The renormalisation matters: the other setting gives other logits.
        for moe in native.modules():
            if isinstance(moe, MoE):
                moe.renormalize = not norm_topk_prob
        assert not torch.allclose(native(tokens), theirs, atol=1e-3)


def test_qwen3_moe_with_dense_blocks_stays_on_transformers(tmp_path):
    """The spec keeps how many blocks are dense, not where (mlp_only_layers): native refuses."""
    (tmp_path / "config.json").write_text(json.dumps(_TINY | dict(mlp_only_layers=[1])))
    spec = model_from_hf_config(tmp_path / "config.json")
    assert native_unsupported(spec) == ["dense_layers=1 (placed by mlp_only_layers)"]
    assert default_implementation(spec) == Implementation.HF


@pytest.mark.parametrize("preset", ["qwen3-30b-a3b", "qwen3-235b-a22b"])
def test_native_qwen3_moe_holds_the_planner_count(preset):
    """The released models' native model (meta device) holds exactly the spec's parameters
    (151936 is a multiple of 128: no vocabulary padding), every block an MoE block."""
    spec = get_preset(preset)
    assert native_unsupported(spec) == [] and default_implementation(spec) == Implementation.NATIVE
    model = build_native_model(spec, seq_len=4096)
    assert sum(p.numel() for p in model.parameters()) == spec.num_params()
    assert sum(isinstance(m, MoE) for m in model.modules()) == spec.num_layers


def test_native_qwen3_moe_trains_a_step(tmp_path):
    """Backward reaches every parameter (the router through the weights, the q/k norms, experts)."""
    native = _native(_TINY, tmp_path)
    tokens = torch.randint(0, _TINY["vocab_size"], (2, SEQ), generator=torch.Generator().manual_seed(1))
    logits = native(tokens)
    torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()).backward()
    missing = [n for n, p in native.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []
