"""The modelling assumptions of a whole job beyond its step: failures and checkpoints, the run's
other losses, the host side of CPU offload, and power.

``ModelingSettings`` (planner/model/settings.py) is these and the step's settings in one flat
record: ``JobSettings`` is its base, kept here so that each module stays readable. Sources as in
settings.py: ``docs/model.md`` gives each one's.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog.terms import TermBilling
from planner.units import FP32_BYTES, GIB, HOURS_PER_YEAR, MONTHS_PER_YEAR, SECONDS_PER_MINUTE

# --- the host's AdamW step under CPU offload: one published timing on a known host ----------
# Ren et al. 2021, "ZeRO-Offload: Democratizing Billion-Scale Model Training" (USENIX ATC '21,
# arXiv:2101.06840), Table 4 "Adam latency (s) for PyTorch (PT) and CPU-Adam": 10 billion
# parameters in 2.57 s with DeepSpeed's CPU-Adam and 14.76 s with PyTorch's CPU Adam (PT-CPU),
# its largest row (1-10 billion; CPU-Adam's median rate of the five, PT-CPU's median 3 % above
# it); measured on a DGX-2 (Table 2: 2 Intel Xeon Platinum 8168, 1.5 TB of 2666 MHz DDR4). Both
# tables read as reproduced in github.com/Elvin-Ma/ai_papers zero/images/zero-offload-table{2,4}.jpg,
# read 2026-12-03.
ZERO_OFFLOAD_ADAM_PARAMS = 10e9
ZERO_OFFLOAD_CPU_ADAM_S = 2.57
ZERO_OFFLOAD_PT_CPU_S = 14.76
# That host's DRAM bandwidth: 2 sockets x 6 DDR4 channels (Xeon Scalable, Skylake-SP: "six memory
# channels" per processor, Dell whitepaper "Balanced Memory with 2nd Generation Intel Xeon
# Scalable Processors", 2019) x 2666 MT/s x 8 bytes = 256 GB/s.
ZERO_OFFLOAD_HOST_MEMORY_BANDWIDTH = 2 * 6 * 2666e6 * 8
# What each implementation reads and writes per parameter (fp32 throughout, bytes counted once
# per pass, write-allocate not counted). torch's unfused / foreach Adam(W) runs one pass per op:
# m <- lerp (or mul, add) of m and g; v <- v x b2 + (1 - b2) g^2 (mul, addcmul); d <- sqrt(v) /
# bc2 + eps (three passes through a temporary); p <- p - lr m / d (addcdiv); AdamW's p x (1 - lr
# wd) too: 80 bytes either way (torch 1.x Adam as measured, torch 2.x AdamW as trainplan runs).
TORCH_ADAM_BYTES_PER_PARAM = 80.0
# DeepSpeed's CPU-Adam fuses the step into one AVX pass: fp32 param, grad, m, v read (16), param,
# m, v written (12), and the half-precision copy of the parameter for the GPU written (2;
# ZeRO-Offload's Algorithm 1, its tiled copy to the GPU).
DEEPSPEED_CPU_ADAM_BYTES_PER_PARAM = 30.0
# The share of the DRAM bandwidth each reached there: rate x bytes / bandwidth (0.21 and 0.46).
TORCH_ADAM_HOST_BANDWIDTH_FRACTION = (
    ZERO_OFFLOAD_ADAM_PARAMS / ZERO_OFFLOAD_PT_CPU_S * TORCH_ADAM_BYTES_PER_PARAM / ZERO_OFFLOAD_HOST_MEMORY_BANDWIDTH
)
DEEPSPEED_CPU_ADAM_HOST_BANDWIDTH_FRACTION = (
    ZERO_OFFLOAD_ADAM_PARAMS
    / ZERO_OFFLOAD_CPU_ADAM_S
    * DEEPSPEED_CPU_ADAM_BYTES_PER_PARAM
    / ZERO_OFFLOAD_HOST_MEMORY_BANDWIDTH
)


def clip_streamed_bytes(grad: float) -> float:
    """Bytes gradient clipping streams per parameter: it reads every gradient once (foreach norm)
    and scales it (read + write), 3 x the gradient's width."""
    return 3.0 * grad


# fp32 gradients' (``ModelingSettings.clip_bytes_per_param``'s default): 12.
CLIP_BYTES_PER_PARAM = clip_streamed_bytes(FP32_BYTES)


