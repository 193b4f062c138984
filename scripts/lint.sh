#!/usr/bin/env bash
# Lint, format and type checks (CI runs them after setup, before the tests). Needs the [test]
# extras: bash scripts/setup.sh test (or scripts/test.sh) installs them into .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${TRAINPLAN_VENV:-.venv}/bin
"$BIN/ruff" check .
"$BIN/ruff" format --check .
"$BIN/mypy"  # files and settings: [tool.mypy] in pyproject.toml
