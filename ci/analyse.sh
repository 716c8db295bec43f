#!/usr/bin/env bash
# Pull the stored history, find change points per machine, and build the site.
# Usage: bash ci/analyse.sh [--remote R] [--branch B] [--token-env VAR] --out DIR --site DIR
# Writes DIR/regressions-<machine>.json (findings documents, history mode) and the site.
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
store_opts=() out="" site=""
while [ $# -gt 0 ]; do
  case "$1" in
    --remote|--branch|--token-env) store_opts+=("$1" "$2"); shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --site) site="$2"; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -n "$out" ] && [ -n "$site" ] || die "usage: analyse.sh [options] --out DIR --site DIR"
mkdir -p "$out"
history="$out/history"
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
# One change-point document for the site (all machines); per-machine ones for the issues.
nxpy - "$out" > "$out/all-regressions.json" <<'PYEOF'
import glob, sys
from dataclasses import replace
from neuronasv.model import FindingsDocument
docs = [FindingsDocument.loads(open(p, encoding="utf-8").read(), source=p)
        for p in sorted(glob.glob(f"{sys.argv[1]}/regressions-*.json"))]
merged = replace(docs[0], change_points=tuple(c for d in docs for c in d.change_points),
                 load_errors=tuple(e for d in docs for e in d.load_errors))
sys.stdout.write(merged.dumps())
PYEOF
log "site → $site"
pub=(publish --results-dir "$history" --repo . --out "$site" --findings "$out/all-regressions.json"
     --no-cache)
if [ -n "${GITHUB_REPOSITORY:-}" ]; then
  pub+=(--commit-url "${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_REPOSITORY/commit/{commit}")
fi
[ -n "${SITE_URL:-}" ] && pub+=(--base-url "$SITE_URL")
nx "${pub[@]}"
rm -rf "$history"  # the artifact carries findings, not a second copy of the history