@dataclass(frozen=True)
class AccumOffload:
    """What a micro-batch after the first costs under host offload where gradients are reduced
    every micro-batch (fsdp / zero2 without a pipeline): the stack moves the rank's reduced
    gradient shard to the host each time and accumulates it there (planner/model/host.py
    ``offload_accum_s``; docs/deepspeed-zero-reading.md, "Offload under gradient accumulation")."""

    # Bytes per parameter of the rank's gradient shard that cross the host link per such
    # micro-batch, in its busier direction (the link is full duplex: up and down run at once).
    link_bytes_per_param: float = 0.0
    # Host DRAM bytes per parameter of the accumulation add where it runs on the CPU (read both
    # operands, write the sum); 0 where the stack adds on the GPU.
    host_add_bytes_per_param: float = 0.0
    # Whether the copy blocks the thread that drives the backward (the GPU idles until the copy and
    # the add are done: exposed); else it runs on a side stream under that micro-batch's backward.
    blocking: bool = False
    # Whether the first micro-batch pays it too once there are several (grad_accum 1 keeps the
    # once-per-step path that ``offload_bytes_per_param`` counts).
    from_first_microbatch: bool = False


# Gradients that stay on the GPU until the step (Megatron's optimizer offload keeps the DDP buffer
# there): no per-micro-batch host traffic.
NO_ACCUM_OFFLOAD = AccumOffload()
# FSDP2 ``CPUOffloadPolicy`` (trainplan's trainer, torchtitan), torch 2.13
# torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py ``foreach_reduce``, lines 710-749: the
# reduced shard, cast to the sharded parameter's fp32 (``_to_dtype_if_needed(reduce_output,
# orig_dtype)``, l. 696), is copied to the host ``non_blocking=fsdp_param.pin_memory and not
# to_accumulate_grad`` (l. 729-739): where a gradient already exists the copy is blocking, and
# ``grad._local_tensor += new_sharded_grad`` (l. 749) adds on the CPU, on the thread that runs
# the backward's hooks: 4 bytes down, 4 + 4 read and 4 written on the host, all exposed.
FSDP2_ACCUM_OFFLOAD = AccumOffload(link_bytes_per_param=4.0, host_add_bytes_per_param=12.0, blocking=True)
# PyTorch FSDP1 ``CPUOffload(offload_params=True)`` (Composer, llm-foundry), torch 2.13
# torch/distributed/fsdp/_runtime_utils.py: the reduced shard accumulates on the GPU
# (``_saved_grad_shard += sharded_grad``, l. 924) and is copied whole to ``_cpu_grad`` after every
# reduction, ``non_blocking`` for sharded strategies (l. 984-986) on the post-backward stream.
FSDP1_ACCUM_OFFLOAD = AccumOffload(link_bytes_per_param=4.0)
# DeepSpeed ZeRO-3 ``offload_optimizer`` (edaa7221, deepspeed/runtime/zero/stage3.py
# ``partition_grads``, l. 1904-1919): after the first micro-batch each reduced partition's fp32
# accumulation buffer (pinned host memory, ``grad_partitions_flat_buffer`` l. 742-746, in
# ``gradient_accumulation_dtype``, fp32) is copied up, added to on the GPU ("adding directly to
# cpu is very slow") and copied back, both ``non_blocking`` on ``reduce_and_partition_stream``
# (l. 1591; a side stream under ``overlap_comm``, ZeRO-3's default, l. 335-336), the backward's
# epilogue waiting for it (l. 1363-1364): 4 bytes each way, hidden under the backward.
DEEPSPEED_ZERO3_ACCUM_OFFLOAD = AccumOffload(link_bytes_per_param=4.0)
# DeepSpeed ZeRO-2 ``offload_optimizer`` (stage_1_and_2.py ``copy_grads_in_partition`` l. 1650-1667,
# ``async_accumulate_grad_in_cpu_via_gpu`` l. 1516-1560): with more than one micro-batch every
# backward copies its partition's gradients into a host buffer in the parameter's dtype (bf16,
# l. 1527) and, after the first, first copies that buffer up and adds on the GPU: 2 bytes each
# way, the first micro-batch's copy down too; ``non_blocking`` on the reduction stream under
# ``overlap_comm`` (l. 1720-1727; on the compute stream without it: ``ZeroConfig``).
DEEPSPEED_ZERO2_ACCUM_OFFLOAD = AccumOffload(link_bytes_per_param=2.0, from_first_microbatch=True)


