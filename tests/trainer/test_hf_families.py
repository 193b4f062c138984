"""``impl hf`` for every family the planner reads: a tiny (2-layer) config.json of each, read by
the planner's reader, becomes a transformers model holding exactly the spec's parameters, built
from the spec alone (presets: ``config_from_spec``) and from the file (``hf_config_path``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from support.jobs import losses_by_step, write_job

from planner.catalog.hf_config import SUPPORTED_MODEL_TYPES
from planner.catalog.models import get_preset, model_from_hf_config
from planner.errors import ExitCode
from planner.layout import Layout
from planner.model.spec import ModelSpec
from trainer.hf_model import build_hf_model, config_from_spec, hf_init_rule, load_hf_config
from trainer.train import main

transformers = pytest.importorskip("transformers")

SEQ = 16
# Llama-style shapes every tiny config shares (4 heads of 16, 2 key/value heads).
_SHAPES = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=512,
    max_position_embeddings=64,
)
_MISTRAL = dict(_SHAPES, model_type="mistral")
_LLAMA4 = dict(
    head_dim=16,
    intermediate_size=32,
    intermediate_size_mlp=128,
    num_local_experts=4,
    interleave_moe_layer_step=2,
    attention_chunk_size=8,
    no_rope_layer_interval=2,
)
# Each family's keys beyond the shapes, set so the weights differ from Llama's where they can.
# The MLA + routed-experts shapes the DeepSeek-style tiny configs share (V3, Kimi K2, V2).
_TINY_MLA_MOE = dict(
    q_lora_rank=16,
    kv_lora_rank=16,
    qk_rope_head_dim=8,
    qk_nope_head_dim=8,
    v_head_dim=8,
    moe_intermediate_size=32,
    n_routed_experts=8,
    num_experts_per_tok=2,
    first_k_dense_replace=1,
)
TINY: dict[str, dict] = {
    "llama": dict(attention_bias=True, mlp_bias=True),
    "mistral": dict(sliding_window=8),
    "qwen2": {},
    "mixtral": dict(num_local_experts=4, num_experts_per_tok=2),
    "gpt2": dict(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=512),
    "gpt_neox": {},
    "mpt": dict(d_model=64, n_layers=2, n_heads=4, max_seq_len=64, vocab_size=512),
    "bloom": dict(n_embed=64, n_layer=2, n_head=4, vocab_size=512),
    "qwen3": dict(head_dim=16),
    "qwen3_moe": dict(head_dim=16, moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2, mlp_only_layers=[0]),
    "gemma2": dict(head_dim=16, sliding_window=8),
    "gemma3": dict(text_config=dict(_SHAPES, head_dim=16, sliding_window=8)),
    "gemma3_text": dict(head_dim=16, sliding_window=8),
    # its default pad_token_id 32000 must fit; RoPE on 3/4 of each head, as Phi-4-mini (trial s52)
    "phi3": dict(sliding_window=8, vocab_size=32064, partial_rotary_factor=0.75),
    "olmo2": {},
    "deepseek_v3": _TINY_MLA_MOE | dict(n_shared_experts=1, num_nextn_predict_layers=0),
    # Kimi K2: DeepSeek-V3's weights under its own name (trial s52), one group of experts as released
    "kimi_k2": _TINY_MLA_MOE
    | dict(
        n_shared_experts=1,
        num_nextn_predict_layers=0,
        n_group=1,
        topk_group=1,
        routed_scaling_factor=2.827,
    ),
    # DeepSeek-V2: V3's weights without MTP, its softmax router limited to 2 of 4 groups, scale 16
    "deepseek_v2": _TINY_MLA_MOE
    | dict(
        n_shared_experts=2,
        topk_method="group_limited_greedy",
        n_group=4,
        topk_group=2,
        routed_scaling_factor=16.0,
    ),
    "nemotron": dict(partial_rotary_factor=0.5, attention_bias=True, mlp_bias=True),
    "gpt_oss": dict(head_dim=16, num_local_experts=4, num_experts_per_tok=2, sliding_window=8),
    "qwen2_moe": dict(
        moe_intermediate_size=32,
        shared_expert_intermediate_size=64,
        num_experts=4,
        num_experts_per_tok=2,
        mlp_only_layers=[0],
        use_sliding_window=True,
        sliding_window=8,
        max_window_layers=2,
    ),
    "ministral": dict(head_dim=16, sliding_window=8, layer_types=["sliding_attention", "full_attention"]),
    "mistral3": dict(text_config=_MISTRAL),
    "llama4": dict(text_config=dict(_SHAPES, **_LLAMA4)),
    # A fine-tune's text-only Llama 4 file, and Ministral 3 / Devstral 2's decoder (trial s24).
    "llama4_text": _LLAMA4,
    "ministral3": dict(head_dim=16),
    "afmoe": dict(
        head_dim=16,
        moe_intermediate_size=32,
        num_experts=4,
        num_experts_per_tok=2,
        num_shared_experts=1,
        num_dense_layers=1,
        sliding_window=8,
        layer_types=["sliding_attention", "full_attention"],
    ),
    # GLM-4.5: biased q/k/v, half rotary, q/k norms, one dense block, a shared expert, scale 2.5
    "glm4_moe": dict(
        head_dim=16,
        attention_bias=True,
        partial_rotary_factor=0.5,
        use_qk_norm=True,
        moe_intermediate_size=32,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_shared_experts=1,
        first_k_dense_replace=1,
        routed_scaling_factor=2.5,
        num_nextn_predict_layers=0,
    ),
    # OLMoE: whole-projection q/k norms, biases, 4 experts top 2 renormalised (its release: not)
    # Granite 3.x: biases, tied embeddings and muP multipliers; its MoE: 4 experts top 2
    "granite": dict(
        attention_bias=True,
        mlp_bias=True,
        tie_word_embeddings=True,
        embedding_multiplier=12.0,
        residual_multiplier=0.22,
        attention_multiplier=0.0625,
        logits_scaling=16.0,
    ),
    "granitemoe": dict(num_local_experts=4, num_experts_per_tok=2, tie_word_embeddings=True, logits_scaling=6.0),
    "olmoe": dict(attention_bias=True, num_experts=4, num_experts_per_tok=2, norm_topk_prob=True, clip_qkv=8.0),
}
# transformers has no SDPA path for these (``_supports_sdpa = False``): build_hf_model refuses
# them while the planner sizes their impl 'hf' runs with SDPA (ModelSpec.hf_attention_implementation
# says eager for soft-capped scores only).
NO_SDPA = ("gpt_oss", "mpt", "bloom")


def tiny_config(model_type: str) -> dict:
    keys = TINY[model_type]
    shapes = {} if "text_config" in keys or model_type in ("gpt2", "mpt", "bloom") else _SHAPES
    return {"model_type": model_type, **shapes, **keys}


def tiny_spec(tmp_path: Path, model_type: str) -> tuple[ModelSpec, Path]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(tiny_config(model_type)))
    return model_from_hf_config(path), path


def count(model: torch.nn.Module) -> int:
    """Trained parameters, a tied weight once (AFMoE's router ``expert_bias`` has
    ``requires_grad=False``: neither trained nor in a spec's count)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def test_every_family_the_planner_reads_has_a_tiny_config():
    missing, extra = set(SUPPORTED_MODEL_TYPES) - set(TINY), set(TINY) - set(SUPPORTED_MODEL_TYPES)
    # trial s29: a new reader failed here with a bare list diff (docs/extending.md, step 6)
    assert not missing, f"add a tiny config for {sorted(missing)} to TINY in tests/trainer/test_hf_families.py"
    assert not extra, f"TINY has {sorted(extra)}, which no reader in planner/catalog/hf_config.py reads"


SPEC_FAMILIES = [t for t in TINY if t not in ("gpt_neox", "mpt", "bloom")]  # config.json only


@pytest.mark.parametrize("model_type", SPEC_FAMILIES)
def test_spec_config_builds_the_planners_count_on_cpu(tmp_path, model_type):
    """The config built from the spec alone (what a preset trains): real CPU tensors, the spec's
    parameter count, a forward pass, and an initialisation rule for every parameter."""
    spec, _ = tiny_spec(tmp_path, model_type)
    assert spec.num_layers == 2
    config = config_from_spec(spec, SEQ)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    assert count(model) == spec.num_params()
    logits = model(torch.randint(0, spec.vocab_size, (1, SEQ))).logits
    assert logits.shape == (1, SEQ, spec.vocab_size)
    rule = hf_init_rule(model)
    for name, _ in model.named_parameters():
        assert callable(rule(name, model.get_submodule(name.rsplit(".", 1)[0])))


@pytest.mark.parametrize("model_type", ["glm4_moe", "deepseek_v3", "deepseek_v2", "afmoe", "llama"])
def test_recomputing_the_buffers_keeps_the_layout_independent_parameters(tmp_path, model_type):
    """transformers' ``_init_weights`` on a module with buffers redraws its parameters too (GLM-4.5's
    and DeepSeek-V3's routers) from the global RNG: after ``init_parameters`` they must stay as drawn
    (s54: the redraw was the suite's one warning, DTensor random ops on a CPU mesh)."""
    from trainer.hf_model import init_hf_buffers
    from trainer.parallel import init_parameters

    spec, _ = tiny_spec(tmp_path, model_type)
    model = transformers.AutoModelForCausalLM.from_config(config_from_spec(spec, SEQ), attn_implementation="eager")
    init_parameters(model, 7, hf_init_rule(model))
    drawn = {name: p.detach().clone() for name, p in model.named_parameters()}
    for buffer in model.buffers():
        buffer.fill_(float("nan"))  # what to_empty leaves: anything
    init_hf_buffers(model)
    assert all(torch.equal(p, drawn[name]) for name, p in model.named_parameters())
    assert all(not buffer.is_floating_point() or torch.isfinite(buffer).all() for buffer in model.buffers())


@pytest.mark.parametrize("from_file", [False, True])
def test_kimi_k2s_router_reaches_the_config_the_trainer_builds(tmp_path, from_file):
    """Trial s52: n_group 8 was derived from the expert count and the scale fixed at 2.5."""
    spec, path = tiny_spec(tmp_path, "kimi_k2")
    config = load_hf_config(spec, str(path) if from_file else None, SEQ)
    assert (config.model_type, config.n_group, config.topk_group) == ("deepseek_v3", 1, 1)
    assert config.routed_scaling_factor == 2.827 and config.norm_topk_prob


def test_phi3s_partial_rotary_reaches_the_config_the_trainer_builds(tmp_path):
    spec, _ = tiny_spec(tmp_path, "phi3")
    assert spec.partial_rotary_factor == config_from_spec(spec, SEQ).partial_rotary_factor == 0.75


@pytest.mark.parametrize("model_type", SPEC_FAMILIES)
def test_hf_impl_builds_the_spec_on_meta(tmp_path, model_type):
    spec, _ = tiny_spec(tmp_path, model_type)
    model = build_hf_model(spec, None, SEQ)
    assert count(model) == spec.num_params()
    assert model.config._attn_implementation == spec.hf_attention_implementation


@pytest.mark.parametrize("model_type", TINY)
def test_hf_impl_builds_the_config_file_on_meta(tmp_path, model_type):
    """From the file too, the trainer builds what the planner counted: for the multimodal
    configs (Gemma 3, Mistral 3) the language model alone, not the vision tower."""
    spec, path = tiny_spec(tmp_path, model_type)
    model = build_hf_model(spec, str(path), SEQ)
    assert count(model) == spec.num_params()
    assert not any("vision" in name for name, _ in model.named_parameters())


def test_released_gemma3_config_builds_its_language_model_only():
    """Gemma 3 4B's released config.json (tests/data/hf_configs): transformers' causal LM for the
    whole file is the multimodal class with a SigLIP tower; the trainer builds the text model."""
    path = Path(__file__).parents[1] / "data" / "hf_configs" / "gemma3.json"
    spec = model_from_hf_config(path)
    model = build_hf_model(spec, str(path), SEQ)
    assert type(model).__name__ == "Gemma3ForCausalLM"
    assert count(model) == spec.num_params()


@pytest.mark.parametrize("model_type", NO_SDPA)
def test_the_planner_budgets_eager_attention_where_transformers_has_no_sdpa(tmp_path, model_type):
    """GPT-OSS's sinks and ALiBi have no SDPA path in transformers: the planner sizes and times
    impl 'hf' with the eager attention the trainer then builds (so the builds above pass)."""
    spec, _ = tiny_spec(tmp_path, model_type)
    assert spec.hf_attention_implementation == "eager"


@pytest.mark.parametrize("model_type", NO_SDPA)
def test_hf_impl_refuses_a_model_without_the_planned_attention(tmp_path, monkeypatch, model_type):
    """A plan that assumes SDPA for a class without it is refused in one line (whatever the
    planner's rule for the family says today: the property is pinned to SDPA here)."""
    spec, path = tiny_spec(tmp_path, model_type)
    monkeypatch.setattr(ModelSpec, "hf_attention_implementation", property(lambda self: "sdpa"))
    with pytest.raises(ValueError, match="has no sdpa attention") as info:
        build_hf_model(spec, str(path), SEQ)
    assert "\n" not in str(info.value)


def test_new_family_layouts_follow_the_spec(tmp_path):
    """Where the spec keeps counts, not places: windowed, dense, chunked and RoPE blocks."""
    spec, _ = tiny_spec(tmp_path, "llama4")
    config = config_from_spec(spec, SEQ)
    assert config.moe_layers == [1] and config.layer_types == ["chunked_attention", "full_attention"]
    assert spec.chunked_layers == 1 and spec.dense_layers == 1
    nemotron = config_from_spec(tiny_spec(tmp_path, "nemotron")[0], SEQ)
    assert nemotron.rope_parameters["partial_rotary_factor"] == 0.5 and nemotron.hidden_act == "relu2"
    for model_type in ("gpt_oss", "qwen2_moe", "ministral"):
        spec = tiny_spec(tmp_path, model_type)[0]
        windowed = config_from_spec(spec, SEQ).layer_types.count("sliding_attention")
        assert windowed == spec.sliding_layers == 1, model_type
    mistral = tiny_spec(tmp_path, "mistral")[0]
    assert config_from_spec(mistral, SEQ).sliding_window == 8 == mistral.sliding_window


def test_gpt_oss_preset_counts_on_meta():
    """The released shapes (meta device: no memory) as the spec's config builds them; the other
    new families' presets: test_family_models.py test_hf_builds_the_family_presets."""
    spec = get_preset("gpt-oss-20b")
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config_from_spec(spec, 4096))
    assert count(model) == spec.num_params()


