#!/usr/bin/env bash
# Install Debian's headless Chromium and its driver for tests/ui/test_app_browser.py (idempotent),
# plus a Chinese font so that screenshots of the 中文 interface show characters, not boxes.
# Never fails the caller: without a browser those tests skip with a reason.
set -u
have_chromium() { [ -x /usr/bin/chromium ]; }
have_cjk_font() { command -v fc-list >/dev/null 2>&1 && [ -n "$(fc-list :lang=zh 2>/dev/null)" ]; }

if have_chromium && have_cjk_font; then
  echo "chromium: already installed ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown'))"
  exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  have_chromium || echo "chromium: not installed and cannot install it here (needs root and apt-get); browser tests will skip"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq >/dev/null 2>&1; then
  echo "chromium: apt-get update failed; browser tests will skip unless chromium is present"
  exit 0
fi
if ! have_chromium; then
  if apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1; then
    echo "chromium: installed ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown'))"
  else
    echo "chromium: apt-get install failed; browser tests will skip"
  fi
fi
if ! have_cjk_font; then  # best effort: only screenshots need it
  apt-get install -y -qq fonts-wqy-zenhei >/dev/null 2>&1 || echo "fonts-wqy-zenhei: not installed (中文 shows as boxes in screenshots)"
fi
exit 0
