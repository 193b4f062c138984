#!/usr/bin/env bash
# Create .venv (if missing) and install trainplan with the extras given (default: test).
#   bash scripts/setup.sh            # [test]: everything (scripts/test.sh, CI)
#   bash scripts/setup.sh train      # base + [train]: plan, emit and run (scripts/demo.sh)
#   TRAINPLAN_EXTRAS=app bash scripts/setup.sh
# Extras: "" (base: plan only), train, app, test, or a list such as "train,app".
# torch: the CPU build 2.13.0 is installed first when the extras need torch and none is present,
# so that the "torch>=2.6" range in pyproject.toml does not pull a multi-GB CUDA build.
# A rerun with the same extras and an unchanged pyproject.toml installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS=${1-${TRAINPLAN_EXTRAS-test}}
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# pip warns about each configured index directory that lacks a package; nothing to act on.
quiet_pip() { .venv/bin/python -m pip install -q "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }; }

checks="planner, pulp"
needs_torch=0
case ",$EXTRAS," in *,train,* | *,test,*) needs_torch=1; checks="$checks, torch" ;; esac
case ",$EXTRAS," in *,app,* | *,test,*) checks="$checks, streamlit" ;; esac

stamp=.venv/.trainplan-installed-${EXTRAS:-base}
stamp=${stamp//,/+}
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && .venv/bin/python -c "import $checks" >/dev/null 2>&1; then
  exit 0
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if [ "$needs_torch" = 1 ] && ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  quiet_pip "torch==2.13.0"
fi
quiet_pip -e ".${EXTRAS:+[$EXTRAS]}"
.venv/bin/python -c "import $checks"
touch "$stamp"