@pytest.mark.parametrize(
    "model_type", ["nemotron", "qwen2_moe", "llama4", "gpt_oss", "afmoe", "glm4_moe", "olmoe", "granitemoe"]
)
def test_hf_impl_trains_the_new_families(tmp_path, in_process, model_type):
    """Two steps of ``trainplan run`` (FSDP2 on one CPU process): init rule, sharding, loss."""
    spec, _ = tiny_spec(tmp_path, model_type)
    job = write_job(tmp_path / "job", Layout(dp_shard=1), 1, model=spec, steps=2, impl="hf", probe_steps=0)
    assert main([str(job), "--device", "cpu"]) == ExitCode.OK
    losses = losses_by_step(job)
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses.values())


def test_glm4_moes_router_and_attention_reach_the_config_the_trainer_builds(tmp_path):
    """GLM's router defaults differ from DeepSeek-V3's (1 group, scale 1.0): the spec keeps the
    file's, and the config built from the spec alone routes, rotates and normalises as the file."""
    spec, path = tiny_spec(tmp_path, "glm4_moe")
    for config in (config_from_spec(spec, SEQ), load_hf_config(spec, str(path), SEQ)):
        assert (config.n_group, config.topk_group, config.routed_scaling_factor) == (1, 1, 2.5)
        assert config.norm_topk_prob and config.use_qk_norm and config.attention_bias
        assert config.rope_parameters["partial_rotary_factor"] == 0.5 and config.first_k_dense_replace == 1


