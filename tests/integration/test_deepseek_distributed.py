"""The native DeepSeek-V3 block (MLA, a dense first block, then shared + routed experts with the
sigmoid router) trains under expert parallelism on CPU (torchrun, gloo) as on one process."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.jobs import Run, finished, launch_runs, losses_by_step

from planner.catalog.models import get_preset
from planner.errors import ExitCode
from planner.layout import Layout
from planner.model.spec import LatentAttention
from trainer.train import main

pytestmark = pytest.mark.slow

COMMON = dict(seq_len=32, micro_batch=1, lr=3e-3, warmup_steps=2, min_lr_ratio=1.0, probe_steps=2)


SPEC = get_preset("deepseek-v3").model_copy(
    update=dict(
        name="tiny-deepseek-v3",
        num_layers=2,
        hidden_size=64,
        ffn_hidden_size=32,
        dense_ffn_hidden_size=96,
        dense_layers=1,
        num_heads=4,
        num_kv_heads=4,
        head_dim=24,
        mla=LatentAttention(q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, v_head_dim=12),
        vocab_size=512,
        num_experts=4,
        experts_per_token=2,
        shared_experts=1,
        mtp_layers=0,
        max_seq_len=64,
    )
)
SETTINGS = dict(steps=6, model=SPEC, impl="native", loss_chunk_tokens=0, **COMMON)
RUNS = {
    "ep": Run(Layout(dp_shard=4, ep=2), 4, 1, SETTINGS),
    "ep-cp": Run(Layout(dp_shard=2, cp=2, ep=2), 4, 1, SETTINGS),
}


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict[str, Path]:
    """Both runs in one torchrun launch (support/job_batch.py)."""
    return launch_runs(tmp_path_factory.mktemp("deepseek"), RUNS)


@pytest.mark.parametrize("name", list(RUNS))
def test_native_deepseek_v3_under_expert_parallelism_matches_one_process(name, launched, tmp_path, in_process):
    """ep=2 on 4 ranks (x fsdp=4, or x fsdp=2 x cp=2): each rank holds 2 of the 4 routed experts
    (top 2; 4 experts route over one group), the shared expert and MLA are FSDP-sharded like dense
    weights; under cp the shared rotary key turns by global position and MLA's 12-wide values
    travel with its 24-wide keys."""
    parallel_dir = finished(launched, name)
    single_dir = RUNS[name].write_single(tmp_path / "single")
    assert main([str(single_dir), "--device", "cpu"]) == ExitCode.OK
    parallel, single = losses_by_step(parallel_dir), losses_by_step(single_dir)
    assert sorted(parallel) == list(range(1, 7))
    worst = max(abs(parallel[s] - single[s]) for s in parallel)
    assert worst <= 1e-3, f"differs from one process by up to {worst:.2e}"
