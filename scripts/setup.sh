#!/usr/bin/env bash
# Create .venv (if missing) and install trainplan with its test extras.
# torch: the CPU build 2.13.0 is installed first when no torch is present, so that the
# "torch>=2.6" range in pyproject.toml does not pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q "torch==2.13.0" 2>&1 | grep -v "^WARNING: Location" || true
fi
.venv/bin/python -m pip install -q -e ".[test]" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import torch, pulp, streamlit, planner" 
