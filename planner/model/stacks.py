"""The software stacks (``--stack``): what each runs and refuses, and its settings profile
(``STACK_SETTINGS``; the profiles themselves, each change with its reason, are in
planner/model/stack_profiles.py)."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

import numpy as np

from planner.layout import ActivationCheckpointing, Implementation, Layout, Sharding
from planner.model.attention_kernels import AttentionKernel
from planner.model.candidates import AC_CODES, AC_FULL, AC_NONE, AC_SELECTIVE, SHARD_FSDP, SHARD_ZERO1, code
from planner.model.settings import (
    DEFAULT_SETTINGS,
    ModelingSettings,
)
from planner.model.stack_profiles import (
    DEEPSEEK_V3_SETTINGS,
    DEEPSPEED_SETTINGS,
    HF_TRAINER_SETTINGS,
    LLM_FOUNDRY_SETTINGS,
    MEGATRON_CORE_SETTINGS,
    MEGATRON_DEEPSPEED_SETTINGS,
    MEGATRON_LM_SETTINGS,
    TORCHTITAN_SETTINGS,
)


class StackRefusals(NamedTuple):
    """What a stack cannot run, per row (``Stack.refusals``)."""

    no_pipeline: np.ndarray  # pp > 1 where it has no pipeline engine
    hf_pipeline: np.ndarray  # pp > 1 on DeepSpeed's engine with Hugging Face's modules (no PipelineModule)
    autotp_zero3: np.ndarray  # tp > 1 with ZeRO-3 under DeepSpeed's AutoTP training
    pipeline_zero: np.ndarray  # ZeRO stage 2 or 3 with pp > 1 under DeepSpeed's pipeline engine
    interleaved: np.ndarray  # vpp > 1 under DeepSpeed's pipeline engine
    uneven_stages: np.ndarray  # layers not split evenly over pp x vpp stages where the stack needs it
    interleaving: np.ndarray  # vpp > 1 with pp <= 2 or micro-batches not divisible by pp (Megatron-LM)
    no_context_parallel: np.ndarray
    no_expert_parallel: np.ndarray
    sharding: np.ndarray  # more sharding than the stack has
    no_zero1: np.ndarray  # ZeRO-1 where the stack's data parallelism has none (``Stack.has_zero1``)
    ac_mode: np.ndarray  # a recompute mode the stack has no switch for (``Stack.ac_codes``)
    unsharded_offload: np.ndarray  # host offload without ZeRO where the stack's offload needs it

    def any(self) -> np.ndarray:
        return np.logical_or.reduce(tuple(self))


# DeepSpeed's name for full sharding (ZeRO stage 3), which its stacks' layouts print (``fsdp_word``).
DEEPSPEED_FSDP_WORD = "zero3"


class Stack(StrEnum):
    """The training software a prediction describes (``--stack``). Only ``trainplan`` plans can be
    emitted and run; the others are estimates of what that stack would do on the same layout."""

    TRAINPLAN = "trainplan"
    TORCHTITAN = "torchtitan"
    HF_TRAINER = "hf-trainer"
    DEEPSPEED = "deepspeed"
    LLM_FOUNDRY = "llm-foundry"
    MEGATRON_LM = "megatron-lm"
    MEGATRON_DEEPSPEED = "megatron-deepspeed"
    MEGATRON_CORE = "megatron-core"
    DEEPSEEK_V3 = "deepseek-v3"

    @property
    def trainer_rules(self) -> bool:
        """Whether the rules that are limits of trainplan's trainer bind (planner/rule_codes.py):
        only trainplan's plans run on it; another stack's estimate sees the laws of the layout."""
        return self is Stack.TRAINPLAN

    @property
    def deepspeed_pipeline(self) -> bool:
        """Whether its pipeline is DeepSpeed's PipelineEngine, which runs ZeRO stage 0/1 only
        (deepspeed/runtime/pipe/engine.py asserts "ZeRO-2 and ZeRO-3 are incompatible with
        pipeline parallelism") and one schedule, without interleaved stages (pipe/schedule.py
        TrainSchedule): Megatron-DeepSpeed's (``deepspeed`` trains Hugging Face's modules, which
        that engine cannot run: ``hf_pipeline``)."""
        return self is Stack.MEGATRON_DEEPSPEED

    @property
    def even_stages(self) -> bool:
        """Whether the stack splits the layers evenly over its pipeline stages, with the interleaved
        schedule's limits: Megatron-LM of 2021-22 (arguments.py at dcef906 asserts "pipeline-model-
        parallel size should be greater than 2 with interleaved schedule" and "number of layers is
        not divisible by number of layers per virtual pipeline stage", its transformer "num_layers
        must be divisible by pipeline_model_parallel_size", its interleaved schedule micro-batches
        divisible by pp). Megatron-Core places uneven first and last stages
        (``pipeline_model_parallel_layout``; NeMo's 405B recipes run 126 layers on pp 8 x vpp 8),
        DeepSpeed's PipelineModule balances layers, torchtitan and trainplan build uneven stages."""
        return self is Stack.MEGATRON_LM

    @property
    def pipelines(self) -> bool:
        """Whether the stack has a pipeline engine at all. HF Trainer (accelerate: its
        ParallelismConfig has dp, tp and cp axes, no pp) and llm-foundry (Composer: FSDP / HSDP
        and an experimental tp, mosaicml/llm-foundry#1743, #1521) have none."""
        return self not in (Stack.HF_TRAINER, Stack.LLM_FOUNDRY)

    @property
    def hf_modules_on_deepspeed(self) -> bool:
        """DeepSpeed on Hugging Face's modules (``deepspeed``): its PipelineEngine trains only a
        ``PipelineModule``, a list of layers that Megatron-DeepSpeed (GPTModelPipe) and GPT-NeoX
        build and transformers' models are not (deepspeed/runtime/pipe/engine.py asserts
        ``isinstance(model, PipelineModule)``), so pp > 1 is Megatron-DeepSpeed's
        (``--stack megatron-deepspeed``; trial s26: BLOOM's 3D layout was timed on Hugging Face's
        modules, faster than the stack that trained it); and its tensor parallelism on them is
        AutoTP training, which combines with ZeRO stages 0-2, not 3 (deepspeed.ai
        tutorials/autotp-training, DeepSpeed >= 0.16.4)."""
        return self is Stack.DEEPSPEED

    @property
    def context_parallel(self) -> bool:
        """Whether the stack splits a sequence over ranks as the model times it (ring or all-gather
        attention): llm-foundry does not (mosaicml/llm-foundry#1743: 'only Zero3/DP (i.e. FSDP, or
        HSDP) are supported'), Megatron-LM of 2021-22 predates it, and DeepSpeed's long-sequence
        method is Ulysses (an all-to-all over heads, not modelled)."""
        return self not in (Stack.LLM_FOUNDRY, Stack.MEGATRON_LM, Stack.DEEPSPEED)

    @property
    def expert_parallel(self) -> bool:
        """Whether the stack places experts on ranks: not on Hugging Face's modules (HF Trainer,
        DeepSpeed), whose MoE blocks loop over every expert on every rank (DeepSpeed-MoE's expert
        parallelism needs its own deepspeed.moe layer, and its engine asserts 'MoE not supported
        with Stage 3')."""
        return self.modules != Implementation.HF

    @property
    def mixture_of_experts(self) -> bool:
        """Whether the stack has MoE layers at all: Megatron-LM of 2021-22 had none (its MoE came with
        Megatron-Core, 2023; trial s35: DeepSeek-V3 under megatron-lm was timed at ep 16, 1,188 days)."""
        return self is not Stack.MEGATRON_LM

    @property
    def alibi(self) -> bool:
        """Whether the stack's models can add ALiBi's bias to attention (BLOOM, MPT): not Megatron-LM of
        2021-22 (learned positions) nor Megatron-Core, whose GPT model takes learned_absolute, rope,
        mrope, yarn or none (megatron/core/models/gpt/gpt_model.py ``position_embedding_type``), nor
        DeepSeek's stack on its kernels; Megatron-DeepSpeed has it (BigScience's
        ``--position-embedding-type alibi``), the others run Hugging Face's or MPT's modules (trial
        s36: BLOOM under megatron-core was timed, no note)."""
        return self not in (Stack.MEGATRON_LM, Stack.MEGATRON_CORE, Stack.DEEPSEEK_V3)

    @property
    def fork(self) -> Stack | None:
        """The stack of the same code line that runs what this one refuses of a request
        (``stack_rules.stack_switch``): Megatron-DeepSpeed, for DeepSpeed's 3D parallelism (its
        PipelineEngine trains Megatron-DeepSpeed's GPTModelPipe, not transformers' models:
        ``hf_modules_on_deepspeed``) and for Megatron-LM of 2021-22 with ALiBi (BigScience forked that
        Megatron-LM and added ``--position-embedding-type alibi`` to train BLOOM). Issue 27 asks both
        stacks to estimate BLOOM's 3D layout; the switch is said, never silent (trials s26, s36: these
        were timed on the wrong modules or kernels with no note, so they were refused until now)."""
        return Stack.MEGATRON_DEEPSPEED if self in (Stack.DEEPSPEED, Stack.MEGATRON_LM) else None

    @property
    def max_sharding(self) -> int:
        """The most a stack shards (planner/model/candidates.py codes): Megatron-LM of 2021-22 had
        its distributed optimizer (ZeRO-1) and neither ZeRO-2 nor FSDP; DeepSeek-V3's HAI-LLM is
        published with ZeRO-1 data parallelism only (arXiv 2412.19437 sec. 3.2; trial s35: its
        plans offered fsdp and zero2 layouts no source shows it running)."""
        return SHARD_ZERO1 if self in (Stack.MEGATRON_LM, Stack.DEEPSEEK_V3) else SHARD_FSDP

    @property
    def has_zero1(self) -> bool:
        """Whether its data parallelism can shard the optimizer states alone. torchtitan's is FSDP2
        (``fully_shard``; without resharding after forward, ZeRO-2's memory), HSDP or DDP
        (its ``data_parallel_shard_degree`` / ``replicate_degree``, ``fsdp_reshard_after_forward``);
        Composer's FSDP (llm-foundry) FULL_SHARD, SHARD_GRAD_OP, NO_SHARD or HYBRID_SHARD. Trial
        s41: ``plan --stack torchtitan`` chose "zero1 pp=2"."""
        return self not in (Stack.TORCHTITAN, Stack.LLM_FOUNDRY)

    @property
    def ac_codes(self) -> tuple[int, ...]:
        """The recompute modes (candidate codes) it has a switch for: torchtitan's ``none``,
        ``selective`` (its per-op policy) and ``full`` (``ActivationCheckpointingConfig``; the layer
        frequency of its 2024-25 ``selective_ac_option`` is gone since c5d93d1, 2026-06), not the
        first blocks of each rank nor the attention sub-layer alone (trial s41). HF Trainer and
        DeepSpeed (Hugging Face's modules): ``gradient_checkpointing`` checkpoints every decoder
        layer (transformers' ``gradient_checkpointing_enable``, accelerate's FSDP
        ``activation_checkpointing``), so ``none`` or ``full`` (trial s42: their plans named
        "blocks (62)" and every other block, which no switch of theirs sets). Every mode elsewhere."""
        if self is Stack.TORCHTITAN:
            return (AC_NONE, AC_SELECTIVE, AC_FULL)
        if self in (Stack.HF_TRAINER, Stack.DEEPSPEED):
            return (AC_NONE, AC_FULL)
        return tuple(range(len(AC_CODES)))

    @property
    def ac_mode_names(self) -> str:
        """'none, selective, full': its recompute modes (``ac_codes``) as ``--ac`` names them."""
        return ", ".join(AC_CODES[i].value for i in self.ac_codes)

    def offers_ac(self, mode: ActivationCheckpointing) -> bool:
        """Whether ``mode`` is one of its recompute switches (``ac_codes``)."""
        return code(mode) in self.ac_codes

    def offers_sharding(self, sharding: Sharding) -> bool:
        """Whether its data parallelism runs ``sharding`` (``sharding_refusals``)."""
        return not any(self.sharding_refusals(code(sharding)))

    def sharding_refusals(self, sharding) -> tuple[np.ndarray, np.ndarray]:
        """(more sharding than it has: ``max_sharding``; ZeRO-1 where it has none: ``has_zero1``)
        of candidate codes: ``refusals``' two sharding rules and the app's choices."""
        codes = np.asarray(sharding)
        return codes > self.max_sharding, (codes == SHARD_ZERO1) & (not self.has_zero1)

    @property
    def megatron_recompute_flags(self) -> bool:
        """Whether the stack's users name recomputation with Megatron's flags
        (``--recompute-granularity selective|full``), whose 'selective' is not trainplan's."""
        return self in (Stack.MEGATRON_LM, Stack.MEGATRON_DEEPSPEED, Stack.MEGATRON_CORE, Stack.DEEPSEEK_V3)

    @property
    def distributed_optimizer(self) -> bool:
        """Whether the stack's own recipes shard the optimizer states only (ZeRO-1): Megatron's
        distributed optimizer, the default of every NeMo / Megatron-Bridge recipe and of the
        published rows (``use_distributed_optimizer``; Megatron-FSDP is opt-in), BigScience's
        ZeRO-1 and DeepSeek-V3's ZeRO-1 (trial s26: an estimate under megatron-core defaulted to
        FSDP, 2x slower than the zero1 its validated rows ran, and was still called validated)."""
        return self in (Stack.MEGATRON_LM, Stack.MEGATRON_DEEPSPEED, Stack.MEGATRON_CORE, Stack.DEEPSEEK_V3)

    def default_sharding(self, tp: int = 1) -> Sharding:
        """An estimate's sharding when none is named: the stack's recipes' own (ZeRO-1 for the
        Megatron family and DeepSeek's, whose pipeline engine also runs ZeRO-1 at most), else FSDP,
        or ZeRO-2 under DeepSpeed's AutoTP (tp > 1), which runs no ZeRO-3."""
        if self.distributed_optimizer:  # Megatron-LM's ZeRO-1 ceiling (max_sharding) among them
            return Sharding.ZERO1
        return Sharding.ZERO2 if self.hf_modules_on_deepspeed and tp > 1 else Sharding.FSDP

    def refusals(
        self, tp, pp, sharding, vpp, cp, ep, num_layers: int, grad_accum, offload=False, ac=None
    ) -> StackRefusals:
        """What the stack refuses, per row (arrays or scalars; ``sharding`` and ``ac`` as candidate
        codes, ``ac`` None: not checked; ``grad_accum``: the pipeline's micro-batches; ``offload``:
        states on the host). One rule for the search's filter and for an estimate's refusal
        (planner/stack_rules.py ``stack_problem``)."""
        piped, deepspeed = np.asarray(pp) > 1, self.deepspeed_pipeline & (np.asarray(pp) > 1)
        on_hf = self.hf_modules_on_deepspeed
        pp, vpp, chunked = np.asarray(pp), np.asarray(vpp), np.asarray(vpp) > 1
        even = self.even_stages
        over, no_zero1 = self.sharding_refusals(sharding)
        return StackRefusals(
            no_pipeline=piped & (not self.pipelines),
            hf_pipeline=piped & on_hf,
            autotp_zero3=on_hf & (np.asarray(tp) > 1) & (np.asarray(sharding) == SHARD_FSDP),
            pipeline_zero=deepspeed & (np.asarray(sharding) > SHARD_ZERO1),
            interleaved=deepspeed & (np.asarray(vpp) > 1),
            uneven_stages=even & ((num_layers % pp != 0) | ((num_layers // pp) % vpp != 0)),
            interleaving=even & chunked & ((pp <= 2) | (np.asarray(grad_accum) % pp != 0)),
            no_context_parallel=(np.asarray(cp) > 1) & (not self.context_parallel),
            no_expert_parallel=(np.asarray(ep) > 1) & (not self.expert_parallel),
            sharding=over,
            no_zero1=no_zero1,
            ac_mode=np.zeros(np.shape(sharding), dtype=bool) if ac is None else ~np.isin(ac, self.ac_codes),
            unsharded_offload=np.asarray(offload, dtype=bool)
            & (np.asarray(sharding) < SHARD_ZERO1)
            & self.offloads_sharded_states_only,
        )

    def layout_refusals(
        self, layout: Layout, num_layers: int, grad_accum: int, offload: bool, ac: ActivationCheckpointing | None = None
    ) -> StackRefusals:
        """``refusals`` of one layout (an estimate's; its fix hints' layouts) and recompute mode."""
        sharding, mode = code(layout.sharding), None if ac is None else code(ac)
        return self.refusals(
            layout.tp, layout.pp, sharding, layout.vpp, layout.cp, layout.ep, num_layers, grad_accum, offload, mode
        )

    @property
    def overlaps_moe_a2a(self) -> bool:
        """Whether --moe-a2a-overlap is one of its choices: Megatron-Core's combined 1F1B schedule
        (deepseek-v3's profile hides its all-to-alls already, by DualPipe)."""
        return self is Stack.MEGATRON_CORE

    @property
    def overlaps_tp_comm(self) -> bool:
        """Whether --no-tp-comm-overlap is one of its choices: its profile times the tensor-parallel
        collectives under Megatron-Core's --tp-comm-overlap (TransformerEngine userbuffers), as the
        NeMo / Megatron-Bridge recipes it was fitted on run them (heldout51 H1: FlagPerf's plain
        Megatron-Core jobs pass no such flag). Megatron-LM of 2021-22 and Megatron-DeepSpeed have no
        userbuffers (their profiles hide no TP traffic); deepseek-v3's HAI-LLM runs tp 1."""
        return self is Stack.MEGATRON_CORE

    def tp_overlap_off(self, tp_comm_overlap: bool) -> bool:
        """Whether a run turns off the TP overlap its profile assumes (``overlaps_tp_comm``): with
        tp > 1, a band feature no row measured (planner/accuracy/regime.py ``Feature.TP_OVERLAP_OFF``)."""
        return self.overlaps_tp_comm and not tp_comm_overlap

    @property
    def partitions_activations(self) -> bool:
        """Whether --partition-activations is one of its choices: DeepSpeed's activation checkpointing
        under Megatron's tensor parallelism (Megatron-DeepSpeed's --partition-activations)."""
        return self is Stack.MEGATRON_DEEPSPEED

    @property
    def reduces_grads_in_bf16(self) -> bool:
        """Whether --grad-reduce-in-bf16 is one of its choices: Megatron-Core's gradient buffers in
        bf16 (``--grad-reduce-in-bf16``, ``grad_reduce_in_fp32`` off). The megatron-lm profile is the
        2021-22 Megatron-LM, whose arguments.py forced fp32 accumulation and reduction under bf16
        (trial s40); the FSDP2 stacks keep fp32 gradient shards whatever they reduce in, and
        DeepSpeed's choice is its own profile's (``zero_grads_in_model_dtype``)."""
        return self is Stack.MEGATRON_CORE

    @property
    def stores_param_remainders(self) -> bool:
        """Whether --precision-aware-optimizer is one of its choices: Megatron-Core's
        --use-precision-aware-optimizer (TransformerEngine's FusedAdam keeps 16-bit master remainders)."""
        return self is Stack.MEGATRON_CORE

    @property
    def trains_pure_bf16(self) -> bool:
        """Whether --pure-bf16 is one of its choices (weights, gradients and AdamW moments all bf16, no
        fp32 master): trainplan's trainer casts the weights to bf16 before sharding (trainer/parallel.py
        ``cast_to_pure_bf16``); torchtitan's ``training.dtype = "bfloat16"`` builds the model in bf16
        ("without an extra copy of fp32 weights": torchtitan/config/configs.py l.87, trainer.py l.358 at
        b5bcd76; pytorch/torchtitan#1646); HF Trainer trains the dtype a model was loaded in, and
        accelerate's FSDP2 upcasts it to fp32 only where mixed precision is on (src/accelerate/utils/
        fsdp_utils.py l.803-810 at 16cb6eb), so a model loaded in bf16 without --bf16. Not DeepSpeed,
        whose ``bf16_master_weights_and_grads`` keeps a bf16 master partition cloned beside the model's
        weights (runtime/zero/stage_1_and_2.py l.492 at edaa722), a copy pure bf16 has not; not
        llm-foundry, whose Composer precisions are fp32 or autocast over fp32 weights
        (composer/core/precision.py); not the Megatron family, whose optimizer wrappers always keep
        main params (NVIDIA/Megatron-LM#1821, open), nor DeepSeek-V3 (fp32 masters, report sec. 3.3.4)."""
        return self in (Stack.TRAINPLAN, Stack.TORCHTITAN, Stack.HF_TRAINER)

    @property
    def serialises_host(self) -> bool:
        """Whether its profile times the host's dispatch in series with the GPU (``host_overlap`` < 1:
        megatron-deepspeed, run with CUDA_LAUNCH_BLOCKING=1 by both its measured sources)."""
        return STACK_SETTINGS[self].host_overlap < 1.0

    @property
    def attention_kernels(self) -> frozenset[AttentionKernel] | None:
        """The attention kernels the stack's code can call (None: any the GPU runs). Megatron-LM
        before Megatron-Core and Megatron-DeepSpeed have their unfused attention, FlashAttention
        (--use-flash-attn, --use-flash-attn-v2) and its Triton port (--use-flash-attn-triton:
        Megatron-LM's 2023 README, Microsoft's megatron/arguments.py); FlashAttention-3 and cuDNN's
        fused attention come with TransformerEngine, under megatron-core (trial s34:
        `--stack megatron-lm --attention flash3` was accepted and timed 48 % faster)."""
        if self in (Stack.MEGATRON_LM, Stack.MEGATRON_DEEPSPEED):
            return frozenset({AttentionKernel.EAGER, AttentionKernel.FLASH2, AttentionKernel.TRITON})
        return None

    def calls(self, kernel: AttentionKernel) -> bool:
        """Whether the stack's code can call ``kernel`` (``attention_kernels``)."""
        kernels = self.attention_kernels
        return kernels is None or kernel in kernels

    @property
    def attention_via_sdpa(self) -> bool:
        """Whether the stack's attention is PyTorch's SDPA, whose dispatch picks the kernel: cuDNN
        first on Hopper and Blackwell from torch 2.11, whose wheels bundle a cuDNN newer than 9.15
        (huggingface/transformers#48163), FlashAttention-2 before (trial s31: a 16 % difference at
        16K under hf-trainer, unsaid)."""
        return self in (Stack.TRAINPLAN, Stack.TORCHTITAN, Stack.HF_TRAINER, Stack.DEEPSPEED)

    @property
    def offloads_sharded_states_only(self) -> bool:
        """Whether the stack's host offload needs sharded optimizer states (trial s31: a deepspeed
        plan offloaded at ZeRO stage 0). DeepSpeed's ZeRO-Offload is a ZeRO stage's (config docs,
        offload_optimizer: "valid for ZeRO stage 1, 2, 3"); Megatron-Core's --optimizer-cpu-offload
        needs the precision-aware optimizer, which "only supported with distributed optimizer"
        (megatron/core/optimizer/__init__.py at d98e8a6). FSDP2's CPUOffloadPolicy (trainplan,
        torchtitan) also runs on a replicated group."""
        return self in (
            Stack.DEEPSPEED,
            Stack.MEGATRON_DEEPSPEED,
            Stack.MEGATRON_LM,
            Stack.MEGATRON_CORE,
            Stack.DEEPSEEK_V3,
        )

    @property
    def fsdp_word(self) -> str:
        """What the stack calls full sharding in a layout's words: ZeRO-3 under DeepSpeed's engines
        (trial s26: a deepspeed estimate printed "fsdp"); ``--sharding`` takes both (ui/cli_options.py)."""
        return DEEPSPEED_FSDP_WORD if self in (Stack.DEEPSPEED, Stack.MEGATRON_DEEPSPEED) else "fsdp"

    @property
    def compiles(self) -> bool:
        """Whether ``--compile`` (torch.compile over the model) is one of the stack's choices:
        PyTorch's stacks have it (torchtitan --compile, HF Trainer's torch_compile, DeepSpeed's
        engine.compile, Composer's compile_config); the Megatron family and DeepSeek's run their
        own fused kernels instead (trial s26: `--stack megatron-core --compile` printed "compile"
        and changed nothing)."""
        return self in TORCH_COMPILE_STACKS

    @property
    def modules(self) -> Implementation | None:
        """The modules the stack trains: Hugging Face's (HF Trainer, DeepSpeed) or its own fused
        ones (torchtitan, llm-foundry, Megatron's, DeepSeek's), timed with the native decoder's
        tables whatever the family (its validation rows are predicted so: validation/fsdp_runs.py,
        whole_runs.py); None for trainplan, whose trainer builds natively what it can and takes
        Hugging Face's modules otherwise (``default_implementation``)."""
        if self is Stack.TRAINPLAN:
            return None
        return Implementation.HF if self in (Stack.HF_TRAINER, Stack.DEEPSPEED) else Implementation.NATIVE


# The stacks whose runs may torch.compile the model (``Stack.compiles``).
TORCH_COMPILE_STACKS = frozenset(
    {Stack.TRAINPLAN, Stack.TORCHTITAN, Stack.HF_TRAINER, Stack.DEEPSPEED, Stack.LLM_FOUNDRY}
)

STACK_SETTINGS: dict[Stack, ModelingSettings] = {
    Stack.TRAINPLAN: DEFAULT_SETTINGS,
    Stack.TORCHTITAN: TORCHTITAN_SETTINGS,
    Stack.HF_TRAINER: HF_TRAINER_SETTINGS,
    Stack.DEEPSPEED: DEEPSPEED_SETTINGS,
    Stack.LLM_FOUNDRY: LLM_FOUNDRY_SETTINGS,
    Stack.MEGATRON_LM: MEGATRON_LM_SETTINGS,
    Stack.MEGATRON_DEEPSPEED: MEGATRON_DEEPSPEED_SETTINGS,
    Stack.MEGATRON_CORE: MEGATRON_CORE_SETTINGS,
    Stack.DEEPSEEK_V3: DEEPSEEK_V3_SETTINGS,
}
