"""Every label of the Streamlit app in English and Chinese (简体中文).

``Labels(lang)("key", **values)`` returns the label with ``str.format`` placeholders filled;
both languages of a key must use the same placeholders (tests/ui/test_app.py checks). What the
planner answers (why-not, infeasibility, plan notes) is worded from its typed fields with the
labels of ``ui.i18n_messages``.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

from planner.api.accum_notices import DEFERRED_REDUCTION_WORDS, ZERO2_REGATHER_WORDS
from planner.api.notices import MEGATRON_LM_ERA_WORDS, ZERO3_ACROSS_NODES_WORDS
from planner.catalog.prices import PRICE_KINDS, PriceBasis
from planner.model.attention_kernels import AttentionKernel
from planner.model.energy import power_basis_words
from planner.model.rates import CP_FALLBACK_WORDS, KERNEL_WORDS, SDPA_CUDNN_NOTE, SDPA_SKIPS_CUDNN_NOTE
from planner.model.settings import DEFAULT_SETTINGS
from planner.units import HOURS_PER_YEAR
from ui.i18n_fleet import FLEET_LABELS
from ui.i18n_messages import MESSAGE_LABELS
from ui.i18n_page import PAGE_LABELS
from ui.i18n_run_losses import RUN_LOSS_LABELS

LANGUAGE_NAMES = {"en": "English", "zh": "中文"}

# key -> (English, 中文)
_LABELS: dict[str, tuple[str, str]] = {
    # page
    "title": ("trainplan: size your LLM training", "trainplan：LLM 训练规划"),
    "subtitle": (
        "Pick a model, a token budget and the GPUs you can get; the planner chooses GPU type, count and "
        "parallel layout, and says what it costs.",
        "选择模型、训练 token 数和可用的 GPU；规划器会给出 GPU 型号、数量与并行布局，以及所需费用。",
    ),
    "working": ("Planning…", "正在规划…"),
    "fix_inputs": ("Fix the inputs in the sidebar to see a plan.", "请先修正侧栏中的输入，才能显示方案。"),
    # sidebar: model
    "portfolio_mode": ("Portfolio mode (several jobs)", "组合模式（多个任务）"),
    "portfolio_help": (
        "Add the job configured in the sidebar to the list, repeat with other settings, and the "
        "planner schedules all jobs on the shared GPU inventory.",
        "将侧栏中配置的任务加入列表，改变设置后重复添加，规划器会在共享的 GPU 库存上安排所有任务。",
    ),
    "section_model": ("Model", "模型"),
    "model_source": ("Model source", "模型来源"),
    "opt_preset": ("Preset", "预设"),
    "opt_upload": ("config.json", "config.json 文件"),
    "opt_custom": ("Custom", "自定义"),
    "preset": ("Preset model", "预设模型"),
    "upload_config": ("Hugging Face config.json (at most 1 MB)", "Hugging Face config.json（最大 1 MB）"),
    "upload_help": (
        "Read as JSON data only: nothing is downloaded or executed.",
        "仅作为 JSON 数据读取：不会下载或执行任何内容。",
    ),
    "upload_needed": (
        "Upload a config.json to plan for it (at most 1 MB: the browser refuses a larger file and marks it red; "
        "a model config is a few KB).",
        "请上传 config.json 以进行规划（最大 1 MB：浏览器会拒绝更大的文件并标红；模型配置通常只有几 KB）。",
    ),
    "bad_config": ("Cannot use this config: {error}", "无法使用该配置：{error}"),
    "bad_custom": ("Invalid model dimensions: {error}", "模型维度无效：{error}"),
    "custom_layers": ("Layers", "层数"),
    "custom_hidden": ("Hidden size", "隐藏层维度"),
    "custom_ffn": ("FFN size (per expert)", "FFN 维度（每个专家）"),
    "custom_heads": ("Attention heads", "注意力头数"),
    "custom_kv_heads": ("Key/value heads", "KV 头数"),
    "custom_vocab": ("Vocabulary", "词表大小"),
    "custom_experts": ("Experts (1 = dense)", "专家数（1 = 稠密）"),
    "custom_experts_per_token": ("Experts per token", "每个 token 的专家数"),
    "tokens_mode": ("Training tokens", "训练 token 数"),
    "opt_chinchilla": ("× Chinchilla (20/param)", "× Chinchilla（每参数 20）"),
    "opt_absolute": ("Absolute", "绝对数量"),
    "chinchilla_multiple": ("Multiple of 20 tokens per parameter", "每参数 20 token 的倍数"),
    "tokens_billions": ("Training tokens (billions)", "训练 token 数（十亿）"),
    "model_summary": (
        "{name}: {params:,.2f} B parameters, {tokens} B training tokens",
        "{name}：{params:,.2f} B 参数，{tokens} B 训练 token",
    ),
    # sidebar: goals
    "section_goals": ("Deadline, budget, objective", "期限、预算与目标"),
    "deadline_days": ("Deadline (days, 0 = none)", "期限（天，0 = 不限）"),
    "budget_usd": ("Budget (USD, 0 = none)", "预算（美元，0 = 不限）"),
    "objective": ("Objective", "优化目标"),
    "risk": ("Judge plans at", "方案评判分位"),
    "risk_help": (
        "The quantile of each plan's error band the search minimises and holds to the deadline and budget: p50 "
        "the median, p80 or p90 the pessimistic end, so a layout wins on evidence, not on the model's optimism; "
        "a deadline or budget never judges a plan under its headline figure. "
        "At p80 and p90 a plan must also fit at the high end of its reserved peak's band, where any plan does.",
        "搜索按每个方案误差区间的该分位数最小化目标并检查期限与预算：p50 为中位数，p80、p90 为悲观端，"
        "使方案凭实测依据而非模型的乐观估计胜出；期限与预算从不按低于方案标题数字的值评判。"
        "在 p80、p90 下，只要有方案能做到，所选方案还须在其预留峰值区间的上端也放得下。",
    ),
    "opt_cost": ("Cheapest", "成本最低"),
    "opt_time": ("Fastest", "时间最短"),
    "opt_mix": ("Mixed", "折中"),
    "cost_weight": ("Weight on cost (1 = cost only)", "成本权重（1 = 只看成本）"),
    # sidebar: GPUs
    "section_gpus": ("GPUs", "GPU"),
    "no_gpus": ("Allow at least one GPU type.", "请至少允许一种 GPU 型号。"),
    "no_kind_offers": (
        # "\\$": the caption's other "$" would open a LaTeX span that "$/h" closes
        "No allowed GPU type has a {kind} offer ({gpus}): rent on demand, tick a type with {kind} offers, or type"
        " your own quote in the table's \\$/h.",
        "所允许的 GPU 型号（{gpus}）都没有 {kind} 报价：请改为按需租用，勾选有 {kind} 报价的型号，或在表中“\\$/时”"
        "一栏填入您自己的报价。",
    ),
    # a type rented at the table's own $/h under a price kind (ui/gpu_table.py with_price_kind)
    "price_yours": ("{gpu} ${price:.2f} (your price)", "{gpu} ${price:.2f}（您的价格）"),
    "pricing": ("GPU pricing", "GPU 计价方式"),
    "opt_on_demand": ("Rent (on demand)", "按需租用"),
    "opt_bought": ("Buy (amortised)", "购买（摊销）"),
    "opt_spot": ("Rent (spot)", "竞价租用"),
    "opt_reserved_1y": ("Rent (1-year reserved)", "一年预留租用"),
    "opt_reserved_3y": ("Rent (3-year reserved)", "三年预留租用"),
    # A price kind's name in running text (planner/catalog/prices.py PRICE_KINDS).
    "kind_on-demand": ("on-demand", "按需"),
    "kind_spot": ("spot", "竞价"),
    "kind_reserved-1y": ("reserved-1y", "一年预留"),
    "kind_reserved-3y": ("reserved-3y", "三年预留"),
    "price_kind_note": (
        "{kind} prices, the median of the providers' offers (hw_catalog/prices): {prices}. "
        "GPUs without such an offer are not rented{dropped} unless given your own \\$/h; the portfolio's rent or buy"
        " (fleet) may still buy them.",
        "{kind}价格取各云厂商报价的中位数（hw_catalog/prices）：{prices}。没有此类报价的 GPU 不租用{dropped}，除非在"
        "“\\$/时”一栏填入您自己的报价；组合模式的“租用还是购买（机队）”仍可购买它们。",
    ),
    "gpu_allowed": ("use", "使用"),  # short headers: the sidebar's table shows four columns (issue 30)
    "gpu_inventory": ("inventory", "库存"),
    "gpu_max": ("max", "上限"),
    "gpu_price": ("$/h", "$/时"),
    "gpu_price_help": (
        "Rent: USD per GPU-hour (the catalog's on-demand price).",
        "租用：每 GPU 小时的美元价格（目录按需价）。",
    ),
    "gpu_purchase": ("buy $", "购价 $"),
    "gpu_memory": ("memory (GiB)", "显存（GiB）"),
    "gpu_bf16": ("bf16 TFLOP/s", "bf16 TFLOP/s（稠密）"),
    "gpu_source": ("provenance of the rates", "参数来源"),
    "inventory_help": (
        "Inventory: blank = no limit, 0 = none of this type, N = at most N GPUs; the same in portfolio mode.",
        "库存：留空 = 不限，0 = 不使用该型号，N = 最多 N 块；组合模式中含义相同。",
    ),
    "gpu_table_help": (
        "Tick the GPU types the planner may use; inventory blank = no limit, 0 = none. Rent: edit $/GPU-hour. "
        "Buy: edit the purchase price (amortised with the ownership assumptions).",
        "勾选规划器可用的 GPU 型号；库存留空 = 不限，0 = 不使用。租用：编辑每 GPU 小时价格。"
        "购买：编辑购买价（按持有成本假设摊销）。",
    ),
    "bad_price": ("{gpu}: the price must be above $0 per GPU-hour.", "{gpu}：价格必须大于每 GPU 小时 0 美元。"),
    "amortised": ("{gpu} = ${price:.2f} per GPU-hour", "{gpu} = 每 GPU 小时 ${price:.2f}"),
    "ownership": ("Ownership assumptions", "持有成本假设"),
    "ownership_help": (
        f"USD/GPU-hour = ((price × (1 − residual) / lifetime + hosting × 12) / {HOURS_PER_YEAR:g} h "
        "+ idle share × power) / utilisation + (1 − idle share) × power; power = the GPU's share of its "
        "server's wall power while training (host and network included) × PUE × electricity.",
        f"每 GPU 小时美元 = ((价格 × (1 − 残值率) / 使用年限 + 托管费 × 12) / {HOURS_PER_YEAR:g} 小时 "
        "+ 空闲比例 × 电费) / 利用率 + (1 − 空闲比例) × 电费；电费 = 训练时该 GPU 分摊的整机墙插功率"
        "（含主机与网络）× PUE × 电价。",
    ),
    "tco_utilisation": ("Utilisation (busy fraction of the year)", "利用率（一年中忙碌的比例）"),
    "tco_lifetime_years": ("Lifetime (years)", "使用年限（年）"),
    "tco_residual": ("Residual value (fraction of price)", "残值（价格的比例）"),
    "tco_electricity": ("Electricity (USD/kWh)", "电价（美元/千瓦时）"),
    "tco_hosting": ("Hosting (USD per GPU-month)", "托管费（美元/GPU·月）"),
    "tco_pue": ("Facility PUE", "机房 PUE"),
    "tco_capital": ("Cost of capital (per year)", "资金成本（每年）"),
    "tco_capital_help": (
        "What the money in the GPUs would earn elsewhere, charged each year on their average book value"
        " (price and resale value averaged). 0: not charged.",
        "投入 GPU 的资金在别处可获得的收益，按其平均账面价值（购价与残值的平均）每年计入。0：不计。",
    ),
    # sidebar: training
    "section_training": ("Training settings", "训练设置"),
    "seq_len": ("Sequence length", "序列长度"),
    "seq_too_long": (
        "{seq_len} tokens is longer than {model}'s context of {limit}: planned as context extension"
        " (positions beyond the pretrained context).",
        "{seq_len} 个 token 超过了 {model} 的上下文长度 {limit}：按上下文扩展规划（位置超出预训练上下文）。",
    ),
    "seq_too_long_learned": (
        "{seq_len} tokens is longer than {model}'s context of {limit}, and its positions are learned: the position"
        " table grows to {seq_len} rows and the new rows start untrained ({limit} keeps the pretrained context).",
        "{seq_len} 个 token 超过了 {model} 的上下文长度 {limit}，且其位置编码是学习得到的：位置表扩展到 {seq_len} 行，"
        "新增的行从未训练的状态开始（{limit} 保留预训练的上下文）。",
    ),
    "global_batch": ("Global batch (tokens)", "全局批大小（token）"),
    "auto": ("auto (by model size)", "自动（按模型规模）"),
    "precision": ("Precision", "精度"),
    "ac": ("Activation checkpointing allowed", "允许的激活重计算"),
    "ac_set_aside": (
        "{stack} has no switch for {modes}: left out of the search, and put back when you pick a stack that has.",
        "{stack} 没有 {modes} 的开关：搜索时不含这些模式；选择支持它们的软件栈后会自动恢复。",
    ),
    "opt_none": ("none", "不使用"),
    "opt_selective": ("selective", "选择性"),
    "opt_full": ("full", "完全"),
    "opt_blocks": ("blocks (first N per stage)", "按块（每段前 N 块）"),
    "card_ac_blocks": ("blocks ({blocks})", "按块（{blocks} 块）"),
    "ac_blocks_unsized": ("blocks", "按块"),  # a chart point's: its frame holds no block count
    "card_ac_blocks_per_rank": ("blocks ({blocks} per pp rank)", "按块（每个 pp 段 {blocks} 块）"),
    "opt_attention": ("attention only", "仅注意力"),
    "no_ac": ("Allow at least one activation-checkpointing mode.", "请至少允许一种激活重计算方式。"),
    "allow_offload": ("Allow CPU offload", "允许 CPU 卸载"),
    "max_gpus": ("Most GPUs to consider", "最多考虑的 GPU 数"),
    "top_k": (
        "Alternatives to list (beside the chosen plan)",
        "列出的备选方案数（选定方案之外）",
    ),  # trial s33: 3 listed 4
    "headroom": ("Memory headroom (%)", "显存余量（%）"),
    "term_filled": ("Reserved term filled by other work (%)", "预留期内由其他工作占用的比例（%）"),
    "term_filled_help": (
        "A reserved price bills whole terms. The share of the term beyond this job that other work uses and"
        " pays for: 0 bills the job the whole term, 100 its own hours only (--term-filled).",
        "预留价格按整个期限计费。本作业之外的剩余期限中由其他工作使用并付费的比例：0 表示本作业承担整个期限，"
        "100 表示只承担自身的小时数（--term-filled）。",
    ),
    "headroom_help": (
        "Fraction of each GPU's memory kept free: a plan fits when reserved memory plus the CUDA "
        "context stays below capacity × (1 − headroom).",
        "每块 GPU 预留的显存比例：当保留显存加 CUDA 上下文不超过 容量 × (1 − 余量) 时方案可行。",
    ),
    # sidebar: software stack and calibration
    "section_stack": ("Software stack and calibration", "软件栈与校准"),
    "stack": ("Predict for the stack", "预测所用的训练软件栈"),
    "stack_help": (
        "trainplan plans can be emitted and run; torchtitan, HF Trainer, DeepSpeed, llm-foundry, Megatron-LM, "
        "Megatron-DeepSpeed, Megatron-Core and DeepSeek-V3's stack estimate what that software would do with the "
        "same layout (estimate only). megatron-lm is Megatron-LM of 2021-22 (no flash attention, no MoE); today's "
        "Megatron-LM runs on Megatron-Core: choose megatron-core for it.",
        "trainplan 方案可以生成任务并运行；torchtitan、HF Trainer、DeepSpeed、llm-foundry、Megatron-LM、"
        "Megatron-DeepSpeed、Megatron-Core 与 DeepSeek-V3 的软件栈只是估算该软件在同一布局下的表现（仅供估算）。"
        "megatron-lm 指 2021–22 年的 Megatron-LM（无 flash attention、无 MoE）；当今的 Megatron-LM 基于 "
        "Megatron-Core，请选择 megatron-core。",
    ),
    "attention": ("Attention kernel", "注意力内核"),
    "network": ("Scale-out network", "节点间网络"),
    "network_default": ("each GPU's own (its reference server's)", "各 GPU 默认（参考服务器配置）"),
    "network_option": ("{id} ({gbit:.0f} Gb/s per GPU)", "{id}（每 GPU {gbit:.0f} Gb/s）"),
    "network_option_curve": (
        "{id} ({gbit:.0f} Gb/s per GPU; all-reduce measured by message size on {nodes} nodes)",
        "{id}（每 GPU {gbit:.0f} Gb/s；all-reduce 按消息大小实测于 {nodes} 个节点）",
    ),
    "network_help": (
        "The fabric between nodes: by default each GPU's reference server's (a DGX H100's 400 Gb/s InfiniBand "
        "per GPU); pick your cluster's to see what a slower or faster network costs.",
        "节点之间的网络：默认为各 GPU 参考服务器的配置（如 DGX H100 每 GPU 400 Gb/s InfiniBand）；"
        "选择您集群的网络，查看更慢或更快的网络带来的影响。",
    ),
    "attention_stack": ("the stack's own", "软件栈默认"),
    "peak_backward": (
        "peak: at the start of the last micro-batch's backward",
        "峰值：最后一个微批反向传播开始时",
    ),
    "peak_end_of_backward": (
        "peak: at the end of the backward (activations freed, every gradient held)",
        "峰值：反向传播结束时（激活已释放，全部梯度在显存中）",
    ),
    "compile": ("torch.compile", "torch.compile 编译"),
    "compile_help": (
        "torch.compile over the model (--compile): fused elementwise kernels (half the eager traffic) and less host "
        "dispatch per block; under torchtitan the loss compiles with the model too (4 bytes a logit at tp 1).",
        "对模型使用 torch.compile（--compile）：融合逐元素算子（流量为 eager 的一半），每块的主机下发更少；"
        "在 torchtitan 下损失函数也随模型一起编译（tp 为 1 时每个 logit 4 字节）。",
    ),
    "partition_activations": ("Partitioned activation checkpoints", "分片激活检查点"),
    "partition_activations_help": (
        "Megatron-DeepSpeed's --partition-activations: each checkpointed block keeps 1/tp of its input and "
        "all-gathers it over the tensor-parallel group before recomputing.",
        "Megatron-DeepSpeed 的 --partition-activations：每个检查点块只保留其输入的 1/tp，"
        "重算前在张量并行组内全收集（all-gather）。",
    ),
    "moe_a2a_overlap": ("Overlapped expert all-to-all", "专家 all-to-all 重叠"),
    "moe_a2a_overlap_help": (
        "Megatron-Core's --overlap-moe-expert-parallel-comm (Megatron-Bridge recipes' moe_a2a_overlap): each "
        "micro-batch's expert all-to-alls run under another micro-batch's compute (combined 1F1B schedule).",
        "Megatron-Core 的 --overlap-moe-expert-parallel-comm（Megatron-Bridge 配方中的 moe_a2a_overlap）："
        "每个微批次的专家 all-to-all 在另一个微批次的计算期间进行（合并 1F1B 调度）。",
    ),
    "tp_comm_overlap": ("TP communication overlap", "张量并行通信重叠"),
    "tp_comm_overlap_help": (
        "Megatron-Core's --tp-comm-overlap (TransformerEngine userbuffers), on as the NeMo / Megatron-Bridge "
        "recipes this stack's figures were fitted on run it. Untick for a Megatron-Core job that does not pass it: "
        "its TP collectives are then hidden only as far as Megatron hides them without it, and the band is "
        "outside the validated envelope (no measured row ran so).",
        "Megatron-Core 的 --tp-comm-overlap（TransformerEngine userbuffers），与本栈拟合所依据的 NeMo / "
        "Megatron-Bridge 配方一样默认开启。若 Megatron-Core 作业未传此参数，请取消勾选：其张量并行通信只按 "
        "Megatron 无此选项时的程度被隐藏，误差区间位于已验证范围之外（没有实测行如此运行）。",
    ),
    "grad_reduce_bf16": ("bf16 gradients", "bf16 梯度"),
    "grad_reduce_bf16_help": (
        "Megatron's --grad-reduce-in-bf16 (NeMo's and Megatron-Bridge's grad_reduce_in_fp32 off, as their FP8 "
        "performance recipes set it): gradient buffers and their data-parallel reductions in bf16, half the bytes of fp32.",
        "Megatron 的 --grad-reduce-in-bf16（即 NeMo 与 Megatron-Bridge 的 grad_reduce_in_fp32 关闭，其 FP8 "
        "性能配方如此设置）：梯度缓冲区及其数据并行归约使用 bf16，字节数为 fp32 的一半。",
    ),
    "param_remainders": ("Precision-aware optimizer", "精度感知优化器"),
    "param_remainders_help": (
        "Megatron-Core's --use-precision-aware-optimizer (NeMo 2's bf16 performance recipes set it): TransformerEngine's "
        "FusedAdam keeps the fp32 master weights as 16-bit remainders beside the bf16 weights, 2 bytes a parameter instead of 4.",
        "Megatron-Core 的 --use-precision-aware-optimizer（NeMo 2 的 bf16 性能配方如此设置）：TransformerEngine 的 "
        "FusedAdam 只保存 fp32 主权重的低 16 位余数（其余位在 bf16 权重中），每个参数 2 字节而非 4 字节。",
    ),
    "pure_bf16": ("Pure bf16", "纯 bf16"),
    "pure_bf16_help": (
        "Weights, gradients and AdamW's moments all in bf16 and no fp32 master copy (2 + 2 + 4 bytes a parameter, not "
        "4 + 4 + 8), as torchtune's dtype: bf16, torchtitan's training.dtype bfloat16 and a Hugging Face model loaded in "
        "bf16 and trained without mixed precision run it; less precise updates than mixed precision. Needs bf16 "
        "precision and no CPU offload; no measured row ran it, so its band is widened.",
        "权重、梯度和 AdamW 的两个矩都用 bf16，不保留 fp32 主权重副本（每个参数 2 + 2 + 4 字节，而非 4 + 4 + 8），"
        "与 torchtune 的 dtype: bf16、torchtitan 的 training.dtype bfloat16、以及以 bf16 加载且不开混合精度训练的 "
        "Hugging Face 模型相同；更新精度低于混合精度。需要 bf16 精度且不使用 CPU 卸载；没有实测行如此运行，误差区间因此放宽。",
    ),
    "attention_help": (
        "The kernel the run uses: the stack's own (cuDNN on H100/H200 and B200/GB200, FlashAttention-2 elsewhere, B300/GB300 included, and "
        "under PyTorch's context parallelism), or a named one; a plan with a named kernel is an estimate.",
        "训练所用的注意力内核：软件栈默认（H100/H200 与 B200/GB200 上为 cuDNN，其他 GPU（含 B300/GB300）及 PyTorch "
        "上下文并行时为 FlashAttention-2），或指定一种；指定内核的方案仅供估算。",
    ),
    "calibration_upload": ("Calibration file (trainplan calibrate)", "校准文件（trainplan calibrate 生成）"),
    "calibration_default": (
        "Default calibration file applied (as in the CLI; upload another to replace it): {path}",
        "已应用默认校准文件（与命令行相同；上传其他文件可替换）：{path}",
    ),
    "calibration_help": (
        "The TOML that `trainplan calibrate` writes: rates measured on your GPUs replace the catalog's "
        "for the GPU types it names.",
        "`trainplan calibrate` 写出的 TOML 文件：用在您的 GPU 上实测的速率替换目录中对应 GPU 型号的速率。",
    ),
    "bad_request": ("Cannot plan: {error}", "无法规划：{error}"),
    # plan card
    "plan_card": ("Plan for {model}", "{model} 的训练方案"),
    "idle_gpus": (
        "This plan uses {used:,} of {inventory:,} {gpu} GPUs ({idle:,} idle) to keep the batch at {batch:,} tokens. "
        "With a batch of {other_batch:,} tokens ({change:+.1%}), {gpus:,} GPUs ({layout}) train in {time} for {cost}.",
        "该方案为保持每步 {batch:,} 个 token 的批大小，只用了 {inventory:,} 块 {gpu} 中的 {used:,} 块（{idle:,} 块空闲）。"
        "若批大小改为 {other_batch:,} 个 token（{change:+.1%}），{gpus:,} 块 GPU（{layout}）用时 {time}，费用 {cost}。",
    ),
    "vary_batch_cost": (
        "Letting the batch vary (within the tolerance) would cost {saving:.0%} less at {risk}: {gpus:,} × {gpu} at"
        " {batch:,} tokens per step ({change:+.1%}).",
        "若允许批大小在容差内变化，{risk} 分位下费用可降低 {saving:.0%}：{gpus:,} × {gpu}，每步 {batch:,} 个 token"
        "（{change:+.1%}）。",
    ),
    "vary_batch_time": (
        "Letting the batch vary (within the tolerance) would take {saving:.0%} less time at {risk}: {gpus:,} × {gpu}"
        " at {batch:,} tokens per step ({change:+.1%}).",
        "若允许批大小在容差内变化，{risk} 分位下训练时间可缩短 {saving:.0%}：{gpus:,} × {gpu}，每步 {batch:,} 个"
        " token（{change:+.1%}）。",
    ),
    "encoders_not_planned": (
        "The model's config.json holds {sections} beside the language model; the plan is the language model's"
        " alone (text-only training): an image or audio run adds the encoders' FLOPs and memory.",
        "模型的 config.json 在语言模型之外还包含 {sections}；本方案只计入语言模型（纯文本训练）：图像或音频训练会增加编码器的"
        "计算量和显存。",
    ),
    "selective_under_megatron": (
        "'Selective' checkpointing here is torchtitan's layer-selective kind (every other block recomputed);"
        " Megatron's selective recompute granularity, which re-runs only the attention core, is 'none' here.",
        "这里的“选择性”重计算是 torchtitan 的分层选择（每隔一个块重计算）；Megatron 的 selective 重计算粒度只重跑注意力核心，"
        "在这里对应“无”。",
    ),
    "own_model_profile": (
        "The deepseek-v3 stack is DeepSeek's in-house stack as its report describes it, measured on DeepSeek-V3"
        " alone: {model} is timed with that run's settings, which no run of this model measured.",
        "deepseek-v3 软件栈是 DeepSeek 报告所描述的内部训练栈，只在 DeepSeek-V3 上实测过：{model} 按那次训练的设置计时，"
        "该模型没有任何实测运行。",
    ),
    "serial_host": (
        "This stack is timed as its measured runs ran, with CUDA_LAUNCH_BLOCKING=1: the host's dispatch runs in"
        " series with the GPU ({host_s:,.1f} s of the {step_s:,.1f} s step, a fitted time per block and"
        " micro-batch); BigScience measured the switch itself at 0-6%, so a run without it may gain less.",
        "该框架按其实测运行的方式计时（CUDA_LAUNCH_BLOCKING=1）：主机下发与 GPU 串行（{step_s:,.1f} 秒步长中的"
        " {host_s:,.1f} 秒，按每块每微批拟合的时间）；BigScience 实测该开关本身只影响 0-6%，不设它的运行收益可能更小。",
    ),
    "zero3_across_nodes": (
        ZERO3_ACROSS_NODES_WORDS + ".",
        "DeepSpeed ZeRO-3 跨 {nodes} 个节点：未找到当前 DeepSpeed 跨节点的公开运行；2021 年代码的 ZeRO-3 在"
        " 384-2,240 块 A100 上的运行（Narayanan 等，2021，表 2）比本模型的计时慢 22-114%（每个权重一次阻塞式收集），"
        "未计入误差带；误差带按无实测行的特征放宽（docs/validation.md，已知偏差）。",
    ),
    "deferred_reduction": (
        DEFERRED_REDUCTION_WORDS + ".",
        "--stack {stack} 按 HF Trainer 在 accelerate FSDP 上的做法每步运行 {accum} 个微批，除最后一个外都在 no_sync 下："
        "每块 GPU 以计算精度持有整个模型的梯度，直到最后一个微批才归约（accelerate 的 sync_each_batch，或 DeepSpeed："
        "--stack deepspeed，每个微批都归约）{zero2}。",
    ),
    "deferred_reduction_zero2": (
        ZERO2_REGATHER_WORDS,
        "；zero2 每个微批都重新收集参数，与 FSDP2（transformers 的默认）一致；FSDP1 的 SHARD_GRAD_OP 每步只收集一次",
    ),
    "megatron_lm_era": (
        MEGATRON_LM_ERA_WORDS + ".",
        "--stack megatron-lm 是 2021-22 年的 Megatron-LM（Narayanan 等，2021；Korthikanti 等，2022：未融合的注意力，"
        "没有 TransformerEngine），此处在它从未运行过的 {gpu} 上计时；如今的 Megatron-LM 仓库用 Megatron-Core 训练："
        "--stack megatron-core。",
    ),
    "a2a_exposed": (
        "The expert all-to-alls are timed exposed; Megatron-Core can hide them under another micro-batch's"
        " compute, as Megatron-Bridge's Qwen3-235B recipes do (the sidebar's \"Overlapped expert all-to-all\";"
        " its host cost is not modelled).",
        "专家 all-to-all 按未隐藏计时；Megatron-Core 可以把它们隐藏在另一个微批的计算之下，Megatron-Bridge 的"
        " Qwen3-235B 配方即如此（侧栏的“专家 all-to-all 重叠”；其主机开销未建模）。",
    ),
    "host_staged": (
        "{gpu}: the driver disables GPU peer-to-peer on this card, so GPU-to-GPU traffic goes through host memory;"
        " the plan times it at the PCIe line rate ({gbps:.0f} GB/s), which it does not reach: its communication is"
        " optimistic.",
        "{gpu}：驱动在此卡上禁用了 GPU 点对点访问，GPU 之间的通信须经主机内存中转；本方案按 PCIe 线速（{gbps:.0f} GB/s）"
        "计时，实际达不到：其通信时间偏乐观。",
    ),
    "larger_batch_cost": (
        "The batch, {sequences:,} sequences, is fewer than the {num_gpus:,} GPUs, so {split} split each one. At"
        " {batch:,} tokens per step ({per_gpu}) it would cost {saving:.0%} less at {risk}: {figure}"
        " against {chosen} ({gpus:,} × {gpu}, {layout}{own}). A larger batch changes the training.",
        "批大小只有 {sequences:,} 个序列，少于 {num_gpus:,} 块 GPU，因此每个序列须由 {split} 拆分。"
        "若每步 {batch:,} 个 token（{per_gpu}），{risk} 分位下费用可降低 {saving:.0%}：{figure}，"
        "现方案为 {chosen}（{gpus:,} × {gpu}，{layout}{own}）。更大的批会改变训练本身。",
    ),
    "larger_batch_time": (
        "The batch, {sequences:,} sequences, is fewer than the {num_gpus:,} GPUs, so {split} split each one. At"
        " {batch:,} tokens per step ({per_gpu}) it would take {saving:.0%} less time at {risk}: {figure}"
        " against {chosen} ({gpus:,} × {gpu}, {layout}{own}). A larger batch changes the training.",
        "批大小只有 {sequences:,} 个序列，少于 {num_gpus:,} 块 GPU，因此每个序列须由 {split} 拆分。"
        "若每步 {batch:,} 个 token（{per_gpu}），{risk} 分位下训练时间可缩短 {saving:.0%}：{figure}，"
        "现方案为 {chosen}（{gpus:,} × {gpu}，{layout}{own}）。更大的批会改变训练本身。",
    ),
    "larger_batch_per_gpu": ("one sequence per GPU", "每块 GPU 一个序列"),
    "larger_batch_fewer": (  # planner/api/batch_offers.py per_gpu_words (buyer trial s50 M2)
        "one sequence per GPU of these {num_gpus:,}; at that batch {gpus:,} of them suffice",
        "这 {num_gpus:,} 块 GPU 每块一个序列；在此批大小下其中 {gpus:,} 块即可",
    ),
    "larger_batch_own": (  # planner/api/batch_offers.py own_figures: the headline's kind of figure (trial s48 M6)
        "; {figure} against {chosen} by the model's own figure",
        "；按模型自身的估计为 {figure}，现方案为 {chosen}",
    ),
    "larger_batch_nearer": (
        "At {batch:,} tokens per step it would already save {saving:.0%}.",
        "若每步 {batch:,} 个 token，已可节省 {saving:.0%}。",
    ),
    "long_job": (
        'This plan trains for {time} at {risk}, over a year: a deadline (sidebar, "Deadline") sizes the GPU count'
        " for a date.",
        "该方案按 {risk} 需训练 {time}，超过一年：在侧栏设置“期限”，即可按日期确定 GPU 数量。",
    ),
    "hf_experts_band_out": (
        "The 80 % bands of time, cost and energy do not include that slowdown: no measured run on these modules"
        " sets them.",
        "时间、费用与能耗的 80% 区间不含这部分减速：没有在这些模块上实测的运行来确定它们。",
    ),
    # native_gaps' features (planner/model/structure.py), a word each (app53 M6: the CLI's field=value)
    "native_gap_family": ("the {value} family", "{value} 模型族"),
    "native_gap_position": ("ALiBi positions", "ALiBi 位置编码"),
    "native_gap_embedding_norm": ("an embedding norm", "嵌入层归一化"),
    "native_gap_mlp": ("a GeGLU MLP", "GeGLU MLP"),
    "native_gap_norm_placement": ("sandwich norms", "三明治式归一化"),
    "native_gap_embedding_scale": ("scaled embeddings", "嵌入缩放"),
    "native_gap_parallel_block": ("parallel attention and MLP blocks", "注意力与 MLP 并行的块"),
    "native_gap_softcap": ("logit soft-capping", "logit 软截断"),
    "native_gap_mla": ("latent attention (MLA)", "潜在注意力（MLA）"),
    "native_gap_partial_rotary": ("RoPE on part of each head ({value})", "仅部分通道使用 RoPE（{value}）"),
    "native_gap_sliding_layers": ("sliding-window attention on {value} layers", "{value} 层滑动窗口注意力"),
    "native_gap_chunked_layers": ("chunked attention on {value} layers", "{value} 层分块注意力"),
    "native_gap_dense_layers": (
        "dense blocks where this family puts them ({value})",
        "该模型族位置上的稠密块（{value} 个）",
    ),
    "native_gap_experts": ("this family's {value} experts", "该模型族的 {value} 个专家"),
    "hf_experts": (
        "{model} runs on Hugging Face's modules (the native trainer lacks {missing}), whose MoE layers loop over"
        " the experts one at a time, each expert's kernel launches not timed (the step may be slower than shown):"
        " the Megatron-Core stack (sidebar, software stack) estimates a grouped-GEMM stack on the same GPUs.",
        "{model} 使用 Hugging Face 模块训练（原生训练器不支持 {missing}），其 MoE 层逐个专家循环计算，"
        "每个专家的内核启动开销未计入（实际步时可能更长）："
        "在侧栏“软件栈”中选择 Megatron-Core，可估算分组 GEMM 软件栈在同样 GPU 上的表现。",
    ),
    "price_commitment": (
        "{kind} bills whole {years}-year terms: {gpus} {gpu} for the term cost {cost}, for a job of {days} "
        "({share} of it); the cost counts {rest}.",
        "{kind} 按整个 {years} 年期限计费：{gpus} 块 {gpu} 整个期限的费用为 {cost}，本作业 {days}"
        "（占期限的 {share}）；成本{rest}。",
    ),
    # what a reserved cost counts: the whole term(s), or (the sidebar's share filled) part of the rest
    "commitment_rest_whole": (
        "the whole term, as if no other work used the rest",
        "按整个期限计算，视为其余时间无其他任务使用",
    ),
    "commitment_rest_whole_terms": (
        "the whole terms, as if no other work used the rest",
        "按整个期限计算，视为其余时间无其他任务使用",
    ),
    "commitment_rest_filled": (
        "the job's hours and {unfilled:.0%} of the rest (other work uses {filled:.0%} of it)",
        "按本作业的小时数加其余时间的 {unfilled:.0%} 计算（其余时间的 {filled:.0%} 由其他工作使用）",
    ),
    "price_dearer": (
        "{kind} prices {gpu} at ${price:.2f} per GPU-hour, the median of {offers} offers ({providers}), above its "
        "on-demand median ${base:.2f}: the two medians come from different providers (hw_catalog/prices). {fix}",
        "{kind} 价格下 {gpu} 每 GPU 小时 ${price:.2f}（{offers} 个报价的中位数：{providers}），高于其按需中位数 "
        # "\\$": Streamlit reads "$6.55 ... “$" as a LaTeX span (a "$" after "“" closes it; trial s26b)
        "${base:.2f}：两个中位数来自不同的云厂商（hw_catalog/prices）。{fix}",
    ),
    # trial s48 L2: a kind's one offer is that provider's rate, not "the median of 1 offers"
    "price_dearer_one": (
        "{kind} prices {gpu} at ${price:.2f} per GPU-hour, one offer ({providers}), above its "
        "on-demand median ${base:.2f}: the offer and the median come from different providers (hw_catalog/prices). "
        "{fix}",
        "{kind} 价格下 {gpu} 每 GPU 小时 ${price:.2f}（单一报价：{providers}），高于其按需中位数 "
        "${base:.2f}：该报价与中位数来自不同的云厂商（hw_catalog/prices）。{fix}",
    ),
    # what to do about a held price (dearer_text's ``fix``): a single job is planned from the GPU table
    # as it stands; a portfolio's job keeps the prices it was added with, so it is updated too (app50)
    "price_fix_table": (
        "Edit the GPU table's $/h to use your own quote.",
        "可在 GPU 表的“\\$/时”一栏填入您自己的报价。",
    ),
    "price_fix_job": (
        "Edit the GPU table's $/h, then “{button}” each job it names, to re-run them at your own quote.",
        "可在 GPU 表的“\\$/时”一栏填入您自己的报价，再对所涉及的每个任务点击“{button}”，按新报价重新规划。",
    ),
    "provider_market index": ("market index", "市场指数"),
    "card_gpus": ("GPUs", "GPU"),
    "card_nodes": ("Nodes × GPUs", "节点 × GPU"),
    "spot_wait": (
        "{count} spot preemptions expected, each waiting {wait} for capacity (in the time and cost).",
        "预计 {count} 次竞价实例抢占，每次等待 {wait}重新获得容量（已计入时间和成本）。",
    ),
    "card_domain": ("one NVLink domain", "1 个 NVLink 域"),
    "card_domains": ("{count} NVLink domains", "{count} 个 NVLink 域"),
    "card_layout": ("Layout", "并行布局"),
    "card_batch": ("Micro-batch × accum. × seq", "微批 × 累积 × 序列"),
    # under it: the global batch, and whether it is the model size's default (buyer trial s50 M6)
    "card_batch_tokens": ("{tokens:,} tokens/step", "每步 {tokens:,} 个 token"),
    "card_batch_default": (
        "{tokens:,} tokens/step: the model size's default",
        "每步 {tokens:,} 个 token：模型规模的默认值",
    ),
    "card_batch_help": (
        "Sequences per GPU in a micro-step × gradient-accumulation steps × sequence length. Below it: the global"
        " batch in tokens per step, and “the model size's default” where no global batch was given (“{field}”"
        " sets it).",
        "每块 GPU 每个微步的序列数 × 梯度累积步数 × 序列长度。下方：每步的全局批大小（token），未指定全局批大小时注明"
        "“模型规模的默认值”（由“{field}”一栏设置）。",
    ),
    "card_ac": ("Activation ckpt.", "激活重计算"),
    "card_time": ("Time to train", "训练时间"),
    "card_cost": ("Cost", "费用"),
    "card_cost_bought": ("Cost (amortised purchase)", "费用（购买摊销）"),
    "card_energy": ("Energy", "能耗"),
    # what the energy figure assumes, the CLI's words after its energy (planner/model/energy.py)
    "card_energy_help": (
        power_basis_words()[:1].upper() + power_basis_words()[1:] + ".",
        f"按服务器以其最大功率的 {DEFAULT_SETTINGS.power_fraction_of_max:.0%} 运行计（与 MFU 无关），"
        f"PUE {DEFAULT_SETTINGS.pue:g}。",
    ),
    "card_mfu": ("MFU", "MFU"),
    "card_tokens": ("Tokens/s", "token/秒"),
    "card_memory": ("Memory per GPU", "每 GPU 显存"),
    # the denominator named (app trial s45 L6: "44% of 253.8 GiB" beside Why this plan's "46% of the
    # usable 241.1 GiB" read as two answers to one question)
    "card_memory_band": ("{band} · {share}", "{band}，{share}"),
    "card_memory_of": ("{fraction:.0%} of {capacity:.1f} GiB capacity", "占容量 {capacity:.1f} GiB 的 {fraction:.0%}"),
    "card_goodput": ("Goodput", "有效训练时间占比"),
    "card_mttf": ("Job MTTF", "任务平均故障间隔"),
    "card_interruptions": ("Expected interruptions", "预计中断次数"),
    "card_ckpt_interval": ("Checkpoint every", "检查点间隔"),
    "minutes_value": ("{value:,.0f} min", "{value:,.0f} 分钟"),
    "days_value": ("{value:,.1f} days", "{value:,.1f} 天"),
    "hours_value": ("{value:,.1f} h", "{value:,.1f} 小时"),
    # a limit rounded up to whole units, as the CLI's fix words it (trial s28d: 19.5 beside its 20)
    "days_up": ("{value:,.0f} days", "{value:,.0f} 天"),
    "hours_up": ("{value:,.0f} h", "{value:,.0f} 小时"),
    "minutes_up": ("{value:,.0f} min", "{value:,.0f} 分钟"),
    "card_band": ("80 % band {lo}–{hi}", "80% 区间 {lo}–{hi}"),
    "chart_band": ("80 % band", "80% 区间"),  # the memory and step bars' whiskers (app53 M2)
    "portfolio_stopped": (
        "Many jobs: the schedule is the best the many-job search found in its time{gap}.",
        "任务较多：排程为多任务搜索在其时限内找到的最优解{gap}。",
    ),
    "portfolio_lanes": (
        "Many jobs: one after another in fixed lanes of GPUs{gap}.",
        "任务较多：各任务在固定的 GPU 通道中依次运行{gap}。",
    ),
    "portfolio_gap": (", within {gap:.1%} of a lower bound on every schedule", "，距任何排程的下界不超过 {gap:.1%}"),
    "band_summed": ("80 % band {lo}–{hi} (the jobs' bands summed)", "80% 区间 {lo}–{hi}（各任务区间相加）"),
    "seconds_value": ("{value:,.3f} s", "{value:,.3f} 秒"),  # a step time: the CLI's three decimals
    "card_at_risk": (
        "Judged at {risk}: {time}, {cost} (the search compares plans at this quantile of their band).",
        "按 {risk} 评判：{time}，{cost}（搜索按误差区间的这一分位数比较各方案）。",
    ),
    "card_few_rows": (  # Uncertainty.few_rows_end, the CLI's few_rows_line (buyer trial s48 M2)
        "{risks} both read the farthest of the measured rows of {regime} ({errors}): too few rows to tell one"
        " quantile from another.",
        "{risks} 均取自 {regime} 的实测数据中最远的一行（{errors}）：数据太少，无法区分这两个分位数。",
    ),
    "and_join": ("{items} and {last}", "{items} 与 {last}"),
    "envelope_circular": (
        "Not independently validated: the measured rows of {regime} ({rows}, from {sources}) also set the"
        " efficiency ceiling this figure is held at, so it repeats them.",
        "未经独立验证：{regime} 的实测数据（{rows} 行，来自 {sources}）同时决定了本数字所受的效率上限，它只是复现它们。",
    ),
    "envelope_validated": (  # the regime's own rows, then the band's (trial s33: 2 rows beside 6 sources)
        "Validated: {regime}; {rows} held-out rows ({sources}). The band is read from {band_rows} rows"
        " ({band_sources}), mean error {error:.1%}.",
        "已验证：{regime}；{rows} 行留出数据（{sources}）。误差带取自 {band_rows} 行（{band_sources}），"
        "平均误差 {error:.1%}。",
    ),
    # trial s34: fewer than MIN_ROWS of the regime's own rows (the band is mostly nearby regimes')
    "envelope_validated_one": (
        "Validated, but by only 1 held-out row ({sources}): {regime}. The band is read from {band_rows} rows,"
        " {nearby} of them of nearby regimes ({band_sources}), mean error {error:.1%}; each end reaches at"
        " least as far as that row erred.",
        "已验证，但仅有 1 行留出数据（{sources}）：{regime}。误差带取自 {band_rows} 行，其中 {nearby} 行来自相近的情形"
        "（{band_sources}），平均误差 {error:.1%}；区间两端至少覆盖该行的误差。",
    ),
    "envelope_validated_few": (
        "Validated, but by only {rows} held-out rows ({sources}): {regime}. The band is read from {band_rows}"
        " rows, {nearby} of them of nearby regimes ({band_sources}), mean error {error:.1%}; each end reaches"
        " at least as far as those rows erred.",
        "已验证，但仅有 {rows} 行留出数据（{sources}）：{regime}。误差带取自 {band_rows} 行，其中 {nearby} 行来自"
        "相近的情形（{band_sources}），平均误差 {error:.1%}；区间两端至少覆盖这些行的误差。",
    ),
    # heldout51 H1: the stack's rows are all tuned recipes (planner/accuracy/regime.py TUNED_RECIPE_STACKS)
    "envelope_tuned_recipes": (
        "Its rows are tuned NeMo / Megatron-Bridge / MLPerf recipes (TP comm overlap, cuDNN attention); a plain"
        " Megatron-Core job without them runs slower.",
        "这些实测数据均为调优过的 NeMo / Megatron-Bridge / MLPerf 配方（张量并行通信重叠、cuDNN 注意力）；"
        "未采用这些优化的普通 Megatron-Core 作业会更慢。",
    ),
    "envelope_nearest": ("The nearest measured rows ran {regime}.", "最近的实测数据来自 {regime}。"),
    "envelope_other_vendor": (
        "No row of the band ran on an {vendor} GPU (its own GEMM, attention and collective libraries), so the"
        " band is widened as for another architecture and more (docs/validation.md, 'A GPU of another vendor').",
        "误差区间的数据均未运行在 {vendor} GPU 上（其 GEMM、注意力与集合通信库各不相同），因此误差区间按另一架构再加宽"
        "（docs/validation.md，“A GPU of another vendor”）。",
    ),
    # trial s48 M3: the architecture's own rows, scored held out but kept out of the bands
    "envelope_architecture_rows": (
        "Its architecture's own rows are scored but are not band rows: {rows} on {generation} ({sources}), tokens/s"
        " predicted {low:+.0%} to {high:+.0%} against them, {mean:+.1%} on average.",
        "其架构自身的 {rows} 行实测数据（{generation}，{sources}）已评分但不计入误差区间：预测的 tokens/s 比实测"
        " {low:+.0%} 至 {high:+.0%}，平均 {mean:+.1%}。",
    ),
    "envelope_architecture_row": (
        "Its architecture's own row is scored but is not a band row: one on {generation} ({sources}), tokens/s"
        " predicted {low:+.0%} against it.",
        "其架构自身的 1 行实测数据（{generation}，{sources}）已评分但不计入误差区间：预测的 tokens/s 比实测 {low:+.0%}。",
    ),
    "envelope_outside": (
        "Outside the validated envelope: no measured row of {regime}. The band is read from the {rows}"
        " nearest rows (mean error {error:.1%}) and widened by {widened:.0%}.",
        "超出已验证范围：没有 {regime} 的实测数据。误差区间取自最近的 {rows} 行（平均误差 {error:.1%}），"
        "并加宽 {widened:.0%}。",
    ),
    "card_median_above": (
        "Median (p50): {figures}, {fraction:.0%} above the model's figure, as the rows nearest this regime ran.",
        "中位数（p50）：{figures}，比模型数值高 {fraction:.0%}（与该情形最接近的实测数据如此）。",
    ),
    "card_median_below": (
        "Median (p50): {figures}, {fraction:.0%} below the model's figure, as the rows nearest this regime ran.",
        "中位数（p50）：{figures}，比模型数值低 {fraction:.0%}（与该情形最接近的实测数据如此）。",
    ),
    # why the headline keeps the model's figure, on the band's own rows held out (trial s48 H2)
    "card_headline_all": (
        "The headline keeps the model's own figure: on held-out runs it erred less than the band's median does.",
        "标题数字为模型自身的估计：在未参与拟合的实测运行上，其误差小于中位数。",
    ),
    "card_headline_model_less": (
        "The headline keeps the model's own figure: on those {rows} rows, held out, it erred {model:.1%}, the"
        " median {median:.1%}.",
        "标题数字为模型自身的估计：在这 {rows} 行未参与拟合的实测数据上，其误差为 {model:.1%}，中位数为 {median:.1%}。",
    ),
    "card_headline_median_less": (
        "The headline keeps the model's own figure, though on those {rows} rows, held out, the median erred"
        " less ({median:.1%} against {model:.1%}); over every row the model's figure erred less.",
        "标题数字为模型自身的估计，但在这 {rows} 行未参与拟合的实测数据上，中位数误差更小（{median:.1%} 对"
        " {model:.1%}）；在全部数据上，模型数值的误差更小。",
    ),
    "envelope_sequence": (
        "Its sequence, {seq:,} tokens, lies {doublings:g} doubling(s) past the longest its rows measured"
        " ({longest:,}); each widens the band as a differing feature does (widened by {widened:.0%} in all).",
        "其序列长度 {seq:,} 个 token，比这些实测数据中最长的（{longest:,}）多出 {doublings:g} 次翻倍；每次翻倍都像一项"
        "不同的特征一样加宽误差区间（共加宽 {widened:.0%}）。",
    ),
    "memory_band_own": (
        "Memory: the reserved peak's 80 % band is {low:.1f}–{high:.1f} GiB, from {rows} measured peaks of {kind}"
        " (mean error {error:.1%}).",
        "显存：预留峰值的 80% 误差区间为 {low:.1f}–{high:.1f} GiB，取自 {kind} 的 {rows} 个实测峰值（平均误差 {error:.1%}）。",
    ),
    "memory_band_all": (
        "Memory: the reserved peak's 80 % band is {low:.1f}–{high:.1f} GiB; no peak of {kind} was measured, so it is"
        " read from all {rows} measured peaks ({stacks}; mean error {error:.1%}).",
        "显存：预留峰值的 80% 误差区间为 {low:.1f}–{high:.1f} GiB；{kind} 没有实测峰值，因此取自全部 {rows} 个实测峰值"
        "（{stacks}；平均误差 {error:.1%}）。",
    ),
    "memory_band_few": (
        "Memory: the reserved peak's 80 % band is {low:.1f}–{high:.1f} GiB; only {configurations} configuration(s) of"
        " {kind} were measured (they ran {own_low:+.0%} to {own_high:+.0%} against the model), too few for a band of"
        " their own, so it is read from all {rows} measured peaks ({stacks}; mean error {error:.1%}).",
        "显存：预留峰值的 80% 误差区间为 {low:.1f}–{high:.1f} GiB；{kind}只实测了 {configurations} 种配置（实测相对模型"
        " {own_low:+.0%} 至 {own_high:+.0%}），不足以单独成区间，因此取自全部 {rows} 个实测峰值（{stacks}；平均误差 {error:.1%}）。",
    ),
    "memory_band_unmeasured": (
        "No measured peak ran {features}: the band is widened as a feature its rows lack widens the time band"
        " (by {widened:.0%} at its high end).",
        "没有任何实测峰值采用{features}：误差区间像时间区间遇到其数据所缺的特征时一样加宽（上端加宽 {widened:.0%}）。",
    ),
    "memory_kind": ("{stack}{modules}, {scale}", "{stack}{modules}（{scale}）"),
    "memory_kind_hf": (" with Hugging Face modules", "（Hugging Face 模块）"),
    "memory_kind_one": ("one GPU", "单 GPU"),
    "memory_kind_multi": ("more than one GPU", "多 GPU"),
    "memory_may_not_fit": (
        "Its high end passes the {room:.1f} GiB the GPU holds beside the CUDA context: it may not fit.",
        "区间上端超过 GPU 除 CUDA 上下文外的 {room:.1f} GiB：可能放不下。",
    ),
    "memory_risk": (
        "Memory may not fit: the reserved peak's 80 % band reaches {high:.1f} GiB, past the {room:.1f} GiB the GPU"
        " holds beside the CUDA context. To plan with that margin, raise “{slider}” to {headroom}.",
        "显存可能不够：预留峰值的 80% 误差区间上端达 {high:.1f} GiB，超过 GPU 除 CUDA 上下文外的 {room:.1f} GiB。"
        "如需按这一余量规划，请将“{slider}”调高到 {headroom}。",
    ),
    "memory_judged_at_model": (
        "Judged at the model's figure: at {risk}, no plan whose reserved peak fits at its 80 % band's high end"
        " meets the request (deadline, budget, GPUs), so this plan's memory was judged at the model's figure.",
        "按模型估计值判断：在 {risk} 下，没有一个预留峰值在 80% 区间上端仍放得下的方案能满足要求（期限、预算、GPU），"
        "因此本方案的显存按模型估计值判断。",
    ),
    "memory_risk_past_headroom": (
        "Memory may not fit: the reserved peak's 80 % band reaches {high:.1f} GiB, past the {room:.1f} GiB the GPU"
        " holds beside the CUDA context, and even {most}% headroom would not give that margin: choose a layout"
        " that uses less memory per GPU.",
        "显存可能不够：预留峰值的 80% 误差区间上端达 {high:.1f} GiB，超过 GPU 除 CUDA 上下文外的 {room:.1f} GiB；"
        "即使余量设为 {most}% 也无法留出这一余量：请选择每 GPU 显存占用更少的布局。",
    ),
    "memory_may_fit": (
        "Its low end is under the {usable:.1f} GiB the fit rule leaves it: it may fit.",
        "区间下端低于适配规则留给它的 {usable:.1f} GiB：可能放得下。",
    ),
    "envelope_measured_job": (
        "Calibrated on your job {name} ({shape}, {date}): this shape's figures are its measurement; the band is"
        " the published rows'.",
        "已用你自己的作业 {name}（{shape}，{date}）校准：此形态的数值即其实测值；误差区间仍来自公开数据。",
    ),
    "envelope_measured_job_other": (
        "The corrections of your job {name} ({shape}, {date}) are extrapolated to this shape (compute"
        " x{compute:.3g}, memory x{memory:.3g}).",
        "你的作业 {name}（{shape}，{date}）的校正系数被外推到此形态（计算 x{compute:.3g}，显存 x{memory:.3g}）。",
    ),
    "envelope_sequence_none": (
        "Its sequence, {seq:,} tokens, lies {doublings:g} doubling(s) past {longest:,}, and none of its rows ran a"
        " sequence that long; each doubling widens the band as a differing feature does (widened by {widened:.0%} in all).",
        "其序列长度 {seq:,} 个 token，比 {longest:,} 多出 {doublings:g} 次翻倍，而这些实测数据都没有这么长的序列；每次翻倍都像"
        "一项不同的特征一样加宽误差区间（共加宽 {widened:.0%}）。",
    ),
    # app trial s45 L8: "Its ends reach the band of the measured deepspeed on Blackwell, ..." had no
    # clear subject, and its regime's words ran on as a list
    "envelope_reaches": (
        "The ends of this 80 % band are set by measured runs whose own band reaches further: {regimes}.",
        "此 80% 误差区间的两端取自误差区间更宽的已实测数据：{regimes}。",
    ),
    "point_outside_slower": (
        "The model's figures lie outside their bands: the rows nearest this regime ran slower than predicted, even"
        " at the band's near end; expect the band, not the figure.",
        "模型给出的数值落在其误差区间之外：与此情形最接近的实测数据都比预测更慢（连区间近端也是如此）；"
        "请以区间为准，而非该数值。",
    ),
    "point_outside_faster": (
        "The model's figures lie outside their bands: the rows nearest this regime ran faster than predicted, even"
        " at the band's near end; expect the band, not the figure.",
        "模型给出的数值落在其误差区间之外：与此情形最接近的实测数据都比预测更快（连区间近端也是如此）；"
        "请以区间为准，而非该数值。",
    ),
    "regime_words": ("{stack} on {generation}", "{generation} 上的 {stack}"),
    "generation_link": ("{generation} ({gpu}'s link)", "{generation}（{gpu} 的互连）"),
    "feature_tp": ("tp > 1", "tp > 1"),
    "feature_pp": ("pp > 1", "pp > 1"),
    "feature_long": ("sequence ≥ 32K", "序列 ≥ 32K"),
    "feature_cp": ("cp > 1", "上下文并行 cp > 1"),
    "feature_kernel": ("an attention kernel its stack would not pick", "非该框架默认的注意力内核"),
    "feature_kernel_named": ("attention {kernel}", "注意力内核 {kernel}"),
    "feature_moe": ("MoE", "MoE"),
    "feature_fp8": ("fp8", "fp8"),
    "feature_multi_gpu": ("more than one GPU", "多 GPU"),
    "feature_multi_node": ("more than one node", "多节点"),
    "feature_large": ("> 1,000 GPUs", "> 1,000 GPU"),
    "feature_hf_modules": ("Hugging Face modules", "Hugging Face 模块"),
    "feature_offload": ("CPU offload", "CPU 卸载"),
    "feature_zero3_nodes": ("DeepSpeed ZeRO-3 across nodes", "DeepSpeed ZeRO-3 跨节点"),
    "feature_tp_overlap_off": (
        "TP comm overlap off (--no-tp-comm-overlap)",
        "张量并行通信重叠关闭（--no-tp-comm-overlap）",
    ),
    "feature_pure_bf16": ("pure bf16 (--pure-bf16)", "纯 bf16（--pure-bf16）"),
    "ceiling_on_gpu": (" on {gpu}", "，运行于 {gpu}"),
    "ceiling_on_gpus": (" on {n:,} × {gpu}", "，运行于 {n:,} × {gpu}"),
    # what a ceiling is the best of (EfficiencyCeiling.scope_words; buyer trial s50 L8: "and scale" read
    # as the plan's own scale, where a 4,096-GPU plan was held at a 128-GPU 7B row)
    "ceiling_scope": (
        "this GPU architecture and precision, any model size and GPU count",
        "此 GPU 架构与精度（任意模型规模与 GPU 数量）",
    ),
    "ceiling_scope_nodes": (
        "this GPU architecture and precision over more than one node, any model size and GPU count",
        "此 GPU 架构与精度的多节点运行（任意模型规模与 GPU 数量）",
    ),
    "ceiling_split": ("; the best any stack measured with tp or pp", "；任一框架在 tp 或 pp 下的实测最佳"),
    "ceiling_lifted": (  # ui/render_lines.py ceiling_lifted_line (calib50 H1)
        "Not held: the calibration file measured this GPU's kernel rates, and the model's {mfu:.1%} MFU passes"
        " {ceiling:.1%}, the best measured on {scope} ({source}). Kernel rates"
        " measure kernels, not the step: held there, {tokens:,.0f} tokens/s.",
        "未封顶：校准文件测量了此 GPU 的内核速率，模型的 MFU {mfu:.1%} 超过{scope}的实测最佳"
        " {ceiling:.1%}（{source}）。内核速率只反映内核，不反映整步：按最佳值封顶则为 {tokens:,.0f} token/秒。",
    ),
    "ceiling_held": (
        "Held at {mfu:.1%} MFU, the best measured on {scope} ({source}); the"
        " model alone predicts {tokens:,.0f} tokens/s. If this is that run, the figure is its own measurement,"
        " not a check of it. The band's fast end may pass it: measured runs have beaten their regime's best"
        " before (docs/validation.md, “The efficiency ceiling”).",
        "按{scope}的实测最佳 MFU {mfu:.1%} 封顶（{source}）；模型本身预测 {tokens:,.0f} token/秒。"
        "若此即该次运行，此数字就是它自己的实测值，并非对它的检验。区间的快端可以超过此上限：已有实测运行超过其所属类别此前的最佳值"
        "（见 docs/validation.md 中讲效率上限的一段）。",  # trial s44 app L8: its English title was left
    ),
    "ceiling_passed": (
        "The MFU band's fast end, {high:.1%}, passes {mfu:.1%}, the best measured on {scope}"
        " ({source}): read that end as the band's arithmetic, not as a run anyone has"
        " measured.",
        "MFU 误差区间的快端 {high:.1%} 超过{scope}的实测最佳值 {mfu:.1%}（{source}）："
        "这一端只是区间的算术结果，并非任何人实测过的运行。",
    ),
    "risk_changed_batch": (
        "At the median (p50) the search would take {gpus} × {gpu} ({layout}) at {batch:,} tokens per step, the"
        " batch nearest the request that meets it there; judged at {risk}, the pessimistic end of each plan's"
        " band, it takes this one.",
        "若按中位数（p50）评判，搜索会选择 {gpus} × {gpu}（{layout}），每步 {batch:,} 个 token（在该分位下满足要求的最接近"
        "所求批大小）；按各方案误差区间的悲观端 {risk} 评判，选择本方案。",
    ),
    "risk_changed_over": (
        "At the median (p50) the search would take the plan a little over the budget; judged at {risk}, the"
        " pessimistic end of each plan's band, it takes this one.",
        "若按中位数（p50）评判，搜索会选择略超预算的那个方案；按各方案误差区间的悲观端 {risk} 评判，选择本方案。",
    ),
    "risk_changed_further": (
        "At the median (p50) the search would take the plan further over the budget; judged at {risk}, the"
        " pessimistic end of each plan's band, it takes this one.",
        "若按中位数（p50）评判，搜索会选择超出预算更多的那个方案；按各方案误差区间的悲观端 {risk} 评判，选择本方案。",
    ),
    "risk_changed": (
        "At the median (p50) the search would take {gpus} × {gpu} ({layout}); judged at {risk}, the pessimistic end"
        " of each plan's band, it takes this one.",
        "若按中位数（p50）评判，搜索会选择 {gpus} × {gpu}（{layout}）；按各方案误差区间的悲观端 {risk} 评判，"
        "选择本方案。",
    ),
    "risk_changed_memory": (
        "That plan's reserved peak's band passes the GPU's memory: it may not fit, which p50 does not judge.",
        "那个方案预留峰值的区间上端超出 GPU 显存：可能放不下，而 p50 不评判这一点。",
    ),
    "risk_changed_figures": ("That plan: {that}; this one: {this}.", "那个方案：{that}；本方案：{this}。"),
    "risk_figures_at": ("{time}, {cost} at {risk}", "{risk} 下 {time}、{cost}"),
    "risk_figures_pair": ("{p50} and {judged}", "{p50}，{judged}"),
    # The kernel names stay (proper nouns); unfused attention and the cp fallback are worded.
    "kernel_eager": (KERNEL_WORDS[AttentionKernel.EAGER], "非融合（注意力分数经 HBM）"),
    "kernel_triton": (
        KERNEL_WORDS[AttentionKernel.TRITON],
        "llm-foundry 的 Triton flash 注意力内核",
    ),  # trial s44 app L8
    # ui/render_lines.py window_words, on the card (families52 left it to the CLI)
    "card_windows": (
        "{layers} of {total} layers attend within a sliding window of {window:,} tokens.",
        "{total} 层中有 {layers} 层只在 {window:,} 个 token 的滑动窗口内做注意力。",
    ),
    "card_windows_sdpa": (
        " SDPA computes their whole masked square: +{gflops:.2f} GFLOP per token, counted in HFU.",
        "SDPA 会计算被遮蔽的完整方阵：每个 token 多 {gflops:.2f} GFLOP，计入 HFU。",
    ),
    "card_windows_band": (
        " The banded kernel computes {gflops:.2f} GFLOP per token beyond the windows, counted in HFU.",
        "带状内核在窗口之外每个 token 多算 {gflops:.2f} GFLOP，计入 HFU。",
    ),
    "kernel_sdpa": (SDPA_CUDNN_NOTE, "（PyTorch 2.11 起 SDPA 选用 cuDNN；更早的 torch 请选 sdpa-fa2）"),
    "kernel_sdpa_skips": (
        SDPA_SKIPS_CUDNN_NOTE,
        "（SDPA 在此 GPU 上的选择；cuDNN 融合注意力可用 sdpa_kernel(SDPBackend.CUDNN_ATTENTION) 强制启用，对应 --attention cudnn）",
    ),
    "kernel_cp_fallback": (
        CP_FALLBACK_WORDS,
        "（不开上下文并行时为 {kernel}：此软件栈的上下文并行调用 flash 内核）",
    ),
    "card_price": ("Cost at ${price:,.2f}/GPU-h: {basis}.", "费用按每 GPU 小时 ${price:,.2f} 计：{basis}。"),
    "card_billed": (
        " Billed for {billed} GPUs: whole {unit}-GPU nodes.",
        "按 {billed} 块 GPU 计费：整台 {unit} GPU 节点出租。",
    ),
    # the offers behind the price (planner/catalog/prices.py offers_span; buyer trial s50 M8)
    "card_price_offer": (" ({provider}, {date})", "（{provider}，{date}）"),
    "card_price_offers": (" ({count} offers, {first} to {last})", "（{count} 个报价，{first} 至 {last}）"),
    "card_price_offers_day": (" ({count} offers, {date})", "（{count} 个报价，{date}）"),
    # planner/api/price_notices.py (buyer trial s50 H1, H3); "\\$": no LaTeX span with the fix's "$/h"
    "one_offer_rent": (
        "{gpu} is priced at one provider's listed rate, \\${rate:,.2f}/GPU-h ({provider} {offer}, {date}), not a"
        " median of offers: the cost assumes {provider} rents {billed:,} of them at that rate for the whole run. {fix}",
        "{gpu} 按单一供应商的挂牌价计价：每 GPU 小时 \\${rate:,.2f}（{provider} {offer}，{date}），并非多家报价的中位数；"
        "费用假定 {provider} 在整个训练期间以该价格出租全部 {billed:,} 块。{fix}",
    ),
    "spot_beyond_traces": (
        "Spot capacity for {gpus:,} GPUs: each of the {preemptions:,.0f} expected preemptions waits {wait} for the"
        " nodes back, a wait measured on traces of 1 to {traced} single-GPU VMs (docs/spot-capacity-wait.md);"
        " {gpus:,} spot GPUs in one zone at once is not measured and may wait far longer, or not be had.",
        "{gpus:,} 块 GPU 的竞价容量：预计 {preemptions:,.0f} 次抢占，每次等待 {wait} 才能重新拿到节点，这一等待时间"
        "取自 1 至 {traced} 台单 GPU 虚拟机的实测记录（docs/spot-capacity-wait.md）；同一可用区同时获得 {gpus:,} 块"
        "竞价 GPU 未经实测，可能等待更久，甚至无法获得。",
    ),
    # ui/card_notices.py: the planner's typed warnings the CLI says (parity trial s50)
    "fixed_cost_job": (
        "The job trains for {training} ({steps} of {batch:,} tokens): start-up ({startup}) and checkpoint"
        " writes take most of its {wall} (goodput {goodput:.1%}).",
        "该作业只训练 {training}（{steps}，每步 {batch:,} 个 token）：启动（{startup}）和检查点写入占去其 {wall}"
        " 的大部分（有效时间占比 {goodput:.1%}）。",
    ),
    "steps_one": ("1 step", "1 步"),
    "steps_many": ("{count:,} steps", "{count:,} 步"),
    "extrapolated_memory": (
        "The plan fits only by the memory factor x{factor:.3g} your job {job} measured on another shape ({shape}): the"
        " model alone puts its reserved peak at {alone:,.1f} GiB, past the {usable:,.1f} GiB the fit rule allows. A"
        " factor is extrapolated to every shape on the GPU: check this one's memory (trainplan run's probe) before"
        " relying on it (the CLI's --no-calibration plans without the file).",
        "该方案只有借助您的作业 {job} 在另一形状（{shape}）上测得的显存系数 x{factor:.3g} 才放得下：仅按模型计算，其保留显存峰值为"
        " {alone:,.1f} GiB，超过适配规则允许的 {usable:,.1f} GiB。该系数被外推到此 GPU 上的所有形状：依赖它之前请先检查此形状的显存"
        "（trainplan run 的探测）（命令行的 --no-calibration 可不使用该文件进行规划）。",
    ),
    "curve_elsewhere": (
        "{network}: its all-reduce curve was measured over {measured} nodes and is read as-is over this plan's"
        " {nodes}; the same runs reached more over fewer nodes ({evidence}), so its cross-node collectives are"
        " likely {likely} than timed here (not in the band).",
        "{network}：其 all-reduce 带宽曲线是在 {measured} 个节点上实测的，此方案的 {nodes} 个节点直接沿用该曲线；同一批测试在更少节点上"
        "达到的带宽更高（{evidence}），因此其跨节点集合通信很可能比这里估计的{likely}（未计入误差区间）。",
    ),
    "curve_elsewhere_slower": ("slower", "更慢"),
    "curve_elsewhere_faster": ("faster", "更快"),
    # The CLI's words in English (planner/catalog/prices.py), translated.
    "price_basis_catalog": (PriceBasis.CATALOG.words, "按需报价的中位数"),
    "price_basis_estimate": (PriceBasis.ESTIMATE.words, "估算值，并非所列按需报价的中位数"),
    "price_basis_one_offer": (PriceBasis.ONE_OFFER.words, "单一供应商的挂牌价，并非多家报价的中位数"),
    "price_basis_file": (PriceBasis.FILE.words, "GPU 文件自带的价格：见其来源"),
    "price_basis_user": (PriceBasis.USER.words, "您的价格"),
    "price_basis_on_demand": (PriceBasis.ON_DEMAND.words, "按需报价的中位数"),
    "price_basis_spot": (PriceBasis.SPOT.words, "竞价报价的中位数"),
    "price_basis_reserved_1y": (PriceBasis.RESERVED_1Y.words, "一年预留报价的中位数"),
    "price_basis_reserved_3y": (PriceBasis.RESERVED_3Y.words, "三年预留报价的中位数"),
    # trial s36: the stack's loss as counted (the CLI's memory line says the same)
    "card_loss_chunked": (
        "Its loss runs over {chunk:,}-token chunks, {bytes:g} bytes a logit at its backward's peak.",
        "其损失按每块 {chunk:,} 个 token 计算，反向峰值时每个 logit 占 {bytes:g} 字节。",
    ),
    "card_loss_whole": (
        "Its loss runs over the whole micro-batch's logits at once, {bytes:g} bytes a logit at its backward's peak.",
        "其损失一次作用于整个微批次的全部 logits，反向峰值时每个 logit 占 {bytes:g} 字节。",
    ),
    "card_optimizer": (
        "Optimizer formats assumed, as the sidebar asks: {formats}.",
        "按侧边栏所选假设的优化器数据格式：{formats}。",
    ),
    "card_footer": (
        "step {step} s · attention {kernel} · {candidates:,} candidates, {feasible:,} feasible · "
        "{solver} in {seconds:.1f} s",
        "每步 {step} 秒 · 注意力 {kernel} · {candidates:,} 个候选，{feasible:,} 个可行 · "
        "{solver} 用时 {seconds:.1f} 秒",
    ),
    "card_kind_left_out": (
        "Planned on {kind} prices: the allowed types without such an offer were left out ({gpus}).",
        "按{kind}价格规划：没有此类报价的已选型号未参与规划（{gpus}）。",
    ),
    "ex_time_if_fit": ("Time to train, if it fit", "训练时间（若能放下）"),
    "ex_cost_if_fit": ("Cost, if it fit", "费用（若能放下）"),
    "card_footer_kept": (
        "step {step} s · attention {kernel} · {candidates:,} candidates, {feasible:,} feasible · "
        "{solver} in {seconds:.1f} s when first asked (this answer was kept, not solved again)",
        "每步 {step} 秒 · 注意力 {kernel} · {candidates:,} 个候选，{feasible:,} 个可行 · "
        "{solver} 首次求解用时 {seconds:.1f} 秒（此答案为缓存结果，未重新求解）",
    ),
    "why_this_plan": ("Why this plan", "为什么选这个方案"),
    "opt_memory": ("memory", "显存"),
    "opt_divisibility": ("divisibility", "整除性"),
    "opt_batch": ("batch size", "批大小"),
    "opt_inventory": ("inventory", "库存"),
    "opt_shared_inventory": ("shared inventory", "共享库存"),
    "opt_jobs": ("several jobs", "多个任务"),
    "opt_deadline": ("deadline", "期限"),
    "opt_budget": ("budget", "预算"),
    # tabs
    "tab_breakdowns": ("Memory and step time", "显存与单步时间"),
    "tab_explore": ("Cost vs time", "费用与时间"),
    "tab_top": ("Top plans", "候选方案"),
    "tab_why_not": ("Why not…?", "为什么不选…？"),
    "tab_downloads": ("Downloads", "下载"),
    "tab_explorer": ("Layout explorer", "布局探索"),
    "tab_run": ("Run", "运行记录"),
    "tab_local": ("Local GPUs", "本机 GPU"),
    # charts
    "chart_memory": ("Per-GPU memory against capacity", "每 GPU 显存与容量"),
    "chart_step": ("Step time breakdown", "单步时间分解"),
    "chart_frontier": (
        "Cost against time-to-train (best layout per GPU type and count; Pareto front joined)",
        "费用与训练时间（每种型号和数量的最佳布局；连线为帕累托前沿）",
    ),
    "chart_scaling": ("Cost and time against GPU count", "费用和时间随 GPU 数量的变化"),
    "scaling_gpu": ("GPU type for the scaling chart", "扩展曲线的 GPU 型号"),
    "no_candidates": ("No candidate layout fits these settings.", "在这些设置下没有可行的候选布局。"),
    "term": ("Term", "组成部分"),
    "capacity": ("capacity", "容量"),
    "usable_limit": ("usable (after headroom)", "可用（扣除余量）"),
    "pareto_front": ("Pareto front", "帕累托前沿"),
    "chosen_plan": ("chosen plan", "选定方案"),
    "gpu_type": ("GPU type", "GPU 型号"),
    "axis_gib_per_gpu": ("GiB per GPU", "每 GPU 的 GiB"),
    "axis_step_s": ("seconds per step", "每步秒数"),
    "axis_days": ("time to train (days)", "训练时间（天）"),
    "axis_cost": ("cost (USD)", "费用（美元）"),
    "axis_schedule_days": ("days from the start", "距开始的天数"),
    "axis_num_gpus": ("GPUs", "GPU 数量"),
    "axis_step": ("step", "步数"),
    "mem_params": ("parameters", "参数"),
    "mem_grads": ("gradients", "梯度"),
    "mem_optimizer": ("optimizer states", "优化器状态"),
    "mem_unsharded_params": ("unsharded parameters", "未分片参数"),
    "mem_activations": ("activations", "激活"),
    "mem_logits_loss": ("loss / backward transient", "损失 / 反向临时内存"),
    "mem_misc": ("misc. buffers", "其他缓冲区"),
    "mem_allocator_reserve": ("allocator reserve", "分配器预留"),
    # the runtime's own memory on each GPU: CUDA's on NVIDIA, HIP's on AMD (app trial s45 L4: "CUDA
    # context" in an MI325X plan's legend)
    "mem_cuda_context": ("runtime context (CUDA/HIP)", "运行时上下文（CUDA/HIP）"),
    "time_matmul": ("matmul", "矩阵乘"),
    "time_attention": ("attention", "注意力"),
    "time_memory_bound": ("memory-bound kernels", "访存密集算子"),
    "time_optimizer": ("optimizer", "优化器"),
    "time_shard_copies": ("FSDP / ZeRO copies", "FSDP/ZeRO 拷贝"),
    "time_offload_accum": ("offload: accumulated gradients to the host", "卸载：累积梯度传回主机"),
    "time_host_stall": ("host stall", "主机等待"),
    "time_dp_comm": ("data-parallel comm.", "数据并行通信"),
    "time_tp_comm": ("tensor-parallel comm.", "张量并行通信"),
    "time_pp_comm": ("pipeline comm.", "流水线通信"),
    "time_cp_comm": ("context-parallel comm.", "上下文并行通信"),
    "time_ep_comm": ("expert-parallel all-to-all", "专家并行全交换"),
    "time_bubble": ("pipeline bubble", "流水线气泡"),
    # tables
    "col_rank": ("#", "#"),
    "col_gpu": ("GPU", "GPU"),
    "col_num_gpus": ("GPUs", "GPU 数"),
    "col_num_nodes": ("nodes", "节点数"),
    "col_layout": ("layout", "布局"),
    "col_micro_batch": ("micro-batch", "微批"),
    "col_grad_accum": ("accumulation", "梯度累积"),
    "col_ac": ("activation ckpt.", "激活重计算"),
    "col_time_to_train_days": ("days", "天数"),
    "col_time_p10_days": ("days, 80 % band from", "天数，80% 区间下限"),
    "col_time_p90_days": ("days, 80 % band to", "天数，80% 区间上限"),
    "col_cost_usd": ("cost (USD)", "费用（美元）"),
    "col_layout_help": (
        "The layout and its training; a long one is cut here: hover over a cell to read it whole.",
        "并行布局及其训练设置；过长的内容在此截断：将鼠标悬停在单元格上可查看全文。",
    ),
    "col_cost_usd_bought": ("cost (USD, amortised)", "费用（美元，摊销）"),
    "col_time_at_risk_days": ("days at {risk}", "{risk} 天数"),
    "col_cost_at_risk_usd": ("cost at {risk} (USD)", "{risk} 费用（美元）"),
    "col_price_usd_per_gpu_hour": ("USD per GPU-hour", "每 GPU 小时美元"),
    "col_cost_at_risk_usd_bought": ("cost at {risk} (USD, amortised)", "{risk} 费用（美元，摊销）"),
    "col_price_usd_per_gpu_hour_bought": ("USD per GPU-hour (amortised)", "每 GPU 小时美元（摊销）"),
    "col_price_estimated": ("estimated price", "估算价格"),
    "col_energy_kwh": ("energy (kWh)", "能耗（千瓦时）"),
    "col_mfu": ("MFU", "MFU"),
    "col_mfu_model": ("MFU, the model's own (held at the ceiling)", "MFU，模型自身的预测（受效率上限约束时）"),
    "col_tokens_per_s": ("tokens/s", "token/秒"),
    "col_tokens_p10_per_s": ("tokens/s, 80 % band from", "token/秒，80% 区间下限"),
    "col_tokens_p90_per_s": ("tokens/s, 80 % band to", "token/秒，80% 区间上限"),
    "col_memory_gib": ("reserved peak (GiB)", "预留峰值（GiB）"),
    "col_memory_p90_gib": ("reserved peak, 80 % band to (GiB)", "预留峰值 80% 区间上限（GiB）"),
    "col_capacity_gib": ("capacity (GiB)", "容量（GiB）"),
    "col_job": ("job", "任务"),
    "col_model": ("model", "模型"),
    "col_tokens_b": ("tokens (B)", "token（十亿）"),
    "col_start_days": ("start (day)", "开始（天）"),
    "col_end_days": ("end (day)", "结束（天）"),
    "col_index": ("index", "序号"),
    "col_name": ("name", "名称"),
    "col_catalog": ("catalog entry", "目录型号"),
    "top_help": (
        "The chosen plan and the next best the solver found; click a column to sort. An estimated price is"
        " the catalog's estimate, not a median of listed on-demand offers.",
        "选定方案及求解器找到的其余较优方案；点击列名可排序。估算价格是目录的估计值，而非公开按需报价的中位数。",
    ),
    # why not
    "why_not_gpu": ("Why was this GPU type not chosen?", "为什么没有选择这种 GPU？"),
    "pick_gpu": ("— pick a GPU type —", "— 选择 GPU 型号 —"),
    # downloads
    "download_plan": ("Download plan.json", "下载 plan.json"),
    "emit_name": ("Job name", "任务名称"),
    "emit_steps": ("Training steps in the job", "任务中的训练步数"),
    "gpus_left_out_kernel": (
        "Left out of the search, since the {kernel} attention kernel does not run on them: {gpus}",
        "以下 GPU 未参与搜索，因为 {kernel} 注意力内核不能在其上运行：{gpus}",
    ),
    "gpus_left_out_precision": (
        "Left out of the search, since they have no {precision} dense peak: {gpus}",
        "以下 GPU 未参与搜索，因为它们没有 {precision} 稠密算力：{gpus}",
    ),
    "emit_steps_budget": ("the plan's tokens: {steps:,} steps", "方案的全部 token：{steps:,} 步"),
    "download_job": ("Download the job directory (zip)", "下载任务目录（zip）"),
    "estimate_attention": (
        "A plan that assumes the {kernel} attention kernel is an estimate only: trainplan's trainer runs the kernel "
        "its SDPA picks.",
        "假定使用 {kernel} 注意力内核的方案仅供估算：trainplan 的训练器使用 SDPA 自行选择的内核。",
    ),
    "estimate_only": (
        "A {stack} plan is an estimate only: trainplan emits and runs plans for the trainplan stack.",
        "{stack} 方案仅供估算：trainplan 只为 trainplan 软件栈的方案生成任务并运行。",
    ),
    "job_help": (
        "The zip holds job.json, launch.sh, slurm.sbatch, k8s.yaml and a README: unzip it and run "
        "`trainplan run DIR`, `sbatch slurm.sbatch` or `kubectl apply -f k8s.yaml`.",
        "zip 中包含 job.json、launch.sh、slurm.sbatch、k8s.yaml 和 README：解压后运行 "
        "`trainplan run DIR`、`sbatch slurm.sbatch` 或 `kubectl apply -f k8s.yaml`。",
    ),
    # local GPUs
    "no_local_gpus": ("No local GPUs to run on", "本机没有可用于运行的 GPU（未找到 NVIDIA 驱动或 GPU）"),
    "local_unmatched": (
        "None of these GPUs is in the hardware catalog, so no plan can be made for them.",
        "这些 GPU 都不在硬件目录中，无法为其规划。",
    ),
    "run_steps": ("Steps to run", "运行步数"),
    "run_local": ("Plan for {count} × {gpu} here and run", "为本机 {count} × {gpu} 规划并运行"),
    "run_running": ("Running (pid {pid})", "运行中（pid {pid}）"),
    "run_finished": ("Finished with exit code {code}", "已结束，退出码 {code}"),
    "stop_run": ("Stop the run", "停止运行"),
    "loss": ("loss", "损失"),
    "tokens_per_s": ("tokens/s", "token/秒"),
    # layout explorer
    "ex_replaced": (
        "The sidebar changed, so the explorer starts again from the new chosen plan. The layout you had set"
        " ({layout}) was replaced: set it again to estimate it under the new inputs.",
        "侧边栏有改动，探索器已从新的选定方案重新开始。你之前设置的布局（{layout}）已被替换：如需在新输入下估算，请重新设置。",
    ),
    "ex_help": (
        "Fix every knob of one configuration: memory per term against the capacity and the step time "
        "are the planner's own estimate. dp_shard is what the count leaves after tp × pp × cp × dp_replicate; "
        "ep (MoE) splits the experts over ranks it borrows from dp_shard × cp.",
        "固定一个配置的所有参数：各项显存与容量的对比及单步时间都来自规划器自身的估算。"
        "dp_shard 为 GPU 数除以 tp × pp × cp × dp_replicate 后的剩余部分；"
        "ep（MoE）把专家分布到从 dp_shard × cp 借用的 rank 上。",
    ),
    "ex_load": ("Start from the chosen plan", "从选定方案开始"),
    "ex_gpu": ("GPU type", "GPU 型号"),
    "ex_num_gpus": ("GPUs", "GPU 数量"),
    "ex_tp": ("tensor parallel (tp)", "张量并行（tp）"),
    "ex_pp": ("pipeline stages (pp)", "流水线级数（pp）"),
    "ex_vpp": ("interleaving (vpp)", "交错流水线（vpp）"),
    "ex_cp": ("context parallel (cp)", "上下文并行（cp）"),
    "ex_ep": ("expert parallel (ep)", "专家并行（ep）"),
    "ex_dp_replicate": ("replicas (dp_replicate)", "副本数（dp_replicate）"),
    "ex_sharding": ("sharding", "分片方式"),
    "ex_micro_batch": ("micro-batch", "微批"),
    "ex_grad_accum": ("accumulation", "梯度累积"),
    "ex_ac": ("activation ckpt.", "激活重计算"),
    "ex_ac_blocks": ("blocks checkpointed (per pp rank)", "重计算的块数（每个 pp rank）"),
    "ex_offload": ("CPU offload", "CPU 卸载"),
    "ex_precision": ("precision", "精度"),
    "ex_invalid": ("This configuration cannot exist: {error}", "该配置无法成立：{error}"),
    "ex_memory": ("reserved per GPU", "每 GPU 保留显存"),
    "ex_step": ("step time", "单步时间"),
    "ex_batch": ("{tokens:,} tokens per step", "每步 {tokens:,} 个 token"),
    "ex_batch_differs": (
        "This layout runs {tokens:,} tokens per step, the chosen plan {plan_tokens:,}: its time and cost are for"
        " that batch. Set the accumulation to compare at the plan's batch.",
        "此布局每步 {tokens:,} 个 token，所选方案为 {plan_tokens:,}：其时间与成本按该批大小计算。"
        "调整累积步数以按方案的批大小比较。",
    ),
    "ex_batch_too_large": (
        "{tokens:,} tokens per step is over the {limit:,} trainplan accepts: use fewer GPUs, a smaller "
        "micro-batch or less accumulation.",
        "每步 {tokens:,} 个 token，超过 trainplan 接受的上限 {limit:,}：请减少 GPU 数量、微批大小或梯度累积步数。",
    ),
    "ex_fits": ("Fits: reserved memory stays within the usable capacity.", "可行：保留显存未超过可用容量。"),
    "ex_does_not_fit": ("Does not fit: {reason}. Try: {fix}", "放不下：{reason}。可以尝试：{fix}"),
    "ex_over_memory": (
        "Does not fit: {need:,.1f} GiB per GPU (reserved + CUDA context), {usable:,.1f} GiB usable. Shard "
        "further, lower the micro-batch or checkpoint activations.",
        "放不下：每 GPU 需要 {need:,.1f} GiB（保留显存 + CUDA 上下文），可用 {usable:,.1f} GiB。"
        "请进一步分片、减小微批或使用激活重计算。",
    ),
    "ex_send": ("Send to plan", "发送到规划"),
    "ex_send_help": (
        "Plan for this GPU type and count only (sets the sidebar's GPU table).",
        "只为该 GPU 型号和数量规划（设置侧栏的 GPU 表）。",
    ),
    # run view
    "run_dir": ("Job directory", "任务目录"),
    "run_dir_help": (
        "A directory written by `trainplan emit` / `trainplan run`: job.json, metrics.jsonl, validation.json,"
        " report.json.",
        "由 `trainplan emit` / `trainplan run` 写出的目录：job.json、metrics.jsonl、validation.json、report.json。",
    ),
    "run_dir_needed": (
        "Enter a job directory to compare its run with its plan (refreshes while it runs).",
        "输入任务目录，对比其运行与方案（运行中自动刷新）。",
    ),
    "run_steps_read": ("{steps:,} steps logged {live}", "已记录 {steps:,} 步 {live}"),
    "run_no_metrics": (
        "No step logged yet: the charts appear with the first (metrics.jsonl).",
        "尚未记录任何步：记录第一步后显示图表（metrics.jsonl）。",
    ),
    "run_live": ("· live, refreshing", "· 运行中，自动刷新"),
    "run_mfu": ("MFU", "MFU（模型算力利用率）"),
    "run_memory": ("peak memory (GiB)", "峰值显存（GiB）"),
    "predicted": ("predicted", "预测值"),
    # portfolio
    "portfolio": ("Portfolio: several jobs on one inventory", "组合：多个任务共享一个库存"),
    "job_name": ("Name of the job in the sidebar", "侧栏中任务的名称"),
    "job_start_after": ("Start after (days)", "最早开始（天）"),
    "job_start_after_help": (
        "The day the job may start at the earliest (a jobs file's start_after_days; trial s51 H4), counted from day 0"
        " as its deadline is; 0: from the start. Add or Update keeps it with the job.",
        "任务最早可开始的日期（即任务文件中的 start_after_days），与期限一样从第 0 天算起；0 表示一开始即可。"
        "添加或更新任务时随任务保存。",
    ),
    "job_after": ("Starts after these jobs end", "在这些任务结束后开始"),
    "job_after_help": (
        "The jobs this one waits for (a jobs file's after = [...]): it starts once every one of them has ended."
        " Add or Update keeps the choice with the job.",
        "本任务要等待的任务（即任务文件中的 after = [...]）：它们全部结束后本任务才开始。添加或更新任务时随任务保存。",
    ),
    "add_job": ("Add job", "添加任务"),
    "clear_jobs": ("Remove all jobs", "移除全部任务"),
    "job_name_needed": ("Give the job a name.", "请为任务命名。"),
    "job_name_taken": (
        'A job named {name} is already in the list: to change it, pick it below and press "Update with the sidebar"; '
        "or use another name.",
        "列表中已有名为 {name} 的任务：如需修改，请在下方选中它并点击“用侧栏设置更新”；或换一个名称。",
    ),
    "no_jobs": ("No jobs yet: configure one in the sidebar and add it.", "还没有任务：请在侧栏配置后添加。"),
    "portfolio_inventory": (
        "Shared inventory: {inventory} (a type without an inventory: up to “Most GPUs to consider”).",
        "共享库存：{inventory}（未设库存的型号：最多为“最多考虑的 GPU 数”）。",
    ),
    "job_pick": ("Job", "任务"),
    "update_job": ("Update with the sidebar", "用侧栏设置更新"),
    "update_job_help": (
        "Replace this job's settings with what the sidebar describes now.",
        "用侧栏当前的设置替换此任务的设置。",
    ),
    "remove_job": ("Remove this job", "移除此任务"),
    "col_deadline_days": ("deadline (days)", "期限（天）"),
    "col_start_after_days": ("start after (days)", "最早开始（天）"),
    "col_after": ("after", "前置任务"),
    "col_budget_usd": ("budget (USD)", "预算（美元）"),
    "horizon_days": ("Horizon (days, 0 = none)", "时间范围（天，0 = 不限）"),
    "num_slots": ("Start-time slots", "开始时间槽数"),
    "jobs_cost": ("Jobs (owned rate for held GPUs, rent otherwise)", "各作业费用（持有的 GPU 按自有成本，其余按租价）"),
    "idle_cost": ("Owned GPUs idle until the last job ends", "最后一个作业结束前自有 GPU 的闲置成本"),
    "idle_cost_none_bought": (
        "No GPU type has an inventory in the GPU table, so no GPUs are held and none sit idle: each type is "
        "charged for its busy hours at its amortised purchase rate, up to the search's count cap at once. Enter "
        "the GPUs you own to see what idles.",
        "GPU 表中没有任何型号设置库存，因此没有持有的 GPU，也就没有闲置成本：各型号按其摊销后的购买价格对忙碌的小时计费，"
        "同时最多为搜索的数量上限。填入您拥有的 GPU 数量即可看到闲置情况。",
    ),
    "idle_cost_none": (
        "Under a rent price no GPUs are held and none sit idle: each type is rented by the hour, its count in "
        "the GPU table (or the search's count cap) a quota on what runs at once. To plan on GPUs you own and "
        "see what idles, choose Buy (amortised) pricing and enter their counts.",
        "租用定价下没有持有的 GPU，也就没有闲置成本：各型号按小时租用，GPU 表中的数量（或搜索的数量上限）是同时运行的配额。"
        "如需按您拥有的 GPU 规划并查看闲置情况，请选择购买（摊销）定价并填入数量。",
    ),
    "makespan": ("All jobs done after", "全部完成所需时间"),
    # session 44: under a reserved kind the portfolio reserves its rented types for whole terms
    "portfolio_reserved": (
        "Reserved: {gpus:,} × {gpu} for {terms} {years}-year term(s) at ${rate:,.2f} per GPU-hour ({kind}),"
        " {cost}; the jobs use {used} of it, and a reserved GPU is paid every hour of its terms, busy or idle.",
        "预留：{gpus:,} 块 {gpu}，{terms} 个 {years} 年期限，每 GPU 小时 ${rate:,.2f}（{kind}），共 {cost}；"
        "作业使用其中 {used}，预留的 GPU 在整个期限内无论忙闲每小时都要付费。",
    ),
    "portfolio_billed": (
        "Billed in all: {total} (the jobs, the held GPUs' idle hours and the reserved terms' unused hours).",
        "总计费用：{total}（作业、持有 GPU 的闲置时间与预留期限中未使用的时间）。",
    ),
    # portfolio: the basis of its figures (trial s19, finding 9)
    "portfolio_basis": (
        "Days are each job's time at {risk} (the quantile the search judges plans by), cost is its GPU-hours "
        "at the owned-GPU rate on the types you hold (a count in the GPU table under Buy pricing) and at rent "
        "on the others (under a rent price a count is a quota on what runs at once): the single-job page's "
        "headline is the model's own time at the table's price per GPU-hour (the rent, or under Buy pricing the "
        "amortised purchase).",
        "天数为各作业在 {risk} 分位的训练时间（搜索评判方案所用的分位），费用为其 GPU 小时在您持有的型号"
        "（购买定价下 GPU 表中填了数量）上按自有 GPU 成本计，其余型号按租价计（租用定价下，数量是同时运行的配额）；"
        "单作业页面的主数字是模型自身的时间，按 GPU 表中每 GPU 小时的价格计（租价，或购买定价下的摊销购置价）。",
    ),
    # trial s35 (round 2): one job that cannot run alone blanked the others' schedule
    "portfolio_left_out": ("The other jobs, scheduled without {jobs}", "其余作业的排程（不含 {jobs}）"),
    # trial s33: the same job planned alone on the single-job page got another plan, unexplained
    "portfolio_joint": (
        "Each job's plan is chosen jointly with the other jobs (they share the GPU inventory and limits), so it can"
        " differ from the plan the single-job page gives that job alone.",
        "各作业的方案与其他作业共同选定（它们共享 GPU 库存与上限），因此可能与单作业页面单独规划该作业所得的方案不同。",
    ),
    # At the risk quantile, as the days beside it (trial s35: read as the model's figure `plan` leads with).
    # trial s44 app L6: short, for the portfolio's cost table to fit its page; the basis is the column beside it
    "col_owned_cost_usd": ("cost at {risk} (USD)", "{risk} 分位费用（美元）"),
    "col_owned_cost_help": (
        "At the owned-GPU rate on the types you hold, at rent on the others (the cost basis column says which).",
        "所持型号按自有 GPU 成本计，其余按租价计（见“计费依据”一列）。",
    ),
    "col_band_from": ("80 % band from", "80% 区间下限"),  # the figure left of it: its band's low end
    "col_band_to": ("80 % band to", "80% 区间上限"),
    "portfolio_schedule": ("Schedule", "排程"),
    "portfolio_costs": ("Cost of each job", "各作业费用"),
    "col_days_at_risk": ("days at {risk}", "{risk} 分位天数"),
    "col_cost_p10_usd": ("cost, 80 % band from (USD)", "费用，80% 区间下限（美元）"),
    "col_cost_p90_usd": ("cost, 80 % band to (USD)", "费用，80% 区间上限（美元）"),
    "col_cost_p10_usd_bought": ("cost, 80 % band from (USD, amortised)", "费用，80% 区间下限（美元，摊销）"),
    "col_cost_p90_usd_bought": ("cost, 80 % band to (USD, amortised)", "费用，80% 区间上限（美元，摊销）"),
    "number_emptied": (
        "“{label}” was emptied: it keeps {value}. Type another number to change it.",
        "“{label}”已被清空：仍为 {value}。如需更改，请输入其他数字。",
    ),
    # ui/number_box.py: the range is checked on the server, so the page can say it (the browser's
    # red outline said it only in an English tooltip, and the answer stayed the old value's).
    "number_out_of_range": (
        "“{label}” takes {range}, not {value}: it keeps {kept}, and the answer shown is for {kept}.",
        "“{label}”只能取{range}，不能为 {value}：仍为 {kept}，所示结果按 {kept} 计算。",
    ),
    "number_range": ("{low} to {high}", "介于 {low} 与 {high} 之间的数"),
    "number_range_low": ("{low} or more", "不小于 {low} 的数"),
    "number_range_above": ("more than {low} and at most {high}", "大于 {low} 且不大于 {high} 的数"),
    "number_range_high": ("{high} or less", "不大于 {high} 的数"),
    "col_usd_per_gpu_h": ("$/GPU-h", "美元/GPU 小时"),
    "col_owned": ("cost basis", "计费依据"),
    "basis_owned": ("owned-GPU rate", "自有 GPU 成本"),
    "basis_rent": ("rent", "租价"),
    "col_validated": ("validated envelope", "验证情况"),  # trial s33: "在验证范围内" over "超出范围"
    # A plan's standing against the validated envelope (planner/plan_accuracy.py Standing), in the portfolio table.
    "standing_validated": ("validated", "已验证"),
    "standing_circular": ("not independent", "非独立验证"),
    "standing_outside": ("outside", "超出范围"),
    # The exact figures of a budget answer whose named plan is not the cheapest but the fastest within
    # NEAR_TIE_FRACTION of it (app trial s45 L2: "最便宜的方案需要 $8,586.80" under a headline that named the
    # 8 x mi325x plan at $8,603, the planner's English line said which)
    "detail_budget_near": (
        "Planner's figures: the lowest cost is ${need:,.2f} (the plan named above is the fastest within"
        " {fraction:.0%} of it), the budget is ${have:,.2f}.",
        "规划器的精确数字：最低费用为 ${need:,.2f}（上面所列方案是费用在其 {fraction:.0%} 以内的方案中最快的），"
        "预算为 ${have:,.2f}。",
    ),
    "detail_budget_deadline_near": (
        "Planner's figures: the lowest cost that meets the deadline is ${need:,.2f} (the plan named above is the"
        " fastest within {fraction:.0%} of it), the budget is ${have:,.2f}.",
        "规划器的精确数字：满足期限的最低费用为 ${need:,.2f}（上面所列方案是费用在其 {fraction:.0%} 以内的方案中"
        "最快的），预算为 ${have:,.2f}。",
    ),
}

_LABELS.update(MESSAGE_LABELS)  # the planner's answers (ui/i18n_messages.py)
_LABELS.update(PAGE_LABELS)  # later controls and notes (ui/i18n_page.py)
_LABELS.update(RUN_LOSS_LABELS)  # the run-loss figures' boxes and card line (ui/i18n_run_losses.py)
_LABELS.update(FLEET_LABELS)  # the portfolio's rent-vs-buy view (ui/i18n_fleet.py)
LANGUAGES = tuple(LANGUAGE_NAMES)


class Labels:
    """The app's labels in one language; call it with a key (and placeholder values)."""

    def __init__(self, lang: str):
        if lang not in LANGUAGE_NAMES:
            raise ValueError(f"language {lang!r}: use one of {', '.join(LANGUAGE_NAMES)}")
        self.lang = lang
        self._index = LANGUAGES.index(lang)

    def __call__(self, key: str, **values: object) -> str:
        text = _LABELS[key][self._index]
        return _format(text, values, self.lang == "zh") if values else text

    def get(self, key: str, default: str) -> str:
        """The label for ``key``, or ``default`` for keys that have none (terms the API adds later)."""
        return _LABELS[key][self._index] if key in _LABELS else default

    def option(self, value: str) -> str:
        """Label of a choice (``opt_<value>``): radio options, constraints, checkpointing modes."""
        return self(f"opt_{value}")

    def kind(self, kind: str) -> str:
        """A price kind's name ("spot", 竞价: ``kind_<kind>``; PRICE_KINDS), another word as given."""
        return self(f"kind_{kind}") if kind in PRICE_KINDS else kind

    def provider(self, name: str) -> str:
        """A price file's provider: a brand as written (AWS, Lambda), a description ("market index",
        hw_catalog/prices/market-index.toml) in the page's language (``provider_<name>``)."""
        return self.get(f"provider_{name}", name)

    def join(self, items: Iterable[str]) -> str:
        """A list in running text: 'a, b, c'; in Chinese with the enumeration comma, 'a、b、c'."""
        return ("、" if self.lang == "zh" else ", ").join(items)

    def clauses(self, items: Iterable[str]) -> str:
        """Clauses in running text: 'a; b'; in Chinese with the full-width semicolon, 'a；b'."""
        return ("；" if self.lang == "zh" else "; ").join(items)

    def labelled(self, label: str, value: str) -> str:
        """'label: value'; in Chinese with the full-width colon, 'label：value'."""
        return f"{label}：{value}" if self.lang == "zh" else f"{label}: {value}"

    def sentences(self, *items: str) -> str:
        """Sentences one after another: a space between them, none in Chinese."""
        return ("" if self.lang == "zh" else " ").join(i for i in items if i)


