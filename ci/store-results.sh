#!/usr/bin/env bash
# Store a results folder on the results branch (fetch, re-apply, retry; never force).
# Usage: bash ci/store-results.sh [--remote R] [--branch B] [--token-env VAR] RESULTS_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
opts=()
while [ $# -gt 1 ]; do opts+=("$1" "$2"); shift 2; done
[ $# -eq 1 ] || die "usage: store-results.sh [options] RESULTS_DIR"
nx store push "${opts[@]}" --results-dir "$1"
