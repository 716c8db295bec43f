#!/usr/bin/env bash
# Create .venv (if missing) and install neuronasv, its asv plugin and the dev tools.
# torch is pinned *first* to the CPU wheel: an open range would pull a multi-GB CUDA build.
# Idempotent: a second run only checks. Usage: bash ci/setup.sh [--no-dev]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_PIN=${NEURONASV_TORCH:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
stamp=.venv/.neuronasv-setup
deps="$(cat pyproject.toml asv_bench_neuronasv/pyproject.toml 2>/dev/null | sha1sum | cut -c1-12)"
want="$deps ${1:-dev} $TORCH_PIN"
have="$(cat "$stamp" 2>/dev/null || true)"
# A dev install also satisfies --no-dev (the demo after the tests must not reinstall).
if [ "$have" = "$want" ] || [ "$have" = "$deps dev $TORCH_PIN" ]; then
  echo "==> .venv up to date"
  exit 0
fi
echo "==> installing $TORCH_PIN (CPU wheel) and neuronasv"
pipi() {  # pip install, quiet; the whole log only when it fails
  local log; log=$(mktemp)
  if ! "$VPY" -m pip install -q --disable-pip-version-check "$@" >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"
    echo "pip install failed. Without network: point the ci scripts at an interpreter that" >&2
    echo "already has torch and the dependencies (NEURONASV_PYTHON=/path/to/python; they then" >&2
    echo "install with ci/install_project.py, no download), or give pip PIP_FIND_LINKS=<wheels>." >&2
    exit 1
  fi
  rm -f "$log"
}
pipi "$TORCH_PIN"
extras="[dev]"
[ "${1:-}" = "--no-dev" ] && extras=""
pkgs=(-e ".$extras")
[ -d asv_bench_neuronasv ] && pkgs+=(-e ./asv_bench_neuronasv)
pipi "$TORCH_PIN" "${pkgs[@]}"
"$VPY" -c "import torch, neuronasv; print('==> torch', torch.__version__, '| neuronasv', neuronasv.__version__)"
echo "$want" > "$stamp"
