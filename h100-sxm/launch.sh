#!/usr/bin/env bash
# trainplan job h100-sxm: tiny on 1 x h100-sxm (1 node(s)), layout fsdp (1 GPU), predicted step 0.05 s
# One node:      bash launch.sh [trainer options, e.g. --steps 100]
# Several nodes: on each node run  NODE_RANK=<0..0> RDZV_ENDPOINT=<node-0 host>:29500 bash launch.sh
# `trainplan run` does the same with a lock, data preparation and automatic replanning.
set -euo pipefail
# A fresh rendezvous store per restart round: torchrun's shared store hands restarted workers the
# dead ones' addresses (pytorch/pytorch#135712); every node must agree on this setting.
export TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1
JOB_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)"
NUM_NODES=1
NPROC_PER_NODE=1
if [ "$NUM_NODES" -eq 1 ]; then
  exec torchrun --standalone --nnodes 1 --nproc-per-node "$NPROC_PER_NODE" \
    -m trainer.train "$JOB_DIR" "$@"
fi
: "${RDZV_ENDPOINT:?set RDZV_ENDPOINT=host:port of node 0 and NODE_RANK on each of the $NUM_NODES nodes}"
exec torchrun --nnodes "$NUM_NODES" --nproc-per-node "$NPROC_PER_NODE" --node-rank "${NODE_RANK:-0}" \
  --rdzv-backend c10d --rdzv-endpoint "$RDZV_ENDPOINT" --rdzv-id h100-sxm \
  --max-restarts "${MAX_RESTARTS:-0}" \
  -m trainer.train "$JOB_DIR" "$@"
