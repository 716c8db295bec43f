#!/usr/bin/env bash
# The README's first Quickstart line: set up, then run the whole service end to end (suite at
# two commits, compare, PR comment as a dry run, regressions, site). On an accelerator host
# whose python has torch (NGC image, Neuron DLAMI; PYTHON=... picks one) the demo measures
# the accelerator through .venv-host, a venv that sees that torch (nothing downloaded when
# the dependencies are there); elsewhere .venv with the CPU wheel, as before.
# Extra arguments go to `neuronasv demo` (e.g. --fresh, --out DIR, --bench REGEX, --backend cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
source ci/lib.sh
started=$SECONDS
if host_py=$(host_accelerator_python); then
  log "accelerator host: the demo uses the torch of $host_py (.venv-host)"
  ensure_host_venv "$host_py" .venv-host || die "cannot set up .venv-host (see above)"
  bin=.venv-host/bin/neuronasv
else
  bash ci/setup.sh --no-dev
  bin=.venv/bin/neuronasv
fi
unset GITHUB_TOKEN  # GitHub in dry-run: the demo never posts
set +e
"$bin" demo "$@"
rc=$?
set -e
echo "(setup + demo: $((SECONDS - started)) s)"
venv=$(dirname "$(dirname "$bin")")
echo "neuronasv is installed in $venv: run \`. $venv/bin/activate\` to use the commands of the docs"
# demo exits 1 when it found no regression to show; anything else is a failure.
exit "$rc"
