"""Multi-process training on CPU (torchrun, gloo) against the same job on one process: model
families (HF, GPT, Qwen3, MoE, DeepSeek-V3), uneven and tied pipelines, expert parallelism, fp8.

Each run below trains on several ranks, and the same job (same global batch, same initial
weights) then trains on one process in the test process; the parallel run must follow it step by
step (support/trajectories.py). The parallel runs share one torchrun launch of the largest world
(``support/job_batch.py``: each worker imports torch once and runs the jobs in turn). The layouts
compared with a 2-rank FSDP reference, kill-and-resume and SIGTERM are in test_distributed.py
(two modules: the two xdist workers run them side by side).
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from support.jobs import Run, batch_result, finished, launch_runs, losses_by_step, tiny_gpt_spec, tiny_spec
from support.trajectories import ALL_IN_ONE_MICRO_BATCH as ALL_IN_ONE
from support.trajectories import TWO_PER_MICRO_BATCH as TWO
from support.trajectories import assert_same_gradient_norms, assert_same_trajectory, settings

from planner.catalog.models import get_preset
from planner.errors import ExitCode
from planner.layout import Layout
from planner.model.shape import LatentAttention
from trainer.moe import DEEPSEEK_BIAS_UPDATE_SPEED
from trainer.train import main

pytestmark = pytest.mark.slow


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


def _beside(layout: Layout, nproc: int, grad_accum: int, steps: int, **changes) -> Run:
    return Run(layout, nproc, grad_accum, settings(steps=steps, **changes))


PIPE_1F1B = dict(pp_schedule="1f1b")
QWEN3 = tiny_spec(name="tiny-qwen3", family="qwen3", qk_norm="head", rope_theta=1e6, norm_eps=1e-6)
# Runs compared with the same job on one process (the test named after each says why); the
# tensor-parallel ones in micro-batches of 2, or of all 4 sequences where one data-parallel rank
# takes the whole step (support/trajectories.py).
BESIDE_ONE_PROCESS = {
    "hf-tp2": _beside(Layout(dp_shard=1, tp=2), 2, 1, 6, impl="hf", **ALL_IN_ONE),
    "gpt-tp2-cp2": _beside(Layout(dp_shard=1, tp=2, cp=2), 4, 2, 6, model=tiny_gpt_spec(), **TWO),
    "qwen3-tp2": _beside(Layout(dp_shard=1, tp=2), 2, 1, 6, model=QWEN3, **ALL_IN_ONE),
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
    # 4 blocks on 3 stages: 1, 2, 1 (the embedding and the head each weigh one block); the middle
    # rank holds neither copy. Also the uneven pp=3 split's run (an untied twin proved nothing more:
    # the split is the planner's, whatever the blocks).
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
        1,
        4,
        model=tiny_spec(num_layers=2, hidden_size=64, ffn_hidden_size=128),
        precision="fp8",
        **TWO,
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
BESIDE_ONE_PROCESS["deepseek-v3-ep"] = _beside(Layout(dp_shard=4, ep=2), 4, 1, 6, checkpoint_every=3, **DEEPSEEK)
BESIDE_ONE_PROCESS["deepseek-v3-ep-cp"] = _beside(Layout(dp_shard=2, cp=2, ep=2), 4, 1, 6, **DEEPSEEK)


RUNS = BESIDE_ONE_PROCESS


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> Iterator[Future[dict[str, Path]]]:
    """The batch launch, in a thread of its own: the first test trains the one-process twins while
    it runs (:func:`beside_one_process`), where this process would only wait. Its 4 ranks on 2 cores
    wait on one another's collectives, so they leave CPU time over (1.2 of 2 cores busy, measured)."""
    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(launch_runs, tmp_path_factory.mktemp("runs"), RUNS)


@pytest.fixture(scope="module")
def one_process_root(tmp_path_factory) -> Path:
    """Where :func:`beside_one_process` keeps each one-process run, trained once for the module."""
    return tmp_path_factory.mktemp("one-process")


def one_process(root: Path, name: str) -> Path:
    """The job of run ``name`` on one process, trained by the first test that asks (seeded: every
    test would train the same one)."""
    single = root / name
    if not (single / "report.json").exists():
        shutil.rmtree(single, ignore_errors=True)  # a run that failed part way
        RUNS[name].write_single(single)
        assert main([str(single), "--device", "cpu"]) == ExitCode.OK
    return single


def beside_one_process(
    launched: Future[dict[str, Path]], one_process_root: Path, name: str
) -> tuple[Path, dict[int, float], dict[int, float]]:
    """The parallel run's job directory and loss curve, and the same job's curve on one process."""
    if not launched.done():
        for twin in RUNS:  # while the launch runs; a twin that fails is its own test's to train again and report
            with contextlib.suppress(Exception):
                one_process(one_process_root, twin)
    parallel = finished(launched.result(), name)
    return parallel, losses_by_step(parallel), losses_by_step(one_process(one_process_root, name))


