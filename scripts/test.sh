#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
if [ -x scripts/install_browser.sh ]; then bash scripts/install_browser.sh || echo "browser install failed: browser tests will skip"; fi
export OMP_NUM_THREADS=1
exec .venv/bin/python -m pytest -q -n 2 --dist loadgroup "$@"
