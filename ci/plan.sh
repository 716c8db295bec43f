#!/usr/bin/env bash
# Plan a per-commit benchmark run: the pushed commit plus up to N recent first-parent
# commits that have no stored result for some shard's machine (backfill), oldest first;
# and the shard matrix. Outputs `commits=<space-separated>` and `shards=<json>` (stdout and
# $GITHUB_OUTPUT).
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
head=$(git rev-parse --verify "$1^{commit}")
base=${NEURONASV_MACHINE:-trainium}
n=${NEURONASV_BACKFILL:-5}
[[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -le 100 ] || die "NEURONASV_BACKFILL must be 0..100, got '$n'"
shards_json=${NEURONASV_SHARDS:-'[{"name":"all","bench":""}]'}
# Validate the shard list (names become machine names and artifact names).
shards=$(SHARDS="$shards_json" nxpy - <<'PYEOF'
import json, os, re, sys
try:
    shards = json.loads(os.environ["SHARDS"])
except ValueError as exc:
    sys.exit(f"error: NEURONASV_SHARDS is not JSON: {exc}")
if not isinstance(shards, list) or not shards:
    sys.exit("error: NEURONASV_SHARDS must be a non-empty JSON list")
seen = set()
for s in shards:
    if not isinstance(s, dict) or not re.fullmatch(r"[A-Za-z0-9._-]+", str(s.get("name", ""))):
        sys.exit(f"error: each shard needs a name of [A-Za-z0-9._-]: {s!r}")
    if s["name"] in seen:
        sys.exit(f"error: duplicate shard name {s['name']!r}")
    seen.add(s["name"])
    s.setdefault("bench", "")
print(json.dumps([{"name": s["name"], "bench": str(s["bench"])} for s in shards],
                 separators=(",", ":")))
PYEOF
)
mapfile -t names < <(SHARDS="$shards" nxpy -c 'import json,os; [print(s["name"]) for s in json.loads(os.environ["SHARDS"])]')
mapfile -t recent < <(git rev-list --first-parent -n "$((n + 1))" "$head")
declare -A want=()
want[$head]=1
if [ "$n" -gt 0 ]; then
  for shard in "${names[@]}"; do
    machine=$(machine_for_shard "$base" "$shard")
    while read -r c; do [ -n "$c" ] && want[$c]=1; done < <(
      printf '%s\n' "${recent[@]}" | nx store missing "${store_args[@]}" --machine "$machine")
  done
fi
ordered=()
for ((i=${#recent[@]}-1; i>=0; i--)); do
  c=${recent[$i]}
  if [ -n "${want[$c]:-}" ]; then ordered+=("$c"); fi
done
log "benchmarking ${#ordered[@]} commit(s) on ${#names[@]} shard(s)"
set_output commits "${ordered[*]}"
set_output shards "$shards"