_FORMATTER = string.Formatter()
# Han characters, CJK punctuation (、。) and the full-width forms (（），：；)
_WIDE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def _wide(char: str) -> bool:
    return bool(_WIDE.fullmatch(char))


def _format(template: str, values: dict[str, object], zh: bool) -> str:
    """``template.format(**values)``, less two kinds of space the template sets beside a value (app
    trial s45 L7), the values never changed:
    - one percent style in each language, a figure's sign at it: "{extra:.1f} %" reads "8.9%", as
      "{fraction:.0%}" does ("80 % band", a term of the CLI and the docs, is no figure's); the
      templates write it so (a test checks), this a guard for a new one (review s46 L7);
    - in Chinese, a space where the value's end and the text's are both Chinese or full-width:
      "{kind} 没有" keeps its space after "trainplan" and drops it after "（多 GPU）" ("trainplan（多
      GPU） 没有实测峰值", "一年预留 按整个 1 年期限计费", "Hugging Face 模块 的误差区间")."""
    out = ""
    for literal, field, spec, conversion in _FORMATTER.parse(template):
        if literal[:2] == " %" and out[-1:].isdigit():
            literal = literal[1:]  # "8.9" then " %"
        elif zh and literal[:1] == " " and out and _wide(out[-1]) and len(literal) > 1 and _wide(literal[1]):
            literal = literal[1:]  # a value's wide end, then " 没有"
        out += literal
        if field is None:
            continue
        value = _FORMATTER.get_field(field, (), values)[0]
        shown = _FORMATTER.format_field(_FORMATTER.convert_field(value, conversion), spec or "")
        if zh and literal[-1:] == " " and len(out) > 1 and _wide(out[-2]) and shown[:1] and _wide(shown[0]):
            out = out[:-1]  # "；" or "取自" then " " then a value that starts wide
        out += shown
    return out


# Markdown's punctuation (CommonMark escapes any ASCII punctuation with a backslash) and
# Streamlit's ":color[...]" / ":emoji:" directives: the planner's "dp_replicate*tp*pp*cp" must not
# lose its asterisks or italicise "tp" (issue 30).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~:])")


def plain(text: str) -> str:
    """``text`` shown as written where Streamlit renders Markdown (st.error, st.warning,
    st.caption, st.info): every Markdown character escaped. Use it on text the page did not
    write itself (the planner's sentences, file names, exception messages)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def label_keys() -> tuple[str, ...]:
    return tuple(_LABELS)


def all_labels(lang: str) -> dict[str, str]:
    """Every label of one language (unformatted), for tests and translators."""
    index = LANGUAGES.index(lang)
    return {key: texts[index] for key, texts in _LABELS.items()}