def test_granites_multipliers_reach_the_config_the_trainer_builds(tmp_path):
    """They change no weight or FLOP, but a preset trained from its spec alone must scale as the
    release does (transformers' defaults are 1.0)."""
    spec, path = tiny_spec(tmp_path, "granite")
    for config in (config_from_spec(spec, SEQ), load_hf_config(spec, str(path), SEQ)):
        scales = (config.embedding_multiplier, config.residual_multiplier, config.attention_multiplier)
        assert scales == (12.0, 0.22, 0.0625) and config.logits_scaling == 16.0
        assert config.tie_word_embeddings and config.attention_bias and config.mlp_bias
    moe = config_from_spec(tiny_spec(tmp_path, "granitemoe")[0], SEQ)
    assert (moe.logits_scaling, moe.embedding_multiplier, moe.num_local_experts) == (6.0, 1.0, 4)


def test_deepseek_v2s_router_reaches_the_config_the_trainer_builds(tmp_path):
    """V2's router is its own (softmax, group-limited by each group's best expert, never
    renormalised): the config built from the spec routes as the file, greedy where one group."""
    spec, path = tiny_spec(tmp_path, "deepseek_v2")
    for config in (config_from_spec(spec, SEQ), load_hf_config(spec, str(path), SEQ)):
        assert config.model_type == "deepseek_v2" and config.topk_method == "group_limited_greedy"
        assert (config.n_group, config.topk_group, config.routed_scaling_factor) == (4, 2, 16.0)
        assert not config.norm_topk_prob and config.first_k_dense_replace == 1
    lite = get_preset("deepseek-v2-lite")
    config = config_from_spec(lite, SEQ)
    assert (config.topk_method, config.routed_scaling_factor, config.q_lora_rank) == ("greedy", 1.0, None)
