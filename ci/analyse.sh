#!/usr/bin/env bash
# Pull the stored history, find change points per machine, and build the site: the
# package's step (`python -m neuronasv.ci analyse`, neuronasv/ci/flows.py), the same one the
# reusable workflow runs.
# Usage: bash ci/analyse.sh [--remote R] [--branch B] [--token-env VAR] [--traces-dir T]
#            --out DIR --site DIR
# --traces-dir: trace store of this run's bench jobs; the site copies and links the traces
# its sidecars name (commits measured by earlier runs keep no trace link).
# Writes DIR/regressions-<machine>.json (findings documents, history mode) and the site.
# Env: SITE_URL (the site's base URL), GITHUB_REPOSITORY (commit links).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
[ $# -gt 0 ] || die "usage: analyse.sh [options] --out DIR --site DIR"
nxpy -m neuronasv.ci --repo . analyse "$@"
