#!/usr/bin/env bash
# Run the asv suite (one shard of it) at each given commit on this machine.
# Usage: bash ci/bench-run.sh [--shard NAME] [--bench REGEX] [--results-dir DIR]
#            [--traces-dir DIR] [--metrics LIST] COMMIT...
# Env: NEURONASV_MACHINE (trainium), NEURONASV_BACKEND (auto), NEURONASV_PYTHON (optional).
# Each commit's results land in DIR/<machine>/<hash8>-<env>.json (+ sidecar); a commit whose
# benchmarks fail still leaves the others' results (neuronasv run keeps going). One gzipped
# chrome trace per workload lands in DIR/<machine>/<hash8>/ of --traces-dir (default
# .asv/traces); the sidecars name them, the site links them.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
shard=all bench="" results="" traces="" metrics=""
while [ $# -gt 0 ]; do
  case "$1" in
    --shard) shard="$2"; shift 2 ;;
    --bench) bench="$2"; shift 2 ;;
    --results-dir) results="$2"; shift 2 ;;
    --traces-dir) traces="$2"; shift 2 ;;
    --metrics) metrics="$2"; shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || die "usage: bench-run.sh [options] COMMIT..."
for c in "$@"; do is_sha "$c" || die "not a full commit hash: '$c'"; done
machine=$(machine_for_shard "${NEURONASV_MACHINE:-trainium}" "$shard")
source ci/env-full.sh
# devtime only: the rehearsal's budget (neuronasv run's CPU default also counts instructions)
args=(run --machine "$machine" --metrics devtime)
[ -n "$results" ] && args+=(--results-dir "$results")
[ -n "$bench" ] && args+=(--bench "$bench")
[ -n "$traces" ] && args+=(--traces-dir "$traces")
[ -n "$metrics" ] && args+=(--metrics "$metrics")
log "shard $shard → machine $machine: $# commit(s)"
nx "${args[@]}" "$@"