@dataclass(frozen=True)
class AccumSync:
    """What a stack that shards gradients (fsdp, zero2; without a pipeline, whose schedule reduces
    once a step whatever the sharding) does on the micro-batches before a step's last
    (planner/model/accum_sync.py; docs/hf-trainer-reading.md)."""

    # Whether every micro-batch reduce-scatters its gradients, so they stay sharded. False: the
    # inner micro-batches skip the reduction and accumulate the whole model's gradients on the GPU,
    # in the compute dtype (the reduce dtype, where it is the parameters'), reduced once, by the
    # step's last micro-batch; offloaded only then.
    reduce_every_microbatch: bool = True
    # Whether zero2 (parameters kept gathered from forward to backward) gathers them again every
    # micro-batch (FSDP2 reshards after every backward unless told otherwise); False: once a step.
    zero2_gather_every_microbatch: bool = False
    # Whether data parallelism without sharding (DDP) all-reduces after every micro-batch's backward too,
    # each under that backward, the inner ones not skipped (review56): torchtitan, whose trainer.py (b5bcd76,
    # l.856-900) runs ``loss.backward()`` per accumulation step on ``fully_shard`` at a shard degree of 1
    # (models/llama3/parallelize.py l.57-77) and never sets ``set_requires_gradient_sync`` (FSDP2's default:
    # sync). False: once, in the last backward (trainplan's ``set_micro_batch_sync``, accelerate's no_sync,
    # nanotron's engine.py l.104-118 at 2411b022a75f).
    ddp_reduce_every_microbatch: bool = False


# trainplan's trainer (trainer/parallel.py ``set_micro_batch_sync``): FSDP2 reduce-scatters after
# every backward under fsdp and zero2, and keeps zero2's parameters gathered through the window
# (``set_reshard_after_backward(False)`` on inner micro-batches); DeepSpeed's ZeRO-2/3 hooks reduce
# every micro-batch too.
REDUCE_EVERY_MICROBATCH = AccumSync()
# Hugging Face Trainer on accelerate's FSDP (docs/hf-trainer-reading.md, read 2026-12-07): every
# micro-batch but the last runs in ``accelerator.no_sync(model)`` (transformers 5.25.0 trainer.py
# l. 1941-1953; not under DeepSpeed nor accelerate's ``sync_each_batch``). accelerate v1.14.0
# (beb0672a) accelerator.py l. 1165-1170 maps it to FSDP2's ``set_requires_gradient_sync(False)``,
# l. 1171-1178 to FSDP1's ``no_sync()``. Both skip the reduce-scatter (torch 2.13
# _fully_shard/_fsdp_param_group.py l. 607-612; fsdp/_runtime_utils.py l. 742-745) and keep the
# unsharded gradient in the reduce dtype (FSDP2, _fsdp_param.py l. 802-813) or in the gathered
# parameters' (FSDP1, _flat_param.py l. 1280-1290): both are accelerate's mixed-precision dtype
# (utils/dataclasses.py l. 2118, ``{"param_dtype": dtype, "reduce_dtype": dtype}``). FSDP1
# offloads it only after the sync (fully_sharded_data_parallel.py l. 1047-1049). Parameters are
# gathered as without no_sync: FULL_SHARD reshards after every backward (_runtime_utils.py
# l. 811-828; FSDP2's ``reshard_after_backward`` stays True, _fsdp_param_group.py l. 223), so
# FSDP2's zero2 (``reshard_after_forward=False``) gathers again each micro-batch; FSDP2 is
# transformers' default ``fsdp_config`` version (training_args.py l. 2826). FSDP1's SHARD_GRAD_OP
# keeps them gathered through no_sync (api.py l. 48-49): once a step, not modelled.
ACCELERATE_NO_SYNC = AccumSync(reduce_every_microbatch=False, zero2_gather_every_microbatch=True)
# torchtitan: FSDP2 with no accumulation switches at all, its DDP too (``ddp_reduce_every_microbatch``).
TORCHTITAN_ACCUM_SYNC = AccumSync(ddp_reduce_every_microbatch=True)


