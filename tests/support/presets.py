"""Presets that are another size of a family whose config.json is stored (tests/data/hf_configs
holds one file per model_type): the fields their release changes."""

# Qwen/Qwen3-235B-A22B against Qwen3-30B-A3B's file (qwen3_moe.json): its config.json's values,
# also in yanring/Megatron-MoE-ModelZoo model_configs/benchmarking/Qwen3-235B-A22B.yaml.
QWEN3_235B_FIELDS = dict(
    hidden_size=4096,
    intermediate_size=12288,
    max_window_layers=94,
    moe_intermediate_size=1536,
    num_attention_heads=64,
    num_hidden_layers=94,
)
# mosaicml/mpt-30b against MPT-7B's file (mpt.json): d_model 7168, 64 heads, 48 layers, an 8K
# context (its config.json; a second public table of MPT shapes gives the same width, heads and layers).
MPT_30B_FIELDS = dict(d_model=7168, n_heads=64, n_layers=48, max_seq_len=8192)
# bigscience/bloom against the small BLOOM file (bloom.json): 14336 wide, 112 heads, 70 layers
# (tests/data/published_configs/bloom-176b.json, its config.json).
BLOOM_176B_FIELDS = dict(hidden_size=14336, n_head=112, n_layer=70)
FIXTURE_CHANGES: dict[str, dict] = {
    "qwen3-235b-a22b": QWEN3_235B_FIELDS,
    "mpt-30b": MPT_30B_FIELDS,
    "bloom-176b": BLOOM_176B_FIELDS,
}


def changed_fixture(model_type: str, changes: dict) -> dict:
    """The stored config.json of ``model_type`` (tests/data/hf_configs) with ``changes``: a value
    of None drops the key."""
    import json

    from support import DATA

    data = json.loads((DATA / "hf_configs" / f"{model_type}.json").read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data
