"""Native decoders against transformers' models (tests/trainer/test_*_native.py): a tiny model
read from a config dict and filled with separated weights, the transformers names of its
weights, and the two checks every family takes (same logits, a gradient for every parameter)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch

from planner.catalog.models import model_from_hf_config
from planner.model.structure import native_unsupported
from trainer.model import ModelArgs, Transformer, native_init_rule
from trainer.parallel import init_parameters

# Our SwiGLU names and transformers' (gate, up, down).
SWIGLU = (("w1", "gate_proj"), ("w3", "up_proj"), ("w2", "down_proj"))


def tiny_native(data: dict, tmp_path: Path, seq: int, spread: Callable[[str], float | None]) -> Transformer:
    """The native model of config ``data`` (written to ``tmp_path``), seeded; norms away from one
    so each matters, and each parameter whose name ``spread`` maps to a std redrawn at it."""
    (tmp_path / "config.json").write_text(json.dumps(data))
    spec = model_from_hf_config(tmp_path / "config.json")
    assert native_unsupported(spec) == []
    args = ModelArgs.from_spec(spec, seq_len=seq)
    native = Transformer(args)
    native.init_buffers(torch.device("cpu"))
    init_parameters(native, seed=7, rule=native_init_rule(args))
    gen = torch.Generator().manual_seed(3)
    for name, param in native.named_parameters():
        if name.endswith("norm.weight"):
            param.data.normal_(1.0, 0.3, generator=gen)
        elif (std := spread(name)) is not None:
            param.data.normal_(0.0, std, generator=gen)
    return native


def hf_root(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Embedding, final norm and head under transformers' names."""
    return {
        "model.embed_tokens.weight": sd["tok_embeddings.weight"],
        "model.norm.weight": sd["norm.weight"],
        "lm_head.weight": sd["output.weight"],
    }


def hf_root_and_norms(native: Transformer) -> dict[str, torch.Tensor]:
    """``hf_root`` and each pre-norm block's two norms under transformers' names."""
    sd = native.state_dict()
    out = hf_root(sd)
    for i in range(native.args.num_layers):
        p, h = f"layers.{i}.", f"model.layers.{i}."
        out[h + "input_layernorm.weight"] = sd[p + "attention_norm.weight"]
        out[h + "post_attention_layernorm.weight"] = sd[p + "ffn_norm.weight"]
    return out


def hf_routed_experts(sd: dict[str, torch.Tensor], p: str, h: str) -> dict[str, torch.Tensor]:
    """A block's router and routed experts: transformers keeps gate_up [E, 2 ffn, h] and down
    [E, h, ffn]; ours [E, in, out] each."""
    experts = f"{p}feed_forward.experts."
    return {
        f"{h}mlp.gate.weight": sd[f"{p}feed_forward.router.weight"],
        f"{h}mlp.experts.gate_up_proj": torch.cat([sd[experts + "w1"], sd[experts + "w3"]], dim=2).transpose(1, 2),
        f"{h}mlp.experts.down_proj": sd[experts + "w2"].transpose(1, 2),
    }


def matches_transformers(native: Transformer, data: dict, weights: dict[str, torch.Tensor], seq: int):
    """transformers' model of ``data`` loaded with ``weights``; asserts the logits equal the
    native model's to 1e-5 (fp32, eager attention) and returns (tokens, transformers' logits)."""
    import transformers

    fields = {k: v for k, v in data.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model(data["model_type"], **fields)
    hf = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    hf.load_state_dict(weights, strict=True)
    hf.eval()
    native.eval()
    tokens = torch.randint(0, data["vocab_size"], (2, seq), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ours, theirs = native(tokens), hf(input_ids=tokens).logits
    assert ours.abs().max() > 0.1
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    return tokens, theirs


def parameters_without_gradient(native: Transformer, vocab_size: int, seq: int) -> list[str]:
    """One next-token loss backward; the parameters it leaves without a gradient."""
    tokens = torch.randint(0, vocab_size, (2, seq), generator=torch.Generator().manual_seed(1))
    logits = native(tokens)
    torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()).backward()
    return [n for n, p in native.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
