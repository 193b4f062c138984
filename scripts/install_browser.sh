#!/usr/bin/env bash
# Install Debian's headless Chromium and its driver for tests/test_app_browser.py (idempotent).
# Never fails the caller: without a browser those tests skip with a reason.
set -u
if [ -x /usr/bin/chromium ]; then
  echo "chromium: already installed ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown'))"
  exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: not installed and cannot install it here (needs root and apt-get); browser tests will skip"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1; then
  echo "chromium: installed ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown'))"
else
  echo "chromium: apt-get install failed; browser tests will skip"
fi
exit 0
