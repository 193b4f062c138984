"""Native model and HF model construction: parameter counts, numerics against transformers, init rules."""

from __future__ import annotations

import json

import pytest
import torch
from support.jobs import tiny_gpt_spec, tiny_spec

from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing
from planner.model.block import grown_position_params
from trainer.hf_model import build_hf_model, config_from_spec, hf_init_rule, load_hf_config
from trainer.model import ModelArgs, Transformer, build_native_model, native_init_rule
from trainer.parallel import apply_activation_checkpointing, block_container, clean_name, init_parameters

transformers = pytest.importorskip("transformers")

LLAMA_STYLE = ["tiny", "llama-124m", "llama-350m", "llama2-7b", "llama3-8b", "llama3.2-1b", "mistral-7b", "qwen2.5-7b"]


def count_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # parameters() yields a tied weight once


@pytest.mark.parametrize("preset", LLAMA_STYLE)
def test_native_param_count_matches_spec(preset):
    spec = get_preset(preset)
    model = build_native_model(spec, seq_len=128)
    assert all(p.is_meta for p in model.parameters())
    assert count_params(model) == spec.num_params()


@pytest.mark.parametrize("preset", ["tiny", "llama-124m", "qwen2.5-7b", "mistral-7b", "gpt3-125m", "mixtral-8x7b"])
def test_hf_param_count_matches_spec(preset):
    spec = get_preset(preset)
    model = build_hf_model(spec, None, seq_len=128)
    assert count_params(model) == spec.num_params()


def test_native_refuses_what_it_cannot_build():
    with pytest.raises(ValueError, match="impl 'hf'") as info:
        build_native_model(tiny_spec(family="gpt_neox"), seq_len=128)
    assert "family='gpt_neox'" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="position='alibi'"):
        build_native_model(tiny_spec(position="alibi"), seq_len=128)


@pytest.mark.parametrize("preset", ["gpt3-125m", "gpt3-1.3b", "gpt3-175b"])
def test_native_gpt_param_count_is_the_spec_plus_vocabulary_padding(preset):
    """GPT-3's 50257 tokens are padded to 50304 (a multiple of 128) in the embedding/head."""
    spec = get_preset(preset)
    model = build_native_model(spec, seq_len=2048)
    assert model.args.vocab_size == 50304
    assert count_params(model) == spec.num_params() + (50304 - 50257) * spec.hidden_size


def _gpt2_state_dict(native: torch.nn.Module, num_layers: int, vocab_size: int) -> dict[str, torch.Tensor]:
    """Native weights in transformers' GPT-2 layout (Conv1D stores [in, out]; q/k/v fused)."""
    sd = native.state_dict()
    out = {
        "transformer.wte.weight": sd["tok_embeddings.weight"][:vocab_size],
        "transformer.wpe.weight": sd["pos_embeddings.weight"],
        "transformer.ln_f.weight": sd["norm.weight"],
        "transformer.ln_f.bias": sd["norm.bias"],
        "lm_head.weight": sd["tok_embeddings.weight"][:vocab_size],
    }
    for i in range(num_layers):
        p, h = f"layers.{i}.", f"transformer.h.{i}."
        for native_norm, hf_norm in (("attention_norm", "ln_1"), ("ffn_norm", "ln_2")):
            for kind in ("weight", "bias"):
                out[h + f"{hf_norm}.{kind}"] = sd[p + f"{native_norm}.{kind}"]
        qkv = [p + f"attention.{w}" for w in ("wq", "wk", "wv")]
        out[h + "attn.c_attn.weight"] = torch.cat([sd[n + ".weight"].T for n in qkv], dim=1)
        out[h + "attn.c_attn.bias"] = torch.cat([sd[n + ".bias"] for n in qkv])
        for native_linear, hf_linear in (
            ("attention.wo", "attn.c_proj"),
            ("feed_forward.w1", "mlp.c_fc"),
            ("feed_forward.w2", "mlp.c_proj"),
        ):
            out[h + f"{hf_linear}.weight"] = sd[p + f"{native_linear}.weight"].T
            out[h + f"{hf_linear}.bias"] = sd[p + f"{native_linear}.bias"]
    return out


