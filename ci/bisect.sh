#!/usr/bin/env bash
# Bisect the open regressions whose ranges hold commits with no stored result: the package's
# step (`python -m neuronasv.ci bisect`, neuronasv/ci/bisect_step.py), the same one the
# reusable workflow's bisect job runs on the accelerator runner.
# Usage: bash ci/bisect.sh [--remote R] [--branch B] [--token-env VAR] [--add RESULTS]...
#            [--minutes 30] [--machine M] --out DIR
# --add: this run's results (the bench jobs'), added to the stored history first.
# Writes what the searches measured (ordinary results) and their records into DIR, for
# ci/store-results.sh. Env: NEURONASV_BACKEND (auto).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
[ $# -gt 0 ] || die "usage: bisect.sh [options] --out DIR"
nxpy -m neuronasv.ci --repo . bisect "$@"
