"""Every plan the planner proposes builds and shards in the trainer, at its real size.

The trainer's static check shares the planner's structural rules, but only building the model
proves that TP plans, pipeline splits, interleaved stages, context parallelism and FSDP wrapping
accept a layout. Each proposed plan is built on the meta device by the first and the last rank
of a fake process group of the plan's world size (torch's ``fake`` backend: no communication,
no memory), exactly as ``trainer.train`` would up to materialising the weights. The shards it
holds are then what the planner predicted for the fp32 master parameters: this is how the
context-parallel ranks' share of the states and the uneven sharding of MoE experts were found.
"""

from __future__ import annotations

import functools

import pytest
import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor, Shard
from torch.testing._internal.distributed.fake_pg import FakeStore

from planner.api import PlanRequest, build_plan, plan
from planner.catalog.models import get_preset
from planner.layout import Implementation, Layout
from planner.model.memory import GIB
from trainer.job_spec import JobSpec, RunSettings
from trainer.parallel import build_meshes
from trainer.probe import check_plan
from trainer.train import build_stage_modules, shard_model

# (preset, seq_len, tokens): dense and GQA Llama, GPT-3 (padded vocabulary, learned positions,
# tied head), long context (context parallelism), MoE on the native block with expert parallelism.
REQUESTS = [
    ("llama3-70b", None, 2e12),
    ("gpt3-13b", None, 3e11),
    ("llama3.1-8b", 65536, 1e11),
    ("llama3.2-1b", None, 1e11),
    ("mixtral-8x7b", None, 1e11),
    # 126 layers: uneven interleaved pipeline stages (pp=16 x vpp=7 on 2048 GPUs).
    ("llama3.1-405b", None, 2e12),
]


@functools.cache
def proposed(preset: str, seq_len: int | None, tokens: float):
    result = plan(
        PlanRequest(model=get_preset(preset), training_tokens=tokens, deadline_days=30, top_k=3, seq_len=seq_len)
    )
    return (result.plan, *result.alternatives)


def build_on_fake_world(plan_, rank: int) -> list[torch.nn.Module]:
    job = JobSpec(name="fake", plan=plan_, run=RunSettings())
    dist.init_process_group("fake", rank=rank, world_size=plan_.num_gpus, store=FakeStore())
    try:
        # meta: the plan's own checks, not this machine's memory (a CPU run of it would be refused)
        layout = check_plan(plan_, job.run, plan_.num_gpus, torch.device("meta"))
        meshes = build_meshes(layout, "cpu")
        modules = build_stage_modules(job, layout, meshes)
        for module in modules:
            shard_model(module, job, layout, meshes, torch.device("cpu"))
        return modules
    finally:
        dist.destroy_process_group()


def local_param_gib(modules: list[torch.nn.Module]) -> float:
    """fp32 bytes of this rank's parameter shards (a tied weight once)."""
    shards = {id(p): p.to_local() if isinstance(p, DTensor) else p for m in modules for p in m.parameters()}
    return sum(t.numel() for t in shards.values()) * 4 / GIB


@pytest.mark.parametrize("request_", REQUESTS, ids=[r[0] for r in REQUESTS])
def test_every_proposed_plan_builds_at_its_real_size(request_):
    plans = proposed(*request_)
    if request_[0] == "llama3.1-8b":
        # At 64K the search takes tensor parallelism, which keeps cuDNN's attention (PyTorch's context
        # parallelism runs FlashAttention-2: planner/model/settings.py cudnn_attention_under_cp), so a
        # context-parallel plan of the same request is built beside the proposed ones.
        assert not any(p.layout.cp > 1 for p in plans)
        cp = build_plan(plans[0].model, "h100-sxm", Layout(cp=4), plans[0].training, num_gpus=8, training_tokens=1e11)
        plans = (*plans, cp)
    for plan_ in plans:
        layout = plan_.layout.resolve(plan_.num_gpus)
        built_gib = []
        # The first, second and last pp rank (the ranks the planner scores; the mesh's pp axis
        # is outermost, so pp rank r starts at global rank r * world / pp), and the last rank.
        per_pp_rank = plan_.num_gpus // layout.pp
        ranks = sorted({0, min(1, layout.pp - 1) * per_pp_rank, (layout.pp - 1) * per_pp_rank, plan_.num_gpus - 1})
        for rank in ranks:
            modules = build_on_fake_world(plan_, rank)
            assert len(modules) == layout.vpp if plan_.training.impl == Implementation.NATIVE else len(modules) == 1
            assert all(p.is_meta for module in modules for p in module.parameters())
            built_gib.append(local_param_gib(modules))
        if not plan_.training.offload:
            # The planner reports its most loaded rank, one of those built; FSDP pads uneven shards a little.
            predicted = plan_.estimate.memory.breakdown_gib.params
            assert any(predicted == pytest.approx(b, rel=0.02) for b in built_gib), (plan_.layout.describe(), built_gib)
            assert predicted <= max(built_gib) * 1.02
    if request_[0] == "llama3.1-405b":
        assert any(p.layout.pp > 1 and 126 % (p.layout.pp * p.layout.vpp) for p in plans), "uneven stages expected"


def test_proposed_fp8_tensor_parallel_plan_builds_with_float8_styles():
    """An fp8 request: the proposed tensor-parallel plans convert every block projection to
    Float8Linear (tp-sharded DTensor weights) and shard as the planner predicted."""
    pytest.importorskip("torchao.float8")
    from torchao.float8.float8_linear import Float8Linear

    from planner.layout import Precision
    from trainer.parallel import block_container

    result = plan(
        PlanRequest(
            model=get_preset("llama3-70b"), training_tokens=2e12, deadline_days=30, top_k=3, precision=Precision.FP8
        )
    )
    tensor_parallel = [p for p in (result.plan, *result.alternatives) if p.layout.tp > 1]
    assert tensor_parallel, "a 70B fp8 request should use tensor parallelism"
    for plan_ in tensor_parallel:
        modules = build_on_fake_world(plan_, 0)
        block = next(iter(block_container(modules[0]).children()))
        wq = block.get_submodule("attention.wq")
        assert isinstance(wq, Float8Linear) and isinstance(wq.weight, DTensor)
        names = wq.weight.device_mesh.mesh_dim_names or ()
        assert wq.weight.placements[names.index("tp")] == Shard(0), (names, wq.weight.placements)
        predicted = plan_.estimate.memory.breakdown_gib.params
        assert predicted == pytest.approx(local_param_gib(modules), rel=0.02), plan_.layout.describe()
