"""Multi-process training on CPU (torchrun, gloo): every layout, kill-and-resume, SIGTERM.

All runs see the same global batch (4 sequences of 32 tokens per step, ordered by the
data loader) and the same initial weights (initialisation does not depend on the layout),
and use a constant learning rate after warm-up. So, up to floating-point summation order,
every layout must reproduce the reference FSDP run step by step. This checks much more
than "the loss falls": a layout that dropped a gradient, double-counted a replica or
mis-split a pipeline would drift from the reference within a few steps.

The parallel runs of the tables below (and the DeepSeek-V3 ones, compared with one process)
share one torchrun launch of the largest world (``support/job_batch.py``: each worker imports
torch once and runs the jobs in turn, each through ``trainer.train.main`` with a process group
of its own); a launch spends most of its time starting up. Kill, resume and SIGTERM tests
launch torchrun themselves: they test the launch.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import signal
import time
from pathlib import Path

import pytest
from support.jobs import (
    Run,
    batch_result,
    describe,
    finished,
    kill_tree,
    launch_runs,
    losses_by_step,
    read_metrics,
    run_torchrun,
    start_torchrun,
    tiny_gpt_spec,
    tiny_spec,
    wait_for,
    write_job,
)

from planner.catalog.models import get_preset
from planner.errors import ExitCode
from planner.layout import Layout
from planner.model.spec import LatentAttention
from trainer.checkpoint import list_checkpoints
from trainer.train import main

pytestmark = pytest.mark.slow

# 4 sequences per step: micro_batch 1 x grad_accum x data-parallel degree = 4.
COMMON = dict(seq_len=32, micro_batch=1, lr=3e-3, warmup_steps=2, min_lr_ratio=1.0, probe_steps=2)
REFERENCE_STEPS = 20
LAYOUT_STEPS = 6


def mean(values) -> float:
    return sum(values) / len(values)


def assert_learns(losses: dict[int, float]) -> None:
    steps = sorted(losses)
    first, last = mean([losses[s] for s in steps[:3]]), mean([losses[s] for s in steps[-3:]])
    assert last < first - 0.5, f"loss did not fall: first steps {first:.3f}, last steps {last:.3f}"


def assert_same_trajectory(losses: dict[int, float], reference: dict[int, float], tolerance: float) -> None:
    assert sorted(losses) == list(range(1, len(losses) + 1))
    worst = max(abs(losses[s] - reference[s]) for s in losses)
    assert worst <= tolerance, f"differs from the reference FSDP run by up to {worst:.2e} (allowed {tolerance})"


def assert_same_gradient_norms(parallel: Path, single: Path) -> None:
    """AdamW hides a mis-scaled gradient from the loss; the gradient norm shows it."""
    pairs = zip(read_metrics(parallel), read_metrics(single), strict=True)
    norms = [(p["grad_norm"], s["grad_norm"]) for p, s in pairs]
    assert all(abs(p - s) <= 1e-3 * s for p, s in norms), norms


def layout_run(layout: Layout, nproc: int, grad_accum: int, **training) -> Run:
    return Run(layout, nproc, grad_accum, dict(steps=LAYOUT_STEPS, **training, **COMMON))


# FSDP over 2 ranks, 20 steps, a checkpoint every 5: the run every layout is compared with.
REFERENCE = Run(Layout(dp_shard=2), 2, 2, dict(steps=REFERENCE_STEPS, checkpoint_every=5, **COMMON))

# name: (run, tolerance against the reference)
LAYOUTS = {
    "hsdp-2x2": (layout_run(Layout(dp_replicate=2, dp_shard=2), 4, 1), 1e-3),
    "fsdp2-x-tp2": (layout_run(Layout(dp_shard=2, tp=2), 4, 2), 1e-3),
    # Pipelines also evaluate (schedule.eval) twice; the TP one uses the vocabulary-parallel loss.
    "pp2-gpipe-x-tp2": (
        layout_run(Layout(dp_shard=1, pp=2, tp=2, pp_schedule="gpipe"), 4, 4, eval_every=3, eval_batches=4),
        1e-3,
    ),
    "pp2-1f1b-x-fsdp2": (
        layout_run(Layout(dp_shard=2, pp=2, pp_schedule="1f1b"), 4, 2, eval_every=3, eval_batches=2),
        1e-3,
    ),
    # Interleaved 1F1B: each pp rank runs 2 of the 4 one-block stages (0+2, 1+3).
    "pp2-vpp2-x-fsdp2": (
        layout_run(Layout(dp_shard=2, pp=2, vpp=2, pp_schedule="1f1b"), 4, 2, eval_every=3, eval_batches=2),
        1e-3,
    ),
    "ddp2-full-ac": (layout_run(Layout(dp_replicate=2, sharding="none"), 2, 2, activation_checkpointing="full"), 1e-3),
    "zero1-selective-ac": (
        layout_run(Layout(dp_shard=2, sharding="zero1"), 2, 2, activation_checkpointing="selective"),
        1e-3,
    ),
    # Context parallel: each rank holds half of every sequence; recompute re-gathers K/V.
    "cp2-x-fsdp2-full-ac": (layout_run(Layout(dp_shard=2, cp=2), 4, 2, activation_checkpointing="full"), 1e-3),
    "cp2-x-tp2": (layout_run(Layout(dp_shard=1, cp=2, tp=2), 4, 4), 1e-3),
    "pp2-1f1b-x-cp2": (
        layout_run(Layout(dp_shard=1, pp=2, cp=2, pp_schedule="1f1b"), 4, 4, eval_every=3, eval_batches=4),
        1e-3,
    ),
    # bf16 compute rounds differently from the fp32 reference; it must still follow it closely.
    "zero2-bf16": (layout_run(Layout(dp_shard=2, sharding="zero2"), 2, 2, precision="bf16"), 5e-2),
}


def tiny_moe_spec(num_experts: int, experts_per_token: int, ffn_hidden_size: int, name: str):
    return get_preset("mixtral-8x7b").model_copy(
        update=dict(
            name=name,
            num_layers=2,
            hidden_size=64,
            ffn_hidden_size=ffn_hidden_size,
            num_heads=4,
            num_kv_heads=2,
            vocab_size=512,
            num_experts=num_experts,
            experts_per_token=experts_per_token,
            max_seq_len=64,
        )
    )


def _beside(layout: Layout, nproc: int, grad_accum: int, steps: int, **settings) -> Run:
    return Run(layout, nproc, grad_accum, dict(steps=steps, **settings, **COMMON))


PIPE_1F1B = dict(pp_schedule="1f1b")
QWEN3 = tiny_spec(name="tiny-qwen3", family="qwen3", qk_norm="head", rope_theta=1e6, norm_eps=1e-6)
# Runs compared with the same job on one process (the test named after each says why).
BESIDE_ONE_PROCESS = {
    "hf-tp2": _beside(Layout(dp_shard=1, tp=2), 2, 4, 6, impl="hf"),
    "gpt-tp2-cp2": _beside(Layout(dp_shard=1, tp=2, cp=2), 4, 4, 6, model=tiny_gpt_spec()),
    "qwen3-tp2": _beside(Layout(dp_shard=1, tp=2), 2, 4, 6, model=QWEN3),
    # Full logits: the chunked loss sums the head gradient in another order, and top-1 routing
    # turns such last-bit differences into a different expert choice (2.8e-4 apart by step 6);
    # this run is about expert sharding, the chunked loss has its own tests (tests/trainer/test_loss.py).
    "moe-fsdp4": _beside(
        Layout(dp_shard=4), 4, 1, 6, model=tiny_moe_spec(2, 1, 128, "tiny-moe"), impl="hf", loss_chunk_tokens=0
    ),
    "untied-gpt-pp2-vpp2": _beside(
        Layout(dp_shard=1, pp=2, vpp=2, **PIPE_1F1B),
        2,
        4,
        8,
        model=tiny_gpt_spec(tied_embeddings=False, num_layers=4),
        checkpoint_every=4,
    ),
    # 4 blocks on 3 stages: 1, 2, 1 (the embedding and the head each weigh one block).
    "uneven-pp3-4-layers": _beside(Layout(dp_shard=1, pp=3, **PIPE_1F1B), 3, 3, 6, model=tiny_spec(num_layers=4)),
    # 5 blocks on 2 ranks x 2 interleaved stages: 1, 2, 1, 1 (rank 0 runs 1 + 1, rank 1 2 + 1).
    "uneven-pp2-vpp2-5-layers": _beside(
        Layout(dp_shard=1, pp=2, vpp=2, **PIPE_1F1B), 2, 4, 6, model=tiny_spec(num_layers=5)
    ),
    # 2 blocks on 2 ranks x 2 interleaved stages: 0, 1, 1, 0 (the embedding and the head alone).
    "pp2-vpp2-embedding-and-head-stages": _beside(
        Layout(dp_shard=1, pp=2, vpp=2, **PIPE_1F1B), 2, 2, 6, model=tiny_spec(num_layers=2)
    ),
    # The same with a tied head: the embedding-only and the head-only stage hold the two copies.
    "tied-pp2-vpp2-embedding-and-head-stages": _beside(
        Layout(dp_shard=1, pp=2, vpp=2, **PIPE_1F1B), 2, 2, 6, model=tiny_gpt_spec(num_layers=2)
    ),
    # FSDP-sharded copies on the first and the last of 2 stages (grads are DTensor shards).
    "tied-pp2-x-fsdp2": _beside(
        Layout(dp_shard=2, pp=2, **PIPE_1F1B), 4, 2, 6, model=tiny_gpt_spec(num_layers=4), checkpoint_every=3
    ),
    # 4 blocks on 3 stages (1, 2, 1): the middle rank holds neither copy.
    "tied-pp3-uneven": _beside(Layout(dp_shard=1, pp=3, **PIPE_1F1B), 3, 3, 6, model=tiny_gpt_spec(num_layers=4)),
    "native-moe-ep2-fsdp2": _beside(
        Layout(dp_shard=4, ep=2),
        4,
        1,
        6,
        model=tiny_moe_spec(4, 2, 96, "tiny-native-moe"),
        impl="native",
        loss_chunk_tokens=0,
        checkpoint_every=3,
    ),
}
HAS_FLOAT8 = importlib.util.find_spec("torchao") is not None and importlib.util.find_spec("torchao.float8") is not None
if HAS_FLOAT8:
    BESIDE_ONE_PROCESS["fp8-tp2"] = _beside(
        Layout(dp_shard=1, tp=2),
        2,
        2,
        4,
        model=tiny_spec(num_layers=2, hidden_size=64, ffn_hidden_size=128),
        precision="fp8",
    )
# The native DeepSeek-V3 block at test size: MLA, a dense first block, then shared + routed experts
# with the sigmoid router.
TINY_DEEPSEEK_V3 = get_preset("deepseek-v3").model_copy(
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
DEEPSEEK = dict(model=TINY_DEEPSEEK_V3, impl="native", loss_chunk_tokens=0)
BESIDE_ONE_PROCESS["deepseek-v3-ep"] = _beside(Layout(dp_shard=4, ep=2), 4, 1, 6, **DEEPSEEK)
BESIDE_ONE_PROCESS["deepseek-v3-ep-cp"] = _beside(Layout(dp_shard=2, cp=2, ep=2), 4, 1, 6, **DEEPSEEK)
# The reference's step-15 checkpoint continued as an interleaved pipeline (2 ranks x 2 stages each).
RESUMED_ON_PP = Run(
    Layout(dp_shard=1, pp=2, vpp=2, pp_schedule="1f1b"),
    2,
    4,
    dict(steps=REFERENCE_STEPS, **COMMON),
    resumes=("reference", "step-000015"),
)
RUNS = {
    "reference": REFERENCE,
    **{name: run for name, (run, _) in LAYOUTS.items()},
    **BESIDE_ONE_PROCESS,
    "resumed-on-pp2-vpp2": RESUMED_ON_PP,
}


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> dict[str, Path]:
    return launch_runs(tmp_path_factory.mktemp("runs"), RUNS)


@pytest.fixture(scope="module")
def reference_dir(launched) -> Path:
    job = finished(launched, "reference")
    assert_learns(losses_by_step(job))
    assert [step for step, _ in list_checkpoints(job / "ckpt")] == [15, 20]  # keep_checkpoints=2
    return job


@pytest.fixture(scope="module")
def reference(reference_dir) -> dict[int, float]:
    return losses_by_step(reference_dir)


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layout_trains_like_the_reference(name, launched, reference):
    job, (_, tolerance) = finished(launched, name), LAYOUTS[name]
    losses = losses_by_step(job)
    assert_learns(losses)
    assert_same_trajectory(losses, reference, tolerance)
    if "eval_every" in RUNS[name].settings:
        val_losses = [r["val_loss"] for r in read_metrics(job) if r["val_loss"] is not None]
        assert len(val_losses) == 2 and val_losses[1] < val_losses[0] < 7.0


def beside_one_process(launched, name: str, tmp_path: Path) -> tuple[Path, dict[int, float], dict[int, float]]:
    """The parallel run's job directory and loss curve, and the same job's curve on one process."""
    parallel = finished(launched, name)
    single = RUNS[name].write_single(tmp_path / "single")
    assert main([str(single), "--device", "cpu"]) == ExitCode.OK
    return parallel, losses_by_step(parallel), losses_by_step(single)


def test_hf_model_under_tensor_parallel_matches_one_process(launched, tmp_path, in_process):
    """--impl hf with tp=2 (column/row-parallel projections) against the same model on one process."""
    _, parallel, single = beside_one_process(launched, "hf-tp2", tmp_path)
    assert_same_trajectory(parallel, single, 1e-4)


def test_native_gpt_architecture_under_tp_and_cp_matches_one_process(launched, tmp_path, in_process):
    """GPT-2/3 blocks (learned positions, LayerNorm and linear biases, tanh GeLU, tied head, a
    vocabulary padded from 500 to 512) under tp=2 x cp=2 against the same model on one process."""
    _, parallel, single = beside_one_process(launched, "gpt-tp2-cp2", tmp_path)
    assert_same_trajectory(parallel, single, 1e-3)
    assert parallel[6] < parallel[1] - 0.05  # learns, slowly: a 6-step sanity check


def test_native_qwen3_blocks_under_tp_match_one_process(launched, tmp_path, in_process):
    """Qwen3 blocks (per-head q/k RMSNorm before RoPE, which tensor parallelism leaves on each
    rank's heads; RoPE base 1e6) under tp=2 with sequence parallelism against one process."""
    _, parallel, single = beside_one_process(launched, "qwen3-tp2", tmp_path)
    assert_same_trajectory(parallel, single, 1e-4)


def test_moe_experts_shard_evenly_over_more_ranks_than_experts(launched, tmp_path, in_process):
    """A Mixtral-style HF model with 2 experts under FSDP on 4 ranks: the fused expert tensors
    shard along their hidden dim (not by whole experts, which would leave 2 ranks without any)
    and training follows one process."""
    _, parallel, single = beside_one_process(launched, "moe-fsdp4", tmp_path)
    assert_same_trajectory(parallel, single, 1e-4)


def test_untied_gpt_pipeline_keeps_its_position_table(launched, tmp_path, in_process):
    """Learned positions live on stage 0 only: an untied GPT model on pp=2 x vpp=2 follows one
    process, and its checkpoint (taken at step 4) resumes on one process on the same trajectory."""
    name = "untied-gpt-pp2-vpp2"
    piped_dir, piped, reference = beside_one_process(launched, name, tmp_path)
    assert_same_trajectory(piped, reference, 1e-3)
    resumed = RUNS[name].write_single(tmp_path / "resumed")
    shutil.copytree(piped_dir / "ckpt" / "step-000004", resumed / "ckpt" / "step-000004")
    assert main([str(resumed), "--device", "cpu"]) == ExitCode.OK
    losses = losses_by_step(resumed)
    assert sorted(losses) == [5, 6, 7, 8]
    assert max(abs(losses[s] - reference[s]) for s in losses) <= 1e-4


@pytest.mark.parametrize(
    "name", ["uneven-pp3-4-layers", "uneven-pp2-vpp2-5-layers", "pp2-vpp2-embedding-and-head-stages"]
)
def test_uneven_pipeline_follows_one_process(name, launched, tmp_path, in_process):
    """Stages of unequal block counts (planner/layout.py stage_layer_counts) train like one
    process: no block dropped or run twice, gradients of every stage reach the optimizer."""
    _, piped, reference = beside_one_process(launched, name, tmp_path)
    assert_same_trajectory(piped, reference, 1e-3)


@pytest.mark.parametrize("name", ["tied-pp2-x-fsdp2", "tied-pp3-uneven", "tied-pp2-vpp2-embedding-and-head-stages"])
def test_pipelined_tied_embedding_follows_one_process(name, launched, tmp_path, in_process):
    """A tied embedding/head (GPT-2 style, learned positions) split over the pipeline: the last
    stage's head is a copy of the first stage's embedding, their gradients summed every step
    (trainer/pipeline.py TiedEmbeddingSync), and the run follows one process."""
    _, piped, reference = beside_one_process(launched, name, tmp_path)
    assert_same_trajectory(piped, reference, 1e-3)


def test_tied_pipeline_checkpoint_resumes_on_one_process(launched, tmp_path, in_process):
    """The pipelined tied model's step-3 checkpoint (the embedding saved by the first stage, the
    head's copy by the last, each with its optimizer state) resumes on one process, where head and
    embedding are one tensor again, on the one-process trajectory."""
    name = "tied-pp2-x-fsdp2"
    piped_dir, _, reference = beside_one_process(launched, name, tmp_path)
    resumed = RUNS[name].write_single(tmp_path / "resumed")
    shutil.copytree(piped_dir / "ckpt" / "step-000003", resumed / "ckpt" / "step-000003")
    assert main([str(resumed), "--device", "cpu"]) == ExitCode.OK
    losses = losses_by_step(resumed)
    assert sorted(losses) == [4, 5, 6]
    assert max(abs(losses[s] - reference[s]) for s in losses) <= 1e-4


def test_native_moe_under_expert_parallelism_matches_one_process(launched, tmp_path, in_process):
    """A Mixtral-style native model (4 experts, top-2) with ep=2 x fsdp=2 on 4 ranks: each rank
    holds 2 experts, exchanges routed tokens by all-to-all and FSDP-shards its experts over the
    other pair; training follows one process, and its checkpoint resumes on one process. Top-2
    routing (not top-1) and the full-logits loss keep last-bit summation differences from
    flipping an expert choice (see the MoE run above)."""
    name = "native-moe-ep2-fsdp2"
    parallel_dir, parallel, single = beside_one_process(launched, name, tmp_path)
    assert_same_trajectory(parallel, single, 1e-3)
    # Expert gradients sum over the ep ranks and must be averaged over all data-parallel ranks.
    assert_same_gradient_norms(parallel_dir, tmp_path / "single")
    # The expert shards (DTensors over the ep and expert-FSDP meshes) checkpoint layout-free:
    # the step-3 checkpoint resumes on one process on the same trajectory.
    resumed = RUNS[name].write_single(tmp_path / "resumed")
    shutil.copytree(parallel_dir / "ckpt" / "step-000003", resumed / "ckpt" / "step-000003")
    assert main([str(resumed), "--device", "cpu"]) == ExitCode.OK
    losses = losses_by_step(resumed)
    assert sorted(losses) == [4, 5, 6]
    assert max(abs(losses[s] - single[s]) for s in losses) <= 1e-4


@pytest.mark.parametrize("name", ["deepseek-v3-ep", "deepseek-v3-ep-cp"])
def test_native_deepseek_v3_under_expert_parallelism_matches_one_process(name, launched, tmp_path, in_process):
    """ep=2 on 4 ranks (x fsdp=4, or x fsdp=2 x cp=2): each rank holds 2 of the 4 routed experts
    (top 2; 4 experts route over one group), the shared expert and MLA are FSDP-sharded like dense
    weights; under cp the shared rotary key turns by global position and MLA's 12-wide values
    travel with its 24-wide keys."""
    _, parallel, single = beside_one_process(launched, name, tmp_path)
    assert sorted(parallel) == list(range(1, 7))
    worst = max(abs(parallel[s] - single[s]) for s in parallel)
    assert worst <= 1e-3, f"differs from one process by up to {worst:.2e}"


@pytest.mark.skipif(not HAS_FLOAT8, reason="needs torchao.float8")
def test_fp8_under_tensor_parallel_matches_one_process(launched, tmp_path, in_process):
    """precision fp8 with tp=2: every block takes torchao's float8 tensor-parallel styles (the
    sequence-split norm outputs cast to float8 before their all-gather) and follows the fp8
    model on one process; on CPU torch emulates the fp8 matmuls. Both cast with the same
    tensor-wise scales (the amax of a sharded DTensor is the global one). Measured: losses
    2.5e-4 apart (bf16 logits, vocabulary-parallel loss vs the chunked one), gradient norms
    1.4e-5 (relative). The bounds catch a float8 all-gather that mis-scales the gathered input
    by 2x (measured: 2.8e-3 and 4.5e-3), which the loss alone barely shows this early."""
    parallel_dir, parallel, single = beside_one_process(launched, "fp8-tp2", tmp_path)
    assert "tensor parallel: float8 all-gathers in 2 of 2 blocks" in batch_result(parallel_dir)[1]
    assert_same_trajectory(parallel, single, 1e-3)
    assert_same_gradient_norms(parallel_dir, tmp_path / "single")


def test_killed_run_resumes_exactly(reference, tmp_path):
    """SIGKILL torchrun and its workers after the first checkpoint; the resumed run matches the reference."""
    job = write_job(tmp_path, Layout(dp_shard=2), 2, steps=REFERENCE_STEPS, grad_accum=2, checkpoint_every=5, **COMMON)
    proc = start_torchrun(job, 2, tmp_path / "killed.log")
    try:
        wait_for(
            lambda: (job / "ckpt" / "step-000005").exists() or proc.poll() is not None,
            120,
            "the first checkpoint",
            poll=0.02,
        )
    finally:
        kill_tree(proc)
        proc.wait(30)
    steps_before_kill = len(read_metrics(job))
    assert 5 <= steps_before_kill < REFERENCE_STEPS, (tmp_path / "killed.log").read_text()[-3000:]
    result = run_torchrun(job, 2)
    assert result.returncode == 0, describe(result)
    assert "resumed from checkpoint step-0000" in result.stdout
    losses = losses_by_step(job)
    assert [r["step"] for r in read_metrics(job)] == list(range(1, REFERENCE_STEPS + 1))  # no duplicates
    assert_same_trajectory(losses, reference, 1e-5)


def test_checkpoint_resumes_on_a_different_layout(launched, reference_dir, reference):
    """Checkpoints hold layout-independent names and resharding DCP shards: an FSDP checkpoint
    continues as an interleaved pipeline (2 ranks x 2 stages each, as after an automatic replan)
    on the same trajectory. (The batch copies the reference's step-15 checkpoint in when it
    reaches this run: ``Run.resumes``.)"""
    job = finished(launched, "resumed-on-pp2-vpp2")
    output = batch_result(job)[1]
    assert "resumed from checkpoint step-000015" in output
    assert "pipeline: interleaved 1f1b, stages 0, 2 on pp rank 0 of 2" in output
    losses = losses_by_step(job)
    assert sorted(losses) == list(range(16, REFERENCE_STEPS + 1))
    assert max(abs(losses[s] - reference[s]) for s in losses) <= 1e-4


def test_sigterm_saves_and_exits_promptly(tmp_path):
    job = write_job(tmp_path, Layout(dp_shard=2), 2, steps=5000, grad_accum=2, **COMMON)
    log = tmp_path / "run.log"
    proc = start_torchrun(job, 2, log)
    try:
        wait_for(lambda: len(read_metrics(job)) >= 3 or proc.poll() is not None, 120, "three steps")
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # what a scheduler does; torchrun forwards it to the workers
        proc.wait(60)
        elapsed = time.monotonic() - signalled
    finally:
        kill_tree(proc)
    output = log.read_text()
    saved = [step for step, _ in list_checkpoints(job / "ckpt")]
    assert len(saved) == 1 and 3 <= saved[0] < 5000, output[-3000:]
    assert f"SIGTERM: saved checkpoint at step {saved[0]}; exiting" in output
    assert elapsed < 30
    manifest = json.loads((job / "ckpt" / f"step-{saved[0]:06d}" / "manifest.json").read_text())
    assert {"rank-00000.pt", "rank-00001.pt", ".metadata"} <= set(manifest["files"])
    assert not list(Path(job / "ckpt").glob("*.tmp"))
