#!/usr/bin/env bash
# GPU validation (issue #3): on one local NVIDIA GPU, for 1B/3B/7B-class models, let the planner
# choose the layout for this GPU, emit the job, train a few dozen steps with trainplan's native
# trainer, and beside it run stock Hugging Face transformers + FSDP2 on the same model and batch.
# Prints predicted vs measured peak memory and step time, and the MFU of both. Under 8 minutes
# on an H100/H200. Results go to ${OUT:-runs/gpu_validate}/ (summary.json, summary.md, logs).
#
#   bash bench/gpu_validate.sh            # all models
#   MODELS="llama3.2-1b" STEPS=20 bash bench/gpu_validate.sh
#   PRECISION=fp8 MODELS="llama3.2-1b" OUT=runs/gpu_fp8 bash bench/gpu_validate.sh   # needs torchao
#   DEVICE=cpu GPU_ID=h100-sxm MODELS=tiny STEPS=3 SEQ=128 bash bench/gpu_validate.sh   # dry run (tests)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
RESULTS=${OUT:-runs/gpu_validate}
MODELS=${MODELS:-"llama3.2-1b llama3.2-3b llama2-7b"}
STEPS=${STEPS:-30}
SEQ=${SEQ:-2048}
COMPILE=${COMPILE:-}          # COMPILE=1: plan and run with per-block torch.compile
PRECISION=${PRECISION:-bf16}  # PRECISION=fp8: torchao float8 (Ada/Hopper or newer)
mkdir -p "$RESULTS"
export PYTHONUNBUFFERED=1

DEVICE=${DEVICE:-cuda}
GPU_ID=${GPU_ID:-$("$PY" -m ui.cli detect --json | "$PY" -c 'import json,sys; g=json.load(sys.stdin)["gpus"]; print(g[0]["catalog_id"] if g and g[0]["catalog_id"] else "")')}
if [ -z "$GPU_ID" ]; then
  echo "gpu_validate: no catalog-matched NVIDIA GPU found (trainplan detect)"; exit 2
fi
echo "gpu_validate: GPU $GPU_ID, models: $MODELS, $STEPS steps, seq $SEQ, $PRECISION"

for MODEL in $MODELS; do
  DIR="$RESULTS/$MODEL"
  rm -rf "$DIR"; mkdir -p "$DIR"
  echo "=== $MODEL: plan for one $GPU_ID"
  # One GPU; a global batch of 16 sequences lets the planner pick micro-batch x accumulation and AC.
  "$PY" -m ui.cli plan --model "$MODEL" --tokens 1e10 --gpus "$GPU_ID=1" --max-gpus 1 --seq-len "$SEQ" \
      --global-batch-tokens $((16 * SEQ)) --top 0 --precision "$PRECISION" ${COMPILE:+--compile} --out "$DIR/plan.json" > "$DIR/plan.txt" 2>&1 || true
  if [ ! -f "$DIR/plan.json" ]; then echo "no feasible plan for $MODEL:"; cat "$DIR/plan.txt"; continue; fi
  head -6 "$DIR/plan.txt"
  "$PY" -m ui.cli emit "$DIR/plan.json" --out "$DIR/job" --steps "$STEPS" \
      --no-checkpoints > /dev/null
  echo "=== $MODEL: trainplan native trainer"
  timeout 240 "$PY" -m ui.cli run "$DIR/job" --device "$DEVICE" > "$DIR/native.log" 2>&1
  echo "exit $?" >> "$DIR/native.log"; tail -8 "$DIR/native.log"
  MB=$("$PY" -c "import json; p=json.load(open('$DIR/plan.json')); print(p['training']['micro_batch'])")
  AC=$("$PY" -c "import json; p=json.load(open('$DIR/plan.json')); print('--ac' if p['training']['activation_checkpointing']!='none' else '')")
  if [ "$DEVICE" != cuda ]; then echo "(no stock HF baseline off CUDA)"; continue; fi
  echo "=== $MODEL: stock HF transformers + FSDP2 (micro-batch $MB $AC)"
  timeout 180 "$PY" bench/hf_fsdp2_baseline.py --model "$MODEL" --micro-batch "$MB" --seq-len "$SEQ" --steps 10 $AC \
      > "$DIR/hf.json" 2> "$DIR/hf.log"
  echo "exit $?" >> "$DIR/hf.log"; cat "$DIR/hf.json"
done
"$PY" bench/summarize_gpu_validate.py "$RESULTS"
