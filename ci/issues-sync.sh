#!/usr/bin/env bash
# Open / update / close one GitHub issue per regression change point: the package's step
# (`python -m neuronasv.ci issues`, neuronasv/ci/flows.py), the same one neuronasv-issues.yml runs.
# Usage: bash ci/issues-sync.sh [--dry-run] DIR   (DIR holds regressions-<machine>.json)
# Env: GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL (Actions sets them), SITE_URL.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
dry=()
if [ "${1:-}" = "--dry-run" ]; then dry=(--dry-run); shift; fi
[ $# -eq 1 ] || die "usage: issues-sync.sh [--dry-run] DIR"
nxpy -m neuronasv.ci --repo . issues "${dry[@]}" "$1"
