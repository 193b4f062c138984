"""Reserved peaks under a pipeline: torchtitan's 405B runs against the memory model.

    PYTHONPATH=. .venv/bin/python bench/pp_memory_check.py

torchtitan's benchmarks/llama3_h100_202412_torchtitan.md Table 5 (Llama 3.1 405B, 512 Grand
Teton H100, FSDP 8 x TP 8 x PP 8, torch.compile, Float8, AsyncTP, full recomputation, local batch
32 of 8,192 tokens) prints the peak reserved memory of the 1F1B and interleaved 1F1B schedules.
The micro-batch count is not stated; torchtitan at the table's commit (9dec370) splits the batch
into ``pipeline_parallel_microbatches or parallel_dims.pp`` = 8 micro-batches of 4
(torchtitan/parallelisms/pipeline_llama.py), the first line of each schedule. One micro-batch a
sequence (32) is the second. Table 6 adds context parallelism (TP 8 x PP 8, 1F1B, local batch 8:
8 micro-batches of one sequence, 32K-256K tokens). Not rows of the memory band (the count is the code's default, not
the table's): a check of the reserved peak's gradient churn under a pipeline (session 39).
"""

from __future__ import annotations

from dataclasses import replace

from planner.catalog.hardware import load_catalog
from planner.layout import ActivationCheckpointing, Implementation, Layout, Precision, Sharding, TrainingConfig
from validation.fsdp_runs import _model, predict_fsdp_run, read_fsdp_runs

# (schedule, vpp, measured reserved GiB): Table 5
TABLE_5 = (("1F1B", 1, 82.5), ("interleaved 1F1B", 2, 72.7))
# (FSDP, CP, sequence, measured reserved GiB): Table 6, 1F1B, TP 8 x PP 8, local batch 8: 8 micro-batches of 1
TABLE_6 = ((8, 1, 32768, 75.3), (4, 2, 65536, 75.9), (2, 4, 131072, 77.1), (1, 8, 262144, 84.9))
TORCHTITAN_70B_2D_ROW = 11  # a torchtitan row on the same GPU: its stack profile and network


def lines() -> list[str]:
    catalog = load_catalog()
    base = next(r for r in read_fsdp_runs() if r.row_id == TORCHTITAN_70B_2D_ROW)
    out = ["| schedule | micro-batches | measured GiB | predicted GiB | error % |", "|---|---|---:|---:|---:|"]
    for schedule, vpp, measured in TABLE_5:
        for micro_batch, accum in ((4, 8), (1, 32)):
            layout = Layout(dp_shard=8, tp=8, pp=8, vpp=vpp, sharding=Sharding.FSDP)
            training = TrainingConfig(
                seq_len=8192, micro_batch=micro_batch, grad_accum=accum, precision=Precision.FP8, compile=True,
                activation_checkpointing=ActivationCheckpointing.FULL, impl=Implementation.NATIVE,
            )  # fmt: skip
            run = replace(base, model=_model("llama3.1-405b", 8192), num_gpus=512, layout=layout, training=training)
            predicted = predict_fsdp_run(run, catalog).predicted_reserved_gib
            out.append(
                f"| {schedule} | {accum} x {micro_batch} | {measured:.1f} | {predicted:.1f} |"
                f" {predicted / measured - 1:+.1%} |"
            )
    out += ["", "| FSDP x CP | sequence | measured GiB | predicted GiB | error % |", "|---|---:|---:|---:|---:|"]
    for shard, cp, seq, measured in TABLE_6:
        layout = Layout(dp_shard=shard, cp=cp, tp=8, pp=8, sharding=Sharding.FSDP)
        training = TrainingConfig(
            seq_len=seq, micro_batch=1, grad_accum=8, precision=Precision.FP8, compile=True,
            activation_checkpointing=ActivationCheckpointing.FULL, impl=Implementation.NATIVE,
        )  # fmt: skip
        run = replace(base, model=_model("llama3.1-405b", seq), num_gpus=512, layout=layout, training=training)
        predicted = predict_fsdp_run(run, catalog).predicted_reserved_gib
        out.append(f"| {shard} x {cp} | {seq:,} | {measured:.1f} | {predicted:.1f} | {predicted / measured - 1:+.1%} |")
    return out


if __name__ == "__main__":
    print("\n".join(lines()))