def test_hf_model_under_tensor_parallel_matches_one_process(launched, one_process_root, in_process):
    """--impl hf with tp=2 (column/row-parallel projections) against the same model on one process."""
    _, parallel, single = beside_one_process(launched, one_process_root, "hf-tp2")
    assert_same_trajectory(parallel, single, 1e-4)


def test_native_gpt_architecture_under_tp_and_cp_matches_one_process(launched, one_process_root, in_process):
    """GPT-2/3 blocks (learned positions, LayerNorm and linear biases, tanh GeLU, tied head, a
    vocabulary padded from 500 to 512) under tp=2 x cp=2 against the same model on one process."""
    _, parallel, single = beside_one_process(launched, one_process_root, "gpt-tp2-cp2")
    assert_same_trajectory(parallel, single, 1e-3)
    assert parallel[6] < parallel[1] - 0.05  # learns, slowly: a 6-step sanity check


def test_native_qwen3_blocks_under_tp_match_one_process(launched, one_process_root, in_process):
    """Qwen3 blocks (per-head q/k RMSNorm before RoPE, which tensor parallelism leaves on each
    rank's heads; RoPE base 1e6) under tp=2 with sequence parallelism against one process."""
    _, parallel, single = beside_one_process(launched, one_process_root, "qwen3-tp2")
    assert_same_trajectory(parallel, single, 1e-4)


def test_moe_experts_shard_evenly_over_more_ranks_than_experts(launched, one_process_root, in_process):
    """A Mixtral-style HF model with 2 experts under FSDP on 4 ranks: the fused expert tensors
    shard along their hidden dim (not by whole experts, which would leave 2 ranks without any)
    and training follows one process."""
    _, parallel, single = beside_one_process(launched, one_process_root, "moe-fsdp4")
    assert_same_trajectory(parallel, single, 1e-4)


def test_untied_gpt_pipeline_keeps_its_position_table(launched, one_process_root, tmp_path, in_process):
    """Learned positions live on stage 0 only: an untied GPT model on pp=2 x vpp=2 follows one
    process, and its checkpoint (taken at step 4) resumes on one process on the same trajectory."""
    name = "untied-gpt-pp2-vpp2"
    piped_dir, piped, reference = beside_one_process(launched, one_process_root, name)
    assert_same_trajectory(piped, reference, 1e-3)
    resumed = RUNS[name].write_single(tmp_path / "resumed")
    shutil.copytree(piped_dir / "ckpt" / "step-000004", resumed / "ckpt" / "step-000004")
    assert main([str(resumed), "--device", "cpu"]) == ExitCode.OK
    losses = losses_by_step(resumed)
    assert sorted(losses) == [5, 6, 7, 8]
    assert max(abs(losses[s] - reference[s]) for s in losses) <= 1e-4


@pytest.mark.parametrize(
    "name", ["uneven-pp2-vpp2-5-layers", "pp2-vpp2-embedding-and-head-stages"]
)  # pp=3's 1, 2, 1: tied-pp3-uneven below
def test_uneven_pipeline_follows_one_process(name, launched, one_process_root, in_process):
    """Stages of unequal block counts (planner/layout.py stage_layer_counts) train like one
    process: no block dropped or run twice, gradients of every stage reach the optimizer."""
    _, piped, reference = beside_one_process(launched, one_process_root, name)
    assert_same_trajectory(piped, reference, 1e-3)


@pytest.mark.parametrize("name", ["tied-pp2-x-fsdp2", "tied-pp3-uneven", "tied-pp2-vpp2-embedding-and-head-stages"])
def test_pipelined_tied_embedding_follows_one_process(name, launched, one_process_root, in_process):
    """A tied embedding/head (GPT-2 style, learned positions) split over the pipeline: the last
    stage's head is a copy of the first stage's embedding, their gradients summed every step
    (trainer/pipeline.py TiedEmbeddingSync), and the run follows one process."""
    _, piped, reference = beside_one_process(launched, one_process_root, name)
    assert_same_trajectory(piped, reference, 1e-3)


def test_tied_pipeline_checkpoint_resumes_on_one_process(launched, one_process_root, tmp_path, in_process):
    """The pipelined tied model's step-3 checkpoint (the embedding saved by the first stage, the
    head's copy by the last, each with its optimizer state) resumes on one process, where head and
    embedding are one tensor again, on the one-process trajectory."""
    name = "tied-pp2-x-fsdp2"
    piped_dir, _, reference = beside_one_process(launched, one_process_root, name)
    resumed = RUNS[name].write_single(tmp_path / "resumed")
    shutil.copytree(piped_dir / "ckpt" / "step-000003", resumed / "ckpt" / "step-000003")
    assert main([str(resumed), "--device", "cpu"]) == ExitCode.OK
    losses = losses_by_step(resumed)
    assert sorted(losses) == [4, 5, 6]
    assert max(abs(losses[s] - reference[s]) for s in losses) <= 1e-4


