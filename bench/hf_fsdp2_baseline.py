"""Stock Hugging Face transformers + FSDP2 training steps: the bar trainplan's trainer must beat.

Follows the recipe of shared/calibration (one process, one GPU): LlamaForCausalLM built on the
GPU in fp32 with SDPA attention, fully_shard on every decoder layer then on the root with
bf16 params / fp32 reduction, fused AdamW, clip_grad_norm_(1.0), loss from ``labels``.
Prints one JSON line: peak allocated/reserved GiB, median step seconds, tokens/s, MFU.

    python bench/hf_fsdp2_baseline.py --model llama3.2-1b --micro-batch 4 --seq-len 2048 --steps 12
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time


def build(model_name: str, activation_checkpointing: bool):
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from transformers import LlamaConfig, LlamaForCausalLM

    from planner.catalog.models import get_preset

    spec = get_preset(model_name)
    config = LlamaConfig(
        hidden_size=spec.hidden_size,
        intermediate_size=spec.ffn_hidden_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        vocab_size=spec.vocab_size,
        tie_word_embeddings=spec.tied_embeddings,
        max_position_embeddings=spec.max_seq_len,
        attn_implementation="sdpa",
        use_cache=False,
    )
    with torch.device("cuda"):
        model = LlamaForCausalLM(config)
    if activation_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return spec, model


def local_bf16_peak() -> float:
    """Dense bf16 peak of this GPU from the catalog (matched by NVML-style name and memory)."""
    import torch

    from planner.catalog.detect import match_gpu_name
    from planner.catalog.hardware import load_catalog

    props = torch.cuda.get_device_properties(0)
    spec = match_gpu_name(props.name, props.total_memory, load_catalog())
    if spec is None:
        raise SystemExit(f"{props.name} is not in the catalog: cannot compute MFU")
    return spec.peak_flops("bf16")


def main() -> None:
    import torch
    import torch.distributed as dist

    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="llama3.2-1b")
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--ac", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.reset_peak_memory_stats()
    spec, model = build(args.model, args.ac)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)
    ids = torch.randint(0, spec.vocab_size, (args.micro_batch, args.seq_len), device="cuda")
    times = []
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    step_s = statistics.median(times)
    tokens = args.micro_batch * args.seq_len
    from planner.model.flops import model_flops_per_token
    from planner.model.settings import DEFAULT_SETTINGS
    from planner.units import GIB

    flops = float(model_flops_per_token(spec, args.seq_len, DEFAULT_SETTINGS)) * tokens / step_s
    peak = local_bf16_peak()
    print(
        json.dumps(
            {
                "impl": "hf-stock",
                "model": args.model,
                "micro_batch": args.micro_batch,
                "seq_len": args.seq_len,
                "ac": args.ac,
                "step_s": step_s,
                "tokens_per_s": tokens / step_s,
                "mfu": flops / peak,
                "peak_alloc_gib": torch.cuda.max_memory_allocated() / GIB,
                "peak_reserved_gib": torch.cuda.max_memory_reserved() / GIB,
            }
        )
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
