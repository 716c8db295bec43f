#!/usr/bin/env bash
# Plan a per-commit benchmark run: the pushed commit plus up to N recent first-parent
# commits that have no stored result for some shard's machine (backfill), oldest first;
# and the shard matrix. Outputs `commits=<space-separated>` and `shards=<json>` (stdout and
# $GITHUB_OUTPUT). The step itself is the package's (`python -m neuronasv.ci plan`,
# neuronasv/ci/flows.py), the same one the reusable workflow runs.
# Usage: bash ci/plan.sh [--remote R] [--branch B] [--token-env VAR] COMMIT
# Env: NEURONASV_MACHINE (trainium), NEURONASV_SHARDS (JSON list of {name, bench}),
#      NEURONASV_BACKFILL (5).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
store_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --remote|--branch|--token-env) store_args+=("$1" "$2"); shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || die "usage: plan.sh [options] COMMIT"
nxpy -m neuronasv.ci --repo . plan --machine "${NEURONASV_MACHINE:-trainium}" \
  --shards "${NEURONASV_SHARDS:-}" --backfill "${NEURONASV_BACKFILL:-5}" "${store_args[@]}" "$1"
