#!/usr/bin/env bash
# The unprivileged half of the PR flow, for a laptop and ci/rehearse.sh: the same step the
# reusable workflow runs (`python -m neuronasv.ci pr-bench`, neuronasv/ci/flows.py),
# after ci/env-full.sh has picked the interpreter that has the accelerator stack.
# Artifact in OUT: results/ (asv results + sidecars: the numbers), rounds.json (every ABAB
# sample), pr-number, head-sha, base-sha, and findings.json + comment.md for people; the
# flagged workloads' base/head traces in TRACES_OUT (default OUT/traces).
# Usage: bash ci/pr-bench.sh --pr N --base SHA --head SHA --out DIR [--bench REGEX]
#            [--traces-out DIR]
# Env: NEURONASV_MACHINE (trainium), NEURONASV_BACKEND, NEURONASV_PYTHON (optional),
#      NEURONASV_CONFIRM_ROUNDS (3; 0 skips the confirmation re-run),
#      NEURONASV_CONFIRM_MAX_ROUNDS (rounds + 3), NEURONASV_CONFIRM_BUDGET (900 s),
#      NEURONASV_CONFIRM_SAMPLES, NEURONASV_HISTORY_DIR (main-branch results for noise floors).
# Needs no token and writes nothing outside OUT (and TRACES_OUT); it deletes only folders
# a step of ours created (neuronasv/ci/owned.py, the rule of ci/lib.sh claim_dir).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
[ $# -gt 0 ] || die "usage: pr-bench.sh --pr N --base SHA --head SHA --out DIR [...]"
source ci/env-full.sh
args=(--machine "${NEURONASV_MACHINE:-trainium}" --rounds "${NEURONASV_CONFIRM_ROUNDS:-3}"
      --budget-seconds "${NEURONASV_CONFIRM_BUDGET:-900}")
[ -n "${NEURONASV_CONFIRM_MAX_ROUNDS:-}" ] && args+=(--max-rounds "$NEURONASV_CONFIRM_MAX_ROUNDS")
[ -n "${NEURONASV_CONFIRM_SAMPLES:-}" ] && args+=(--samples "$NEURONASV_CONFIRM_SAMPLES")
[ -n "${NEURONASV_HISTORY_DIR:-}" ] && args+=(--history-dir "$NEURONASV_HISTORY_DIR")
nxpy -m neuronasv.ci --repo . pr-bench "${args[@]}" "$@"
