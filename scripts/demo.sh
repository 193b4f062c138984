#!/usr/bin/env bash
# The main job on an embedded default: plan Llama 3 8B for 1T tokens in 30 days, then plan
# the tiny preset, emit it as a job and train a few steps on CPU with 2 processes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh train   # base + [train]: what plan, emit and run need (not the test tools)
TP=.venv/bin/trainplan
$TP plan --model llama3-8b --tokens 1e12 --deadline-days 30
WORK=${TRAINPLAN_DEMO_DIR:-runs/demo}
mkdir -p "$WORK"
$TP estimate --model tiny --gpu h100-sxm --num-gpus 2 --micro-batch 4 --seq-len 256 --grad-accum 2 --out "$WORK/plan.json"
$TP emit "$WORK/plan.json" --out "$WORK/job" --steps 20 --checkpoint-every 10
$TP run "$WORK/job" --device cpu
