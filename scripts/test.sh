#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
if [ -x scripts/install_browser.sh ]; then bash scripts/install_browser.sh || echo "browser install failed: browser tests will skip"; fi
export OMP_NUM_THREADS=1
# loadfile: a module's tests share one worker, so module fixtures (the batched torchrun launches of
# tests/integration/test_distributed*.py) run once. (xdist 3.8's loadgroup no longer groups under pytest 9.2:
# it renames item._nodeid, which pytest 9 no longer reads.) --no-loadscope-reorder (xdist >= 3.8): modules go
# out in collection order, which tests/conftest.py sorts longest first; xdist's own order (most tests
# first) started the long few-test modules last, and one worker then idled while the other finished them.
# --durations: the CI log names the slowest tests, so the 10-minute budget is trimmed from numbers.
exec .venv/bin/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --durations=30 "$@"