def test_native_moe_under_expert_parallelism_matches_one_process(launched, one_process_root, tmp_path, in_process):
    """A Mixtral-style native model (4 experts, top-2) with ep=2 x fsdp=2 on 4 ranks: each rank
    holds 2 experts, exchanges routed tokens by all-to-all and FSDP-shards its experts over the
    other pair; training follows one process, and its checkpoint resumes on one process. Top-2
    routing (not top-1) and the full-logits loss keep last-bit summation differences from
    flipping an expert choice (see the MoE run above)."""
    name = "native-moe-ep2-fsdp2"
    parallel_dir, parallel, single = beside_one_process(launched, one_process_root, name)
    assert_same_trajectory(parallel, single, 1e-3)
    # Expert gradients sum over the ep ranks and must be averaged over all data-parallel ranks.
    assert_same_gradient_norms(parallel_dir, one_process(one_process_root, name))
    # The expert shards (DTensors over the ep and expert-FSDP meshes) checkpoint layout-free:
    # the step-3 checkpoint resumes on one process on the same trajectory.
    resumed = RUNS[name].write_single(tmp_path / "resumed")
    shutil.copytree(parallel_dir / "ckpt" / "step-000003", resumed / "ckpt" / "step-000003")
    assert main([str(resumed), "--device", "cpu"]) == ExitCode.OK
    losses = losses_by_step(resumed)
    assert sorted(losses) == [4, 5, 6]
    assert max(abs(losses[s] - single[s]) for s in losses) <= 1e-4


@pytest.mark.parametrize("name", ["deepseek-v3-ep", "deepseek-v3-ep-cp"])
def test_native_deepseek_v3_under_expert_parallelism_matches_one_process(
    name, launched, one_process_root, tmp_path, in_process
):
    """ep=2 on 4 ranks (x fsdp=4, or x fsdp=2 x cp=2): each rank holds 2 of the 4 routed experts
    (top 2; 4 experts route over one group), the shared expert and MLA are FSDP-sharded like dense
    weights; under cp the shared rotary key turns by global position and MLA's 12-wide values
    travel with its 24-wide keys. The routers' correction biases, moved after every step by the
    load summed over all ranks, end where one process's do: exactly without cp; under cp, whose
    attention sums in another order, a near-tie expert choice may flip and move one expert's
    bias a step the other way (the summing itself: tests/trainer/test_moe_block.py)."""
    parallel_dir, parallel, single = beside_one_process(launched, one_process_root, name)
    assert sorted(parallel) == list(range(1, 7))
    worst = max(abs(parallel[s] - single[s]) for s in parallel)
    assert worst <= 1e-3, f"differs from one process by up to {worst:.2e}"
    biases = [
        checkpointed(job / "ckpt" / "step-000006", tmp_path / f"{i}.pt", "e_score_correction_bias")
        for i, job in enumerate((parallel_dir, one_process(one_process_root, name)))
    ]
    assert biases[0].abs().sum() > 0
    apart = (biases[0] - biases[1]).abs().max().item()
    assert apart == 0 if name == "deepseek-v3-ep" else apart <= 2 * DEEPSEEK_BIAS_UPDATE_SPEED + 1e-9
    if name == "deepseek-v3-ep":  # the biases come back with a checkpoint: step 3 resumes on one process
        resumed = RUNS[name].write_single(tmp_path / "resumed")
        shutil.copytree(parallel_dir / "ckpt" / "step-000003", resumed / "ckpt" / "step-000003")
        assert main([str(resumed), "--device", "cpu"]) == ExitCode.OK
        losses = losses_by_step(resumed)
        assert sorted(losses) == [4, 5, 6] and max(abs(losses[s] - single[s]) for s in losses) <= 1e-4


def checkpointed(step_dir: Path, scratch: Path, suffix: str) -> torch.Tensor:
    """The one tensor of a DCP checkpoint whose key ends with ``suffix`` (as one file)."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    dcp_to_torch_save(step_dir, scratch)
    (found,) = (v for k, v in torch.load(scratch, weights_only=False)["model"].items() if k.endswith(suffix))
    return found


@pytest.mark.skipif(not HAS_FLOAT8, reason="needs torchao.float8")
def test_fp8_under_tensor_parallel_matches_one_process(launched, one_process_root, in_process):
    """precision fp8 with tp=2: every block takes torchao's float8 tensor-parallel styles (the
    sequence-split norm outputs cast to float8 before their all-gather) and follows the fp8
    model on one process; on CPU torch emulates the fp8 matmuls. Both cast with the same
    tensor-wise scales (the amax of a sharded DTensor is the global one). Measured: losses
    2.5e-4 apart (bf16 logits, vocabulary-parallel loss vs the chunked one), gradient norms
    1.4e-5 (relative). The bounds catch a float8 all-gather that mis-scales the gathered input
    by 2x (measured: 2.8e-3 and 4.5e-3), which the loss alone barely shows this early."""
    parallel_dir, parallel, single = beside_one_process(launched, one_process_root, "fp8-tp2")
    assert "tensor parallel: float8 all-gathers in 2 of 2 blocks" in batch_result(parallel_dir)[1]
    assert_same_trajectory(parallel, single, 1e-3)
    assert_same_gradient_norms(parallel_dir, one_process(one_process_root, "fp8-tp2"))
