#!/usr/bin/env bash
# The unprivileged half of the PR flow: measure merge-base and head on this machine,
# re-measure suspected regressions interleaved (ABAB), render, and lay out the artifact:
#   OUT/results/ (the asv results + sidecars: the numbers)  OUT/rounds.json (every ABAB
#   sample)  OUT/pr-number  OUT/head-sha  OUT/base-sha
#   OUT/findings.json  OUT/comment.md (for people reading the artifact only)
# and the base and head traces of every flagged workload in TRACES_OUT (default
# OUT/traces) as <base|head>-<hash8>/<workload>-<shape>-<dtype>.json.gz (the layout the
# comment's links name; the workflow uploads it as the pr-benchmark-traces artifact).
# The privileged comment job reads only the numbers (results/, rounds.json) and the three
# one-line files, and recomputes every verdict itself (ci/pr_comment.py).
# Env: NEURONASV_CONFIRM_SAMPLES (samples per side per round of the re-run).
# Usage: bash ci/pr-bench.sh --pr N --base SHA --head SHA --out DIR [--bench REGEX]
#            [--traces-out DIR]
# Env: NEURONASV_MACHINE (trainium), NEURONASV_BACKEND, NEURONASV_PYTHON (optional),
#      NEURONASV_CONFIRM_ROUNDS (3; 0 skips the confirmation re-run),
#      NEURONASV_CONFIRM_MAX_ROUNDS (rounds + 3), NEURONASV_CONFIRM_BUDGET (900 s),
#      NEURONASV_HISTORY_DIR (main-branch results for per-series noise floors; optional).
# Needs no token and writes nothing outside OUT (and TRACES_OUT); it deletes only folders
# a script of ours created (ci/lib.sh claim_dir).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
pr="" base="" head="" out="" bench="" traces_out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --pr) pr="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    --head) head="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --bench) bench="$2"; shift 2 ;;
    --traces-out) traces_out="$2"; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
[[ "$pr" =~ ^[1-9][0-9]{0,9}$ ]] || die "--pr must be a PR number, got '$pr'"
is_sha "$base" && is_sha "$head" || die "--base and --head must be full commit hashes"
[ -n "$out" ] || die "--out is required"
machine=$(machine_for_shard "${NEURONASV_MACHINE:-trainium}" all)
mkdir -p "$out"
results="$out/results"  # in the artifact; PR measurements never go to the results branch
traces_all="$out/traces-all"  # every workload's trace; only the flagged ones are kept
traces_out="${traces_out:-$out/traces}"
# Cleared only when an earlier run of a script made them (marker): a user's folder given
# as --traces-out or found at OUT/results is refused, never deleted.
for d in "$results" "$traces_all" "$traces_out"; do claim_dir "$d"; done
mb=$(git merge-base "$base" "$head")
source ci/env-full.sh
log "PR #$pr: merge-base ${mb:0:12} vs head ${head:0:12} on $machine"
args=(run --machine "$machine" --results-dir "$results" --keep-traces --traces-dir "$traces_all")
[ -n "$bench" ] && args+=(--bench "$bench")
nx "${args[@]}" "$mb" "$head"
nx compare "$mb" "$head" --results-dir "$results" --machine "$machine" --repo . \
  --format json --out "$out/findings.json"
# 3 rounds: with fewer the rounds test has almost no power (docs/analysis.md).
rounds=${NEURONASV_CONFIRM_ROUNDS:-3}
if [ "$rounds" != "0" ]; then
  log "confirmation: ABAB re-measurement of suspected regressions ($rounds rounds)"
  # Undecided suspects get more rounds, up to NEURONASV_CONFIRM_MAX_ROUNDS (alpha is spent
  # over the looks) or NEURONASV_CONFIRM_BUDGET seconds.
  confirm=(confirm --findings "$out/findings.json" --repo . --rounds "$rounds" --format json
           --max-rounds "${NEURONASV_CONFIRM_MAX_ROUNDS:-$((rounds + 3))}"
           --budget-seconds "${NEURONASV_CONFIRM_BUDGET:-900}"
           --out "$out/findings.json" --rounds-out "$out/rounds.json")
  [ -n "${NEURONASV_CONFIRM_SAMPLES:-}" ] && confirm+=(--samples "$NEURONASV_CONFIRM_SAMPLES")
  [ -n "${NEURONASV_HISTORY_DIR:-}" ] && confirm+=(--history-dir "$NEURONASV_HISTORY_DIR")
  nx "${confirm[@]}"
fi
# Base and head traces of the flagged workloads (the comment links them), the rest dropped.
nxpy -m neuronasv.publish.traces --findings "$out/findings.json" --traces-dir "$traces_all" \
  --machine "$machine" --out "$traces_out"
remove_owned "$traces_all"
# The rendered comment is for people reading the artifact; pr-comment.yml recomputes the
# verdicts from results/ and rounds.json with the default branch's code and never reads
# findings.json or this file.
nx comment --pr "$pr" --report "$out/findings.json" --dry-run --out /dev/null \
  --body-out "$out/comment.md" --github-repo "${GITHUB_REPOSITORY:-local/checkout}"
printf '%s\n' "$pr" > "$out/pr-number"
printf '%s\n' "$head" > "$out/head-sha"
printf '%s\n' "$mb" > "$out/base-sha"
nx compare "$mb" "$head" --results-dir "$results" --machine "$machine" --repo . --format text >&2 || true
log "artifact ready in $out"
