#!/usr/bin/env bash
# Install Debian's headless Chromium and its driver for tests/ui/test_app_browser.py (idempotent),
# plus a Chinese font so that screenshots of the 中文 interface show characters, not boxes.
# Never fails the caller: without a browser those tests skip with a reason.
# Another apt or dpkg run (unattended-upgrades, a second setup) holding the package lock is waited
# for, up to LOCK_WAIT_S seconds, instead of failing (issue 30).
set -u
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
LOCK_WAIT_S=${LOCK_WAIT_S:-600}
LOCK_POLL_S=${LOCK_POLL_S:-5}
LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock)
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
have_chromium() { [ -x "$CHROMIUM" ]; }
have_cjk_font() { command -v fc-list >/dev/null 2>&1 && [ -n "$(fc-list :lang=zh 2>/dev/null)" ]; }

wait_for_locks() {
  # fuser (psmisc) names the holder; without it, apt's own DPkg::Lock::Timeout below still waits.
  command -v fuser >/dev/null 2>&1 || return 0
  local deadline=$((SECONDS + LOCK_WAIT_S)) said=""
  while fuser "${LOCKS[@]}" >/dev/null 2>&1 && [ "$SECONDS" -lt "$deadline" ]; do
    [ -z "$said" ] && said=1 && echo "chromium: another apt/dpkg run holds the package lock; waiting up to ${LOCK_WAIT_S} s"
    sleep "$LOCK_POLL_S"
  done
}

apt_get() {  # apt-get, waiting for the lock; its output kept in $LOG for the failure message
  wait_for_locks
  apt-get -o "DPkg::Lock::Timeout=$LOCK_WAIT_S" "$@" >"$LOG" 2>&1
}

failed() {
  echo "chromium: apt-get $1 failed; browser tests will skip unless chromium is present:"
  tail -n 3 "$LOG" | sed 's/^/  /'
}

if have_chromium && have_cjk_font; then
  echo "chromium: already installed ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown'))"
  exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  have_chromium || echo "chromium: not installed and cannot install it here (needs root and apt-get); browser tests will skip"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt_get update -qq; then
  failed update
  exit 0
fi
if ! have_chromium; then
  if apt_get install -y -qq chromium chromium-driver; then
    echo "chromium: installed ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown'))"
  else
    failed install
  fi
fi
if ! have_cjk_font; then  # best effort: only screenshots need it
  apt_get install -y -qq fonts-wqy-zenhei || echo "fonts-wqy-zenhei: not installed (中文 shows as boxes in screenshots)"
fi
exit 0