def test_native_gpt_computes_what_hf_gpt2_computes():
    """Same weights -> same logits: learned positions, LayerNorm with bias, tanh GeLU, biases."""
    spec = tiny_gpt_spec()
    args = ModelArgs.from_spec(spec, seq_len=32)
    native = Transformer(args)
    native.init_buffers(torch.device("cpu"))
    init_parameters(native, seed=7, rule=native_init_rule(args))
    for name, param in native.named_parameters():  # make every bias and norm matter
        if name.endswith((".bias", "norm.weight")):
            param.data.normal_(0.0, 0.1, generator=torch.Generator().manual_seed(len(name)))
    native.tok_embeddings.weight.data.mul_(30)  # tied head: logits of order 1, not 0.02
    hf = transformers.AutoModelForCausalLM.from_config(config_from_spec(spec, 32), attn_implementation="sdpa")
    hf.load_state_dict(_gpt2_state_dict(native, spec.num_layers, spec.vocab_size), strict=True)
    hf.eval()  # GPT-2's dropout
    tokens = torch.randint(0, spec.vocab_size, (2, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours, theirs = native(tokens)[..., : spec.vocab_size], hf(input_ids=tokens).logits
    assert ours.abs().max() > 1.0
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)


def _native_to_hf_names(num_layers: int) -> dict[str, str]:
    names = {
        "tok_embeddings.weight": "model.embed_tokens.weight",
        "norm.weight": "model.norm.weight",
        "output.weight": "lm_head.weight",
    }
    pairs = [
        ("attention.wq", "self_attn.q_proj"),
        ("attention.wk", "self_attn.k_proj"),
        ("attention.wv", "self_attn.v_proj"),
        ("attention.wo", "self_attn.o_proj"),
        ("feed_forward.w1", "mlp.gate_proj"),
        ("feed_forward.w3", "mlp.up_proj"),
        ("feed_forward.w2", "mlp.down_proj"),
        ("attention_norm", "input_layernorm"),
        ("ffn_norm", "post_attention_layernorm"),
    ]
    for i in range(num_layers):
        for native, hf in pairs:
            names[f"layers.{i}.{native}.weight"] = f"model.layers.{i}.{hf}.weight"
    return names


def test_native_model_computes_what_hf_llama_computes():
    """Same weights -> same logits: RoPE convention, GQA, SwiGLU and norms match transformers' Llama."""
    spec = tiny_spec()  # 4 heads, 2 kv heads: exercises grouped-query attention
    args = ModelArgs.from_spec(spec, seq_len=32)
    native = Transformer(args)
    native.init_buffers(torch.device("cpu"))
    init_parameters(native, seed=7, rule=native_init_rule(args))
    hf = transformers.AutoModelForCausalLM.from_config(config_from_spec(spec, 32), attn_implementation="sdpa")
    names = _native_to_hf_names(spec.num_layers)
    hf.load_state_dict({names[k]: v for k, v in native.state_dict().items()}, strict=True)
    tokens = torch.randint(0, spec.vocab_size, (2, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours, theirs = native(tokens), hf(input_ids=tokens).logits
    assert ours.abs().max() > 1.0  # not a degenerate all-zero comparison
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)


def test_init_is_seeded_per_parameter_and_follows_the_rule():
    args = ModelArgs.from_spec(tiny_spec(), seq_len=16)
    first, second, other = Transformer(args), Transformer(args), Transformer(args)
    for model, seed in ((first, 1), (second, 1), (other, 2)):
        init_parameters(model, seed=seed, rule=native_init_rule(args))
    for (name, a), b, c in zip(first.named_parameters(), second.parameters(), other.parameters(), strict=True):
        assert torch.equal(a, b), name
        if not name.endswith("norm.weight"):
            assert not torch.equal(a, c), name
    assert torch.equal(first.norm.weight, torch.ones_like(first.norm.weight))
    # Residual outputs are scaled down with depth; the embedding is unit-variance.
    assert first.layers["0"].attention.wo.weight.std() < first.layers["0"].attention.wq.weight.std()
    assert first.tok_embeddings.weight.std().item() == pytest.approx(1.0, rel=0.05)
    # Rows of a weight never repeat (what a shared seed per shard would produce).
    w1 = first.layers["0"].feed_forward.w1.weight
    assert not torch.equal(w1[: w1.shape[0] // 2], w1[w1.shape[0] // 2 :])


def test_activation_checkpointing_wraps_blocks_and_keeps_names():
    spec = tiny_spec()
    full, selective = build_native_model(spec, 16), build_native_model(spec, 16)
    apply_activation_checkpointing(full, ActivationCheckpointing.FULL)
    apply_activation_checkpointing(selective, ActivationCheckpointing.SELECTIVE)
    wrapped = lambda model: [type(b).__name__ == "CheckpointWrapper" for b in block_container(model).children()]  # noqa: E731
    assert wrapped(full) == [True] * 4
    assert wrapped(selective) == [False, True, False, True]  # every other block
    names = {clean_name(n) for n, _ in full.named_parameters()}
    assert names == {n for n, _ in build_native_model(spec, 16).named_parameters()}


def test_hf_init_rule_covers_every_parameter():
    model = build_hf_model(tiny_spec(), None, seq_len=16)
    rule = hf_init_rule(model)
    for name, _ in model.named_parameters():
        owner = model.get_submodule(name.rsplit(".", 1)[0])
        assert callable(rule(name, owner))


def test_hf_config_file_is_read_without_custom_code(tmp_path):
    config = config_from_spec(tiny_spec(), 16).to_dict()
    config["auto_map"] = {"AutoModelForCausalLM": "evil.Model"}  # must be ignored, never imported
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    loaded = load_hf_config(tiny_spec(), str(tmp_path), 16)
    assert loaded.model_type == "llama" and loaded.hidden_size == 256 and not hasattr(loaded, "auto_map")
    config["model_type"] = "no-such-model"
    path.write_text(json.dumps(config))
    with pytest.raises(ValueError, match="no-such-model"):
        load_hf_config(tiny_spec(), str(path), 16)


def test_hf_impl_without_config_refuses_unknown_architectures():
    with pytest.raises(ValueError, match="hf_config_path"):
        build_hf_model(tiny_spec(norm="layernorm"), None, seq_len=16)


def test_hf_blocks_are_found_in_any_architecture():
    for preset in ("tiny", "gpt3-125m"):
        spec = get_preset(preset)
        blocks = block_container(build_hf_model(spec, None, seq_len=16))
        assert len(blocks) == spec.num_layers and isinstance(blocks, torch.nn.ModuleList)


@pytest.mark.parametrize("impl", ["native", "hf"])
def test_a_gpt_past_its_table_trains_the_rows_the_planner_holds(impl):
    """Past max_seq_len the trainer grows the learned position table to seq_len; the planner's
    stage parameters (planner/model/stage_params.py) count the same grown rows."""
    spec = get_preset("gpt3-125m")
    seq = 2 * spec.max_seq_len
    build = build_native_model if impl == "native" else lambda s, seq_len: build_hf_model(s, None, seq_len=seq_len)
    grown = count_params(build(spec, seq_len=seq)) - count_params(build(spec, seq_len=spec.max_seq_len))
    assert grown == spec.max_seq_len * spec.hidden_size == grown_position_params(spec, seq)
    assert grown_position_params(spec, spec.max_seq_len) == 0
    assert grown_position_params(get_preset("llama3-8b"), 10**6) == 0  # rope: no table
