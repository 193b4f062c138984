#!/usr/bin/env bash
# Lint, format and type checks (CI runs them after setup, before the tests); all three run and
# any failure fails the script. Needs the [test] extras: bash scripts/setup.sh test installs them.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${TRAINPLAN_VENV:-.venv}/bin
status=0
"$BIN/ruff" check . || status=1
"$BIN/ruff" format --check . || status=1
"$BIN/mypy" || status=1  # files and settings: [tool.mypy] in pyproject.toml
exit $status