@dataclass(frozen=True)
class JobSettings:
    """Failures, checkpoints, the run's other losses, offload's host and power (the base of
    ``ModelingSettings``)."""

    # --- failures and checkpoints (planner/model/goodput.py) -------------------------------
    # Interruptions per GPU-hour and per node-hour, used where the GPU's (node's) catalog file
    # has no failures_per_1k_gpu_days (failures_per_1k_node_days). Llama 3 405B pretraining saw
    # 419 unexpected interruptions in 54 days on 16,384 H100 in 2,048 8-GPU hosts (Dubey et al.
    # 2024, "The Llama 3 Herd of Models", sec. 3.3.4, root-cause table): 53 were host parts
    # (NIC, SSD, PSU, chassis, IO board, CPU, DRAM) or unplanned host maintenance, and scale
    # with the node count; the other 366 (GPU, HBM, network, software, NCCL) with the GPU count:
    # 366 / (16,384 x 54 x 24) per GPU-hour + 53 / (2,048 x 54 x 24) per node-hour, a job
    # MTTF of 3.1 h at 16K GPUs.
    failure_rate_per_gpu_hour: float = 366 / (16_384 * 54 * 24)
    failure_rate_per_node_hour: float = 53 / (2_048 * 54 * 24)
    # False: plan as if nothing ever failed (no lost time, no periodic checkpoints).
    model_failures: bool = True
    # A multiplier on both rates, the catalog's or the two above (a user's cluster that fails more
    # or less often than Llama 3's: --failure-rate-x, planner/model/run_loss_inputs.py); a spot
    # price's preemptions are the market's, not scaled.
    failure_rate_scale: float = 1.0
    # Checkpoint write (and restore) bandwidth per GPU, each rank writing its own shard: Llama
    # 3's Tectonic store sustains 2 TB/s (peak 7 TB/s; same paper, sec. 3.3.1) for 16,384
    # GPUs = 122 MB/s per GPU, scaled linearly with the job's GPU count.
    checkpoint_bandwidth_bytes_per_s_per_gpu: float = 2e12 / 16_384
    # The job's own storage: its aggregate write bandwidth, whatever its GPU count (a user's store,
    # --checkpoint-write-gb-per-s); None scales the per-GPU figure above with the GPUs.
    checkpoint_bandwidth_bytes_per_s: float | None = None
    # Fixed cost of one restart besides reading the checkpoint back: detect the failure,
    # reschedule onto spare nodes, start the processes, set up NCCL. ESTIMATE (no published
    # breakdown): 10 min, which with the two numbers above gives the 405B run 92 % goodput,
    # in line with the "higher than 90 % effective training time" Llama 3 reports.
    restart_overhead_s: float = 600.0
    # A restore reads the checkpoint back this many times slower than it was written: ByteDance's
    # ByteCheckpoint (NSDI'25) measured loads 2.5x (405B: 129 s vs 51 s) to 13x (7B: 266 s vs 20 s)
    # the save; the lower end (the planner's saves are large). Was 1 (restore = write).
    restore_over_save: float = 2.5
    # --- a whole run's other losses (planner/model/goodput.py run_losses) ---------------------
    # In-loop evaluation's share of training time: BLOOM's logs measure 0.7 %; Pythia's config
    # (eval every 1,000 steps) 0.33 %, NeMo's defaults 0.53 % (research notes in docs/model.md,
    # "Goodput"): 0.5 %.
    eval_time_fraction: float = 0.005
    # Input-pipeline stalls' share: none with prefetching loader workers (BLOOM: 3.4 % slower with
    # 0 workers, none with 2; MegaScale's data-pipeline fixes were worth <= 1.1 % MFU with others).
    data_stall_fraction: float = 0.0
    # Spread of per-rank step speed (slow hosts, thermals, jitter) whose slowest rank a step waits
    # for: ESTIMATE, bounded by MegaScale's flat MFU from 2,240 to 11,200 GPUs (NSDI'24; at most
    # ~1 % lost to jitter there) and its ~0.5 % of hosts running ~10 % slow: 0.5 %.
    straggler_sigma: float = 0.005
    # Planned interruptions (maintenance, upgrades) per node-hour, each a restart without lost
    # work: Llama 3 405B had 47 planned in 54 days on 2,048 hosts (Dubey et al. 2024, sec. 3.3.4).
    planned_interruptions_per_node_hour: float = 47 / (2_048 * 54 * 24)
    # Start-up once per run: container pull, process-group and NCCL set-up, data index, model
    # init and the first compile: MegaScale measured 1,047 s by default at 10K GPUs, < 30 s
    # optimised; ESTIMATE 10 min.
    job_startup_s: float = 600.0
    # --- host memory and time of CPU offload (planner/model/host.py) ------------------------
    # Share of a node's host memory the offloaded states (fp32 params, gradients, AdamW moments
    # of the node's ranks) may take. ASSUMPTION: the rest holds the OS, the CUDA driver's pinned
    # staging buffers, data-loader workers and the page cache; offloaded states are pinned, so
    # the kernel cannot page them out.
    host_memory_usable_fraction: float = 0.8
    # Host memory per node where the catalog states none (nodes/nvl72.toml, pcie-8-nvlink-quads.toml,
    # whose H200 NVL states its own): the smallest 8-GPU host of those the catalog sources (512 GB:
    # an 8x A100 PCIe Gigabyte G482-Z54 in MLPerf Inference v2.1, and a Frontier node).
    host_memory_bytes_per_node: float = 512 * GIB
    # The host's optimizer step streams the offloaded states through the node's DRAM: memory-
    # bandwidth bound, it updates host_memory_bandwidth x host_adam_bandwidth_fraction /
    # host_adam_bytes_per_param parameters per second, the node's ranks sharing it, on the
    # critical path of every step (no delayed update). planner/model/host.py.
    # Host DRAM bandwidth per node where the catalog states none (GPUSpec
    # .host_memory_bandwidth_bytes_per_s_per_node): ASSUMPTION, the calibration host's (DGX-2,
    # ZERO_OFFLOAD_HOST_MEMORY_BANDWIDTH), the slowest dual-socket host sourced, so that such a
    # node updates at the published ZeRO-Offload rates.
    host_memory_bandwidth_bytes_per_s_per_node: float = ZERO_OFFLOAD_HOST_MEMORY_BANDWIDTH
    # Bytes of host DRAM traffic per parameter of the step: trainplan's trainer offloads with
    # FSDP2's CPUOffloadPolicy and runs torch's foreach AdamW on the CPU (trainer/optim.py:
    # fused only on CUDA), TORCH_ADAM_BYTES_PER_PARAM, then clips the gradients on the host (the
    # norm reads each, the scale reads and writes it: CLIP_BYTES_PER_PARAM).
    host_adam_bytes_per_param: float = TORCH_ADAM_BYTES_PER_PARAM + CLIP_BYTES_PER_PARAM
    # Whether host offload also takes unsharded gradients (ZeRO-0/1) off the GPU. FSDP2's
    # CPUOffloadPolicy moves every reduced gradient to the host (trainplan, torchtitan; a
    # replicated group too). DeepSpeed's ZeRO-1 keeps whole gradients on the GPU until they are
    # reduced at the step (stage_1_and_2.py, partition_gradients off), and Megatron's optimizer
    # offload keeps the DDP gradient buffer there (only the fp32 master weights and moments move
    # to its hybrid device optimizer): False in their profiles (trial s31: a ZeRO-1 offload plan
    # on 24 GB cards counted no gradients).
    offload_unsharded_grads: bool = True
    # Share of the DRAM bandwidth that traffic reaches: PUBLISHED for torch's loop,
    # TORCH_ADAM_HOST_BANDWIDTH_FRACTION (ZeRO-Offload's PT-CPU on the DGX-2).
    host_adam_bandwidth_fraction: float = TORCH_ADAM_HOST_BANDWIDTH_FRACTION
    # Gradient accumulation under offload where gradients are reduced every micro-batch: the
    # stack's rule for full sharding (fsdp; DeepSpeed's ZeRO-3) and for zero2. ``AccumOffload``
    # above gives each stack's reading; a CPU add runs at host_adam_bandwidth_fraction of the
    # host's DRAM bandwidth (torch's CPU kernels, as its AdamW), the node's ranks sharing it.
    offload_accum_fsdp: AccumOffload = FSDP2_ACCUM_OFFLOAD
    offload_accum_zero2: AccumOffload = FSDP2_ACCUM_OFFLOAD
    # The micro-batches before a step's last under fsdp / zero2 without a pipeline: reduced every
    # one (trainplan, torchtitan, DeepSpeed), or skipped and accumulated whole (HF Trainer's
    # no_sync): ``AccumSync`` above.
    accum_sync: AccumSync = REDUCE_EVERY_MICROBATCH
    # --- power (planner/model/energy.py) ----------------------------------------------------
    # A server's average wall power while it trains, as a fraction of its maximum system power
    # (the catalog's node_power_w). ESTIMATE: DGX H100 draws 6.5-8.5 kW "typical" against its
    # 10.2 kW maximum (0.64-0.83; supercluster.blog "AI Supercluster: NVIDIA DGX Power, Cooling,
    # and Efficiency", read 2026-12-03); the top of that range, as LLM training keeps every GPU
    # near its power limit.
    power_fraction_of_max: float = 0.8
    # The host's share of a server's maximum power (CPUs, memory, NICs, switches, fans, supply
    # losses) as a fraction of its GPUs' TDP, for GPUs whose servers have no node_power_w.
    # ESTIMATE: the lowest of the sourced DGX figures: DGX A100 6.5 kW for 8 x 400 W (1.03),
    # DGX H100 10.2 kW for 8 x 700 W (0.82), DGX B200 14.3 kW for 8 x 1,000 W (0.79), rounded.
    host_power_fraction_of_tdp: float = 0.8
    # Facility power over IT power. ASSUMPTION: a modern colocation hall, between hyperscale
    # fleets (Google's 2023 fleet average 1.10, Google Environmental Report 2024) and the
    # industry average (1.58, Uptime Institute Global Data Center Survey 2023). The fleet
    # sizing's TcoAssumptions.pue defaults to this one.
    pue: float = 1.25
    # Spot preemptions per node-hour where a spot offer states none (planner/catalog/prices.py;
    # goodput counts them as host failures). ESTIMATE: AWS Spot Instance Advisor's "frequency of
    # interruption" band for p5.48xlarge (8 x H100), 15-20 % of instances a month, read on
    # 2026-02-24 (thundercompute.com, "Cloud GPU Spot Instance Availability and Interruption
    # Rates (2026)"; p4d 5-10 %): the midpoint, 0.175 per node over a month of 730.5 hours.
    spot_interruptions_per_node_hour: float = 0.175 / (HOURS_PER_YEAR / MONTHS_PER_YEAR)
    # What a spot preemption costs beyond a failure's lost work and restart: the wait until a
    # node of the type can be had again in the job's zone (the job needs all its nodes back).
    # ESTIMATE: 80 minutes, the mean length of the capacity-unavailable periods (from the probe
    # that finds capacity gone to the first that finds it back) in single-zone GPU spot traces:
    # 82 min from AWS p3.2xlarge preemption-to-relaunch traces (4 zones, April 2023, 200 waits;
    # skypilot-org/spot-traces, the data of "Can't Be Late", NSDI'24), 74 min for one GCP
    # a3-highgpu-1g (H100) and 86 min for 16 of them in one zone (13 zones, October 2025, 829 and
    # 1,366 waits; SkyNomad's artifact, andylizf/skynomad-artifact data/h100_16_runs). The waits'
    # medians are 10-30 min and their tails days; a job free to restart in any zone waits 15-35
    # min (docs/spot-capacity-wait.md: the method, the traces and their commits).
    spot_capacity_wait_s: float = 80 * SECONDS_PER_MINUTE
    # --- what a reserved price bills (planner/catalog/terms.py) ------------------------------
    # A reserved price's term, billed whole to a job that holds its GPUs alone: plan and estimate
    # set it under --price-kind reserved-1y / reserved-3y (planner/request.py ``request_settings``),
    # as EC2 reservations, Google committed-use discounts and Azure reservations bill every hour of
    # a 1- or 3-year term, used or not (``RESERVED_TERM_YEARS``). None bills the job's hours:
    # on-demand, spot, and a portfolio's or fleet's jobs, which share their terms (both reserve
    # them, ``reserved.ReservedPrices``). Its ``filled``, the share of the term beyond the job that other
    # work uses and pays: ASSUMPTION 0 (nothing else is known to), --term-filled says otherwise.
    term: TermBilling | None = None
