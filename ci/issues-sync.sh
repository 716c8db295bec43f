#!/usr/bin/env bash
# Open / update / close one GitHub issue per regression change point.
# Usage: bash ci/issues-sync.sh [--dry-run] DIR   (DIR holds regressions-<machine>.json)
# Env: GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL (Actions sets them), SITE_URL.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
dry=()
if [ "${1:-}" = "--dry-run" ]; then dry=(--dry-run); shift; fi
[ $# -eq 1 ] || die "usage: issues-sync.sh [--dry-run] DIR"
shopt -s nullglob
docs=("$1"/regressions-*.json)
[ ${#docs[@]} -gt 0 ] || die "no regressions-*.json in $1"
nxpy -m neuronasv issues-sync "${dry[@]}" ${SITE_URL:+--site-url "$SITE_URL"} "${docs[@]}"
