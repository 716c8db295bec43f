#!/usr/bin/env bash
# The README's first Quickstart line: set up .venv, then run the whole service end to end on
# the CPU (suite at two commits, compare, PR comment as a dry run, regressions, site).
# Extra arguments go to `neuronasv demo` (e.g. --fresh, --out DIR, --bench REGEX).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
bash ci/setup.sh --no-dev
unset GITHUB_TOKEN  # GitHub in dry-run: the demo never posts
set +e
.venv/bin/neuronasv demo "$@"
rc=$?
set -e
echo "(setup + demo: $((SECONDS - started)) s)"
# demo exits 1 when it found no regression to show; anything else is a failure.
exit "$rc"
