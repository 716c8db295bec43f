#!/usr/bin/env bash
# Pull the stored history, find change points per machine, and build the site.
# Usage: bash ci/analyse.sh [--remote R] [--branch B] [--token-env VAR] [--traces-dir T]
#            --out DIR --site DIR
# --traces-dir: trace store of this run's bench jobs; the site copies and links the traces
# its sidecars name (commits measured by earlier runs keep no trace link).
# Writes DIR/regressions-<machine>.json (findings documents, history mode) and the site.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
store_opts=() out="" site="" traces=""
while [ $# -gt 0 ]; do
  case "$1" in
    --remote|--branch|--token-env) store_opts+=("$1" "$2"); shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --site) site="$2"; shift 2 ;;
    --traces-dir) traces="$2"; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -n "$out" ] && [ -n "$site" ] || die "usage: analyse.sh [options] --out DIR --site DIR"
mkdir -p "$out"
history="$out/history"
claim_dir "$history"  # deleted at the end: only a folder a script of ours made (marker)
nx store pull "${store_opts[@]}" --out "$history"
found=0
for mdir in "$history"/*/; do
  [ -f "$mdir/machine.json" ] || continue
  machine=$(basename "$mdir")
  log "change points for $machine"
  nx regressions --results-dir "$history" --machine "$machine" --repo . --format json \
    --out "$out/regressions-$machine.json"
  found=$((found + 1))
done
[ "$found" -gt 0 ] || die "no machine folders in the results branch"
# The site takes the per-machine documents: each carries that machine's change points,
# its coverage and its newest commit against the parent (a merged file would lose those).
log "site → $site"
pub=(publish --results-dir "$history" --repo . --out "$site" --no-cache)
for doc in "$out"/regressions-*.json; do pub+=(--findings "$doc"); done
if [ -n "${GITHUB_REPOSITORY:-}" ]; then
  pub+=(--commit-url "${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_REPOSITORY/commit/{commit}")
fi
[ -n "${SITE_URL:-}" ] && pub+=(--base-url "$SITE_URL")
[ -n "$traces" ] && [ -d "$traces" ] && pub+=(--traces-dir "$traces")
nx "${pub[@]}"
remove_owned "$history"  # the artifact carries findings, not a second copy of the history
