"""Stacks and rules (issue 27): every structural rule is a law of the layout or a limit of trainplan's
trainer, and another stack's estimate sees only the laws; the named stack profiles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from planner.api import PlanRequest, build_plan, plan
from planner.catalog.hardware import load_catalog
from planner.catalog.hf_config import model_from_hf_config
from planner.catalog.models import get_preset
from planner.layout import ActivationCheckpointing, Implementation, Layout, Sharding, TrainingConfig
from planner.model.candidates import AC_FULL, AC_NONE, SHARD_FSDP, SHARD_ZERO1
from planner.model.stacks import STACK_SETTINGS, Stack
from planner.model.structure import first_structural_problem, structural_rules
from planner.search.score import search_space
from planner.search.space import build_candidates

# BLOOM 176B as bigscience/bloom config.json states it (70 layers, hidden 14336, 112 heads, vocab 250880)
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "published_configs"
ONE = dict(pp=1, cp=1, seq_len=4096, grad_accum=8, scaleup_domain_size=8, fp8=False, one_f_one_b=True)


def test_trainer_limits_bind_only_trainplan_and_laws_bind_every_stack():
    bloom = model_from_hf_config(CONFIGS / "bloom-176b.json")
    values = dict(ONE, tp=4, pp=12, hf=False, grad_accum=128)
    assert "native trainer cannot build" in first_structural_problem(bloom, **values)
    assert first_structural_problem(bloom, **values, trainer=False) is None
    laws = structural_rules(bloom, **values, trainer=False)
    assert laws and not any(rule.trainer_only for rule in laws)
    # a law: 112 heads do not split over tp 3, for any stack
    assert "num_heads 112 is not divisible by tp=3" in first_structural_problem(
        bloom, **dict(values, tp=3), trainer=False
    )


def test_bloom_176b_from_its_config_estimates_at_its_layout_under_the_megatron_stacks():
    """BLOOM's config.json at TP4 x PP12 x DP8 on 384 A100, as it trained (tr11 README), under
    Megatron-DeepSpeed (BigScience's stack: its PipelineModule balances 70 layers over 12 stages);
    NVIDIA's Megatron-Core and Megatron-LM have no ALiBi (and Megatron-LM of 2021-22 splits layers
    evenly), and `deepspeed` trains Hugging Face's modules its pipeline engine cannot run: each
    refuses and says where the 3D layout is."""
    bloom = model_from_hf_config(CONFIGS / "bloom-176b.json")
    assert bloom.num_params() == pytest.approx(176.2e9, rel=0.01)
    layout = Layout(tp=4, pp=12, sharding=Sharding.ZERO1)
    training = TrainingConfig(
        seq_len=2048, micro_batch=2, grad_accum=128, activation_checkpointing=ActivationCheckpointing.FULL
    )
    p = build_plan(bloom, "a100-80gb-sxm", layout, training, num_gpus=384, stack=Stack.MEGATRON_DEEPSPEED)
    assert p.layout.dp_shard == 8 and p.estimate.feasible and not p.emittable
    assert 60 < p.estimate.throughput.tokens_per_s_per_gpu < 300  # measured: ~104 (docs/validation.md)
    # NVIDIA's Megatron stacks have no ALiBi, which BLOOM needs (trial s36: megatron-core timed it)
    for stack in (Stack.MEGATRON_CORE, Stack.MEGATRON_LM):
        with pytest.raises(ValueError, match=rf"{stack.value} has no ALiBi attention bias.*megatron-deepspeed"):
            build_plan(bloom, "a100-80gb-sxm", layout, training, num_gpus=384, stack=stack)
    even = bloom.model_copy(update={"position": "learned"})  # Megatron-LM's own stages: even ones only
    with pytest.raises(ValueError, match=r"splits the 70 layers evenly over pp 12 x vpp 1 .* megatron-deepspeed"):
        build_plan(even, "a100-80gb-sxm", layout, training, num_gpus=384, stack=Stack.MEGATRON_LM)
    on_hf = training.model_copy(update={"impl": Implementation.HF})  # deepspeed trains Hugging Face's
    with pytest.raises(ValueError, match="--stack megatron-deepspeed for Megatron-DeepSpeed's 3D"):
        build_plan(bloom, "a100-80gb-sxm", layout, on_hf, num_gpus=384, stack=Stack.DEEPSPEED)
    with pytest.raises(ValueError, match="native trainer cannot build"):
        build_plan(bloom, "a100-80gb-sxm", layout, training, num_gpus=384)  # trainplan's own stack


def test_hugging_face_stacks_train_transformers_modules_with_the_full_logits():
    request = PlanRequest(model=get_preset("llama3-8b"), training_tokens=1e10, stack=Stack.HF_TRAINER)
    assert request.impl == Implementation.HF
    assert PlanRequest(model=get_preset("llama3-8b"), training_tokens=1e10).impl == Implementation.NATIVE
    for stack in (Stack.HF_TRAINER, Stack.DEEPSPEED, Stack.TORCHTITAN, Stack.LLM_FOUNDRY):
        assert STACK_SETTINGS[stack].loss_chunk_tokens == 0  # stock losses over the full logits
    assert STACK_SETTINGS[Stack.LLM_FOUNDRY].cudnn_attention is False  # flash-attn's FA2


def test_deepseek_v3_is_a_stack_of_its_own():
    p = build_plan(
        get_preset("deepseek-v3"),
        "h100-sxm",
        Layout(pp=16, ep=64, sharding=Sharding.ZERO1),
        TrainingConfig(seq_len=4096, grad_accum=120, precision="fp8"),
        num_gpus=2048,
        stack=Stack.DEEPSEEK_V3,
    )
    assert p.stack == Stack.DEEPSEEK_V3 and p.estimate.throughput.tokens_per_s_per_gpu > 0


def test_deepseek_v3_shards_the_optimizer_state_only():
    """Its report trains with ZeRO-1 data parallelism; an estimate of more is refused in one line
    and its search offers none (trial s35: 'fsdp pp=16 dp_shard=8 tp=2 ep=8' among its plans)."""
    model, training = get_preset("deepseek-v3"), TrainingConfig(seq_len=4096, grad_accum=128, precision="fp8")
    for sharding in (Sharding.ZERO2, Sharding.FSDP):
        # review s35: "use --sharding", which explain (re-estimating a plan for the stack) has not
        with pytest.raises(
            ValueError, match=r"deepseek-v3 shards at most the optimizer state \(ZeRO-1\), not .*: estimate"
        ):
            build_plan(
                model, "h800", Layout(pp=16, ep=8, sharding=sharding), training, num_gpus=256, stack=Stack.DEEPSEEK_V3
            )
    request = PlanRequest(model=model, training_tokens=1e12, gpus={"h800": 256}, stack=Stack.DEEPSEEK_V3)
    c = build_candidates(model, load_catalog(), {"h800": 256}, search_space(request))
    assert len(c.sharding) and (c.sharding <= SHARD_ZERO1).all()


def test_megatron_lm_of_2021_has_no_mixture_of_experts():
    """Trial s35 (app): DeepSeek-V3 under megatron-lm was timed at ep 16 (1,188 days, 2x torchtitan's);
    that release had no MoE layers. A request and an estimate are refused in one line; dense models
    and the other Megatron stacks are not."""
    model = get_preset("qwen3-30b-a3b")
    with pytest.raises(ValueError, match=r"megatron-lm \(Megatron-LM of 2021-22\) has no mixture-of-experts"):
        PlanRequest(model=model, training_tokens=1e11, stack=Stack.MEGATRON_LM)
    training = TrainingConfig(seq_len=4096, grad_accum=8)
    with pytest.raises(ValueError, match="use --stack megatron-core"):
        build_plan(model, "h100-sxm", Layout(sharding=Sharding.ZERO1), training, num_gpus=8, stack=Stack.MEGATRON_LM)
    for stack in (Stack.MEGATRON_CORE, Stack.MEGATRON_DEEPSPEED):
        assert PlanRequest(model=model, training_tokens=1e11, stack=stack)
    assert PlanRequest(model=get_preset("llama3-8b"), training_tokens=1e11, stack=Stack.MEGATRON_LM)


def test_a_hugging_face_stack_never_pipelines():
    """Neither stack on Hugging Face's modules pipelines them: HF Trainer has no pipeline engine, and
    DeepSpeed's trains a PipelineModule, which transformers' models are not (trial s26: the search
    chose pp 8 on them under `deepspeed`); each refusal is one line naming the way out. Their tensor
    parallelism stays (accelerate's tp plan; DeepSpeed's AutoTP, with ZeRO stage 0-2 only)."""
    model = get_preset("llama3-70b")
    training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=16, impl=Implementation.HF)
    layout = Layout(pp=4, sharding=Sharding.ZERO1)
    with pytest.raises(ValueError, match=r"cannot run .*PipelineModule.*--stack megatron-deepspeed"):
        build_plan(model, "a100-80gb-sxm", layout, training, num_gpus=64, stack=Stack.DEEPSPEED)
    with pytest.raises(ValueError, match="hf-trainer has no pipeline engine"):
        build_plan(model, "a100-80gb-sxm", layout, training, num_gpus=64, stack=Stack.HF_TRAINER)
    autotp = Layout(tp=4, sharding=Sharding.ZERO2)
    p = build_plan(model, "a100-80gb-sxm", autotp, training, num_gpus=64, stack=Stack.DEEPSPEED)
    assert p.layout.tp == 4 and p.training.impl == Implementation.HF and not p.emittable
    with pytest.raises(ValueError, match="AutoTP training, which runs ZeRO stage 0-2"):
        build_plan(model, "a100-80gb-sxm", Layout(tp=4), training, num_gpus=64, stack=Stack.DEEPSPEED)


def test_deepspeeds_search_pipelines_only_as_its_engine_can():
    """Under DeepSpeed's pipeline engine the search keeps pipelined rows of ZeRO 0/1 without
    interleaving, and none of ZeRO-2/3 or vpp > 1 (the trial's 'zero2 pp=4 tp=2 vpp=4')."""
    model = get_preset("llama3-70b")
    for stack, engine in ((Stack.MEGATRON_DEEPSPEED, True), (Stack.TORCHTITAN, False)):
        request = PlanRequest(model=model, training_tokens=2e11, gpus={"a100-80gb-sxm": 64}, stack=stack)
        c = build_candidates(model, load_catalog(), {"a100-80gb-sxm": 64}, search_space(request))
        piped = c.pp > 1
        beyond = piped & ((c.sharding > SHARD_ZERO1) | (c.vpp > 1))
        assert piped.any() and beyond.any() != engine
    # HF Trainer and llm-foundry have no pipeline engine, and DeepSpeed's cannot run Hugging Face's
    # modules: no pipelined row at all; DeepSpeed's AutoTP rows run ZeRO stage 0-2.
    for stack in (Stack.HF_TRAINER, Stack.LLM_FOUNDRY, Stack.DEEPSPEED):
        request = PlanRequest(model=model, training_tokens=2e11, gpus={"a100-80gb-sxm": 64}, stack=stack)
        c = build_candidates(model, load_catalog(), {"a100-80gb-sxm": 64}, search_space(request))
        assert not (c.pp > 1).any() and c.tp.max() > 1
        assert ((c.tp > 1) & (c.sharding == SHARD_FSDP)).any() != (stack == Stack.DEEPSPEED)


@pytest.mark.parametrize(
    "sharding, vpp, words",
    [
        (Sharding.ZERO2, 1, "ZeRO stage 0/1 only"),
        (Sharding.FSDP, 1, "ZeRO stage 0/1 only"),
        (Sharding.ZERO1, 2, "no interleaved"),
    ],
)
def test_deepspeeds_pipeline_engine_refuses_what_it_cannot_run(sharding, vpp, words):
    """engine.py asserts ZeRO-2/3 with a pipeline; TrainSchedule has no interleaving. Estimates
    under both DeepSpeed stacks say so in one line; other stacks and pp 1 are untouched."""
    model = get_preset("llama3-8b")
    training = TrainingConfig(seq_len=4096, micro_batch=1, grad_accum=8)
    layout = Layout(pp=2, vpp=vpp, sharding=sharding)
    with pytest.raises(ValueError, match=words):
        build_plan(model, "h100-sxm", layout, training, num_gpus=16, stack=Stack.MEGATRON_DEEPSPEED)
    assert build_plan(model, "h100-sxm", layout, training, num_gpus=16, stack=Stack.TRAINPLAN).layout.pp == 2
    flat, on_hf = Layout(sharding=sharding), training.model_copy(update={"impl": Implementation.HF})
    assert build_plan(model, "h100-sxm", flat, on_hf, num_gpus=16, stack=Stack.DEEPSPEED).layout.pp == 1


def test_megatron_lm_splits_layers_evenly_and_interleaves_as_its_arguments_allow():
    """Megatron-LM of 2021-22 asserts num_layers % pp == 0, an interleaved chunk of whole layers,
    pp > 2 under interleaving and micro-batches divisible by pp (trial s26: `estimate --vpp 5` with
    12 layers per stage was accepted; the search chose pp 4 x vpp 8 for Llama 2 70B's 80 layers).
    Megatron-Core and trainplan run the same layouts with uneven stages."""
    model = get_preset("llama2-70b")  # 80 layers

    def refused(stack: Stack, pp: int, vpp: int, grad_accum: int) -> list[str]:
        r = stack.refusals(1, pp, SHARD_ZERO1, vpp, 1, 1, model.num_layers, grad_accum)
        return [name for name, value in r._asdict().items() if bool(value)]

    lm = Stack.MEGATRON_LM
    assert refused(lm, 4, 4, 8) == [] and refused(lm, 5, 2, 10) == []
    assert refused(lm, 3, 1, 8) == ["uneven_stages"]  # 80 % 3
    assert refused(lm, 4, 8, 8) == ["uneven_stages"]  # 20 layers per rank in 8 chunks
    assert refused(lm, 2, 2, 8) == ["interleaving"]  # pp 2
    assert refused(lm, 4, 2, 6) == ["interleaving"]  # 6 micro-batches over pp 4
    assert all(refused(s, 4, 8, 6) == [] for s in (Stack.MEGATRON_CORE, Stack.TRAINPLAN))
    assert refused(Stack.TORCHTITAN, 4, 8, 6) == ["no_zero1"]  # FSDP2, HSDP or DDP (trial s41)
    layout, training = Layout(tp=4, pp=4, vpp=8, sharding=Sharding.ZERO1), TrainingConfig(seq_len=4096, grad_accum=8)
    with pytest.raises(ValueError, match="splits the 80 layers evenly over pp 4 x vpp 8"):
        build_plan(model, "a100-80gb-sxm", layout, training, num_gpus=64, stack=lm)
    assert build_plan(model, "a100-80gb-sxm", layout, training, num_gpus=64, stack=Stack.MEGATRON_CORE)
    space = search_space(PlanRequest(model=model, training_tokens=1e12, gpus={"a100-80gb-sxm": 256}, stack=lm))
    rows = build_candidates(model, load_catalog(), {"a100-80gb-sxm": 256}, space)
    piped = rows.pp > 1
    assert piped.any() and not (model.num_layers % rows.pp[piped]).any()
    assert not ((model.num_layers // rows.pp) % rows.vpp).any()
    chunked = rows.vpp > 1
    assert chunked.any() and (rows.pp[chunked] > 2).all() and not (rows.grad_accum[chunked] % rows.pp[chunked]).any()


def test_megatron_stacks_without_alibi_refuse_an_alibi_model():
    """Trial s36: BLOOM's config under megatron-core was timed with no note; Megatron-Core's GPT
    model and Megatron-LM of 2021-22 have no ALiBi bias (learned, rotary or no positions). A request
    and an estimate are refused in one line naming megatron-deepspeed; that stack takes it."""
    model = get_preset("llama3-8b").model_copy(update={"position": "alibi", "name": "alibi-8b"})
    for stack in (Stack.MEGATRON_CORE, Stack.MEGATRON_LM, Stack.DEEPSEEK_V3):
        with pytest.raises(ValueError, match=rf"{stack.value} has no ALiBi attention bias, which alibi-8b needs"):
            PlanRequest(model=model, training_tokens=1e11, stack=stack)
    training = TrainingConfig(seq_len=2048, grad_accum=8)
    with pytest.raises(ValueError, match="use --stack megatron-deepspeed"):
        build_plan(model, "h100-sxm", Layout(sharding=Sharding.ZERO1), training, num_gpus=8, stack=Stack.MEGATRON_CORE)
    for stack in (Stack.MEGATRON_DEEPSPEED, Stack.HF_TRAINER, Stack.LLM_FOUNDRY):
        assert PlanRequest(model=model, training_tokens=1e11, stack=stack)
    assert PlanRequest(model=get_preset("llama3-8b"), training_tokens=1e11, stack=Stack.MEGATRON_CORE)


def test_torchtitan_refuses_the_modes_it_has_no_switch_for():
    """Trial s41: `plan --stack torchtitan` chose "zero1 pp=2" and "blocks (8 per pp rank)", and an
    estimate took --ac attention: torchtitan's data parallelism has no ZeRO-1 and its recompute
    modes are none, selective (per op) and full. The search leaves such rows out."""
    model = get_preset("llama3-8b")
    training = TrainingConfig(seq_len=4096, micro_batch=1, activation_checkpointing=ActivationCheckpointing.ATTENTION)
    with pytest.raises(ValueError, match="has no 'attention' activation checkpointing"):
        build_plan(model, "h100-sxm", Layout(), training, num_gpus=8, stack=Stack.TORCHTITAN)
    with pytest.raises(ValueError, match="has no ZeRO-1"):
        build_plan(
            model, "h100-sxm", Layout(sharding=Sharding.ZERO1), TrainingConfig(), num_gpus=8, stack=Stack.TORCHTITAN
        )
    with pytest.raises(ValueError, match="has no 'blocks' activation checkpointing"):
        PlanRequest(
            model=model,
            training_tokens=1e12,
            gpus={"h100-sxm": 64},
            stack=Stack.TORCHTITAN,
            activation_checkpointing=(ActivationCheckpointing.BLOCKS,),
        )
    space = search_space(PlanRequest(model=model, training_tokens=1e12, gpus={"h100-sxm": 64}, stack=Stack.TORCHTITAN))
    rows = build_candidates(model, load_catalog(), {"h100-sxm": 64}, space)
    assert len(rows) and not (rows.sharding == SHARD_ZERO1).any()
    assert set(np.unique(rows.ac)) <= set(Stack.TORCHTITAN.ac_codes)


@pytest.mark.parametrize("stack", [Stack.HF_TRAINER, Stack.DEEPSPEED])
def test_hf_trainer_and_deepspeed_checkpoint_every_layer_or_none(stack):
    """Trial s42: `plan --stack hf-trainer` chose "blocks (62)" and offered every other block;
    transformers' gradient_checkpointing (and accelerate's FSDP activation_checkpointing) wraps
    every decoder layer, so the modes are none and full, and the refusal names them."""
    model = get_preset("llama3-8b")
    assert stack.ac_mode_names == "none, full"
    training = TrainingConfig(seq_len=4096, activation_checkpointing=ActivationCheckpointing.SELECTIVE, impl="hf")
    with pytest.raises(ValueError, match=r"has no 'selective' activation checkpointing \(its modes: none, full\)"):
        build_plan(model, "h100-sxm", Layout(), training, num_gpus=8, stack=stack)
    space = search_space(PlanRequest(model=model, training_tokens=1e12, gpus={"h100-sxm": 64}, stack=stack))
    rows = build_candidates(model, load_catalog(), {"h100-sxm": 64}, space)
    assert len(rows) and set(np.unique(rows.ac)) == {AC_NONE, AC_FULL}
    assert Stack.TORCHTITAN.ac_mode_names == "none, selective, full"


def test_stacks_without_blocks_still_search_full_recompute():
    """Session 42: the search drops ``full`` rows where ``blocks`` rows (whose count ends at full)
    stand for them; it did so for torchtitan too, whose refusals then dropped the ``blocks`` rows:
    no torchtitan plan could checkpoint every block (70B on 24 H100 needs it)."""
    model = get_preset("llama3-70b")
    request = PlanRequest(model=model, training_tokens=1e10, gpus={"h100-sxm": 24}, stack=Stack.TORCHTITAN, top_k=0)
    rows = build_candidates(model, load_catalog(), {"h100-sxm": 24}, search_space(request))
    assert set(np.unique(rows.ac)) == set(Stack.TORCHTITAN.ac_codes)
    assert plan(request).plan.training.activation_checkpointing == ActivationCheckpointing.FULL


def test_a_stack_that_refuses_what_its_fork_runs_switches_to_the_fork():
    """Issue 27: BLOOM at TP4 x PP12 under `megatron-lm` and `deepspeed`. Megatron-LM of 2021-22 has
    no ALiBi, which BigScience's fork of it added; DeepSpeed's pipeline engine trains Megatron-
    DeepSpeed's PipelineModule, not Hugging Face's modules. Each is estimated as that fork, and says
    why; a stack with no fork of its line (Megatron-Core, DeepSeek's) still refuses."""
    from planner.errors import RuleCode
    from planner.stack_rules import stack_switch

    bloom = model_from_hf_config(CONFIGS / "bloom-176b.json")
    llama = get_preset("llama3-8b")
    alibi = stack_switch(Stack.MEGATRON_LM, bloom, pp=1)
    assert alibi is not None and (alibi.runs, alibi.refusal) == (Stack.MEGATRON_DEEPSPEED, RuleCode.STACK_NO_ALIBI)
    assert alibi.words("bloom").startswith("megatron-lm has no ALiBi attention bias, which bloom needs")
    piped = stack_switch(Stack.DEEPSPEED, llama, pp=2)
    assert piped is not None and (piped.runs, piped.refusal) == (Stack.MEGATRON_DEEPSPEED, RuleCode.STACK_HF_PIPELINE)
    assert "estimated as --stack megatron-deepspeed" in piped.words("llama3-8b")
    # no switch where the stack runs it, or where no fork mends the refusal
    assert stack_switch(Stack.DEEPSPEED, bloom, pp=1) is None  # Hugging Face's eager ALiBi, no pipeline
    assert stack_switch(Stack.MEGATRON_LM, llama, pp=12) is None  # rotary: Megatron-LM's own
    assert stack_switch(Stack.MEGATRON_CORE, bloom, pp=12) is None and not Stack.MEGATRON_CORE.alibi
    assert stack_switch(Stack.HF_TRAINER, llama, pp=2) is None  # no pipeline engine at all: refused
    assert {s for s in Stack if s.fork} == {Stack.MEGATRON_LM, Stack.DEEPSPEED}
